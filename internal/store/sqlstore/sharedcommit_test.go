package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/store/sqlstore"
	"github.com/trackergateway/gateway/internal/store/storetest"
)

// memberResult is what one shared transaction's caller got back.
type memberResult struct {
	err      error
	panicked any
}

// TestSharedCommit: transactions that queue behind a running one commit
// together as one group; when a member fails or panics, the group rolls
// back and every member runs alone, so the failure reaches only its own
// caller and every other member still commits. A member's transaction is
// visible once its InTx returns.
func TestSharedCommit(t *testing.T) {
	t.Parallel()
	errBoom := errors.New("member failed")
	tests := []struct {
		name string
		// fail and panic name the members (by index) that fail or panic
		// after writing.
		fail, panic map[int]bool
		wantGroups  int64
	}{
		{name: "members commit as one group", wantGroups: 1},
		{name: "a failing member fails alone", fail: map[int]bool{2: true}},
		{name: "a panicking member panics alone", panic: map[int]bool{4: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
				ctx := store.WithSharedCommit(store.WithDeferredSync(context.Background()))
				storetest.SeedWorkspace(t, st, "ws")
				sqlstore.EnableSharedCommits(st)

				release := holdGroupSlot(t, ctx, st)

				const members = 6
				results := make([]memberResult, members)
				var wg sync.WaitGroup
				for i := range members {
					wg.Go(func() {
						defer func() { results[i].panicked = recover() }()
						results[i].err = st.InTx(ctx, func(tx store.Queries) error {
							if err := tx.InsertTask(ctx, sharedTask(fmt.Sprint("member-", i))); err != nil {
								return err
							}
							switch {
							case tt.fail[i]:
								return errBoom
							case tt.panic[i]:
								panic("member panicked")
							}
							return nil
						})
					})
				}
				waitUntil(t, "every member to queue", func() bool { return sqlstore.QueuedSharedCommits(st) == members })
				release()
				wg.Wait()

				for i, r := range results {
					_, lookupErr := st.LookupTaskByExternalID(context.Background(), "ws", fmt.Sprint("member-", i))
					switch {
					case tt.fail[i]:
						if !errors.Is(r.err, errBoom) || !errors.Is(lookupErr, store.ErrNotFound) {
							t.Errorf("failing member: err %v, its write found: %v; want its error and no write", r.err, lookupErr == nil)
						}
					case tt.panic[i]:
						if r.panicked == nil || !errors.Is(lookupErr, store.ErrNotFound) {
							t.Errorf("panicking member: panic %v, its write found: %v; want its panic and no write", r.panicked, lookupErr == nil)
						}
					default:
						if r.err != nil || r.panicked != nil || lookupErr != nil {
							t.Errorf("member %d: err %v, panic %v, lookup %v; want committed", i, r.err, r.panicked, lookupErr)
						}
					}
				}
				if got := sqlstore.CommittedSharedGroups(st); got != tt.wantGroups {
					t.Errorf("groups committed together = %d, want %d", got, tt.wantGroups)
				}
			})
		})
	}
}

// TestSharedCommitAlone: a shared transaction that meets no other runs as
// its own transaction, at once.
func TestSharedCommitAlone(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		storetest.SeedWorkspace(t, st, "ws")
		sqlstore.EnableSharedCommits(st)
		ctx := store.WithSharedCommit(context.Background())
		if err := st.InTx(ctx, func(tx store.Queries) error { return tx.InsertTask(ctx, sharedTask("alone")) }); err != nil {
			t.Fatalf("InTx: %v", err)
		}
		if _, err := st.LookupTaskByExternalID(ctx, "ws", "alone"); err != nil {
			t.Errorf("a shared transaction with no company did not commit: %v", err)
		}
		if got := sqlstore.CommittedSharedGroups(st); got != 0 {
			t.Errorf("groups = %d, want 0: a lone transaction is its own", got)
		}
	})
}

// holdGroupSlot starts a shared transaction that holds the only group slot,
// so that the transactions started after it queue behind it; release lets
// it commit and fails the test if it did not.
func holdGroupSlot(t *testing.T, ctx context.Context, st *sqlstore.Store) (release func()) {
	t.Helper()
	entered, done := make(chan struct{}), make(chan struct{})
	blocker := make(chan error, 1)
	go func() {
		blocker <- st.InTx(ctx, func(tx store.Queries) error {
			close(entered)
			<-done
			return tx.InsertTask(ctx, sharedTask("blocker"))
		})
	}()
	<-entered
	return func() {
		t.Helper()
		close(done)
		if err := <-blocker; err != nil {
			t.Fatalf("blocking transaction: %v", err)
		}
	}
}

func sharedTask(ext string) store.Task {
	now := time.Now().UTC().Truncate(time.Microsecond)
	return store.Task{ID: uuid.NewString(), WorkspaceID: "ws", Identifier: "WS-" + ext, Title: "task",
		WorkflowStepID: "backlog", Labels: []string{}, ExternalID: ext, CreationState: store.CreationComplete,
		CreatedAt: now, UpdatedAt: now}
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestSerializesWrites: SQLite, with its one writer, runs writes one at a
// time (the inbox then lets small receipt batches wait for company);
// PostgreSQL does not.
func TestSerializesWrites(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		want := st.Dialect() == store.DialectSQLite
		if got := st.SerializesWrites(); got != want {
			t.Errorf("SerializesWrites on %s = %v, want %v", st.Dialect(), got, want)
		}
	})
}

// TestSharedCommitChains: a chain of transactions (InTxChain) with a shared
// commit is one member of a group, its steps in order, each seeing the ones
// before it; a step that fails rolls the group back and the chain runs
// alone, keeping the steps before the failing one; a chain counts as its
// steps towards a group's bound of maxGroupMembers transactions.
func TestSharedCommitChains(t *testing.T) {
	t.Parallel()
	errBoom := errors.New("step failed")
	tests := []struct {
		name   string
		chains int
		// failStep is the step (by index) that fails in chain 1; -1 none.
		failStep   int
		wantGroups int64
	}{
		{name: "chains commit as one group", chains: 4, failStep: -1, wantGroups: 1},
		{name: "a failing step keeps the chain's steps before it", chains: 4, failStep: 1},
		{name: "a group holds at most 64 transactions", chains: 23, failStep: -1, wantGroups: 2},
	}
	const steps = 3
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
				ctx := store.WithSharedCommit(context.Background())
				storetest.SeedWorkspace(t, st, "ws")
				sqlstore.EnableSharedCommits(st)

				release := holdGroupSlot(t, ctx, st)

				ext := func(chain, step int) string { return fmt.Sprintf("chain-%d-%d", chain, step) }
				type chainResult struct {
					committed int
					err       error
				}
				results := make([]chainResult, tt.chains)
				var wg sync.WaitGroup
				for c := range tt.chains {
					chain := make([]store.TxStep, steps)
					for i := range chain {
						chain[i] = store.TxStep{DeferredSync: i < steps-1, Fn: func(tx store.Queries) error {
							if i > 0 {
								if _, err := tx.LookupTaskByExternalID(ctx, "ws", ext(c, i-1)); err != nil {
									return fmt.Errorf("step %d does not see step %d: %w", i, i-1, err)
								}
							}
							if err := tx.InsertTask(ctx, sharedTask(ext(c, i))); err != nil {
								return err
							}
							if c == 1 && i == tt.failStep {
								return errBoom
							}
							if c == 1 && tt.failStep >= 0 && i > tt.failStep {
								t.Errorf("chain 1 ran step %d after its step %d failed", i, tt.failStep)
							}
							return nil
						}}
					}
					wg.Go(func() {
						committed, err := st.InTxChain(ctx, chain...)
						results[c] = chainResult{committed, err}
					})
				}
				waitUntil(t, "every chain to queue", func() bool { return sqlstore.QueuedSharedCommits(st) == tt.chains })
				release()
				wg.Wait()

				for c, r := range results {
					want, wantErr := chainResult{committed: steps}, error(nil)
					if c == 1 && tt.failStep >= 0 {
						want.committed, wantErr = tt.failStep, errBoom
					}
					if r.committed != want.committed || !errors.Is(r.err, wantErr) || (wantErr == nil && r.err != nil) {
						t.Errorf("chain %d: InTxChain = %d, %v; want %d, %v", c, r.committed, r.err, want.committed, wantErr)
					}
					for i := range steps {
						_, err := st.LookupTaskByExternalID(context.Background(), "ws", ext(c, i))
						if found := err == nil; found != (i < want.committed) {
							t.Errorf("chain %d step %d: committed %v, want %v", c, i, found, i < want.committed)
						}
					}
				}
				if got := sqlstore.CommittedSharedGroups(st); got != tt.wantGroups {
					t.Errorf("groups committed together = %d, want %d", got, tt.wantGroups)
				}
			})
		})
	}
}
