package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/trackergateway/gateway/internal/store/sqlstore"
)

var probeTests = []contractTest{
	// The probe's one row is visible only beneath the contract.
	{name: "durable write probe rewrites one row", driver: testProbeDurableWrite},
}

// testProbeDurableWrite: the readiness probe may run any number of times
// (it rewrites its one row), and it fails when it cannot write (a cancelled
// context here; a closed store in testClose).
func testProbeDurableWrite(t *testing.T, s *sqlstore.Store) {
	ctx := context.Background()
	for i := range 3 {
		if err := s.ProbeDurableWrite(ctx, epoch.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatalf("probe %d: %v", i, err)
		}
	}
	var rows int
	if err := s.Driver().QueryRow(ctx, `SELECT COUNT(*) FROM readiness_probe`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != 1 {
		t.Errorf("readiness_probe has %d rows, want 1", rows)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := s.ProbeDurableWrite(cancelled, epoch); err == nil {
		t.Error("probe with a cancelled context succeeded")
	}
}
