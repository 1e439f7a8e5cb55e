package inbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/trackergateway/gateway/internal/metrics"
	"github.com/trackergateway/gateway/internal/store"
)

// DefaultMaxBatch is the largest number of deliveries committed in one
// transaction when ReceiverOptions.MaxBatch is zero.
const DefaultMaxBatch = 256

// errStopped answers receipts that arrive after (or were still queued when)
// the committer stopped: nothing was committed, so the provider must retry.
var errStopped = errors.New("receiver stopped")

// commitRequest is one receipt waiting for its batch.
type commitRequest struct {
	ctx  context.Context // the HTTP request's; a gone caller is skipped
	d    store.Delivery
	done chan commitResult // buffered: the committer never blocks on it
}

type commitResult struct {
	ins store.InsertedDelivery
	err error
}

// groupCommit batches concurrent receipts into one InsertDeliveries call.
// A batch is whatever queued while the previous commit was in flight, so a
// lone request commits at once and load raises the batch size instead of the
// latency. Only on a serial writer, and only while many more requests are
// still being read and verified, does a batch wait a moment for them (see
// lingerCompany).
type groupCommit struct {
	st       DeliveryWriter
	logger   *slog.Logger
	maxBatch int

	queue   chan *commitRequest
	stopped chan struct{} // closed once run has returned
	wake    chan struct{} // capacity 1: coalesces notifications
	// waiting counts receipts submitted and not yet answered.
	waiting atomic.Int64
	// handling counts webhook requests inside the receiver's handler;
	// handling minus waiting are those that may still submit.
	handling atomic.Int64
	// lingerFor is how long a batch may wait for company (zero: never).
	lingerFor time.Duration
	// lastBatch is the size of the batch committed last (run's alone).
	lastBatch int
	// metrics, when set, observes each commit's receipts.
	metrics *metrics.Metrics
	// busyUntil (unix ns on now's clock) ends the busy spell that the last
	// batch of concurrent receipts started.
	busyUntil atomic.Int64
	// failing is set while inbox commits fail for a reason other than one
	// bad row (a full disk, an unreachable database): /readyz reports it.
	failing atomic.Bool
	now     func() time.Time
	// hold is serialBusyHold or busyHold.
	hold time.Duration
}

// serialWriter is implemented by stores whose writes run one at a time
// (SQLite's one writer), where every receipt commit takes the writer from
// processing for its BEGIN, pages and fsync.
type serialWriter interface {
	SerializesWrites() bool
}

func serializesWrites(st any) bool {
	sw, ok := st.(serialWriter)
	return ok && sw.SerializesWrites()
}

// busyHold keeps the receiver busy after a batch of at least busyReceipts
// commits: between two such batches hardly any receipt waits, and a worker
// that claims in that gap takes the CPU the next batch needs. On a serial
// writer the hold is shorter (serialBusyHold): there a longer one keeps the
// workers off the writer longer than the receipts need it, and at 1,000
// webhooks/s acknowledgements waited longer behind the processing that
// then queued up (ack p99 8.5 and 8.6 ms with 25 ms against 6.5 and 6.7 ms
// with 10 ms; docs/benchmarks.md, "No commit delay for receipts"). On
// PostgreSQL the shorter hold only cost the acknowledgements.
const (
	busyHold       = 25 * time.Millisecond
	serialBusyHold = 10 * time.Millisecond
)

// On a serial writer a batch that finds at least lingerCompany requests still
// in the handler (reading a body, verifying it) waits up to serialLinger for
// them, until it holds lingerBatch receipts: every commit costs a BEGIN, the
// pages the batch shares (the table's last leaf, the indexes' appended
// leaves) and an fsync, so a batch of 30 costs SQLite about 52 µs of CPU a
// receipt where one of 12 costs 70 (BenchmarkInsertDeliveries), and durable
// ingest gained three to ten points of the ceiling. Only a crowd makes it
// wait, so at a steady 1,000 webhooks/s, with one or two requests in the
// handler, no receipt ever lingers (docs/benchmarks.md, "Receipts that wait
// for a crowd"). PostgreSQL never lingers: its batches were already twice as
// large, and waiting there cost 10–20 points of the same ratio.
//
// The crowd counts only after a batch of at least lingerAfterBatch: requests
// in the handler include slow uploads and bad signatures, which never
// become receipts, and a few slow connections must not make every receipt
// wait; only receipts that did commit together show that company comes.
const (
	lingerCompany    = 16
	lingerAfterBatch = 8
	serialLinger     = 2 * time.Millisecond
	lingerBatch      = 64
)

// newGroupCommit commits receipts to st; m, when set, observes each commit.
func newGroupCommit(st DeliveryWriter, logger *slog.Logger, maxBatch int, now func() time.Time, m *metrics.Metrics) *groupCommit {
	hold, linger := busyHold, time.Duration(0)
	if serializesWrites(st) {
		hold, linger = serialBusyHold, serialLinger
	}
	return &groupCommit{
		hold:      hold,
		lingerFor: linger,
		metrics:   m,
		st:        st,
		now:       now,
		logger:    logger,
		maxBatch:  maxBatch,
		queue:     make(chan *commitRequest, maxBatch),
		stopped:   make(chan struct{}),
		wake:      make(chan struct{}, 1),
	}
}

// busy reports whether many receipts wait for their commit, or did a moment
// ago.
func (g *groupCommit) busy() bool {
	return g.waiting.Load() >= busyReceipts || g.now().UnixNano() < g.busyUntil.Load()
}

// submit queues d for the next batch and waits for that batch's result.
func (g *groupCommit) submit(ctx context.Context, d store.Delivery) (store.InsertedDelivery, error) {
	select {
	case <-g.stopped:
		return store.InsertedDelivery{}, errStopped
	default:
	}
	req := &commitRequest{ctx: ctx, d: d, done: make(chan commitResult, 1)}
	g.waiting.Add(1)
	defer g.waiting.Add(-1)
	select {
	case g.queue <- req:
	case <-g.stopped:
		return store.InsertedDelivery{}, errStopped
	case <-ctx.Done():
		return store.InsertedDelivery{}, fmt.Errorf("queue delivery: %w", ctx.Err())
	}
	select {
	case res := <-req.done:
		return res.ins, res.err
	case <-ctx.Done():
		// The caller is gone; the delivery may still commit, and the
		// provider's retry is then acknowledged as a duplicate.
		return store.InsertedDelivery{}, fmt.Errorf("wait for commit: %w", ctx.Err())
	case <-g.stopped:
		// Every batch that was taken answered before stopped closed.
		select {
		case res := <-req.done:
			return res.ins, res.err
		default:
			return store.InsertedDelivery{}, errStopped
		}
	}
}

// run commits batches until ctx ends. A batch in flight when ctx ends still
// completes (its callers are owed an answer); queued requests that were not
// taken are answered errStopped by submit.
func (g *groupCommit) run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		g.notifyLoop(ctx)
	}()
	defer func() {
		close(g.stopped)
		wg.Wait()
	}()

	batch := make([]*commitRequest, 0, g.maxBatch)
	var carry *commitRequest // taken from the queue, but over the last batch's bytes
	for {
		var first *commitRequest
		if carry != nil {
			first, carry = carry, nil
		} else {
			select {
			case <-ctx.Done():
				return
			case first = <-g.queue:
			}
		}
		batch, carry = g.fill(ctx, append(batch[:0], first), g.maxBatch, nil)
		if carry == nil && g.crowded(len(batch)) {
			batch, carry = g.linger(ctx, batch)
		}
		g.commit(ctx, batch)
		g.lastBatch = len(batch)
		clear(batch) // drop references to answered requests
	}
}

// fill adds queued requests to batch, up to limit, until the next would take
// it past maxBatchBodyBytes (that request is returned as carry, for the next
// batch). With a nil wait it takes what is queued already; otherwise it also
// waits for more, until wait fires or ctx ends.
func (g *groupCommit) fill(ctx context.Context, batch []*commitRequest, limit int, wait <-chan time.Time) ([]*commitRequest, *commitRequest) {
	bytes := 0
	for _, req := range batch {
		bytes += len(req.d.Body)
	}
	for len(batch) < limit && bytes < maxBatchBodyBytes {
		req := g.next(ctx, wait)
		if req == nil {
			return batch, nil
		}
		if !fits(bytes, req) {
			return batch, req
		}
		batch = append(batch, req)
		bytes += len(req.d.Body)
	}
	return batch, nil
}

// next is the next queued request, or nil: at once when wait is nil, else
// once wait fires or ctx ends.
func (g *groupCommit) next(ctx context.Context, wait <-chan time.Time) *commitRequest {
	if wait == nil {
		select {
		case req := <-g.queue:
			return req
		default:
			return nil
		}
	}
	select {
	case req := <-g.queue:
		return req
	case <-wait:
	case <-ctx.Done():
	}
	return nil
}

// fits reports whether req's body may join a batch holding bytes.
func fits(bytes int, req *commitRequest) bool {
	return bytes+len(req.d.Body) <= maxBatchBodyBytes
}

// crowded reports whether a batch of n should wait for company: it may, the
// last batch held at least lingerAfterBatch receipts, and at least
// lingerCompany requests in the handler have not submitted yet.
func (g *groupCommit) crowded(n int) bool {
	return g.lingerFor > 0 && n < min(lingerBatch, g.maxBatch) && g.lastBatch >= lingerAfterBatch &&
		g.handling.Load()-g.waiting.Load() >= lingerCompany
}

// linger fills batch for at most lingerFor, up to lingerBatch receipts. The
// requests already taken are committed whatever happens meanwhile: a stop
// ends the wait, not the batch.
func (g *groupCommit) linger(ctx context.Context, batch []*commitRequest) ([]*commitRequest, *commitRequest) {
	timer := time.NewTimer(g.lingerFor)
	defer timer.Stop()
	return g.fill(ctx, batch, min(lingerBatch, g.maxBatch), timer.C)
}

// maxBatchBodyBytes caps the body bytes of one batch (one delivery always
// goes, whatever its size): the database driver copies every body of a
// statement at once (SQLite's bound blobs and record, pgx's send buffer),
// outside the in-flight bound the receiver keeps, so big bodies commit a
// few at a time.
const maxBatchBodyBytes = 16 << 20

// ReceiptCommitTimeout bounds one batch commit of the inbox.
const ReceiptCommitTimeout = 5 * time.Second

// commit inserts one batch and answers each request.
func (g *groupCommit) commit(ctx context.Context, batch []*commitRequest) {
	live := batch[:0]
	for _, req := range batch {
		if err := req.ctx.Err(); err != nil {
			req.done <- commitResult{err: fmt.Errorf("queue delivery: %w", err)}
			continue
		}
		live = append(live, req)
	}
	if len(live) == 0 {
		return
	}
	if len(live) >= busyReceipts {
		g.busyUntil.Store(g.now().Add(g.hold).UnixNano())
	}
	// The commit outlives shutdown and gone callers (a transaction that
	// commits must be the one its callers were told about), and it never
	// inherits store.WithDeferredSync from ctx: a 2xx means fsynced. It is
	// bounded, so a database that cannot take the write answers 503 well
	// before the provider's own timeout (GitHub waits 10 s).
	cctx, cancel := context.WithTimeout(context.Background(), ReceiptCommitTimeout)
	defer cancel()
	results, err := g.insert(cctx, live)
	if err != nil && len(live) > 1 && isolatable(err) {
		// One bad row must not fail its neighbours: retry each alone.
		g.logger.WarnContext(ctx, "batch insert failed, retrying deliveries one by one",
			"batch_size", len(live), "error", err)
		inserted := false
		for _, req := range live {
			res, err := g.insert(cctx, []*commitRequest{req})
			if err != nil {
				req.done <- commitResult{err: err}
				continue
			}
			inserted = inserted || !res[0].Duplicate
			req.done <- commitResult{ins: res[0]}
		}
		if inserted {
			g.signal()
		}
		return
	}
	inserted := false
	for i, req := range live {
		if err != nil {
			req.done <- commitResult{err: err}
			continue
		}
		inserted = inserted || !results[i].Duplicate
		req.done <- commitResult{ins: results[i]}
	}
	if inserted {
		g.signal()
	}
}

func (g *groupCommit) insert(ctx context.Context, reqs []*commitRequest) ([]store.InsertedDelivery, error) {
	ds := make([]store.Delivery, len(reqs))
	for i, req := range reqs {
		ds[i] = req.d
	}
	res, err := g.st.InsertDeliveries(ctx, ds)
	if err != nil {
		if !errors.Is(err, store.ErrConstraint) {
			g.failing.Store(true)
		}
		return nil, fmt.Errorf("commit deliveries: %w", err)
	}
	g.failing.Store(false)
	if len(res) != len(ds) {
		return nil, fmt.Errorf("commit deliveries: %d results for %d deliveries", len(res), len(ds))
	}
	g.metrics.InboxCommitted(len(ds))
	return res, nil
}

// isolatable reports whether a batch failure may be caused by one of its rows
// (retrying rows alone then helps); an unreachable or slow database is not.
func isolatable(err error) bool {
	return !errors.Is(err, store.ErrUnavailable) &&
		!errors.Is(err, context.DeadlineExceeded) &&
		!errors.Is(err, context.Canceled)
}

// signal asks the notifier for one wake-up; signals arriving while one is
// pending coalesce into it.
func (g *groupCommit) signal() {
	select {
	case g.wake <- struct{}{}:
	default:
	}
}

// notifyLoop wakes workers after commits, off the request path: a
// notification is best effort (workers also poll when deliveries are due),
// and on PostgreSQL it is a round trip the next batch need not wait for.
func (g *groupCommit) notifyLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-g.wake:
			if err := g.st.Notify(ctx, Channel); err != nil && ctx.Err() == nil {
				g.logger.WarnContext(ctx, "notify workers failed", "channel", Channel, "error", err)
			}
		}
	}
}
