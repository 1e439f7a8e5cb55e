package inbox

import (
	"context"
	"testing"
	"time"

	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/store/sqlstore"
	"github.com/trackergateway/gateway/internal/store/storetest"
)

// TestWorkerDrain: after Drain, the deliveries being processed finish and
// are recorded (their context is not cancelled by the drain), nothing new is
// claimed, and Run returns. A batch's deliveries start together, so one
// claimed with the delivery in progress is in progress too.
func TestWorkerDrain(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		opts WorkerOptions
		// claimedBehind is a second delivery claimed in the same batch as
		// the one in progress, and processed with it; otherwise a second
		// delivery arrives after the drain, with an idle goroutine woken for
		// it, and stays queued.
		claimedBehind bool
	}{
		{name: "new delivery after drain", opts: WorkerOptions{Concurrency: 2}},
		{name: "rest of the batch", opts: WorkerOptions{Concurrency: 1, BatchSize: 2}, claimedBehind: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
				start := time.Now()
				proc := newFakeProcessor()
				gate := make(chan struct{})
				proc.gates["A"] = gate
				first := insert(t, st, start, body("A", modeOK))[0]
				var second string
				if tt.claimedBehind {
					// Received later: claimed with A, processed with it.
					second = insert(t, st, start.Add(time.Millisecond), body("B", modeOK))[0]
				}
				w := NewWorker(st, proc, testLogger(t), nil, fastOptions(tt.opts))
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				done := make(chan error, 1)
				go func() { done <- w.Run(ctx) }()

				waitFor(t, "processing of A to start", func() bool {
					_, calls := proc.stats()
					return calls[first] == 1
				})
				w.Drain()
				if !tt.claimedBehind {
					second = insert(t, st, time.Now(), body("B", modeOK))[0]
					if err := st.Notify(context.Background(), Channel); err != nil {
						t.Fatalf("notify: %v", err)
					}
				}
				close(gate)
				select {
				case err := <-done:
					if err != nil {
						t.Fatalf("Run = %v, want nil", err)
					}
				case <-time.After(testPollDeadline):
					t.Fatal("Run did not return after Drain and the delivery in hand finished")
				}

				d := getDelivery(t, st, first)
				if d.Status != store.DeliverySucceeded || d.Attempts != 1 || d.OutcomeTaskID != "task-A" || d.LeaseOwner != "" {
					t.Errorf("delivery in progress at the drain: status %s attempts %d task %q owner %q, want succeeded, 1, task-A, none",
						d.Status, d.Attempts, d.OutcomeTaskID, d.LeaseOwner)
				}
				d = getDelivery(t, st, second)
				_, calls := proc.stats()
				switch {
				case tt.claimedBehind && (d.Status != store.DeliverySucceeded || calls[second] != 1):
					t.Errorf("delivery of the batch in progress at the drain: status %s, processed %d times, want succeeded, once",
						d.Status, calls[second])
				case !tt.claimedBehind && (d.Status != store.DeliveryQueued || d.Attempts != 0 || d.LeaseOwner != "" || calls[second] != 0):
					t.Errorf("delivery after the drain: status %s attempts %d owner %q processed %d times, want queued, 0, none, 0",
						d.Status, d.Attempts, d.LeaseOwner, calls[second])
				}
			})
		})
	}
}

// TestWorkerDrainThenCancel: cancelling ctx after a drain still stops a
// delivery that does not finish (the shutdown timeout): it is put back
// uncounted and Run returns.
func TestWorkerDrainThenCancel(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		proc := newFakeProcessor()
		proc.gates["A"] = make(chan struct{}) // never opened
		id := insert(t, st, time.Now(), body("A", modeOK))[0]
		w := NewWorker(st, proc, testLogger(t), nil, fastOptions(WorkerOptions{Concurrency: 1}))
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- w.Run(ctx) }()
		waitFor(t, "processing of A to start", func() bool {
			_, calls := proc.stats()
			return calls[id] == 1
		})
		w.Drain()
		cancel()
		select {
		case <-done:
		case <-time.After(testPollDeadline):
			t.Fatal("Run did not return after its context was cancelled")
		}
		d := getDelivery(t, st, id)
		if d.Status != store.DeliveryQueued || d.Attempts != 0 || d.LeaseOwner != "" {
			t.Errorf("after drain and cancel: status %s attempts %d owner %q, want queued, 0, none", d.Status, d.Attempts, d.LeaseOwner)
		}
	})
}
