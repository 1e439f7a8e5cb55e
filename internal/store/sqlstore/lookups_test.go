package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/store/sqlstore"
	"github.com/trackergateway/gateway/internal/store/storetest"
)

// TestBatchedLookups: entity lookups that arrive while one runs are read
// together in the next batch, and each caller gets its own entity (held by
// a task, aliased, suppressed, unknown); a caller that has gone gets its
// cancellation and the others their entities.
func TestBatchedLookups(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		cancelled map[int]bool
		wantSizes []int
	}{
		{name: "queued lookups read together", wantSizes: []int{1, 8}},
		{name: "a caller that has gone fails alone", cancelled: map[int]bool{3: true}, wantSizes: []int{1, 8}},
		{name: "a batch whose callers have all gone reads nothing",
			cancelled: map[int]bool{0: true, 1: true, 2: true, 3: true, 4: true, 5: true, 6: true, 7: true}, wantSizes: []int{1, 8}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
				ctx := context.Background()
				storetest.SeedWorkspace(t, st, "ws")
				held := sharedTask("ext-held")
				if err := st.InsertTask(ctx, held); err != nil {
					t.Fatal(err)
				}
				if err := st.InsertAlias(ctx, "ws", "ext-moved", held.ID, held.CreatedAt); err != nil {
					t.Fatal(err)
				}
				if err := st.UpsertSuppression(ctx, store.Suppression{WorkspaceID: "ws", ExternalID: "ext-deleted",
					Reason: "deleted_at_source", CreatedAt: time.Now()}); err != nil {
					t.Fatal(err)
				}

				var mu sync.Mutex
				var sizes []int
				entered, release := make(chan struct{}), make(chan struct{})
				sqlstore.ObserveLookupBatches(st, func(size int) {
					mu.Lock()
					sizes = append(sizes, size)
					first := len(sizes) == 1
					mu.Unlock()
					if first {
						close(entered)
						<-release
					}
				})
				first := make(chan error, 1)
				go func() {
					_, err := st.LookupSourceEntity(ctx, "ws", "ext-unknown")
					first <- err
				}()
				<-entered

				exts := []string{"ext-held", "ext-moved", "ext-deleted", "ext-unknown"}
				type result struct {
					e   store.SourceEntity
					err error
				}
				members := 2 * len(exts)
				results := make([]result, members)
				var wg sync.WaitGroup
				for i := range members {
					mctx, cancel := context.WithCancel(ctx)
					if tt.cancelled[i] {
						cancel()
					}
					wg.Go(func() {
						defer cancel()
						results[i].e, results[i].err = st.LookupSourceEntity(mctx, "ws", exts[i%len(exts)])
					})
				}
				waitUntil(t, "every lookup to queue", func() bool { return sqlstore.QueuedLookups(st) == members })
				close(release)
				wg.Wait()
				if err := <-first; err != nil {
					t.Fatalf("first lookup: %v", err)
				}

				for i, r := range results {
					ext := exts[i%len(exts)]
					if tt.cancelled[i] {
						if !errors.Is(r.err, context.Canceled) {
							t.Errorf("cancelled lookup of %s: err %v, want context.Canceled", ext, r.err)
						}
						continue
					}
					if r.err != nil {
						t.Errorf("lookup of %s: %v", ext, r.err)
						continue
					}
					want := map[string]string{
						"ext-held":    fmt.Sprintf("task %s", held.ID),
						"ext-moved":   fmt.Sprintf("alias to %s", held.ID),
						"ext-deleted": "suppressed",
						"ext-unknown": "nothing",
					}[ext]
					if got := describeEntity(r.e); got != want {
						t.Errorf("lookup of %s = %s, want %s", ext, got, want)
					}
				}
				mu.Lock()
				defer mu.Unlock()
				if !slices.Equal(sizes, tt.wantSizes) {
					t.Errorf("batch sizes = %v, want %v", sizes, tt.wantSizes)
				}
			})
		})
	}
}

func describeEntity(e store.SourceEntity) string {
	switch {
	case e.Suppressed:
		return "suppressed"
	case e.AliasTaskID != "":
		return "alias to " + e.AliasTaskID
	case e.Task != nil:
		return "task " + e.Task.ID
	}
	return "nothing"
}

// TestBatchesLookups: PostgreSQL, whose driver sends reads in one round
// trip, batches concurrent lookups; SQLite, reading in process on a reader
// per statement, does not.
func TestBatchesLookups(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		want := st.Dialect() == store.DialectPostgres
		if got := sqlstore.BatchesLookups(st); got != want {
			t.Errorf("lookups batched on %s = %v, want %v", st.Dialect(), got, want)
		}
	})
}
