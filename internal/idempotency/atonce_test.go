package idempotency

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/store/sqlstore"
)

// TestCreationsWrittenAtOnceTogether: creations of one workspace that
// arrive while one is being written are written together, in one
// transaction, numbered in turn; when the batch fails (here one member's
// external ID is held already, which the caller did not know), every
// member is written alone, so only that member answers Found and the others
// are created; a member whose caller has gone is left out of its batch.
func TestCreationsWrittenAtOnceTogether(t *testing.T) {
	t.Parallel()
	const queued = 5
	tests := []struct {
		name string
		// held is the queued member whose external ID a task holds (-1:
		// none); gone the one whose caller has gone (-1: none).
		held, gone int
		// wantTxs: the first creation alone, then the batch (and each
		// member alone after a failed one, or the gone one alone).
		wantTxs int64
	}{
		{"a batch", -1, -1, 2},
		{"a member held elsewhere", 2, -1, 2 + queued},
		{"a member whose caller has gone", -1, 3, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			forEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
				ctx := context.Background()
				if tc.held >= 0 {
					setup := New(st, discardLogger(), newTestClock().Now, testContributionKinds)
					if _, err := setup.Create(ctx, createRequest(fmt.Sprint("ext-", tc.held))); err != nil {
						t.Fatalf("Create the holder: %v", err)
					}
				}
				gate := &gatedStore{countingStore: countingStore{Store: st}, entered: make(chan struct{}), release: make(chan struct{})}
				c := New(gate, discardLogger(), newTestClock().Now, testContributionKinds)
				results := make([]Result, queued+1)
				errs := make([]error, queued+1)
				ctxs := make([]context.Context, queued+1)
				for i := range ctxs {
					ctxs[i] = ctx
				}
				if tc.gone >= 0 {
					gone, cancel := context.WithCancel(ctx)
					cancel()
					ctxs[1+tc.gone] = gone
				}
				var wg sync.WaitGroup
				create := func(i int) {
					req := createRequest(fmt.Sprint("ext-", i-1))
					if i == 0 {
						req = createRequest("first")
					}
					req.KnownAbsent = true
					results[i], errs[i] = c.Create(ctxs[i], req)
				}
				wg.Go(func() { create(0) })
				waitFor(t, gate.entered, "the first creation's transaction")
				for i := 1; i <= queued; i++ {
					wg.Go(func() { create(i) })
				}
				waitUntil(t, "the creations to queue behind the first", func() bool {
					c.batches.mu.Lock()
					q := c.batches.byWorkspace[testWS]
					c.batches.mu.Unlock()
					return q != nil && q.Queued() == queued
				})
				close(gate.release)
				wg.Wait()

				if n := gate.txs.Load(); n != tc.wantTxs {
					t.Errorf("write transactions = %d, want %d", n, tc.wantTxs)
				}
				var identifiers []string
				for i, r := range results {
					member := i - 1
					switch {
					case i > 0 && member == tc.gone:
						if errs[i] == nil {
							t.Errorf("creation %d of a gone caller = %v, want its context's error", i, r.Outcome)
						}
					case i > 0 && member == tc.held:
						if errs[i] != nil || r.Outcome != FoundSettled {
							t.Errorf("creation %d of a held ID = %v, %v; want FoundSettled", i, r.Outcome, errs[i])
						}
					default:
						if errs[i] != nil || r.Outcome != Created {
							t.Fatalf("creation %d = %v, %v; want Created", i, r.Outcome, errs[i])
						}
						stored, err := st.GetTask(ctx, r.Task.ID)
						if err != nil || stored.Identifier != r.Task.Identifier {
							t.Errorf("creation %d answered %s, stored %s (%v)", i, r.Task.Identifier, stored.Identifier, err)
						}
						assertOperationCompleted(t, st, onlyOperationOfTask(t, st, r.Task.ID).ID, r.Task.ExternalID, 0, Created)
						identifiers = append(identifiers, r.Task.Identifier)
					}
				}
				// Numbers are consecutive, each given once, whatever the
				// batch did: the holder, if any, is WS-1.
				slices.Sort(identifiers)
				first := 1
				if tc.held >= 0 {
					first = 2
				}
				var want []string
				for n := range len(identifiers) {
					want = append(want, fmt.Sprint("WS-", first+n))
				}
				slices.Sort(want)
				if !slices.Equal(identifiers, want) {
					t.Errorf("identifiers %v, want %v", identifiers, want)
				}
			})
		})
	}
}

// gatedStore is a countingStore whose first write transaction waits, once
// it has started, until release is closed.
type gatedStore struct {
	countingStore
	once    sync.Once
	entered chan struct{}
	release chan struct{}
}

func (s *gatedStore) InTx(ctx context.Context, fn func(tx store.Queries) error) error {
	first := false
	s.once.Do(func() { first = true })
	if !first {
		return s.countingStore.InTx(ctx, fn)
	}
	return s.countingStore.InTx(ctx, func(tx store.Queries) error {
		close(s.entered)
		<-s.release
		return fn(tx)
	})
}

// waitUntil polls cond until it holds, or fails the test after a minute.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
