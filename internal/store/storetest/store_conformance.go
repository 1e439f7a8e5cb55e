package storetest

import (
	"context"
	"errors"
	"fmt"
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
	{name: "a chain of transactions commits each before the next", fn: testTransactionChains},
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

// testTransactionChains: each transaction of InTxChain sees the ones before
// it committed; a failure of one leaves the earlier ones committed, whether
// it had sent anything or not, and ends the chain; a transaction that fails
// (in Go, or in a write that travels with its COMMIT) applies nothing, and
// nothing after it runs or applies.
func testTransactionChains(t *testing.T, s store.Store) {
	ctx := context.Background()
	SeedWorkspace(t, s, "ws")
	must(t, s.InsertTask(ctx, newTask("ws", "held", 1)))
	errStop := errors.New("caller gave up")
	insert := func(ext string, n int) store.TxStep {
		return store.TxStep{Fn: func(tx store.Queries) error { return tx.InsertTask(ctx, newTask("ws", ext, n)) }}
	}
	seesThenInserts := func(seen, ext string, n int) store.TxStep {
		return store.TxStep{DeferredSync: true, Fn: func(tx store.Queries) error {
			if _, err := tx.LookupTaskByExternalID(ctx, "ws", seen); err != nil {
				return fmt.Errorf("%s is not committed before the next transaction: %w", seen, err)
			}
			return tx.InsertTask(ctx, newTask("ws", ext, n))
		}}
	}
	fails := func(before func(tx store.Queries) error) store.TxStep {
		return store.TxStep{Fn: func(tx store.Queries) error {
			if err := before(tx); err != nil {
				return err
			}
			return errStop
		}}
	}
	nothing := func(store.Queries) error { return nil }
	neverRuns := store.TxStep{Fn: func(store.Queries) error {
		t.Error("a transaction ran after a failed one")
		return nil
	}}
	tests := []struct {
		name          string
		steps         []store.TxStep
		wantCommitted int
		wantErr       error
		wantTasks     []string // external IDs that must exist afterwards
		noTasks       []string // and that must not
	}{
		{name: "all commit, each seeing the one before",
			steps:         []store.TxStep{insert("a1", 10), seesThenInserts("a1", "a2", 11), seesThenInserts("a2", "a3", 12)},
			wantCommitted: 3, wantTasks: []string{"a1", "a2", "a3"}},
		{name: "a failure after writing keeps the transactions before it",
			steps: []store.TxStep{insert("b1", 20), fails(func(tx store.Queries) error {
				if err := tx.InsertTask(ctx, newTask("ws", "b2", 21)); err != nil {
					return err
				}
				_, err := tx.GetWorkspace(ctx, "ws")
				return err
			}), neverRuns},
			wantCommitted: 1, wantErr: errStop, wantTasks: []string{"b1"}, noTasks: []string{"b2"}},
		{name: "a failure before any statement keeps the transactions before it",
			steps:         []store.TxStep{insert("c1", 30), seesThenInserts("c1", "c2", 31), fails(nothing)},
			wantCommitted: 2, wantErr: errStop, wantTasks: []string{"c1", "c2"}},
		{name: "a last transaction that writes nothing keeps the ones before it",
			steps:         []store.TxStep{insert("d1", 40), {Fn: nothing}},
			wantCommitted: 2, wantTasks: []string{"d1"}},
		{name: "a write that fails with the commit applies nothing of its transaction",
			steps: []store.TxStep{insert("e1", 50), {DeferredSync: true, Fn: func(tx store.Queries) error {
				if err := tx.InsertTask(ctx, newTask("ws", "e2", 51)); err != nil {
					return err
				}
				return tx.InsertTask(ctx, newTask("ws", "held", 52))
			}}, insert("e3", 53)},
			wantCommitted: 1, wantErr: store.ErrExternalIDTaken, wantTasks: []string{"e1"}, noTasks: []string{"e2", "e3"}},
		{name: "a commit failure met by the next transaction's first read is the failure of its own transaction",
			steps: []store.TxStep{insert("i1", 90), {DeferredSync: true, Fn: func(tx store.Queries) error {
				if err := tx.InsertTask(ctx, newTask("ws", "i2", 91)); err != nil {
					return err
				}
				return tx.InsertTask(ctx, newTask("ws", "held", 92))
			}}, seesThenInserts("i1", "i3", 93)},
			wantCommitted: 1, wantErr: store.ErrExternalIDTaken, wantTasks: []string{"i1"}, noTasks: []string{"i2", "i3"}},
		{name: "a commit failure carried past a transaction that sent nothing is the failure of its own transaction",
			steps: []store.TxStep{{Fn: func(tx store.Queries) error {
				if err := tx.InsertTask(ctx, newTask("ws", "j1", 100)); err != nil {
					return err
				}
				return tx.InsertTask(ctx, newTask("ws", "held", 101))
			}}, insert("j2", 102), seesThenInserts("j2", "j3", 103)},
			wantCommitted: 0, wantErr: store.ErrExternalIDTaken, noTasks: []string{"j1", "j2", "j3"}},
		{name: "a first transaction that fails applies nothing and ends the chain",
			steps: []store.TxStep{fails(func(tx store.Queries) error {
				return tx.InsertTask(ctx, newTask("ws", "f1", 60))
			}), neverRuns},
			wantCommitted: 0, wantErr: errStop, noTasks: []string{"f1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			committed, err := s.InTxChain(ctx, tc.steps...)
			if committed != tc.wantCommitted || !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
				t.Errorf("InTxChain = %d, %v; want %d, %v", committed, err, tc.wantCommitted, tc.wantErr)
			}
			for _, ext := range tc.wantTasks {
				if _, err := s.LookupTaskByExternalID(ctx, "ws", ext); err != nil {
					t.Errorf("task %s: %v, want it committed", ext, err)
				}
			}
			for _, ext := range tc.noTasks {
				if _, err := s.LookupTaskByExternalID(ctx, "ws", ext); !errors.Is(err, store.ErrNotFound) {
					t.Errorf("task %s: err %v, want it not written", ext, err)
				}
			}
		})
	}
	// The store is usable afterwards: no connection was left in a transaction.
	must(t, s.InsertTask(ctx, newTask("ws", "h1", 80)))
}

// testNotify: Notify wakes WaitForNotification on the same channel, and a
// waiter whose context ends gets its error.
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
