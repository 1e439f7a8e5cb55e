// Package outbound sends task events out as Standard Webhooks: the
// subscriptions of each workspace (their REST API, api.go) and the worker
// that delivers every committed event to every matching enabled
// subscription, at least once, in order per task (docs/design.md, "Task
// events out").
//
// The worker of each replica runs one pump and one finisher. The pump fans
// the outbox out (a delivery row per owed event and subscription, written
// in one transaction with the subscriptions' positions) and claims due
// deliveries with a lease; every claimed delivery is sent on its own
// goroutine, so a slow receiver holds only its own deliveries; the
// finisher writes the outcomes of whatever has finished, together.
package outbound

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v4"
	"go.opentelemetry.io/otel/trace"

	"github.com/trackergateway/gateway/internal/events"
	"github.com/trackergateway/gateway/internal/metrics"
	"github.com/trackergateway/gateway/internal/priority"
	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/tracing"
)

// Channel wakes the claims of every replica when a fan-out has written
// deliveries (the replica that wrote them claims at once anyway).
const Channel = "gateway_outbound"

// Worker defaults.
const (
	// DefaultLease outlasts an attempt (DefaultTimeout) with room for its
	// outcome to be written; a worker that dies is replaced once it ends.
	DefaultLease       = 60 * time.Second
	DefaultBatchSize   = 64
	DefaultMaxInFlight = 256
	DefaultFanOutBatch = 500
	DefaultMaxIdle     = time.Second
	DefaultMinIdle     = 50 * time.Millisecond
	DefaultMaxYield    = time.Second
)

// finishTimeout bounds the write of outcomes, which runs even when the
// worker is stopping.
const finishTimeout = 10 * time.Second

// FailingReason is the disabled_reason of a subscription disabled for
// failing too long.
const failingReason = "every attempt failed for %s"

// Options tune a Worker; zero values take the defaults.
type Options struct {
	// Lease is how long a claimed delivery stays leased.
	Lease time.Duration
	// Timeout bounds one attempt.
	Timeout time.Duration
	// MaxResponseBytes is how much of an answer is read.
	MaxResponseBytes int64
	// BatchSize is the most deliveries one claim takes.
	BatchSize int
	// MaxInFlight is the most deliveries being sent at once.
	MaxInFlight int
	// FanOutBatch is the most outbox events one fan-out reads.
	FanOutBatch int
	// MaxIdle caps an idle wait, so due retries and expired leases are
	// noticed without a notification.
	MaxIdle time.Duration
	// Yield, when set, reports that the intake has work waiting (the inbox
	// worker's Busy): before each fan-out and claim the worker then
	// pauses, a few milliseconds at a time and at most MaxYield in all, as
	// the inbox worker yields to acknowledgements. A burst of webhooks
	// becomes tasks first and their events go out right after, instead of
	// sharing the CPU with them; while the burst lasts, a fan-out and a
	// claim still run at least once every MaxYield, so events keep flowing.
	Yield    func() bool
	MaxYield time.Duration
	// RetrySchedule is the wait before each retry; nil is the default.
	RetrySchedule []time.Duration
	// DisableAfter disables a subscription that has failed every attempt
	// for this long; 0 never does.
	DisableAfter time.Duration
	// AllowHTTP lets subscriptions use http:// URLs.
	AllowHTTP bool
	// Guard decides which addresses may be connected to.
	Guard Guard
	// Client sends the requests; nil is NewClient(Guard, Timeout,
	// MaxInFlight).
	Client *http.Client
	// Metrics, when set, counts attempts and times them.
	Metrics *metrics.Metrics
}

func (o Options) withDefaults() Options {
	if o.Lease <= 0 {
		o.Lease = DefaultLease
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxResponseBytes <= 0 {
		o.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if o.BatchSize <= 0 {
		o.BatchSize = DefaultBatchSize
	}
	if o.MaxInFlight <= 0 {
		o.MaxInFlight = DefaultMaxInFlight
	}
	if o.FanOutBatch <= 0 {
		o.FanOutBatch = DefaultFanOutBatch
	}
	if o.MaxIdle <= 0 {
		o.MaxIdle = DefaultMaxIdle
	}
	if o.MaxYield <= 0 {
		o.MaxYield = DefaultMaxYield
	}
	if len(o.RetrySchedule) == 0 {
		o.RetrySchedule = []time.Duration{5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour,
			5 * time.Hour, 10 * time.Hour, 10 * time.Hour}
	}
	return o
}

// Worker delivers task events to subscriptions.
type Worker struct {
	st     store.Store
	logger *slog.Logger
	now    func() time.Time
	opts   Options
	client *http.Client

	// events holds a wake-up of the fan-out (new events committed);
	// wake one of the claims (deliveries due, slots or a task freed).
	events, wake chan struct{}
	// slots holds one token per delivery being sent or waiting for its
	// outcome to be written.
	slots chan struct{}
	// results carries finished attempts to the finisher.
	results chan result
	sending sync.WaitGroup

	// owner holds this worker's leases.
	owner string

	// urls remembers each URL's check (checkURL).
	urlsMu sync.Mutex
	urls   map[string]error

	drain     chan struct{}
	drainOnce sync.Once
}

// New returns a worker; Run starts it.
func New(st store.Store, logger *slog.Logger, now func() time.Time, opts Options) *Worker {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if now == nil {
		now = time.Now
	}
	opts = opts.withDefaults()
	client := opts.Client
	if client == nil {
		client = NewClient(opts.Guard, opts.Timeout, opts.MaxInFlight)
	}
	return &Worker{st: st, logger: logger, now: func() time.Time { return now().UTC() }, opts: opts, client: client,
		events: make(chan struct{}, 1), wake: make(chan struct{}, 1), slots: make(chan struct{}, opts.MaxInFlight),
		results: make(chan result, opts.MaxInFlight), owner: newOwnerID(), urls: map[string]error{}, drain: make(chan struct{})}
}

// Run delivers until ctx ends or Drain is called, then returns once every
// delivery in hand has its outcome written.
//
// As the inbox worker does: Drain stops the claiming, and deliveries being
// sent finish under ctx, which Drain does not cancel; claimed deliveries
// not yet sent go back. Cancelling ctx stops at once: a request under way
// is abandoned and its delivery put back, the attempt not counted.
func (w *Worker) Run(ctx context.Context) error {
	claimCtx, stopClaiming := context.WithCancel(ctx)
	defer stopClaiming()
	go func() {
		select {
		case <-w.drain:
			stopClaiming()
		case <-claimCtx.Done():
		}
	}()
	var listeners sync.WaitGroup
	listeners.Go(func() { w.listen(claimCtx, store.EventsChannel, w.events) })
	listeners.Go(func() { w.listen(claimCtx, Channel, w.wake) })
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		w.finisher(ctx)
	}()
	w.pump(ctx, claimCtx)
	w.sending.Wait()
	close(w.results)
	<-finished
	listeners.Wait()
	return nil
}

// Drain makes Run claim nothing more and return once the deliveries in hand
// are recorded. It may be called more than once, and before Run.
func (w *Worker) Drain() { w.drainOnce.Do(func() { close(w.drain) }) }

func newOwnerID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// listen turns notifications on channel into a token on ch.
func (w *Worker) listen(ctx context.Context, channel string, ch chan struct{}) {
	for ctx.Err() == nil {
		if err := w.st.WaitForNotification(ctx, channel); err != nil {
			if ctx.Err() != nil {
				return
			}
			w.logger.WarnContext(ctx, "wait for notification failed", "channel", channel, "error", err)
			sleep(ctx, w.opts.MaxIdle)
			continue
		}
		signal(ch)
	}
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

func (w *Worker) claiming(claimCtx context.Context) bool {
	select {
	case <-w.drain:
		return false
	default:
		return claimCtx.Err() == nil
	}
}

// pump fans out and claims until the claiming stops. Writes run under ctx
// (a claim cut short by a drain could commit unseen); waits under claimCtx.
func (w *Worker) pump(ctx, claimCtx context.Context) {
	failures := backoff.NewExponentialBackOff(backoff.WithInitialInterval(100*time.Millisecond),
		backoff.WithMaxInterval(w.opts.MaxIdle*5), backoff.WithMaxElapsedTime(0))
	failing := false
	// Events may have been committed, and deliveries left due, while no
	// worker ran.
	p := pending{fanOut: true, claim: true}
	for w.claiming(claimCtx) {
		p.busy = priority.Yield(claimCtx, w.opts.Yield, w.opts.MaxYield)
		if !w.claiming(claimCtx) {
			return
		}
		more, err := w.step(ctx, claimCtx, &p)
		if err != nil {
			if !w.claiming(claimCtx) {
				return
			}
			if !failing {
				w.logger.WarnContext(ctx, "outbound delivery failed to reach the database", "error", err)
				failing = true
			}
			p = pending{fanOut: true, claim: true}
			sleep(claimCtx, failures.NextBackOff())
			continue
		}
		if failing {
			w.logger.InfoContext(ctx, "outbound delivery reaches the database again")
			failing = false
			failures.Reset()
		}
		if !more {
			w.idle(claimCtx, &p)
		}
	}
}

// pending is what the pump has to look at: fanOut, events may be waiting
// in the outbox; claim, deliveries may be due that no one has leased (a
// retry, a task's next event released, a fan-out's beyond its leases,
// another replica's, an expired lease).
type pending struct {
	fanOut, claim bool
	// busy: the intake still has work waiting after MaxYield; the step
	// then sends at most BatchSize deliveries, as the inbox worker claims
	// one batch a MaxYield while acknowledgements wait.
	busy bool
}

// step fans out (when events may be waiting), sending at once what the
// fan-out leased, and claims what the free slots allow when deliveries may
// be due; more reports that there may be more to do at once.
func (w *Worker) step(ctx, claimCtx context.Context, p *pending) (more bool, err error) {
	free := cap(w.slots) - len(w.slots)
	if p.busy {
		free = min(free, w.opts.BatchSize)
	}
	if p.fanOut {
		p.fanOut = false
		res, err := w.st.FanOutEvents(ctx, store.FanOut{Now: w.now(), Limit: w.opts.FanOutBatch,
			Owner: w.owner, Lease: w.opts.Lease, LeaseLimit: free})
		if err != nil {
			return false, err
		}
		if res.Events == w.opts.FanOutBatch {
			p.fanOut, more = true, true
		}
		if len(res.Leased) > 0 {
			w.start(ctx, claimCtx, res.Leased)
			free -= len(res.Leased)
		}
		if res.Due > 0 {
			// Due beyond the slots this replica had: other replicas
			// claim too.
			p.claim = true
			_ = w.st.Notify(ctx, Channel)
		}
	}
	if !p.claim || free <= 0 || !w.claiming(claimCtx) {
		return more, nil
	}
	limit := min(free, w.opts.BatchSize)
	ds, err := w.st.ClaimOutboundDeliveries(ctx, w.owner, w.now(), w.opts.Lease, limit)
	if err != nil {
		return more, err
	}
	if len(ds) > 0 {
		w.start(ctx, claimCtx, ds)
	}
	// A claim that took less than it could has taken every due delivery.
	p.claim = len(ds) == limit
	return more || p.claim, nil
}

// idle waits for new events, a wake-up, the next due delivery or MaxIdle.
func (w *Worker) idle(ctx context.Context, p *pending) {
	wait := w.opts.MaxIdle
	if due, err := w.st.NextOutboundDue(ctx); err == nil && !due.IsZero() {
		switch d := due.Sub(w.now()); {
		case d <= 0:
			// Due but not claimed: the slots are full, or its task waits
			// for an earlier event a replay made due. Poll gently.
			wait = DefaultMinIdle
		case d < wait:
			wait = d
		}
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-w.events:
		p.fanOut = true
	case <-w.wake:
		p.claim = true
	case <-t.C:
		p.fanOut, p.claim = true, true
	}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// result is a finished attempt (or a delivery put back), on its way to the
// finisher.
type result struct {
	d      store.OutboundDelivery
	answer answer
	// tried: a request was made (metrics, health); false for a delivery
	// put back or failed before sending.
	tried bool
	took  time.Duration
	// span is the attempt's span (its trace is the latency's exemplar).
	span trace.SpanContext
}

// start sends each claimed delivery on its own goroutine, holding a slot
// until its outcome is written.
func (w *Worker) start(ctx, claimCtx context.Context, ds []store.OutboundDelivery) {
	subs, evs, err := w.load(ctx, ds)
	for _, d := range ds {
		w.slots <- struct{}{}
		w.sending.Add(1)
		if err != nil || !w.claiming(claimCtx) {
			if err != nil {
				w.logger.WarnContext(ctx, "outbound delivery put back: cannot read what to send", "subscription_id", d.SubscriptionID,
					"event_id", d.EventID, "error", err)
			}
			w.results <- result{d: w.putBack(d)}
			w.sending.Done()
			continue
		}
		go func() {
			defer w.sending.Done()
			w.results <- w.attempt(ctx, d, subs, evs)
		}()
	}
}

// outgoing is an event as the deliveries of a claim send it: its body,
// and with tracing on the span that made its change (cause), are made
// once, whatever the number of subscriptions it goes to.
type outgoing struct {
	ev    store.TaskEvent
	body  []byte
	err   error
	cause trace.SpanContext
}

// load reads the subscriptions and the events of a claim, the two reads
// at once (on PostgreSQL, on two connections).
func (w *Worker) load(ctx context.Context, ds []store.OutboundDelivery) (map[string]store.Subscription, map[int64]outgoing, error) {
	ids := make([]int64, 0, len(ds))
	seen := map[int64]bool{}
	for _, d := range ds {
		if !seen[d.EventID] {
			seen[d.EventID] = true
			ids = append(ids, d.EventID)
		}
	}
	var list []store.TaskEvent
	var eventsErr error
	read := make(chan struct{})
	go func() {
		defer close(read)
		list, eventsErr = w.st.OutboundEvents(ctx, ids)
	}()
	subList, err := w.st.ListSubscriptions(ctx, "")
	<-read
	if err = cmp.Or(err, eventsErr); err != nil {
		return nil, nil, err
	}
	subs := make(map[string]store.Subscription, len(subList))
	for _, s := range subList {
		subs[s.ID] = s
	}
	traced := tracing.Provider(ctx) != nil
	evs := make(map[int64]outgoing, len(list))
	for _, e := range list {
		body, err := events.Body(e)
		o := outgoing{ev: e, body: body, err: err}
		if traced {
			o.cause = events.SpanOf(e)
		}
		evs[e.ID] = o
	}
	return subs, evs, nil
}

// attempt sends one delivery and returns its new state.
func (w *Worker) attempt(ctx context.Context, d store.OutboundDelivery, subs map[string]store.Subscription, evs map[int64]outgoing) result {
	sub, ok := subs[d.SubscriptionID]
	if !ok {
		// Deleted since the claim, its deliveries with it: the finish
		// finds nothing to write.
		return result{d: w.putBack(d)}
	}
	now := w.now()
	ev, ok := evs[d.EventID]
	if !ok {
		return result{d: w.failed(d, now, 0, "the event is no longer kept (retention removed it before it was delivered)")}
	}
	ctx, span := startAttempt(ctx, d, ev.cause)
	defer span.End()
	began := time.Now()
	a := w.post(ctx, sub, ev, now)
	took := time.Since(began)
	endAttempt(span, a)
	if ctx.Err() != nil {
		// Stopping at once: the attempt does not count.
		return result{d: w.putBack(d)}
	}
	d.LastAttemptAt = &now
	d.LastStatusCode = a.code
	if a.err == nil {
		d.Status, d.LastError, d.NextAttemptAt, d.FinishedAt = store.OutboundSucceeded, "", now, &now
		return result{d: d, answer: a, tried: true, took: took, span: span.SpanContext()}
	}
	msg := a.err.Error()
	wait, again := nextRetry(w.opts.RetrySchedule, d.Attempts, a.retryAfter)
	switch {
	case a.permanent:
		d = w.failed(d, now, a.code, msg)
	case !again:
		d = w.failed(d, now, a.code, fmt.Sprintf("gave up after %d attempts: %s", d.Attempts, msg))
	default:
		d.Status, d.LastError, d.NextAttemptAt, d.FinishedAt = store.OutboundRetrying, cleanText(msg), now.Add(wait), nil
	}
	return result{d: d, answer: a, tried: true, took: took, span: span.SpanContext()}
}

func (w *Worker) failed(d store.OutboundDelivery, now time.Time, code int, msg string) store.OutboundDelivery {
	d.Status, d.LastStatusCode, d.LastError = store.OutboundFailed, code, cleanText(msg)
	d.LastAttemptAt, d.NextAttemptAt, d.FinishedAt = &now, now, &now
	return d
}

// putBack returns a claimed delivery unsent: due at once, the attempt not
// counted.
func (w *Worker) putBack(d store.OutboundDelivery) store.OutboundDelivery {
	d.Attempts = max(d.Attempts-1, 0)
	d.NextAttemptAt = w.now()
	return d
}

// finisher writes outcomes as they come: whatever has finished while the
// previous write ran goes in the next one.
func (w *Worker) finisher(ctx context.Context) {
	for r := range w.results {
		batch := []result{r}
	collect:
		for len(batch) < 4*w.opts.BatchSize {
			select {
			case r, ok := <-w.results:
				if !ok {
					break collect
				}
				batch = append(batch, r)
			default:
				break collect
			}
		}
		full := len(w.slots) == cap(w.slots)
		released := w.finish(ctx, batch)
		for range batch {
			<-w.slots
		}
		// The claims have more to take only when a task's next event was
		// released, or when they stopped for want of a slot; otherwise
		// waking them would cost a claim that finds nothing.
		if released || full {
			signal(w.wake)
		}
	}
}

// finish writes a batch's outcomes and what they say of their
// subscriptions, even when the worker is stopping; released reports that
// deliveries are due sooner than the claims would look (a task's next
// event released, a retry coming soon), or that the write failed.
func (w *Worker) finish(ctx context.Context, batch []result) (released bool) {
	now := w.now()
	f := store.OutboundFinish{Owner: w.owner, Now: now, FailingReason: fmt.Sprintf(failingReason, w.opts.DisableAfter)}
	if w.opts.DisableAfter > 0 {
		f.DisableBefore = now.Add(-w.opts.DisableAfter)
	}
	health := map[string]*store.SubscriptionHealth{}
	var order []string
	for _, r := range batch {
		f.Deliveries = append(f.Deliveries, r.d)
		if !r.tried {
			continue
		}
		h, ok := health[r.d.SubscriptionID]
		if !ok {
			h = &store.SubscriptionHealth{SubscriptionID: r.d.SubscriptionID}
			health[r.d.SubscriptionID] = h
			order = append(order, r.d.SubscriptionID)
		}
		switch {
		case r.answer.err == nil:
			h.Succeeded = true
		case r.answer.gone:
			h.Disable = fmt.Sprintf("the receiver answered %d Gone", r.answer.code)
		}
	}
	for _, id := range order {
		h := health[id]
		h.Failed = !h.Succeeded
		f.Health = append(f.Health, *h)
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
	defer cancel()
	res, err := w.st.FinishOutboundDeliveries(store.WithDeferredSync(fctx), f)
	if err != nil {
		// The leases expire and the deliveries are claimed again.
		w.logger.ErrorContext(ctx, "record outbound outcomes failed", "deliveries", len(batch), "error", err)
		return true
	}
	for i, r := range batch {
		if res.Lost[i] {
			if r.tried {
				w.logger.WarnContext(ctx, "outbound delivery lease lost before finishing", "subscription_id", r.d.SubscriptionID,
					"event_id", r.d.EventID, "status", r.d.Status)
			}
			continue
		}
		w.recorded(ctx, r)
	}
	soon := now.Add(w.opts.MaxIdle)
	for _, r := range batch {
		// A retry due before the claims' next look would wait for it.
		if r.d.Status == store.OutboundRetrying && r.d.NextAttemptAt.Before(soon) {
			res.Released++
		}
	}
	for _, id := range res.Disabled {
		reason := f.FailingReason
		if h := health[id]; h != nil && h.Disable != "" {
			reason = h.Disable
		}
		w.logger.WarnContext(ctx, "subscription disabled", "subscription_id", id, "reason", reason)
	}
	return res.Released > 0
}

// recorded counts and logs an attempt whose outcome is written.
func (w *Worker) recorded(ctx context.Context, r result) {
	d := r.d
	if r.tried || d.Status == store.OutboundFailed {
		w.opts.Metrics.OutboundDelivery(d.SubscriptionID, d.Status)
	}
	if r.tried {
		w.opts.Metrics.OutboundAttemptTook(r.took, r.span)
	}
	attrs := []any{"subscription_id", d.SubscriptionID, "event_id", d.EventID, "task_id", d.TaskID, "attempts", d.Attempts,
		"status_code", d.LastStatusCode}
	switch d.Status {
	case store.OutboundRetrying:
		w.logger.InfoContext(ctx, "outbound delivery will be retried", append(attrs, "next_attempt_at", d.NextAttemptAt, "error", d.LastError)...)
	case store.OutboundFailed:
		w.logger.WarnContext(ctx, "outbound delivery failed", append(attrs, "error", d.LastError)...)
	case store.OutboundSucceeded:
		w.logger.DebugContext(ctx, "outbound delivery succeeded", attrs...)
	}
}
