package store

import (
	"context"
	"time"
)

// Delivery statuses retention treats as processed (kept for retention's
// "processed" period) and as failed (kept for its "failed" period). Queued,
// processing and retrying deliveries are never pruned.
var (
	ProcessedStatuses = []string{DeliverySucceeded, DeliveryIgnored, DeliverySuppressed}
	FailedStatuses    = []string{DeliveryFailed}
)

// RetentionQueries are the statements of the pruner (internal/retention):
// counting and deleting expired rows in small batches, and the named lease
// that lets one replica at a time do it.
type RetentionQueries interface {
	// CountExpiredDeliveries counts the deliveries in one of statuses (each
	// a finished status: succeeded, ignored, suppressed or failed) that
	// finished before finishedBefore.
	CountExpiredDeliveries(ctx context.Context, statuses []string, finishedBefore time.Time) (int64, error)
	// DeleteExpiredDeliveries deletes up to limit of the deliveries
	// CountExpiredDeliveries counts and returns how many it deleted. A row
	// requeued in between (no longer finished) is left alone.
	DeleteExpiredDeliveries(ctx context.Context, statuses []string, finishedBefore time.Time, limit int) (int64, error)
	// CountReadTaskEvents counts the outbox events created before
	// createdBefore that every consumer has read: at or below the cursor of
	// each of consumers (one without a cursor has read nothing) and of every
	// other consumer that has saved one, and that no enabled webhook
	// subscription still owes (past its position, or an unfinished
	// delivery; a disabled one holds nothing).
	CountReadTaskEvents(ctx context.Context, consumers []string, createdBefore time.Time) (int64, error)
	// DeleteReadTaskEvents deletes up to limit of the events
	// CountReadTaskEvents counts, oldest first, and returns how many.
	DeleteReadTaskEvents(ctx context.Context, consumers []string, createdBefore time.Time, limit int) (int64, error)
	// AcquireJobLease takes the named lease for owner until expires, renews
	// it when owner holds it, or takes it over when it expired at now; false
	// when another owner holds it.
	AcquireJobLease(ctx context.Context, name, owner string, now, expires time.Time) (bool, error)
	// ReleaseJobLease gives up the named lease when owner holds it.
	ReleaseJobLease(ctx context.Context, name, owner string) error
}
