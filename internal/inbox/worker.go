package inbox

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v4"
	"go.opentelemetry.io/otel/trace"

	"github.com/trackergateway/gateway/connectors"
	"github.com/trackergateway/gateway/internal/failure"
	"github.com/trackergateway/gateway/internal/metrics"
	"github.com/trackergateway/gateway/internal/priority"
	"github.com/trackergateway/gateway/internal/store"
)

// Prepared is what processing needs to know before it may start.
type Prepared struct {
	// EntityKey names the source entity; deliveries sharing it are never
	// processed concurrently. Empty: the delivery needs no serialization
	// (e.g. a ping).
	EntityKey string
	// Event is the refined event name ("issues.opened"); empty keeps the
	// received one.
	Event string
	// Parsed is the processor's own state from Prepare (the parsed event),
	// handed back to Process so a delivery is parsed once.
	Parsed any
}

// Outcome is the result of a processed delivery.
type Outcome struct {
	// Status is store.DeliverySucceeded (the default when empty),
	// store.DeliveryIgnored or store.DeliverySuppressed.
	Status     string
	TaskID     string
	ExternalID string
	Action     string
	Result     string
}

// Processor turns deliveries into task actions.
type Processor interface {
	// Prepare parses the delivery. Errors wrapping ErrPermanent or
	// connectors.ErrMalformedPayload fail the delivery without retries.
	Prepare(ctx context.Context, d store.Delivery) (Prepared, error)
	// Process applies the delivery; it runs holding the entity lease. Errors
	// are retried with backoff unless they wrap ErrPermanent or
	// connectors.ErrMalformedPayload.
	Process(ctx context.Context, d store.Delivery, p Prepared) (Outcome, error)
}

// ErrPermanent marks a processing error that no retry can fix.
var ErrPermanent = errors.New("permanent failure")

// Worker defaults.
const (
	DefaultConcurrency = 4
	DefaultLease       = 30 * time.Second
	DefaultBatchSize   = 16
	// SerialBatchSize is the default BatchSize on a store whose writes run
	// one at a time (SQLite's one writer), where a batch's transactions
	// share commits, so a larger batch is fewer commits per task: 15–25%
	// more tasks/s in a drain, latencies unchanged. On PostgreSQL it made
	// the receive-to-task p99 worse (docs/benchmarks.md, "Larger claims on
	// SQLite").
	SerialBatchSize    = 32
	DefaultMaxYield    = time.Second
	DefaultMaxAttempts = 8
	DefaultMaxIdle     = time.Second
	DefaultMinIdle     = 100 * time.Millisecond
	DefaultBusyDelay   = 100 * time.Millisecond
)

// Retry backoff (docs/design.md: exponential, cenkalti/backoff).
const (
	retryInitial       = time.Second
	retryMultiplier    = 2
	retryMaxInterval   = 5 * time.Minute
	retryRandomization = 0.2
)

// maxLastErrorBytes bounds the stored last_error.
const maxLastErrorBytes = 4096

// finishTimeout bounds the bookkeeping writes that still run when the worker
// is stopping.
const finishTimeout = 10 * time.Second

// WorkerOptions tune a Worker; zero values take the defaults.
type WorkerOptions struct {
	// Concurrency is the number of goroutines claiming and processing.
	Concurrency int
	// Lease is how long a claimed delivery (and its entity) stays leased; a
	// worker that dies is replaced once it expires. Processing of one
	// delivery is cancelled after Lease.
	Lease time.Duration
	// Yield, when set, reports that acknowledgements are waiting (the
	// Receiver's Busy): before each claim the worker then pauses, a few
	// milliseconds at a time and at most MaxYield in all, so a burst of
	// webhooks is acknowledged first and processed right after. With the
	// default of a second, senders that keep the receiver busy slow
	// processing to a trickle (each goroutine claims once a second) instead
	// of sharing the CPU with it; the backlog is durable and drains at full
	// speed once the burst ends.
	Yield    func() bool
	MaxYield time.Duration
	// BatchSize is how many deliveries one goroutine claims at a time and
	// processes concurrently; their transactions share commits where the
	// store shares them (store.WithSharedCommit), and their outcomes are
	// written together. One processes a delivery at a time. Zero means
	// SerialBatchSize on a store that serializes writes, DefaultBatchSize
	// otherwise.
	BatchSize int
	// MaxAttempts is the number of attempts after which a failing delivery
	// ends failed.
	MaxAttempts int
	// MaxIdle caps an idle sleep, so expired leases and due retries are
	// noticed without a notification.
	MaxIdle time.Duration
	// MinIdle is the idle sleep when deliveries are due but none could be
	// claimed (their entities are leased): no busy polling.
	MinIdle time.Duration
	// BusyDelay postpones a delivery whose entity another worker holds; the
	// wait does not count as an attempt.
	BusyDelay time.Duration
	// Metrics, when set, records finished deliveries and their task actions.
	Metrics *metrics.Metrics
}

func (o WorkerOptions) withDefaults() WorkerOptions {
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.Lease <= 0 {
		o.Lease = DefaultLease
	}
	if o.BatchSize <= 0 {
		o.BatchSize = DefaultBatchSize
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = DefaultMaxAttempts
	}
	if o.MaxIdle <= 0 {
		o.MaxIdle = DefaultMaxIdle
	}
	if o.MinIdle <= 0 {
		o.MinIdle = min(DefaultMinIdle, o.MaxIdle)
	}
	if o.BusyDelay <= 0 {
		o.BusyDelay = DefaultBusyDelay
	}
	if o.MaxYield <= 0 {
		o.MaxYield = DefaultMaxYield
	}
	return o
}

// Worker processes the inbox.
type Worker struct {
	st     store.Store
	proc   Processor
	logger *slog.Logger
	now    func() time.Time
	opts   WorkerOptions

	// wakeups holds one token per wake-up owed to an idle goroutine: a
	// notification wakes one, and a goroutine that claimed a full batch
	// passes a token on, so a burst brings in as many goroutines as it
	// needs and a single delivery does not send every idle one claiming.
	// A notification that arrives while every goroutine is busy stays
	// here for the next one that idles, so it is never missed.
	wakeups chan struct{}

	// drain is closed by Drain: stop claiming, finish what is in hand.
	drain     chan struct{}
	drainOnce sync.Once

	// jobs runs the claims' jobs on goroutines that keep their stacks.
	jobs *jobRunner

	// fullClaims counts the claims that came back full (deliveries were
	// waiting beyond what they took) and are still being processed;
	// fullClaimEnded is when the last one ended (unix nanoseconds). Busy
	// reads them.
	fullClaims, fullClaimEnded atomic.Int64
}

// backlogHold is how long after a full claim's batch the worker still
// counts as having a backlog (Busy): the next claim of a backlog being
// worked through comes well within it.
const backlogHold = 100 * time.Millisecond

// Busy reports whether the intake has work waiting: deliveries beyond what
// a claim took (a full claim in progress, or ended within backlogHold), or
// acknowledgements (Yield). Background work that can wait yields to it
// (the outbound worker's Options.Yield): a burst of webhooks becomes tasks
// first, and their events go out right after.
func (w *Worker) Busy() bool {
	if w.fullClaims.Load() > 0 || time.Since(time.Unix(0, w.fullClaimEnded.Load())) < backlogHold {
		return true
	}
	return w.opts.Yield != nil && w.opts.Yield()
}

// NewWorker returns a worker; Run starts it.
func NewWorker(st store.Store, proc Processor, logger *slog.Logger, now func() time.Time, opts WorkerOptions) *Worker {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if now == nil {
		now = time.Now
	}
	if opts.BatchSize <= 0 && serializesWrites(st) {
		opts.BatchSize = SerialBatchSize
	}
	opts = opts.withDefaults()
	return &Worker{st: st, proc: proc, logger: logger, now: now, opts: opts,
		wakeups: make(chan struct{}, opts.Concurrency), drain: make(chan struct{}), jobs: newJobRunner(jobRunnerIdle)}
}

// Run processes deliveries with Concurrency goroutines until ctx ends or
// Drain is called, then returns nil once every goroutine has stopped.
//
// There are two ways to stop, for a graceful shutdown: Drain stops the
// claiming, and each goroutine first finishes the delivery it is processing
// under ctx, which Drain does not cancel (claimed deliveries it has not
// started are put back). Cancelling ctx stops at once: a delivery being
// processed is put back, its attempt not counted. A shutdown drains, and
// cancels ctx when its time is up.
func (w *Worker) Run(ctx context.Context) error {
	// claimCtx ends the waits for work (idle, notifications) once Drain is
	// called; it never reaches the processing.
	claimCtx, stopClaiming := context.WithCancel(ctx)
	defer stopClaiming()
	go func() {
		select {
		case <-w.drain:
			stopClaiming()
		case <-claimCtx.Done():
		}
	}()
	var wg sync.WaitGroup
	wg.Go(func() { w.listen(claimCtx) })
	for range w.opts.Concurrency {
		// Each goroutine has its own owner: leases are never shared, so one
		// goroutine can never release another's entity lease.
		owner := newOwnerID()
		wg.Go(func() { w.loop(ctx, claimCtx, owner) })
	}
	wg.Wait()
	return nil
}

// Drain makes Run claim nothing more and return once the deliveries in
// hand are recorded. It may be called more than once, and before Run.
func (w *Worker) Drain() {
	w.drainOnce.Do(func() { close(w.drain) })
}

// newOwnerID returns <hostname>-<pid>-<random>.
func newOwnerID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	var b [6]byte
	_, _ = rand.Read(b[:]) // never fails since Go 1.24
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// listen turns store notifications into wake-ups of the idle goroutines.
func (w *Worker) listen(ctx context.Context) {
	for ctx.Err() == nil {
		if err := w.st.WaitForNotification(ctx, Channel); err != nil {
			if ctx.Err() != nil {
				return
			}
			w.logger.WarnContext(ctx, "wait for notification failed", "channel", Channel, "error", err)
			w.sleep(ctx, w.opts.MaxIdle)
			continue
		}
		w.wakeOne()
	}
}

// wakeOne wakes one idle goroutine (or the next to idle).
func (w *Worker) wakeOne() {
	select {
	case w.wakeups <- struct{}{}:
	default: // enough wake-ups are owed already
	}
}

// loop claims and processes until claimCtx ends or Drain is called;
// processing runs under ctx (see Run).
func (w *Worker) loop(ctx, claimCtx context.Context, owner string) {
	failing := false
	for w.claiming(claimCtx) {
		priority.Yield(claimCtx, w.opts.Yield, w.opts.MaxYield)
		if !w.claiming(claimCtx) {
			return
		}
		n, err := w.claimAndProcess(ctx, claimCtx, owner)
		if err != nil {
			if !w.claiming(claimCtx) {
				return
			}
			if !failing {
				w.logger.WarnContext(ctx, "claim deliveries failed", "owner", owner, "error", err)
				failing = true
			}
			w.sleep(claimCtx, w.opts.MaxIdle)
			continue
		}
		if failing {
			w.logger.InfoContext(ctx, "claim deliveries recovered", "owner", owner)
			failing = false
		}
		if n == 0 {
			w.idle(claimCtx)
		}
	}
}

// claiming reports whether the worker may claim and start deliveries. It
// reads the drain itself, not only claimCtx (which Run cancels a moment
// later), so nothing starts once Drain has returned.
func (w *Worker) claiming(claimCtx context.Context) bool {
	select {
	case <-w.drain:
		return false
	default:
		return claimCtx.Err() == nil
	}
}

// claimAndProcess claims one batch, processes its deliveries concurrently
// and records their outcomes as they finish (those that finish together in
// one transaction), returning how many deliveries it claimed. Their entities are distinct (a second delivery of
// an entity in the batch finds the entity leased and is postponed), and
// their transactions share commits (store.WithSharedCommit), so a batch
// costs a few commits instead of several per delivery. The claim runs under
// ctx, not claimCtx: a claim cut short by a drain could commit unseen and
// leave its deliveries leased to nobody until the lease expires. Deliveries
// of the batch not started when the drain comes are put back.
func (w *Worker) claimAndProcess(ctx, claimCtx context.Context, owner string) (int, error) {
	ds, err := w.st.ClaimDeliveries(ctx, owner, w.now(), w.opts.Lease, w.opts.BatchSize)
	if err != nil {
		return 0, err // the store's error names the claim already
	}
	if len(ds) == w.opts.BatchSize {
		w.fullClaims.Add(1)
		defer func() {
			w.fullClaimEnded.Store(time.Now().UnixNano())
			w.fullClaims.Add(-1)
		}()
		w.wakeOne() // there may be more: bring in another goroutine
	}
	jobs := make([]*job, len(ds))
	var wg sync.WaitGroup
	for i, d := range ds {
		if !w.claiming(claimCtx) {
			jobs[i] = &job{done: true, d: w.putBack(ctx, d)}
			continue
		}
		wg.Add(1)
		w.jobs.Go(claimCtx, func() {
			defer wg.Done()
			jobs[i] = w.prepareJob(ctx, d)
		})
	}
	wg.Wait()
	// A later delivery of an entity the batch already holds waits for it:
	// claims are oldest first, so an entity's deliveries keep their order.
	seen := map[string]bool{}
	for _, j := range jobs {
		if j.done || j.d.EntityKey == "" {
			continue
		}
		if seen[j.d.EntityKey] {
			j.done, j.d = true, w.postpone(ctx, j.d)
			j.cancel()
		}
		seen[j.d.EntityKey] = true
	}
	w.leaseEntities(ctx, owner, jobs)
	// Outcomes are written as they come: whatever has finished while the
	// previous write ran goes in the next one, so a slow delivery delays
	// neither the others' outcomes nor their entities' release.
	finished := make(chan store.Delivery, len(jobs))
	for _, j := range jobs {
		switch {
		case j.done:
			j.endSpan(j.d)
			finished <- j.d
		case !w.claiming(claimCtx):
			j.cancel()
			d := w.putBack(ctx, j.d)
			j.endSpan(d)
			finished <- d
		default:
			w.jobs.Go(claimCtx, func() {
				d := w.runJob(ctx, j)
				j.endSpan(d)
				finished <- d
			})
		}
	}
	for left := len(jobs); left > 0; {
		batch := []store.Delivery{<-finished}
	collect:
		for {
			select {
			case d := <-finished:
				batch = append(batch, d)
			default:
				break collect
			}
		}
		left -= len(batch)
		w.finish(ctx, owner, batch)
	}
	return len(ds), nil
}

// idle waits for a notification, the next due delivery, or MaxIdle.
func (w *Worker) idle(ctx context.Context) {
	wait := w.opts.MaxIdle
	due, err := w.st.NextDeliveryDue(ctx)
	if err == nil && !due.IsZero() {
		switch d := due.Sub(w.now()); {
		case d <= 0:
			// Due but not claimable: its entity is leased. Poll gently.
			wait = w.opts.MinIdle
		case d < wait:
			wait = d
		}
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-w.wakeups:
	case <-t.C:
	}
}

func (w *Worker) sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// job is one claimed delivery on its way through the batch.
type job struct {
	d    store.Delivery
	prep Prepared
	done bool // d is the state to record
	pctx context.Context
	// cancel ends pctx, which bounds the delivery's processing by the lease.
	cancel context.CancelFunc
	// span is the attempt's delivery.process span (nil for a job never
	// prepared).
	span trace.Span
}

// endSpan records the attempt's outcome on its span and ends it.
func (j *job) endSpan(d store.Delivery) {
	if j.span == nil {
		return
	}
	endProcessing(j.span, d)
}

// prepareJob parses a claimed delivery and names its entity.
func (w *Worker) prepareJob(ctx context.Context, d store.Delivery) *job {
	j := &job{d: d}
	j.pctx, j.cancel = context.WithTimeout(store.WithSharedCommit(ctx), w.opts.Lease)
	j.pctx, j.span = startProcessing(j.pctx, d)
	prep, err := w.prepare(j.pctx, d)
	if err != nil {
		j.done, j.d = true, w.fail(ctx, j.pctx, d, fmt.Errorf("prepare: %w", err))
		j.cancel()
		return j
	}
	j.prep = prep
	if prep.Event != "" {
		j.d.Event = cleanEvent(prep.Event)
	}
	j.d.EntityKey = entityKey(prep.EntityKey)
	return j
}

// leaseEntities takes the entity leases of the batch's jobs in one write
// (one statement, not one per delivery, on SQLite's one writer); a job
// whose entity another worker holds is postponed, and when the write fails
// every job that needed a lease fails its attempt. FinishDeliveries
// releases each lease with its delivery's outcome.
func (w *Worker) leaseEntities(ctx context.Context, owner string, jobs []*job) {
	var need []*job
	var leases []store.EntityLease
	for _, j := range jobs {
		if !j.done && j.d.EntityKey != "" {
			need = append(need, j)
			leases = append(leases, store.EntityLease{EntityKey: j.d.EntityKey, DeliveryID: j.d.ID})
		}
	}
	if len(need) == 0 {
		return
	}
	now := w.now()
	taken, err := w.st.AcquireEntityLeases(store.WithSharedCommit(ctx), owner, leases, now, now.Add(w.opts.Lease))
	for i, j := range need {
		switch {
		case err != nil:
			j.done, j.d = true, w.fail(ctx, j.pctx, j.d, fmt.Errorf("acquire entity lease: %w", err))
		case !taken[i]:
			j.done, j.d = true, w.postpone(ctx, j.d)
		default:
			continue
		}
		j.cancel()
	}
}

// runJob processes a delivery whose entity lease is held, returning the
// state to record.
func (w *Worker) runJob(ctx context.Context, j *job) store.Delivery {
	defer j.cancel()
	pctx, d, prep := j.pctx, j.d, j.prep
	out, err := w.process(pctx, d, prep)
	if err != nil {
		return w.fail(ctx, pctx, d, err)
	}
	switch out.Status {
	case "":
		out.Status = store.DeliverySucceeded
	case store.DeliverySucceeded, store.DeliveryIgnored, store.DeliverySuppressed:
	default:
		return w.fail(ctx, pctx, d, fmt.Errorf("processor returned status %q: %w", out.Status, ErrPermanent))
	}
	now := w.now()
	d.Status = out.Status
	d.LastError = ""
	d.NextAttemptAt = now
	d.ProcessedAt = &now
	d.OutcomeTaskID, d.OutcomeExternalID = cleanText(out.TaskID), cleanText(out.ExternalID)
	d.OutcomeAction, d.OutcomeResult = cleanText(out.Action), cleanText(out.Result)
	return d
}

// prepare calls the processor's Prepare, turning a panic into an error.
func (w *Worker) prepare(ctx context.Context, d store.Delivery) (p Prepared, err error) {
	defer w.recoverPanic(ctx, d, "prepare", &err)
	return w.proc.Prepare(ctx, d)
}

// process calls the processor's Process, turning a panic into an error: a
// poison delivery never kills the worker.
func (w *Worker) process(ctx context.Context, d store.Delivery, p Prepared) (o Outcome, err error) {
	defer w.recoverPanic(ctx, d, "process", &err)
	return w.proc.Process(ctx, d, p)
}

func (w *Worker) recoverPanic(ctx context.Context, d store.Delivery, stage string, err *error) {
	r := recover()
	if r == nil {
		return
	}
	w.logger.ErrorContext(ctx, "processor panicked", "delivery_id", d.ID, "connection", d.ConnectionID,
		"stage", stage, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
	*err = fmt.Errorf("panic: %v", r)
}

// postpone puts back a delivery whose entity another worker holds: queued,
// the attempt not counted, due a little later, entity recorded so claims skip
// it while that lease lives.
func (w *Worker) postpone(ctx context.Context, d store.Delivery) store.Delivery {
	d.Status = store.DeliveryQueued
	d.Attempts = max(d.Attempts-1, 0)
	d.NextAttemptAt = w.now().Add(w.opts.BusyDelay)
	d.ProcessedAt = nil
	w.logger.DebugContext(ctx, "delivery postponed: entity busy", "delivery_id", d.ID, "entity_key", d.EntityKey)
	return d
}

// fail records a failed attempt: put back uncounted when the worker is
// stopping, failed when permanent or out of attempts, retrying otherwise.
// pctx is the processing context, to tell a timeout from a shutdown.
func (w *Worker) fail(ctx, pctx context.Context, d store.Delivery, err error) store.Delivery {
	now := w.now()
	d.ProcessedAt = nil
	d.OutcomeTaskID, d.OutcomeExternalID, d.OutcomeAction, d.OutcomeResult = "", "", "", ""
	switch {
	case ctx.Err() != nil:
		return w.putBack(ctx, d)
	case errors.Is(pctx.Err(), context.DeadlineExceeded) && errors.Is(err, context.DeadlineExceeded):
		err = fmt.Errorf("processing exceeded the %s lease: %w", w.opts.Lease, err)
	}
	d.LastError = lastError(err)
	switch {
	case IsPermanent(err):
		d.Status = store.DeliveryFailed
		d.NextAttemptAt = now
		d.ProcessedAt = &now
	case d.Attempts >= w.opts.MaxAttempts:
		d.Status = store.DeliveryFailed
		d.LastError = lastError(fmt.Errorf("gave up after %d attempts: %w", d.Attempts, err))
		d.NextAttemptAt = now
		d.ProcessedAt = &now
	default:
		d.Status = store.DeliveryRetrying
		d.NextAttemptAt = now.Add(RetryInterval(d.Attempts))
		w.logger.InfoContext(ctx, "delivery will be retried", "delivery_id", d.ID, "connection", d.ConnectionID,
			"event", d.Event, "attempts", d.Attempts, "next_attempt_at", d.NextAttemptAt, "error", err)
	}
	return d
}

// putBack returns a claimed delivery to the queue because the worker is
// stopping: due at once, the attempt not counted.
func (w *Worker) putBack(ctx context.Context, d store.Delivery) store.Delivery {
	d.Status = store.DeliveryQueued
	d.Attempts = max(d.Attempts-1, 0)
	d.NextAttemptAt = w.now()
	d.ProcessedAt = nil
	d.OutcomeTaskID, d.OutcomeExternalID, d.OutcomeAction, d.OutcomeResult = "", "", "", ""
	w.logger.InfoContext(ctx, "delivery put back: worker stopping", "delivery_id", d.ID)
	return d
}

// finish writes the batch's new states, even when the worker is stopping.
func (w *Worker) finish(ctx context.Context, owner string, ds []store.Delivery) {
	if len(ds) == 0 {
		return
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
	defer cancel()
	lost, err := w.st.FinishDeliveries(fctx, ds, owner)
	if err != nil {
		// The leases expire and the deliveries are claimed again.
		for _, d := range ds {
			w.logger.ErrorContext(ctx, "record delivery outcome failed", "delivery_id", d.ID, "status", d.Status, "error", err)
		}
		return
	}
	for i, d := range ds {
		if lost[i] {
			// Our lease expired and another worker took the delivery over
			// (or an operator replayed it); its outcome is theirs to record.
			w.logger.WarnContext(ctx, "delivery lease lost before finishing", "delivery_id", d.ID, "status", d.Status)
			continue
		}
		w.opts.Metrics.DeliveryFinished(d)
		w.logFinished(ctx, d)
	}
}

// logFinished writes the one line of a delivery that reached a final status,
// once that status is recorded: INFO, or WARN when it failed. duration_ms
// runs from its receipt to now, retries included.
func (w *Worker) logFinished(ctx context.Context, d store.Delivery) {
	level := slog.LevelInfo
	switch d.Status {
	case store.DeliverySucceeded, store.DeliveryIgnored, store.DeliverySuppressed:
	case store.DeliveryFailed:
		level = slog.LevelWarn
	default:
		return
	}
	finished := w.now()
	if d.ProcessedAt != nil {
		finished = *d.ProcessedAt
	}
	attrs := []slog.Attr{slog.String("delivery_id", d.ID), slog.String("connection", d.ConnectionID),
		slog.String("event", d.Event), slog.String("status", d.Status), slog.String("action", d.OutcomeAction),
		slog.String("task", d.OutcomeTaskID), slog.Int64("duration_ms", finished.Sub(d.ReceivedAt).Milliseconds())}
	if level == slog.LevelWarn {
		attrs = append(attrs, slog.Int("attempts", d.Attempts), slog.String("error", d.LastError))
	}
	w.logger.LogAttrs(ctx, level, "delivery finished", attrs...)
}

// IsPermanent reports whether err fails a delivery without retries: text
// the database refuses (store.ErrInvalidText) is refused on every retry,
// and so is what validation refuses (failure.Invalid: an external ID with
// a NUL or over 255 bytes, a title with a control character), since the
// delivery's content is what it judges.
func IsPermanent(err error) bool {
	return errors.Is(err, ErrPermanent) || errors.Is(err, connectors.ErrMalformedPayload) ||
		errors.Is(err, store.ErrInvalidText) || failure.CodeOf(err) == failure.Invalid
}

// RetryInterval is the wait before the attempt following attempt number
// attempts (1 for the first): exponential from 1s, doubling, capped at 5m,
// ±20% jitter. It depends only on the persisted attempt count.
func RetryInterval(attempts int) time.Duration {
	b := backoff.NewExponentialBackOff(
		backoff.WithInitialInterval(retryInitial),
		backoff.WithMultiplier(retryMultiplier),
		backoff.WithMaxInterval(retryMaxInterval),
		backoff.WithRandomizationFactor(retryRandomization),
		backoff.WithMaxElapsedTime(0),
	)
	attempts = max(attempts, 1)
	// The interval stops growing at the cap, at most ~10 doublings in.
	attempts = min(attempts, 64)
	var next time.Duration
	for range attempts {
		next = b.NextBackOff()
	}
	return next
}

// lastError is err's text, bounded, as stored in last_error.
func lastError(err error) string {
	s := cleanText(err.Error())
	if len(s) <= maxLastErrorBytes {
		return s
	}
	return truncateUTF8(s, maxLastErrorBytes) + "…"
}

// maxEntityKeyBytes bounds an entity key (a primary key); longer keys are
// replaced by their digest, which serializes the same deliveries.
const maxEntityKeyBytes = 512

func entityKey(s string) string {
	s = cleanText(s)
	if len(s) <= maxEntityKeyBytes {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(sum[:])
}
