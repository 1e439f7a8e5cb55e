// Package retention prunes what the gateway no longer needs: finished
// deliveries past their retention period, outbox events every consumer
// has read and no enabled webhook subscription still owes, and the
// subscriptions' delivery rows of the events removed (docs/design.md,
// "Retention"). Every replica runs a Pruner; a
// named database lease lets one at a time do the work. It deletes in small
// batches, each its own short transaction, and pauses between them so the
// inbox's writes (SQLite has one writer) are never held up for long. It never
// deletes a pending delivery (queued, processing, retrying), a task, a
// suppression, an alias or an association.
package retention

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/trackergateway/gateway/internal/config"
	"github.com/trackergateway/gateway/internal/projection"
	"github.com/trackergateway/gateway/internal/store"
)

// Kinds of pruned rows: the kind label of gateway_retention_deleted_total
// and the lines `gateway prune` prints.
const (
	KindDeliveriesProcessed = "deliveries_processed"
	KindDeliveriesFailed    = "deliveries_failed"
	KindEvents              = "events"
	// KindOutboundDeliveries: the deliveries to webhook subscriptions of
	// events no longer kept; a delivery row goes with its event.
	KindOutboundDeliveries = "outbound_deliveries"
)

// Kinds are every kind of pruned row.
var Kinds = []string{KindDeliveriesProcessed, KindDeliveriesFailed, KindEvents, KindOutboundDeliveries}

// LeaseName is the job lease the pruners of all replicas share.
const LeaseName = "retention"

// Defaults of a Pruner's tuning.
const (
	DefaultBatchSize = 500
	// DefaultBatchTarget: a batch holds SQLite's one writer, and every
	// acknowledgement waiting for it waits that long too.
	DefaultBatchTarget = 5 * time.Millisecond
	DefaultPause       = 20 * time.Millisecond
	// DefaultYieldFactor: the pruner waits at least four times as long as
	// its last batch took, so it holds the database at most a fifth of the
	// time (docs/benchmarks.md, "Pruning an expired backlog while
	// ingesting").
	DefaultYieldFactor = 4
	DefaultLease       = 2 * time.Minute
	// minBatch is the smallest batch a slow database shrinks batches to.
	minBatch = 10
)

// ErrBusy: another pruner holds the lease (or took it over from this one).
var ErrBusy = errors.New("another pruner is running")

// Counts are the rows one pass deleted (or, in a dry run, would delete).
type Counts struct {
	DeliveriesProcessed int64 `json:"deliveries_processed"`
	DeliveriesFailed    int64 `json:"deliveries_failed"`
	Events              int64 `json:"events"`
	OutboundDeliveries  int64 `json:"outbound_deliveries"`
}

// Pruner runs retention passes.
type Pruner struct {
	st     store.Store
	logger *slog.Logger
	now    func() time.Time
	policy config.RetentionPolicy
	owner  string

	// Consumers are the outbox readers whose positions bound the events
	// pruned (besides every consumer that has saved a position); one that
	// has none yet keeps every event.
	Consumers []string
	// BatchSize is the most rows one delete transaction removes.
	BatchSize int
	// BatchTarget is how long one batch should hold the database: a batch
	// that takes longer halves the next one's size (down to 10 rows), one
	// that takes under half of it doubles it (up to BatchSize).
	BatchTarget time.Duration
	// Pause is the least wait between two batches; the wait is at least
	// YieldFactor times as long as the batch took, so pruning has the
	// database at most 1/(1+YieldFactor) of the time, and slows down when
	// the database is slow.
	Pause       time.Duration
	YieldFactor int
	// Lease is how long the job lease lasts; the pruner renews it between
	// batches once a quarter of it has passed, so a pruner that dies holds
	// it no longer than this.
	Lease time.Duration
	// OnDeleted, when set, is told every batch's deletions (the
	// gateway_retention_deleted_total counter).
	OnDeleted func(kind string, n int64)

	// elapsed measures a batch (time.Since; tests replace it).
	elapsed func(began time.Time) time.Duration
	// wait pauses between batches (pause; tests replace it).
	wait func(ctx context.Context, d time.Duration) error
}

// New returns a pruner with the policy and the default tuning.
func New(st store.Store, logger *slog.Logger, now func() time.Time, policy config.RetentionPolicy) *Pruner {
	return &Pruner{st: st, logger: logger, now: func() time.Time { return now().UTC() }, policy: policy,
		owner: uuid.NewString(), Consumers: []string{projection.Consumer},
		BatchSize: DefaultBatchSize, BatchTarget: DefaultBatchTarget, Pause: DefaultPause, Lease: DefaultLease,
		elapsed: time.Since, wait: pause, YieldFactor: DefaultYieldFactor}
}

// Run runs a pass at once and then every policy interval until ctx ends. A
// pass another replica is running is skipped.
func (p *Pruner) Run(ctx context.Context) {
	for {
		counts, err := p.RunOnce(ctx, false)
		switch {
		case ctx.Err() != nil:
			return
		case errors.Is(err, ErrBusy):
			p.logger.Debug("retention pass skipped: another replica is pruning")
		case err != nil:
			p.logger.Warn("retention pass failed", "error", err)
		case counts != Counts{}:
			p.logger.Info("retention pass", "deliveries_processed", counts.DeliveriesProcessed,
				"deliveries_failed", counts.DeliveriesFailed, "events", counts.Events, "outbound_deliveries", counts.OutboundDeliveries)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(p.policy.Interval):
		}
	}
}

// kind is one sort of row a pass prunes.
type kind struct {
	name   string
	keep   time.Duration
	count  func(ctx context.Context, before time.Time) (int64, error)
	delete func(ctx context.Context, before time.Time, limit int) (int64, error)
	total  *int64
}

func (p *Pruner) kinds(c *Counts) []kind {
	deliveries := func(statuses []string) (func(context.Context, time.Time) (int64, error), func(context.Context, time.Time, int) (int64, error)) {
		return func(ctx context.Context, before time.Time) (int64, error) {
				return p.st.CountExpiredDeliveries(ctx, statuses, before)
			}, func(ctx context.Context, before time.Time, limit int) (int64, error) {
				return p.st.DeleteExpiredDeliveries(ctx, statuses, before, limit)
			}
	}
	pc, pd := deliveries(store.ProcessedStatuses)
	fc, fd := deliveries(store.FailedStatuses)
	return []kind{
		{KindDeliveriesProcessed, p.policy.Processed, pc, pd, &c.DeliveriesProcessed},
		{KindDeliveriesFailed, p.policy.Failed, fc, fd, &c.DeliveriesFailed},
		{KindEvents, p.policy.Events,
			func(ctx context.Context, before time.Time) (int64, error) {
				return p.st.CountReadTaskEvents(ctx, p.Consumers, before)
			},
			func(ctx context.Context, before time.Time, limit int) (int64, error) {
				return p.st.DeleteReadTaskEvents(ctx, p.Consumers, before, limit)
			}, &c.Events},
		// After the events: a pass removes the deliveries of the events it
		// has just removed. Kept as long as the events are.
		{KindOutboundDeliveries, p.policy.Events,
			func(ctx context.Context, _ time.Time) (int64, error) {
				return p.st.CountOrphanedOutboundDeliveries(ctx)
			},
			func(ctx context.Context, _ time.Time, limit int) (int64, error) {
				return p.st.DeleteOrphanedOutboundDeliveries(ctx, limit)
			}, &c.OutboundDeliveries},
	}
}

// RunOnce runs one pass and returns what it deleted. A dry run deletes
// nothing, takes no lease, and returns what a pass would delete now.
// ErrBusy when another pruner holds the lease.
func (p *Pruner) RunOnce(ctx context.Context, dryRun bool) (Counts, error) {
	var c Counts
	// Every kind is measured from the pass's start: a pass that runs long
	// does not chase rows that expired while it ran.
	start := p.now()
	if dryRun {
		for _, k := range p.kinds(&c) {
			if k.keep <= 0 {
				continue
			}
			n, err := k.count(ctx, start.Add(-k.keep))
			if err != nil {
				return c, fmt.Errorf("count %s: %w", k.name, err)
			}
			*k.total = n
		}
		return c, nil
	}
	if err := p.renew(ctx); err != nil {
		return c, err
	}
	defer func() {
		if err := p.st.ReleaseJobLease(context.WithoutCancel(ctx), LeaseName, p.owner); err != nil {
			p.logger.Warn("release retention lease", "error", err)
		}
	}()
	// Console sessions expire by their own time; the console refuses an
	// expired one, and this is where its row goes. A handful of rows, in
	// one statement.
	if n, err := p.st.DeleteExpiredConsoleSessions(ctx, start); err != nil {
		return c, fmt.Errorf("prune console sessions: %w", err)
	} else if n > 0 {
		p.logger.Info("expired console sessions deleted", "count", n)
	}
	size, floor := p.BatchSize, min(minBatch, p.BatchSize)
	var took time.Duration // by the last batch
	renewed := p.now()     // the lease was just taken
	first := true
	for _, k := range p.kinds(&c) {
		if k.keep <= 0 {
			continue
		}
		before := start.Add(-k.keep)
		for {
			if !first {
				if err := p.wait(ctx, max(p.Pause, time.Duration(p.YieldFactor)*took)); err != nil {
					return c, err
				}
				// Renewing is a write as well: once a quarter lease.
				if p.now().Sub(renewed) >= p.Lease/4 {
					if err := p.renew(ctx); err != nil {
						return c, err
					}
					renewed = p.now()
				}
			}
			first = false
			// Wall time, not the injected clock: this paces the real
			// database.
			began := time.Now()
			n, err := k.delete(ctx, before, size)
			took = p.elapsed(began)
			if err != nil {
				return c, fmt.Errorf("prune %s: %w", k.name, err)
			}
			*k.total += n
			if n > 0 && p.OnDeleted != nil {
				p.OnDeleted(k.name, n)
			}
			if n < int64(size) {
				break
			}
			switch {
			case p.BatchTarget > 0 && took > p.BatchTarget:
				size = max(size/2, floor)
			case took < p.BatchTarget/2:
				size = min(size*2, p.BatchSize)
			}
		}
	}
	return c, nil
}

// renew takes or extends the lease; ErrBusy when another pruner has it.
func (p *Pruner) renew(ctx context.Context) error {
	now := p.now()
	ok, err := p.st.AcquireJobLease(ctx, LeaseName, p.owner, now, now.Add(p.Lease))
	if err != nil {
		return fmt.Errorf("retention lease: %w", err)
	}
	if !ok {
		return ErrBusy
	}
	return nil
}

// pause yields between batches: other writers get the database.
func pause(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
