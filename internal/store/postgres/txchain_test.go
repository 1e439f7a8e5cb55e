package postgres_test

import (
	"context"
	"testing"

	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/store/sqlstore"
	"github.com/trackergateway/gateway/internal/store/storetest"
)

// TestChainedTransactionKeepsItsSyncLevel: a transaction chained after
// another (sqlstore.Chainer) runs on the first one's connection, yet commits
// with the sync level its own context asks for: a full-sync transaction
// after a deferred one (processing's phase A, then phase B) waits for the
// disk, and a deferred one after a full-sync one does not.
func TestChainedTransactionKeepsItsSyncLevel(t *testing.T) {
	t.Parallel()
	s := storetest.Open(t, store.DialectPostgres)
	full := context.Background()
	deferred := store.WithDeferredSync(full)
	tests := []struct {
		name                string
		firstCtx, thenCtx   context.Context
		wantFirst, wantThen string
	}{
		{"deferred, then full", deferred, full, "off", "on"},
		{"full, then deferred", full, deferred, "on", "off"},
		{"deferred, then deferred", deferred, deferred, "off", "off"},
		{"full, then full", full, full, "on", "on"},
	}
	syncLevel := func(t *testing.T, tx sqlstore.Tx) string {
		t.Helper()
		var level string
		if err := tx.QueryRow(full, `SHOW synchronous_commit`).Scan(&level); err != nil {
			t.Fatalf("show synchronous_commit: %v", err)
		}
		return level
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tx, err := s.Driver().Begin(tc.firstCtx)
			if err != nil {
				t.Fatalf("begin: %v", err)
			}
			if got := syncLevel(t, tx); got != tc.wantFirst {
				t.Errorf("first transaction: synchronous_commit = %s, want %s", got, tc.wantFirst)
			}
			next, err := tx.(sqlstore.Chainer).CommitThenBegin(tc.thenCtx)
			if err != nil {
				t.Fatalf("commit then begin: %v", err)
			}
			if got := syncLevel(t, next); got != tc.wantThen {
				t.Errorf("chained transaction: synchronous_commit = %s, want %s", got, tc.wantThen)
			}
			if err := next.Commit(full); err != nil {
				t.Fatalf("commit: %v", err)
			}
		})
	}
}
