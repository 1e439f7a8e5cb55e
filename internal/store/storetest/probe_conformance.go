package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/trackergateway/gateway/internal/store/sqlstore"
)

// testProbeDurableWrite: the readiness probe may run any number of times
// (it rewrites its one row), and it fails once the database is gone.
func testProbeDurableWrite(t *testing.T, s *sqlstore.Store) {
	ctx := context.Background()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for i := range 3 {
		if err := s.ProbeDurableWrite(ctx, at.Add(time.Duration(i)*time.Second)); err != nil {
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
	if err := s.ProbeDurableWrite(cancelled, at); err == nil {
		t.Error("probe with a cancelled context succeeded")
	}
}
