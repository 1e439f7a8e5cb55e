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
// visible once its InTx returns. A group holds at most maxGroupMembers
// transactions.
func TestSharedCommit(t *testing.T) {
	t.Parallel()
	errBoom := errors.New("member failed")
	tests := []struct {
		name string
		// fail and panic name the members (by index) that fail or panic
		// after writing.
		fail, panic map[int]bool
		members     int
		wantGroups  int64
	}{
		{name: "members commit as one group", members: 6, wantGroups: 1},
		{name: "a failing member fails alone", members: 6, fail: map[int]bool{2: true}},
		{name: "a panicking member panics alone", members: 6, panic: map[int]bool{4: true}},
		{name: "a group holds at most 64 transactions", members: 70, wantGroups: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
				ctx := store.WithSharedCommit(store.WithDeferredSync(context.Background()))
				storetest.SeedWorkspace(t, st, "ws")
				sqlstore.EnableSharedCommits(st)

				release := holdGroupSlot(t, ctx, st)

				members := tt.members
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
