package store

import (
	"context"
	"time"
)

// Outbound delivery statuses: pending (owed, not yet attempted or being
// attempted), retrying (an attempt failed, another is scheduled),
// succeeded, failed (out of attempts; an operator may replay it).
const (
	OutboundPending   = "pending"
	OutboundRetrying  = "retrying"
	OutboundSucceeded = "succeeded"
	OutboundFailed    = "failed"
)

// OutboundStatuses is every outbound delivery status.
var OutboundStatuses = []string{OutboundPending, OutboundRetrying, OutboundSucceeded, OutboundFailed}

// OutboundFinished reports whether status is one an attempt does not leave.
func OutboundFinished(status string) bool {
	return status == OutboundSucceeded || status == OutboundFailed
}

// Subscription is a webhook subscription of a workspace: the task events of
// its types (every type when Types is empty) are posted, signed, to URL.
type Subscription struct {
	ID          string
	WorkspaceID string
	URL         string
	Types       []string
	Description string
	Enabled     bool
	// DisabledReason says why the gateway disabled it (a 410, or failing
	// for too long); empty when enabled or disabled by a person.
	DisabledReason string
	// Secret signs every request ("whsec_" + base64). PreviousSecret, when
	// set, signs beside it until PreviousSecretExpiresAt (a rotation).
	Secret                  string
	PreviousSecret          string
	PreviousSecretExpiresAt *time.Time
	// FailingSince is when the current run of failed attempts began; nil
	// after a success.
	FailingSince *time.Time
	// Position is the last outbox event id the fan-out has considered for
	// this subscription.
	Position  int64
	CreatedAt time.Time
	UpdatedAt time.Time
}

// OutboundDelivery is one event owed to (or sent to) one subscription.
type OutboundDelivery struct {
	SubscriptionID string
	EventID        int64
	TaskID         string
	EventType      string
	// EventAt is the event's commit time (the lag is measured from it).
	EventAt        time.Time
	Status         string
	Attempts       int
	NextAttemptAt  time.Time
	LastAttemptAt  *time.Time
	LastStatusCode int
	LastError      string
	LeaseOwner     string
	LeaseExpiresAt *time.Time
	CreatedAt      time.Time
	FinishedAt     *time.Time
}

// FanOut asks for one fan-out (FanOutEvents) of at most Limit outbox
// events at Now. When Owner is set, of the first LeaseLimit deliveries
// that head their task's chain in the batch, those written due (not
// parked behind an earlier unfinished event) are leased to Owner until
// Now+Lease, an attempt counted, as a claim would lease them: the worker
// that fans out sends them without a claim of its own.
type FanOut struct {
	Now        time.Time
	Limit      int
	Owner      string
	Lease      time.Duration
	LeaseLimit int
}

// FanOutResult says what one fan-out did.
type FanOutResult struct {
	// Events is how many outbox events it read; Inserted how many
	// deliveries it wrote, Due how many of them are due and not leased
	// (a claim takes them), Leased the ones it leased, oldest event first.
	Events, Inserted, Due int
	Leased                []OutboundDelivery
}

// OutboundDeliveryPage selects a page of a subscription's deliveries,
// newest event first.
type OutboundDeliveryPage struct {
	SubscriptionID string
	Status         string // "" for every status
	// BeforeEventID is the last event id of the previous page (0: none).
	BeforeEventID int64
	Limit         int
}

// OutboundReplay asks for deliveries to be sent again: the one of EventID,
// or (EventID 0) those of every event committed at or after Since.
type OutboundReplay struct {
	SubscriptionID string
	EventID        int64
	Since          time.Time
	Now            time.Time
}

// OutboundReplayResult counts a replay: Replayed deliveries made pending
// again (or, for an event the subscription had never been sent, created);
// Skipped ones still owed (pending or retrying), which will be sent anyway.
type OutboundReplayResult struct {
	Replayed, Skipped int
}

// OutboundParked is the next attempt of a parked delivery: one waiting for
// an earlier event of its task to finish, or of a disabled subscription.
// Claims read due deliveries in next-attempt order, so they never look at
// the parked ones, however many wait.
var OutboundParked = time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)

// OutboundFinish is a batch of finished attempts (FinishOutboundDeliveries).
type OutboundFinish struct {
	Owner      string
	Deliveries []OutboundDelivery
	Health     []SubscriptionHealth
	Now        time.Time
	// DisableBefore: an enabled subscription failing since before it is
	// disabled with FailingReason (zero: never).
	DisableBefore time.Time
	FailingReason string
}

// OutboundFinishResult is what FinishOutboundDeliveries did: Lost[i] says
// that Deliveries[i]'s lease was lost (its row unchanged); Released counts
// the parked deliveries it made due (their task's earlier event finished);
// Disabled names the subscriptions it disabled.
type OutboundFinishResult struct {
	Lost     []bool
	Released int
	Disabled []string
}

// SubscriptionHealth is what a batch of finished attempts says about one
// subscription.
type SubscriptionHealth struct {
	SubscriptionID string
	// Succeeded: an attempt got a 2xx; the failing run ends.
	Succeeded bool
	// Failed: an attempt failed (and none succeeded); a failing run starts
	// unless one runs already.
	Failed bool
	// Disable, when set, disables the subscription at once with this
	// reason (a 410 Gone).
	Disable string
}

// SubscriptionLag is how far behind a subscription is.
type SubscriptionLag struct {
	SubscriptionID string
	WorkspaceID    string
	Enabled        bool
	// Oldest is the commit time of the oldest event owed to the
	// subscription and not yet delivered; zero when none is.
	Oldest time.Time
}

// SubscriptionQueries are the statements of outbound webhooks: the
// subscriptions and their deliveries (internal/outbound).
type SubscriptionQueries interface {
	// InsertSubscription stores a new subscription whose position is the
	// outbox's newest event: it is owed the events committed after it.
	InsertSubscription(ctx context.Context, s Subscription) error
	GetSubscription(ctx context.Context, id string) (Subscription, error)
	// LockSubscription reads the subscription with a row lock.
	LockSubscription(ctx context.Context, id string) (Subscription, error)
	// ListSubscriptions lists a workspace's subscriptions ("" for every
	// workspace), oldest first.
	ListSubscriptions(ctx context.Context, workspaceID string) ([]Subscription, error)
	// UpdateSubscription writes the mutable columns of s (URL, types,
	// description, enabled, disabled reason, secrets, failing run,
	// updated_at); ErrNotFound when it does not exist.
	UpdateSubscription(ctx context.Context, s Subscription) error
	// DeleteSubscription deletes it and its deliveries; ErrNotFound when
	// it does not exist.
	DeleteSubscription(ctx context.Context, id string) error
	// ParkSubscriptionDeliveries parks every unfinished delivery of a
	// subscription (it was disabled): no claim looks at them.
	ParkSubscriptionDeliveries(ctx context.Context, id string) error
	// ResumeSubscription makes the first unfinished delivery of each of a
	// subscription's tasks due at now (it was enabled again); the rest
	// stay parked behind them.
	ResumeSubscription(ctx context.Context, id string, now time.Time) error

	// FanOutEvents writes a pending delivery for every enabled
	// subscription and each of the next (at most limit) outbox events past
	// its position that is of its workspace and types, oldest first, and
	// moves the positions past the events read, in one transaction that
	// first locks the enabled subscriptions (concurrent fan-outs, of
	// replicas too, serialize, so no event is fanned out twice). A
	// delivery is due at now when its subscription owes no earlier event
	// of its task, and parked (OutboundParked) behind that event otherwise;
	// due ones among the first f.LeaseLimit are leased to f.Owner (FanOut).
	FanOutEvents(ctx context.Context, f FanOut) (FanOutResult, error)
	// ClaimOutboundDeliveries leases up to limit due deliveries (pending or
	// retrying, next attempt at or before now, of an enabled
	// subscription), oldest due first, for owner until now+lease, counting
	// an attempt, and sets their next attempt to the lease's expiry (a
	// claim that is never finished is due again then). A delivery whose
	// subscription still owes an earlier event of the same task is not
	// claimed (order per task); concurrent claimers take different rows
	// (PostgreSQL: FOR UPDATE SKIP LOCKED).
	ClaimOutboundDeliveries(ctx context.Context, owner string, now time.Time, lease time.Duration, limit int) ([]OutboundDelivery, error)
	// FinishOutboundDeliveries records the new state of claimed deliveries
	// (status, attempts, next and last attempt, code, error, finish time)
	// where f.Owner still holds their lease, releasing it, and applies
	// f.Health to their subscriptions, in one transaction that first locks
	// those subscriptions (the fan-out's lock, so the two never interleave
	// on a task's chain): a delivery that finished for good (succeeded,
	// failed) lets the next parked delivery of its task go (due at f.Now);
	// a success ends a failing run, a failure starts one when none runs,
	// Disable disables at once, and an enabled subscription failing since
	// before f.DisableBefore (when set) is disabled with f.FailingReason;
	// a disabled subscription's unfinished deliveries are parked.
	FinishOutboundDeliveries(ctx context.Context, f OutboundFinish) (OutboundFinishResult, error)
	// NextOutboundDue is the earliest next attempt of an unfinished
	// delivery of an enabled subscription; zero when none.
	NextOutboundDue(ctx context.Context) (time.Time, error)
	// OutboundEvents reads the outbox events of ids (those that still
	// exist), in id order.
	OutboundEvents(ctx context.Context, ids []int64) ([]TaskEvent, error)
	// ListOutboundDeliveries pages through a subscription's deliveries.
	ListOutboundDeliveries(ctx context.Context, p OutboundDeliveryPage) ([]OutboundDelivery, error)
	// ReplayOutboundDeliveries makes finished deliveries pending again,
	// due at r.Now with no attempts, under a guard in the UPDATE itself so
	// that a delivery claimed meanwhile is skipped. For r.EventID it also
	// creates the delivery when the subscription has none of that event
	// (an event of its workspace it has passed); ErrNotFound when the
	// event does not exist, is of another workspace, or is not yet fanned
	// out to the subscription (it will be sent anyway).
	ReplayOutboundDeliveries(ctx context.Context, r OutboundReplay) (OutboundReplayResult, error)
	// SubscriptionLags reads every subscription's lag (the metrics gauge
	// and the console).
	SubscriptionLags(ctx context.Context) ([]SubscriptionLag, error)
	// DeleteOrphanedOutboundDeliveries deletes up to limit deliveries whose
	// event is no longer in the outbox (retention removed it) and returns
	// how many; CountOrphanedOutboundDeliveries counts them.
	DeleteOrphanedOutboundDeliveries(ctx context.Context, limit int) (int64, error)
	CountOrphanedOutboundDeliveries(ctx context.Context) (int64, error)
}
