package inbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trackergateway/gateway/connectors"
	"github.com/trackergateway/gateway/internal/failure"
	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/store/sqlstore"
	"github.com/trackergateway/gateway/internal/store/storetest"
)

// Fake processor modes, chosen by the delivery body.
const (
	modeOK        = "ok"
	modeIgnore    = "ignore"
	modeTransient = "transient"  // always fails, retryably
	modePermanent = "permanent"  // fails with ErrPermanent
	modeInvalid   = "invalid"    // fails validation (failure.Invalid), as an over-long external ID does
	modePanicOnce = "panic-once" // panics on the first attempt, then succeeds
)

type fakeBody struct {
	Entity string `json:"entity"`
	Mode   string `json:"mode"`
}

// fakeProcessor records concurrency per entity; gates, when set, hold the
// first Process call of an entity until closed.
type fakeProcessor struct {
	mu        sync.Mutex
	inflight  map[string]int
	overlaps  int
	processed map[string]int // delivery ID → Process calls
	gates     map[string]chan struct{}
	gated     map[string]bool
	order     map[string][]string // entity → delivery IDs in the order processed
}

func newFakeProcessor() *fakeProcessor {
	return &fakeProcessor{
		inflight:  map[string]int{},
		processed: map[string]int{},
		gates:     map[string]chan struct{}{},
		gated:     map[string]bool{},
		order:     map[string][]string{},
	}
}

func (p *fakeProcessor) Prepare(_ context.Context, d store.Delivery) (Prepared, error) {
	var b fakeBody
	if err := json.Unmarshal(d.Body, &b); err != nil {
		return Prepared{}, fmt.Errorf("parse fake delivery: %v: %w", err, connectors.ErrMalformedPayload)
	}
	return Prepared{EntityKey: b.Entity, Event: "issue." + b.Mode}, nil
}

func (p *fakeProcessor) Process(ctx context.Context, d store.Delivery, prep Prepared) (Outcome, error) {
	var b fakeBody
	_ = json.Unmarshal(d.Body, &b)
	p.mu.Lock()
	p.inflight[prep.EntityKey]++
	if p.inflight[prep.EntityKey] > 1 {
		p.overlaps++
	}
	p.processed[d.ID]++
	p.order[prep.EntityKey] = append(p.order[prep.EntityKey], d.ID)
	gate := p.gates[prep.EntityKey]
	if gate != nil && !p.gated[prep.EntityKey] {
		p.gated[prep.EntityKey] = true
	} else {
		gate = nil
	}
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.inflight[prep.EntityKey]--
		p.mu.Unlock()
	}()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return Outcome{}, ctx.Err()
		}
	}

	switch b.Mode {
	case modeOK:
		return Outcome{TaskID: "task-" + b.Entity, ExternalID: "fake:" + b.Entity, Action: "create", Result: "created"}, nil
	case modeIgnore:
		return Outcome{Status: store.DeliveryIgnored, Action: "ignore", Result: "ignored"}, nil
	case modeTransient:
		return Outcome{}, errors.New("upstream timed out")
	case modePermanent:
		return Outcome{}, fmt.Errorf("workspace %q does not exist: %w", "gone", ErrPermanent)
	case modeInvalid:
		return Outcome{}, fmt.Errorf("create task: %w", failure.New(failure.Invalid, "external_id is 300 bytes; at most 255 are allowed"))
	case modePanicOnce:
		if d.Attempts == 1 {
			panic("boom")
		}
		return Outcome{TaskID: "task-" + b.Entity, Action: "create", Result: "created"}, nil
	}
	return Outcome{}, fmt.Errorf("unknown mode %q", b.Mode)
}

func (p *fakeProcessor) stats() (overlaps int, calls map[string]int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	calls = map[string]int{}
	for k, v := range p.processed {
		calls[k] = v
	}
	return p.overlaps, calls
}

var deliverySeq atomic.Int64

// insert stores deliveries with the given bodies, received at now.
func insert(t *testing.T, st store.Store, now time.Time, bodies ...string) []string {
	t.Helper()
	ds := make([]store.Delivery, len(bodies))
	for i, b := range bodies {
		ds[i] = store.Delivery{ConnectionID: connFake, Provider: fakeProvider, Event: "issue",
			DeliveryKey: fmt.Sprintf("key-%d", deliverySeq.Add(1)), Headers: `{}`, Body: []byte(b), ReceivedAt: now}
	}
	res, err := st.InsertDeliveries(context.Background(), ds)
	if err != nil {
		t.Fatalf("insert deliveries: %v", err)
	}
	ids := make([]string, len(res))
	for i, r := range res {
		ids[i] = r.ID
	}
	return ids
}

func body(entity, mode string) string {
	return fmt.Sprintf(`{"entity":%q,"mode":%q}`, entity, mode)
}

func getDelivery(t *testing.T, st store.Store, id string) store.Delivery {
	t.Helper()
	d, err := st.GetDelivery(context.Background(), id)
	if err != nil {
		t.Fatalf("get delivery %s: %v", id, err)
	}
	return d
}

// waitStatus polls until the delivery has status; tick runs between polls
// (e.g. to move the clock).
func waitStatus(t *testing.T, st store.Store, id, status string, tick func()) store.Delivery {
	t.Helper()
	var d store.Delivery
	waitFor(t, fmt.Sprintf("delivery %s to be %s", id, status), func() bool {
		d = getDelivery(t, st, id)
		if d.Status == status {
			return true
		}
		if tick != nil {
			tick()
		}
		return false
	})
	return d
}

// fastOptions keep real-time idle waits short; the clock is the test's.
func fastOptions(o WorkerOptions) WorkerOptions {
	o.MaxIdle = 20 * time.Millisecond
	o.MinIdle = 5 * time.Millisecond
	return o
}

func startWorker(t *testing.T, st store.Store, proc Processor, now func() time.Time, opts WorkerOptions) {
	t.Helper()
	w := NewWorker(st, proc, testLogger(t), now, fastOptions(opts))
	runInBackground(t, w.Run)
}

func TestWorkerOutcomes(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		clock := newTestClock()
		start := clock.Now()
		proc := newFakeProcessor()
		// The poison deliveries come first: the ones after them must still
		// succeed.
		ids := insert(t, st, start,
			body("e-perm", modePermanent),
			`this is not json`,
			body("e-transient", modeTransient),
			body("e-ok", modeOK),
			body("", modeIgnore),
			body("e-invalid", modeInvalid),
		)
		startWorker(t, st, proc, clock.Now, WorkerOptions{Concurrency: 2})

		tests := []struct {
			name          string
			id            string
			wantStatus    string
			wantAttempts  int
			wantEvent     string
			wantLastError string // substring; "" means none
			wantTaskID    string
			wantProcessed bool
		}{
			{"permanent", ids[0], store.DeliveryFailed, 1, "issue.permanent", `workspace "gone" does not exist: permanent failure`, "", true},
			{"malformed", ids[1], store.DeliveryFailed, 1, "issue", "malformed payload", "", true},
			{"transient", ids[2], store.DeliveryRetrying, 1, "issue.transient", "upstream timed out", "", false},
			{"success", ids[3], store.DeliverySucceeded, 1, "issue.ok", "", "task-e-ok", true},
			{"ignored", ids[4], store.DeliveryIgnored, 1, "issue.ignore", "", "", true},
			// Validation fails the same way on every attempt: at once.
			{"invalid", ids[5], store.DeliveryFailed, 1, "issue.invalid", "external_id is 300 bytes", "", true},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				d := waitStatus(t, st, tt.id, tt.wantStatus, nil)
				if d.Attempts != tt.wantAttempts {
					t.Errorf("attempts = %d, want %d", d.Attempts, tt.wantAttempts)
				}
				if d.Event != tt.wantEvent {
					t.Errorf("event = %q, want %q", d.Event, tt.wantEvent)
				}
				if tt.wantLastError == "" && d.LastError != "" {
					t.Errorf("last_error = %q, want none", d.LastError)
				}
				if !strings.Contains(d.LastError, tt.wantLastError) {
					t.Errorf("last_error = %q, want it to contain %q", d.LastError, tt.wantLastError)
				}
				if d.OutcomeTaskID != tt.wantTaskID {
					t.Errorf("outcome task = %q, want %q", d.OutcomeTaskID, tt.wantTaskID)
				}
				if got := d.ProcessedAt != nil; got != tt.wantProcessed {
					t.Errorf("processed = %v, want %v", got, tt.wantProcessed)
				}
				if d.LeaseOwner != "" {
					t.Errorf("lease owner = %q, want none after finishing", d.LeaseOwner)
				}
			})
		}

		// The retry is scheduled by the backoff of attempt 1: 1s ± 20%.
		d := getDelivery(t, st, ids[2])
		wait := d.NextAttemptAt.Sub(start)
		if lo, hi := 800*time.Millisecond, 1200*time.Millisecond; wait < lo || wait > hi {
			t.Errorf("retry scheduled %v after the attempt, want within [%v, %v]", wait, lo, hi)
		}
		if got := getDelivery(t, st, ids[3]); got.OutcomeExternalID != "fake:e-ok" || got.OutcomeAction != "create" || got.OutcomeResult != "created" {
			t.Errorf("success outcome = %q/%q/%q, want fake:e-ok/create/created", got.OutcomeExternalID, got.OutcomeAction, got.OutcomeResult)
		}
	})
}

func TestWorkerRetriesUntilMaxAttempts(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		clock := newTestClock()
		ids := insert(t, st, clock.Now(), body("e1", modeTransient))
		startWorker(t, st, newFakeProcessor(), clock.Now, WorkerOptions{MaxAttempts: 3})

		for attempt := 1; attempt < 3; attempt++ {
			waitFor(t, fmt.Sprintf("attempt %d to be recorded", attempt), func() bool {
				d := getDelivery(t, st, ids[0])
				return d.Status == store.DeliveryRetrying && d.Attempts == attempt
			})
			d := getDelivery(t, st, ids[0])
			if !d.NextAttemptAt.After(clock.Now()) {
				t.Errorf("attempt %d: next_attempt_at %v not after now %v", attempt, d.NextAttemptAt, clock.Now())
			}
			// Not due yet: the retry waits for the clock.
			clock.Advance(d.NextAttemptAt.Sub(clock.Now()))
			if err := st.Notify(context.Background(), Channel); err != nil {
				t.Fatalf("notify: %v", err)
			}
		}
		d := waitStatus(t, st, ids[0], store.DeliveryFailed, nil)
		if d.Attempts != 3 {
			t.Errorf("attempts = %d, want 3", d.Attempts)
		}
		if want := "gave up after 3 attempts: upstream timed out"; !strings.Contains(d.LastError, want) {
			t.Errorf("last_error = %q, want it to contain %q", d.LastError, want)
		}
	})
}

// leaseFailingStore fails every entity lease write.
type leaseFailingStore struct{ store.Store }

var errLeaseWrite = errors.New("lease write failed")

func (leaseFailingStore) AcquireEntityLeases(context.Context, string, []store.EntityLease, time.Time, time.Time) ([]bool, error) {
	return nil, errLeaseWrite
}

// TestWorkerLeaseFailure: when the write of a batch's entity leases fails,
// every delivery of the batch is retried later, none processed without its
// lease.
func TestWorkerLeaseFailure(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		clock := newTestClock()
		ids := insert(t, st, clock.Now(), body("e1", modeOK), body("e2", modeOK))
		proc := newFakeProcessor()
		startWorker(t, leaseFailingStore{st}, proc, clock.Now, WorkerOptions{Concurrency: 1})
		for _, id := range ids {
			d := waitStatus(t, st, id, store.DeliveryRetrying, nil)
			if d.Attempts != 1 || !strings.Contains(d.LastError, errLeaseWrite.Error()) {
				t.Errorf("delivery %s: attempts %d, last_error %q; want 1 and the lease failure", id, d.Attempts, d.LastError)
			}
		}
		if _, calls := proc.stats(); len(calls) != 0 {
			t.Errorf("processed without a lease: %v", calls)
		}
	})
}

func TestWorkerRecoversPanic(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		clock := newTestClock()
		ids := insert(t, st, clock.Now(), body("e-panic", modePanicOnce))
		startWorker(t, st, newFakeProcessor(), clock.Now, WorkerOptions{Concurrency: 1})

		d := waitStatus(t, st, ids[0], store.DeliveryRetrying, nil)
		if d.Attempts != 1 || !strings.Contains(d.LastError, "panic: boom") {
			t.Errorf("after panic: attempts %d, last_error %q; want 1 and the panic text", d.Attempts, d.LastError)
		}
		// The same (only) goroutine keeps working.
		later := insert(t, st, clock.Now(), body("e-other", modeOK))
		waitStatus(t, st, later[0], store.DeliverySucceeded, nil)

		clock.Advance(2 * time.Second)
		d = waitStatus(t, st, ids[0], store.DeliverySucceeded, nil)
		if d.Attempts != 2 {
			t.Errorf("attempts = %d, want 2", d.Attempts)
		}
	})
}

func TestWorkerReclaimsExpiredLease(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		clock := newTestClock()
		ids := insert(t, st, clock.Now(), body("e1", modeOK))
		// A worker that claims and dies.
		claimed, err := st.ClaimDeliveries(context.Background(), "dead-worker", clock.Now(), DefaultLease, 10)
		if err != nil || len(claimed) != 1 {
			t.Fatalf("claim = %d deliveries, %v; want 1", len(claimed), err)
		}
		if _, err := st.AcquireEntityLeases(context.Background(), "dead-worker", []store.EntityLease{{EntityKey: "e1", DeliveryID: ids[0]}},
			clock.Now(), clock.Now().Add(DefaultLease)); err != nil {
			t.Fatalf("acquire entity lease: %v", err)
		}

		proc := newFakeProcessor()
		startWorker(t, st, proc, clock.Now, WorkerOptions{Lease: DefaultLease})
		if d := getDelivery(t, st, ids[0]); d.Status != store.DeliveryProcessing || d.LeaseOwner != "dead-worker" {
			t.Errorf("before expiry: status %s owner %s, want processing by dead-worker", d.Status, d.LeaseOwner)
		}

		clock.Advance(DefaultLease + time.Second)
		d := waitStatus(t, st, ids[0], store.DeliverySucceeded, nil)
		if d.Attempts != 2 {
			t.Errorf("attempts = %d, want 2 (the dead worker's attempt counts)", d.Attempts)
		}
		if _, calls := proc.stats(); calls[ids[0]] != 1 {
			t.Errorf("Process calls = %d, want 1", calls[ids[0]])
		}
	})
}

// TestWorkerSerializesEntity: deliveries of one entity are never processed
// concurrently; the ones that find their entity busy wait without spending
// an attempt.
func TestWorkerSerializesEntity(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		proc := newFakeProcessor()
		gate := make(chan struct{})
		proc.gates["A"] = gate
		var bodies []string
		for range 5 {
			bodies = append(bodies, body("A", modeOK), body("B", modeOK))
		}
		ids := insert(t, st, time.Now(), bodies...)
		startWorker(t, st, proc, time.Now, WorkerOptions{Concurrency: 4, BusyDelay: time.Millisecond})

		// While the first delivery of A is held in Process, another one of A
		// is put back with its entity recorded.
		waitFor(t, "a delivery of A to be postponed", func() bool {
			ds, err := st.ListDeliveries(context.Background(), store.DeliveryFilter{Status: store.DeliveryQueued, Limit: 100})
			if err != nil {
				t.Fatalf("list: %v", err)
			}
			for _, d := range ds.Deliveries {
				if d.EntityKey == "A" {
					return true
				}
			}
			return false
		})
		close(gate)

		for _, id := range ids {
			d := waitStatus(t, st, id, store.DeliverySucceeded, nil)
			if d.Attempts != 1 {
				t.Errorf("delivery %s attempts = %d, want 1 (waiting for the entity is not an attempt)", id, d.Attempts)
			}
		}
		overlaps, calls := proc.stats()
		if overlaps != 0 {
			t.Errorf("overlapping Process calls on one entity = %d, want 0", overlaps)
		}
		for _, id := range ids {
			if calls[id] != 1 {
				t.Errorf("delivery %s processed %d times, want 1", id, calls[id])
			}
		}
	})
}

// TestWorkerKeepsEntityOrder: deliveries of one entity claimed in one batch
// are processed in the order they were received, the later ones after the
// earlier has finished.
func TestWorkerKeepsEntityOrder(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		proc := newFakeProcessor()
		ids := insert(t, st, time.Now(), body("A", modeOK), body("B", modeOK), body("A", modeOK), body("A", modeOK))
		startWorker(t, st, proc, time.Now, WorkerOptions{Concurrency: 1, BatchSize: 16, BusyDelay: time.Millisecond})
		for _, id := range ids {
			waitStatus(t, st, id, store.DeliverySucceeded, nil)
		}
		proc.mu.Lock()
		got := proc.order["A"]
		proc.mu.Unlock()
		if want := []string{ids[0], ids[2], ids[3]}; !slices.Equal(got, want) {
			t.Errorf("deliveries of A processed in the order %v, want %v (as received)", got, want)
		}
	})
}

// TestWorkersOfTwoReplicasSerializeEntity: two workers (as two replicas
// would) share the store; per-entity serialization holds across them.
func TestWorkersOfTwoReplicasSerializeEntity(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		proc := newFakeProcessor()
		var bodies []string
		for range 10 {
			bodies = append(bodies, body("A", modeOK), body("B", modeOK), body("C", modeOK))
		}
		ids := insert(t, st, time.Now(), bodies...)
		startWorker(t, st, proc, time.Now, WorkerOptions{Concurrency: 3, BusyDelay: time.Millisecond})
		startWorker(t, st, proc, time.Now, WorkerOptions{Concurrency: 3, BusyDelay: time.Millisecond})
		for _, id := range ids {
			waitStatus(t, st, id, store.DeliverySucceeded, nil)
		}
		if overlaps, _ := proc.stats(); overlaps != 0 {
			t.Errorf("overlapping Process calls on one entity = %d, want 0", overlaps)
		}
	})
}

func TestWorkerWakesOnNotification(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		// An hour-long idle cap: only the receiver's notification wakes the
		// worker in time.
		warm := insert(t, st, time.Now(), body("e0", modeOK))
		w := NewWorker(st, newFakeProcessor(), testLogger(t), nil, WorkerOptions{MaxIdle: time.Hour})
		runInBackground(t, w.Run)
		waitStatus(t, st, warm[0], store.DeliverySucceeded, nil)
		waitListening(t, st)

		_, h := startReceiver(t, st, nil, nil, ReceiverOptions{})
		rec := serve(h, webhook(connFake, []byte(body("e1", modeOK)), "wake-1", secretCurrent))
		waitStatus(t, st, decodeReceipt(t, rec).DeliveryID, store.DeliverySucceeded, nil)
	})
}

// waitListening returns once notifications on Channel reach this process
// (on PostgreSQL the LISTEN connection starts asynchronously).
func waitListening(t *testing.T, st store.Store) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan struct{})
	go func() {
		if st.WaitForNotification(ctx, Channel) == nil {
			close(got)
		}
	}()
	waitFor(t, "notifications to be delivered", func() bool {
		if err := st.Notify(ctx, Channel); err != nil {
			t.Fatalf("notify: %v", err)
		}
		select {
		case <-got:
			return true
		default:
			return false
		}
	})
}

// TestWorkerStopPutsBack: a delivery in flight when the worker stops goes
// back to the queue without spending an attempt, and Run returns.
func TestWorkerStopPutsBack(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		proc := newFakeProcessor()
		proc.gates["A"] = make(chan struct{}) // never opened
		ids := insert(t, st, time.Now(), body("A", modeOK))
		w := NewWorker(st, proc, testLogger(t), nil, fastOptions(WorkerOptions{Concurrency: 1}))
		stop := runInBackground(t, w.Run)
		waitFor(t, "processing to start", func() bool {
			_, calls := proc.stats()
			return calls[ids[0]] == 1
		})
		stop()
		d := getDelivery(t, st, ids[0])
		if d.Status != store.DeliveryQueued || d.Attempts != 0 || d.LeaseOwner != "" {
			t.Errorf("after stop: status %s attempts %d owner %q, want queued, 0, none", d.Status, d.Attempts, d.LeaseOwner)
		}
		// Its entity lease was released: another worker takes it at once.
		proc2 := newFakeProcessor()
		startWorker(t, st, proc2, nil, WorkerOptions{})
		waitStatus(t, st, ids[0], store.DeliverySucceeded, nil)
	})
}

func TestRetryInterval(t *testing.T) {
	t.Parallel()
	tests := []struct {
		attempts int
		base     time.Duration
	}{
		{0, time.Second},
		{1, time.Second},
		{2, 2 * time.Second},
		{3, 4 * time.Second},
		{5, 16 * time.Second},
		{8, 128 * time.Second},
		{9, 256 * time.Second},
		{10, 5 * time.Minute},
		{1000, 5 * time.Minute},
	}
	for _, tt := range tests {
		lo := time.Duration(float64(tt.base) * 0.8)
		hi := time.Duration(float64(tt.base)*1.2) + 1
		for range 20 {
			if got := RetryInterval(tt.attempts); got < lo || got > hi {
				t.Errorf("RetryInterval(%d) = %v, want within [%v, %v]", tt.attempts, got, lo, hi)
			}
		}
	}
}

func TestIsPermanent(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("x: %w", ErrPermanent), true},
		{fmt.Errorf("parse: %w", connectors.ErrMalformedPayload), true},
		{fmt.Errorf("insert task: %w", store.ErrInvalidText), true},
		{fmt.Errorf("create task: %w", failure.New(failure.Invalid, "external_id contains a control character")), true},
		{fmt.Errorf("create task: %w", failure.New(failure.Conflict, "conflict")), false},
		{fmt.Errorf("create task: %w", failure.New(failure.Unavailable, "storage unavailable")), false},
		{fmt.Errorf("insert task: %w", store.ErrUnavailable), false},
		{errors.New("timeout"), false},
		{context.DeadlineExceeded, false},
	}
	for _, tt := range tests {
		if got := IsPermanent(tt.err); got != tt.want {
			t.Errorf("IsPermanent(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

// TestWorkerYieldsToAcknowledgements: while the receiver is busy the worker
// claims nothing (up to MaxYield), and processes as soon as it is not.
func TestWorkerYieldsToAcknowledgements(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		clock := newTestClock()
		var busy atomic.Bool
		busy.Store(true)
		var asked atomic.Int64
		ids := insert(t, st, clock.Now(), body("e-yield", modeOK))
		startWorker(t, st, newFakeProcessor(), clock.Now, WorkerOptions{Concurrency: 1, MaxYield: time.Hour,
			Yield: func() bool { asked.Add(1); return busy.Load() }})
		waitFor(t, "the worker to ask whether acknowledgements wait", func() bool { return asked.Load() >= 3 })
		if d := getDelivery(t, st, ids[0]); d.Status != store.DeliveryQueued || d.Attempts != 0 {
			t.Fatalf("delivery while yielding = %s (attempts %d), want queued and unclaimed", d.Status, d.Attempts)
		}
		busy.Store(false)
		waitStatus(t, st, ids[0], store.DeliverySucceeded, nil)
	})
}

// TestWorkerYieldIsBounded: a receiver that never stops being busy delays
// processing by at most MaxYield per claim; it never starves it.
func TestWorkerYieldIsBounded(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		clock := newTestClock()
		ids := insert(t, st, clock.Now(), body("e-busy-1", modeOK), body("e-busy-2", modeOK))
		startWorker(t, st, newFakeProcessor(), clock.Now, WorkerOptions{Concurrency: 1, MaxYield: 20 * time.Millisecond,
			Yield: func() bool { return true }})
		for _, id := range ids {
			waitStatus(t, st, id, store.DeliverySucceeded, nil)
		}
	})
}

// wakeCountingStore counts claims and idle waits, and delivers
// notifications only when the test sends one.
type wakeCountingStore struct {
	store.Store
	notes         chan struct{}
	claims, idles atomic.Int64
}

func (s *wakeCountingStore) ClaimDeliveries(ctx context.Context, owner string, now time.Time, lease time.Duration, limit int) ([]store.Delivery, error) {
	s.claims.Add(1)
	return s.Store.ClaimDeliveries(ctx, owner, now, lease, limit)
}

func (s *wakeCountingStore) NextDeliveryDue(ctx context.Context) (time.Time, error) {
	s.idles.Add(1)
	return s.Store.NextDeliveryDue(ctx)
}

func (s *wakeCountingStore) WaitForNotification(ctx context.Context, _ string) error {
	select {
	case <-s.notes:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TestWorkerWakesOneGoroutinePerNotification: a notification sends one idle
// goroutine claiming, not all of them; a goroutine that claims a full batch
// brings in another.
func TestWorkerWakesOneGoroutinePerNotification(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		clock := newTestClock()
		cs := &wakeCountingStore{Store: st, notes: make(chan struct{})}
		const goroutines = 4
		w := NewWorker(cs, newFakeProcessor(), testLogger(t), clock.Now, WorkerOptions{Concurrency: goroutines,
			BatchSize: 2, MaxIdle: time.Hour})
		runInBackground(t, w.Run)
		idleAt := func(n int64) {
			waitFor(t, fmt.Sprintf("%d idle waits", n), func() bool { return cs.idles.Load() == n })
		}
		idleAt(goroutines) // each claimed nothing and idles

		// One delivery: one goroutine claims it, then claims again (nothing)
		// and idles; the others never move.
		id := insert(t, st, clock.Now(), body("e-one", modeOK))[0]
		cs.notes <- struct{}{}
		waitStatus(t, st, id, store.DeliverySucceeded, nil)
		idleAt(goroutines + 1)
		if got, want := cs.claims.Load(), int64(goroutines+2); got != want {
			t.Errorf("claims after one delivery = %d, want %d (one goroutine woken)", got, want)
		}

		// A full batch brings in a second goroutine.
		ids := insert(t, st, clock.Now(), body("e-a", modeOK), body("e-b", modeOK), body("e-c", modeOK))
		cs.notes <- struct{}{}
		for _, id := range ids {
			waitStatus(t, st, id, store.DeliverySucceeded, nil)
		}
		waitFor(t, "a second goroutine to join", func() bool { return cs.idles.Load() >= goroutines+3 })
	})
}

// TestWorkerBatchSize: a worker claims SerialBatchSize deliveries at a time
// on a store whose writes run one at a time (SQLite) and DefaultBatchSize
// on PostgreSQL, unless the options set a size.
func TestWorkerBatchSize(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		wantDefault := DefaultBatchSize
		if st.Dialect() == store.DialectSQLite {
			wantDefault = SerialBatchSize
		}
		tests := []struct {
			name string
			opts WorkerOptions
			want int
		}{
			{"default", WorkerOptions{}, wantDefault},
			{"set", WorkerOptions{BatchSize: 3}, 3},
		}
		for _, tt := range tests {
			w := NewWorker(st, newFakeProcessor(), testLogger(t), time.Now, tt.opts)
			if w.opts.BatchSize != tt.want {
				t.Errorf("%s: BatchSize = %d, want %d", tt.name, w.opts.BatchSize, tt.want)
			}
		}
	})
}

// TestWorkerBusy: the worker is busy while a claim that came back full (a
// backlog) is being processed, and while acknowledgements wait (Yield);
// idle otherwise. The outbound worker yields to it.
func TestWorkerBusy(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		clock := newTestClock()
		proc := newFakeProcessor()
		gate := make(chan struct{})
		proc.gates["e-backlog-1"] = gate
		var acks atomic.Bool
		w := NewWorker(st, proc, testLogger(t), clock.Now, fastOptions(WorkerOptions{Concurrency: 1, BatchSize: 2,
			Yield: func() bool { return acks.Load() }}))
		if w.Busy() {
			t.Fatal("busy before anything arrived")
		}
		ids := insert(t, st, clock.Now(), body("e-backlog-1", modeOK), body("e-backlog-2", modeOK), body("e-backlog-3", modeOK))
		runInBackground(t, w.Run)
		waitFor(t, "the full claim's first delivery processing", func() bool {
			proc.mu.Lock()
			defer proc.mu.Unlock()
			return proc.gated["e-backlog-1"]
		})
		if !w.Busy() {
			t.Error("not busy while a full claim is processed")
		}
		close(gate)
		for _, id := range ids {
			waitStatus(t, st, id, store.DeliverySucceeded, nil)
		}
		waitFor(t, "the backlog's end", func() bool { return !w.Busy() })
		acks.Store(true)
		if !w.Busy() {
			t.Error("not busy while acknowledgements wait")
		}
	})
}
