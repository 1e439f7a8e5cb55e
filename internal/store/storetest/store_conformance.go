package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/store/sqlstore"
)

var storeTests = []contractTest{
	// Migrate is how a driver is set up, not part of the contract (which
	// only reports Migrated).
	{name: "migrations are replay-safe", driver: testMigrateTwice},
	{name: "writes in a transaction apply in order and fail it", fn: testTransactionWrites},
	{name: "a notification wakes its waiter", fn: testNotify},
	{name: "a closed store answers errors", fn: testClose},
}

func testMigrateTwice(t *testing.T, s *sqlstore.Store) {
	ctx := context.Background()
	must(t, s.Migrate(ctx))
	must(t, s.Migrate(ctx))
	ok, err := s.Migrated(ctx)
	must(t, err)
	if !ok {
		t.Error("migrated = false after migrate")
	}
}

// testTransactionWrites: writes that answer nothing but their row count
// (which PostgreSQL sends later, with the next statement or the COMMIT) are
// seen by the statements after them, commit with the transaction, vanish on
// rollback, and a failing one fails the transaction with its own error and
// leaves nothing behind.
func testTransactionWrites(t *testing.T, s store.Store) {
	ctx := context.Background()
	SeedWorkspace(t, s, "ws")
	first, second := newTask("ws", "ext-1", 1), newTask("ws", "ext-2", 2)
	must(t, s.InTx(ctx, func(tx store.Queries) error {
		if err := tx.InsertTask(ctx, first); err != nil {
			return err
		}
		got, err := tx.LockTask(ctx, first.ID) // a read after the write sees it
		if err != nil {
			return err
		}
		got.Title = "renamed"
		if err := tx.UpdateTask(ctx, got); err != nil {
			return err
		}
		return tx.InsertTask(ctx, second) // travels with the COMMIT
	}))
	for _, id := range []string{first.ID, second.ID} {
		if _, err := s.GetTask(ctx, id); err != nil {
			t.Errorf("task written in the committed transaction: %v", err)
		}
	}
	if got, _ := s.GetTask(ctx, first.ID); got.Title != "renamed" {
		t.Errorf("title = %q, want the update made after the insert", got.Title)
	}

	tests := []struct {
		name    string
		fn      func(tx store.Queries) error
		wantErr error
	}{
		{"a taken external id fails the next read", func(tx store.Queries) error {
			if err := tx.InsertTask(ctx, newTask("ws", "ext-3", 3)); err != nil {
				return err
			}
			if err := tx.InsertTask(ctx, newTask("ws", "ext-1", 4)); err != nil {
				return err
			}
			_, err := tx.GetWorkspace(ctx, "ws")
			return err
		}, store.ErrExternalIDTaken},
		{"a taken external id fails the commit", func(tx store.Queries) error {
			if err := tx.InsertTask(ctx, newTask("ws", "ext-3", 3)); err != nil {
				return err
			}
			return tx.InsertTask(ctx, newTask("ws", "ext-1", 4))
		}, store.ErrExternalIDTaken},
		{"an update of a missing row fails the next read", func(tx store.Queries) error {
			if err := tx.InsertTask(ctx, newTask("ws", "ext-3", 3)); err != nil {
				return err
			}
			if err := tx.SetTaskCreationState(ctx, uuid.NewString(), store.CreationComplete, epoch); err != nil {
				return err
			}
			_, err := tx.GetWorkspace(ctx, "ws")
			return err
		}, store.ErrNotFound},
	}
	for _, tc := range tests {
		err := s.InTx(ctx, tc.fn)
		if !errors.Is(err, tc.wantErr) {
			t.Errorf("%s: err = %v, want %v", tc.name, err, tc.wantErr)
		}
		if _, err := s.LookupTaskByExternalID(ctx, "ws", "ext-3"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s: the failed transaction's earlier insert survived (err %v)", tc.name, err)
		}
	}

	errStop := errors.New("caller gave up")
	err := s.InTx(ctx, func(tx store.Queries) error {
		if err := tx.InsertTask(ctx, newTask("ws", "ext-3", 3)); err != nil {
			return err
		}
		return errStop
	})
	if !errors.Is(err, errStop) {
		t.Errorf("rolled back transaction err = %v", err)
	}
	if _, err := s.LookupTaskByExternalID(ctx, "ws", "ext-3"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a rolled back insert survived (err %v)", err)
	}
	// The store is usable afterwards: no connection was left in a transaction.
	must(t, s.InsertTask(ctx, newTask("ws", "ext-3", 3)))
}

func testNotify(t *testing.T, s store.Store) {
	ctx := context.Background()
	const channel = "conformance"
	woken := make(chan error, 1)
	go func() { woken <- s.WaitForNotification(ctx, channel) }()
	// A notification sent before the waiter subscribed is not for it: notify
	// until it wakes.
	deadline := time.After(10 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for done := false; !done; {
		must(t, s.Notify(ctx, channel))
		select {
		case err := <-woken:
			must(t, err)
			done = true
		case <-tick.C:
		case <-deadline:
			t.Fatal("waiter not woken within 10s of notifications")
		}
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := s.WaitForNotification(cancelled, channel); !errors.Is(err, context.Canceled) {
		t.Errorf("wait with a cancelled context = %v, want context.Canceled", err)
	}
}

// testClose: a store answers Ping until it is closed, and errors after,
// never a row or ErrNotFound. (The store is closed again at cleanup: both
// drivers' Close is idempotent.)
func testClose(t *testing.T, s store.Store) {
	ctx := context.Background()
	SeedWorkspace(t, s, "ws")
	must(t, s.Ping(ctx))
	s.Close()
	if err := s.Ping(ctx); err == nil {
		t.Error("ping after close succeeded")
	}
	if _, err := s.GetWorkspace(ctx, "ws"); err == nil || errors.Is(err, store.ErrNotFound) {
		t.Errorf("read after close err = %v, want a failure other than ErrNotFound", err)
	}
	if err := s.ProbeDurableWrite(ctx, epoch); err == nil {
		t.Error("durable write probe after close succeeded")
	}
}
