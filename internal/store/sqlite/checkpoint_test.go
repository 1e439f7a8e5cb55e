package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestWALRestartsUnderSteadyCommits: while commits follow one another with
// no pause, so that some commit lands during every background checkpoint,
// the WAL still starts again from its beginning instead of growing for as
// long as the load lasts.
func TestWALRestartsUnderSteadyCommits(t *testing.T) {
	t.Parallel()
	const (
		rowBytes      = 64 << 10
		restartFrames = 1000
		// written is several times the WAL size at which the checkpoint
		// catches up.
		written = 12 * restartFrames * 4096
	)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	path := filepath.Join(t.TempDir(), "gateway.db")
	d, err := open(ctx, path, checkpointing{every: 5 * time.Millisecond, restartFrames: restartFrames})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := d.Exec(ctx, `CREATE TABLE filler (body BLOB NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	body := make([]byte, rowBytes)
	for n := 0; n*rowBytes < written; n++ {
		if _, err := d.Exec(ctx, `INSERT INTO filler (body) VALUES ($1)`, body); err != nil {
			t.Fatalf("insert %d: %v", n, err)
		}
		if n%16 == 15 {
			// Keep the table small: the WAL, not the database, is measured.
			if _, err := d.Exec(ctx, `DELETE FROM filler`); err != nil {
				t.Fatal(err)
			}
		}
	}
	fi, err := os.Stat(path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > written/3 {
		t.Errorf("WAL is %d bytes after %d bytes of steady commits, want it restarted (at most %d bytes)",
			fi.Size(), written, written/3)
	}
	if d.catchUps.Load() == 0 {
		t.Error("no checkpoint caught up under the writer")
	}
}
