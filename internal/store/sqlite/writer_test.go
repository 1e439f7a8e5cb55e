package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"

	sqlitelib "modernc.org/sqlite"
)

func openScratch(t *testing.T) *Driver {
	t.Helper()
	d, err := Open(context.Background(), filepath.Join(t.TempDir(), "writer.db"))
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(d.Close)
	if _, err := d.Exec(context.Background(), `CREATE TABLE items (n INTEGER PRIMARY KEY)`); err != nil {
		t.Fatalf("create table: %v", err)
	}
	return d
}

func countItems(t *testing.T, d *Driver) int {
	t.Helper()
	var n int
	if err := d.QueryRow(context.Background(), `SELECT count(*) FROM items`).Scan(&n); err != nil {
		t.Fatalf("count: %v", err)
	}
	return n
}

// Writer statements are not interrupted mid-statement, so their contexts'
// ends must still stop them at the next statement: nothing is written, the
// transaction rolls back, and the writer is free again.
func TestWriterStatementsStopWhenTheirContextEnds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		run  func(t *testing.T, d *Driver) error
		want error
	}{
		{"exec with a cancelled context", func(t *testing.T, d *Driver) error {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			_, err := d.Exec(ctx, `INSERT INTO items (n) VALUES (1)`)
			return err
		}, context.Canceled},
		{"writing query past its deadline", func(t *testing.T, d *Driver) error {
			ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
			defer cancel()
			rows, err := d.Query(ctx, `INSERT INTO items (n) VALUES (1) RETURNING n`)
			if err == nil {
				rows.Close()
			}
			return err
		}, context.DeadlineExceeded},
		{"transaction cancelled between statements", func(t *testing.T, d *Driver) error {
			ctx, cancel := context.WithCancel(context.Background())
			tx, err := d.Begin(ctx)
			if err != nil {
				t.Fatalf("begin: %v", err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO items (n) VALUES (1)`); err != nil {
				t.Fatalf("first insert: %v", err)
			}
			cancel()
			_, err = tx.Exec(ctx, `INSERT INTO items (n) VALUES (2)`)
			if cerr := tx.Commit(ctx); cerr == nil {
				t.Error("commit after cancel succeeded")
			}
			return err
		}, context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := openScratch(t)
			if err := tt.run(t, d); !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if n := countItems(t, d); n != 0 {
				t.Errorf("%d rows written, want 0", n)
			}
			if _, err := d.Exec(context.Background(), `INSERT INTO items (n) VALUES (3)`); err != nil {
				t.Errorf("writer not free afterwards: %v", err)
			}
		})
	}
}

// A writer statement under a context that can end starts no goroutine of
// its own (the driver's interrupt watcher, database/sql's result-set
// closer): they were a tenth of processing's CPU. Not parallel, so that
// no other test creates goroutines meanwhile.
func TestWriterStatementsStartNoGoroutines(t *testing.T) {
	d := openScratch(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const statements = 200
	before := goroutinesCreated()
	tx, err := d.Begin(ctx)
	if err != nil {
		t.Fatalf("begin: %v", err)
	}
	for i := range statements {
		if i%2 == 0 {
			_, err = tx.Exec(ctx, `INSERT INTO items (n) VALUES ($1)`, i)
		} else {
			var n int
			err = tx.QueryRow(ctx, `INSERT INTO items (n) VALUES ($1) RETURNING n`, i).Scan(&n)
		}
		if err != nil {
			t.Fatalf("statement %d: %v", i, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatalf("commit: %v", err)
	}
	if created := goroutinesCreated() - before; created > statements/10 {
		t.Errorf("%d goroutines created for %d writer statements", created, statements)
	}
}

func goroutinesCreated() uint64 {
	s := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// The pinned writer keeps statement journals in memory (a multi-row
// statement's journal would otherwise go to a temporary file once past 64
// KiB); the migrations' connection keeps SQLite's default, since a
// migration's statement may rewrite a whole table.
func TestStatementJournalsInMemoryOnlyOnTheWriter(t *testing.T) {
	t.Parallel()
	d := openScratch(t)
	ctx := context.Background()
	migrations, err := d.writer.Conn(ctx)
	if err != nil {
		t.Fatalf("migrations connection: %v", err)
	}
	defer migrations.Close()
	tests := []struct {
		name string
		conn *sql.Conn
		want int // PRAGMA temp_store: 0 default, 2 memory
	}{
		{"pinned writer", d.wconn, 2},
		{"migrations connection", migrations, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got int
			if err := tt.conn.QueryRowContext(ctx, `PRAGMA temp_store`).Scan(&got); err != nil {
				t.Fatalf("read temp_store: %v", err)
			}
			if got != tt.want {
				t.Errorf("temp_store = %d, want %d", got, tt.want)
			}
		})
	}
}

// TestOpenCommitsWithFdatasync: Open switches SQLite's commits to fdatasync
// where the platform has it. The switch is process-wide, so this test does
// not run in parallel: paused parallel tests resume only after it.
func TestOpenCommitsWithFdatasync(t *testing.T) {
	switch runtime.GOOS {
	case "linux", "freebsd", "illumos", "netbsd":
	default:
		t.Skipf("SQLite does not sync with fdatasync on %s", runtime.GOOS)
	}
	if _, err := sqlitelib.Fdatasync(false); err != nil {
		t.Fatalf("switch fdatasync off: %v", err)
	}
	d := openScratch(t)
	if !sqlitelib.FdatasyncEnabled() {
		t.Fatal("after Open, SQLite commits with fsync, want fdatasync")
	}
	if _, err := d.Exec(context.Background(), `INSERT INTO items (n) VALUES (1)`); err != nil {
		t.Fatalf("commit with fdatasync: %v", err)
	}
	if got := countItems(t, d); got != 1 {
		t.Errorf("items = %d, want 1", got)
	}
}
