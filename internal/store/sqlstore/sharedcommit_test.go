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

				// The first transaction holds the only group slot until the
				// others have queued behind it.
				entered, release := make(chan struct{}), make(chan struct{})
				blocker := make(chan error, 1)
				go func() {
					blocker <- st.InTx(ctx, func(tx store.Queries) error {
						close(entered)
						<-release
						return tx.InsertTask(ctx, sharedTask("blocker"))
					})
				}()
				<-entered

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
				close(release)
				wg.Wait()
				if err := <-blocker; err != nil {
					t.Fatalf("blocking transaction: %v", err)
				}

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

// TestAcknowledgedSharedCommit: an acknowledged write (the inbox's receipts)
// joins the group that is running when it arrives, if that group syncs
// fully, and commits with it; it never joins a group whose members all
// defer their sync (its commit must reach the disk), and it runs ahead of
// the derived transactions queued before it, in a group that takes none of
// them.
func TestAcknowledgedSharedCommit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// deferred: the derived members defer their sync.
		deferred bool
		// whileRunning: the acknowledged write arrives while the derived
		// members run as a group; otherwise it queues behind them.
		whileRunning bool
		// wantMembers counts the members of the groups that committed
		// together. Queued behind the derived members in plain order, the
		// acknowledged write would have made theirs a group of three.
		wantMembers int64
	}{
		{name: "joins a running group that syncs fully", whileRunning: true, wantMembers: 3},
		{name: "does not join a group that defers its sync", deferred: true, whileRunning: true, wantMembers: 2},
		{name: "runs ahead of derived work queued before it", wantMembers: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
				storetest.SeedWorkspace(t, st, "ws")
				sqlstore.EnableSharedCommits(st)
				derived := store.WithSharedCommit(context.Background())
				if tt.deferred {
					derived = store.WithDeferredSync(derived)
				}

				// A lone transaction holds the group slot while the derived
				// members queue; the first of them then holds its group.
				blockerIn, releaseBlocker := make(chan struct{}), make(chan struct{})
				firstIn, releaseFirst := make(chan struct{}), make(chan struct{})
				var wg sync.WaitGroup
				errs := make(chan error, 4)
				wg.Go(func() {
					errs <- st.InTx(derived, func(tx store.Queries) error {
						close(blockerIn)
						<-releaseBlocker
						return tx.InsertTask(derived, sharedTask("blocker"))
					})
				})
				<-blockerIn
				for i := range 2 {
					wg.Go(func() {
						errs <- st.InTx(derived, func(tx store.Queries) error {
							if i == 0 {
								close(firstIn)
								<-releaseFirst
							}
							return tx.InsertTask(derived, sharedTask(fmt.Sprint("derived-", i)))
						})
					})
					waitUntil(t, "the derived member to queue", func() bool { return sqlstore.QueuedSharedCommits(st) == i+1 })
				}
				var receipt []store.InsertedDelivery
				var receiptErr error
				acknowledged := func() {
					defer wg.Done()
					ctx := store.WithAcknowledgedSharedCommit(context.Background())
					receipt, receiptErr = st.InsertDeliveries(ctx, []store.Delivery{{ConnectionID: "gh", Provider: "github",
						Event: "issues", DeliveryKey: "receipt", Headers: `{}`, Body: []byte(`{}`), ReceivedAt: time.Now().UTC()}})
				}
				wg.Add(1)
				if tt.whileRunning {
					close(releaseBlocker)
					<-firstIn
					go acknowledged()
					waitUntil(t, "the acknowledged write to queue", func() bool { return sqlstore.QueuedSharedCommits(st) == 1 })
					close(releaseFirst)
				} else {
					go acknowledged()
					waitUntil(t, "the acknowledged write to queue", func() bool { return sqlstore.QueuedSharedCommits(st) == 3 })
					close(releaseBlocker)
					<-firstIn
					close(releaseFirst)
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					if err != nil {
						t.Fatalf("derived transaction: %v", err)
					}
				}
				if receiptErr != nil || len(receipt) != 1 || receipt[0].Duplicate {
					t.Fatalf("acknowledged insert = %+v, %v; want one new delivery", receipt, receiptErr)
				}
				if _, err := st.GetDelivery(context.Background(), receipt[0].ID); err != nil {
					t.Errorf("the acknowledged delivery is not stored: %v", err)
				}
				if got := sqlstore.CommittedSharedMembers(st); got != tt.wantMembers {
					t.Errorf("members of shared groups = %d, want %d", got, tt.wantMembers)
				}
			})
		})
	}
}
