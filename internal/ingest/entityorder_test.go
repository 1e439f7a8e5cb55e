package ingest

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/trackergateway/gateway/internal/inbox"
	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/store/sqlstore"
	"github.com/trackergateway/gateway/internal/store/storetest"
)

// heldProcessor runs the Applier, holding the delivery hold in Process until
// release is closed, and records every Process call's start and end; a
// Process that starts before hold's has ended is reported on overlap.
type heldProcessor struct {
	inner   *Applier
	hold    string
	held    chan struct{} // closed once hold is in Process
	release chan struct{}
	overlap chan string

	mu        sync.Mutex
	holdEnded bool
	log       []string
}

func (p *heldProcessor) Prepare(ctx context.Context, d store.Delivery) (inbox.Prepared, error) {
	return p.inner.Prepare(ctx, d)
}

func (p *heldProcessor) Process(ctx context.Context, d store.Delivery, prep inbox.Prepared) (inbox.Outcome, error) {
	p.mu.Lock()
	if d.ID != p.hold && !p.holdEnded {
		select {
		case p.overlap <- d.Event:
		default:
		}
	}
	p.log = append(p.log, "start "+d.Event)
	p.mu.Unlock()
	if d.ID == p.hold {
		close(p.held)
		<-p.release
	}
	out, err := p.inner.Process(ctx, d, prep)
	p.mu.Lock()
	if d.ID == p.hold {
		p.holdEnded = true
	}
	p.log = append(p.log, "end "+d.Event)
	p.mu.Unlock()
	return out, err
}

func (p *heldProcessor) calls() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.log...)
}

// Two deliveries of one issue never run at once, whether a second worker
// claims the later one or one worker claims both in a batch: the entity key
// Prepare names (the workspace and the issue's external ID) is leased for
// the first, and the second is postponed until it has finished. So the
// issue's events apply in the order they were received: opened, then
// closed.
func TestOneEntityProcessedInOrder(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		opts inbox.WorkerOptions
		// together: both deliveries are stored before the worker starts
		// (one claim takes both); otherwise the second arrives while the
		// first is being processed.
		together bool
	}{
		{"a second worker claims the later delivery", inbox.WorkerOptions{Concurrency: 2, BatchSize: 1}, false},
		{"one claim takes both", inbox.WorkerOptions{Concurrency: 1, BatchSize: 2}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
				t.Parallel()
				ctx := context.Background()
				e := newEnv(t, st, githubConn())
				opened, closed := e.github("issues.opened.json"), e.github("issues.closed.json")
				closed.ReceivedAt = opened.ReceivedAt.Add(time.Second)
				enqueue := func(ds ...store.Delivery) []string {
					t.Helper()
					for i := range ds {
						ds[i].Status, ds[i].Attempts, ds[i].NextAttemptAt = store.DeliveryQueued, 0, ds[i].ReceivedAt
					}
					ins, err := st.InsertDeliveries(ctx, ds)
					if err != nil {
						t.Fatalf("insert deliveries: %v", err)
					}
					ids := make([]string, len(ins))
					for i, in := range ins {
						ids[i] = in.ID
					}
					return ids
				}
				openedID := enqueue(opened)[0]
				closedID := ""
				if tc.together {
					closedID = enqueue(closed)[0]
				}
				proc := &heldProcessor{inner: e.app, hold: openedID, held: make(chan struct{}), release: make(chan struct{}),
					overlap: make(chan string, 1)}
				opts := tc.opts
				opts.MaxIdle, opts.MinIdle, opts.BusyDelay = 20*time.Millisecond, 5*time.Millisecond, 5*time.Millisecond
				w := inbox.NewWorker(st, proc, testLogger(t), time.Now, opts)
				runCtx, stop := context.WithCancel(ctx)
				stopped := make(chan struct{})
				go func() {
					defer close(stopped)
					_ = w.Run(runCtx)
				}()
				t.Cleanup(func() {
					close(proc.release) // never left waiting, whatever failed
					stop()
					<-stopped
				})

				waitUntil(t, "the opened delivery in process", func() bool {
					select {
					case <-proc.held:
						return true
					default:
						return false
					}
				})
				if !tc.together {
					closedID = enqueue(closed)[0]
					_ = st.Notify(ctx, inbox.Channel)
				}
				// The closed delivery is claimed and put back, its entity
				// recorded, while the opened one holds the entity.
				waitUntil(t, "the closed delivery postponed", func() bool {
					select {
					case ev := <-proc.overlap:
						t.Fatalf("%s was processed before the issue's earlier delivery had finished", ev)
					default:
					}
					d, err := st.GetDelivery(ctx, closedID)
					if err != nil {
						t.Fatalf("get delivery: %v", err)
					}
					return d.Status == store.DeliveryQueued && d.EntityKey == testWorkspace+"|"+ghIssueExt
				})

				proc.release <- struct{}{} // a receive, so Cleanup's close still works
				waitUntil(t, "both deliveries finished", func() bool {
					for _, id := range []string{openedID, closedID} {
						d, err := st.GetDelivery(ctx, id)
						if err != nil {
							t.Fatalf("get delivery: %v", err)
						}
						if d.Status != store.DeliverySucceeded {
							return false
						}
					}
					return true
				})
				want := []string{"start issues.opened", "end issues.opened", "start issues.closed", "end issues.closed"}
				if got := proc.calls(); !slices.Equal(got, want) {
					t.Errorf("process calls = %v, want %v", got, want)
				}
				task := e.onlyTask()
				if task.ArchivedAt == nil {
					t.Errorf("task after opened then closed = not archived, want archived")
				}
				if got := e.events(task.ID); got[store.EventTaskCreated] != 1 {
					t.Errorf("events = %v, want one task.created", got)
				}
			})
		})
	}
}

// waitUntil polls cond until it holds, failing the test after a deadline.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
