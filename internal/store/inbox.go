package store

import (
	"context"
	"slices"
	"time"
)

// Delivery statuses.
const (
	DeliveryQueued     = "queued"
	DeliveryProcessing = "processing"
	DeliverySucceeded  = "succeeded"
	DeliveryIgnored    = "ignored"
	DeliverySuppressed = "suppressed"
	DeliveryRetrying   = "retrying"
	DeliveryFailed     = "failed"
)

// DeliveryStatuses is every delivery status.
var DeliveryStatuses = []string{DeliveryQueued, DeliveryProcessing, DeliverySucceeded,
	DeliveryIgnored, DeliverySuppressed, DeliveryRetrying, DeliveryFailed}

// FinishedStatuses are the statuses processing does not leave: only a
// replay (or retention) touches a delivery in one of them.
var FinishedStatuses = []string{DeliverySucceeded, DeliveryIgnored, DeliverySuppressed, DeliveryFailed}

// IsFinished reports whether status is one of FinishedStatuses.
func IsFinished(status string) bool { return slices.Contains(FinishedStatuses, status) }

// EntityLease asks for the lease on an entity for one delivery.
type EntityLease struct {
	EntityKey, DeliveryID string
}

// Delivery is an inbox row: the raw webhook as received, and its processing
// state.
type Delivery struct {
	ID           string
	ConnectionID string
	Provider     string
	Event        string
	DeliveryKey  string
	Headers      string // JSON object, secrets removed
	// Body is in the form BodyEncoding names; empty BodyEncoding means as
	// received. Reads always return it as received, with BodyEncoding
	// empty. InsertDeliveries encodes a raw body itself
	// (EncodeDeliveryBody) and stores an encoded one as it is, so a caller
	// may do that work off the group commit's path (the receiver does).
	Body              []byte
	BodyEncoding      string
	Status            string
	Attempts          int
	LastError         string
	NextAttemptAt     time.Time
	LeaseOwner        string
	LeaseExpiresAt    *time.Time
	EntityKey         string
	ReceivedAt        time.Time
	ProcessedAt       *time.Time
	OutcomeTaskID     string
	OutcomeExternalID string
	OutcomeAction     string
	OutcomeResult     string
	// TraceContext is the W3C traceparent of the receipt's span, "" when
	// tracing was off: each processing attempt joins that trace.
	TraceContext string
}

// DeliveryFilter selects a page of deliveries, newest first. Empty fields
// do not filter; set ones all apply.
type DeliveryFilter struct {
	Status       string
	ConnectionID string
	// Event matches the event and its actions: "issues" matches "issues",
	// "issues.opened" and "issues.opened.x"; "issues.opened" matches
	// itself and "issues.opened.x" (events are stored as the provider's
	// event, a dot and its action).
	Event string
	// ReceivedAfter and ReceivedBefore bound received_at (inclusive).
	ReceivedAfter  time.Time
	ReceivedBefore time.Time
	// ErrorContains matches a substring of last_error, ignoring case.
	ErrorContains string
	// ErrorScanLimit bounds an ErrorContains page: no substring index
	// exists, so the page reads the deliveries holding an error newest
	// first, and stops after this many (0: no bound, as a bulk replay
	// needs). The bound keeps a page's cost flat however many errors the
	// inbox holds; a page it cut short says where it stopped
	// (DeliveryPage.ScanStop).
	ErrorScanLimit int
	// ExternalID matches the outcome's external ID.
	ExternalID string
	// DeliveryKey matches the provider's delivery ID: a stored key equal to
	// it, or one that is a prefix, ':' and it (GitHub's keys are "<hook
	// id>:<GUID>", so its GUID alone finds them). Exact and case-sensitive.
	DeliveryKey string
	// Before is the (received_at, id) of the last delivery of the previous page.
	BeforeReceivedAt time.Time
	BeforeID         string
	Limit            int
}

// DeliveryPage is a page of ListDeliveries, newest first.
type DeliveryPage struct {
	Deliveries []Delivery
	// ScanStop is set when ErrorScanLimit ended the scan before Limit
	// deliveries matched: the next page starts after this position (the
	// oldest delivery read, which may not match the filter).
	ScanStop *DeliveryPosition
}

// DeliveryPosition is a place in the list's order.
type DeliveryPosition struct {
	ReceivedAt time.Time
	ID         string
}

// BulkRequeue is a bulk replay: the newest Max deliveries Filter matches
// (its Limit and Before are not used) are requeued as RequeueDelivery
// requeues one, unless DryRun.
type BulkRequeue struct {
	Filter DeliveryFilter
	Max    int
	// Show is how many of the matched deliveries the result lists.
	Show   int
	DryRun bool
	Now    time.Time
}

// BulkRequeueResult counts a bulk replay: Matched = Requeued + Skipped (the
// deliveries that had not finished). In a dry run Requeued counts the
// deliveries that would be requeued. Shown are the first matched
// deliveries, newest first, as they stand after the replay.
type BulkRequeueResult struct {
	Matched, Requeued, Skipped int
	Shown                      []Delivery
}

// DeliveryQueries is the inbox.
type DeliveryQueries interface {
	// InsertDeliveries inserts each delivery unless its (connection_id,
	// delivery_key) exists, in one transaction (group commit). It returns, per
	// input, the ID of the stored row and whether it was a duplicate.
	InsertDeliveries(ctx context.Context, ds []Delivery) ([]InsertedDelivery, error)
	GetDelivery(ctx context.Context, id string) (Delivery, error)
	ListDeliveries(ctx context.Context, f DeliveryFilter) (DeliveryPage, error)
	// ClaimDeliveries leases up to limit due deliveries (queued/retrying with
	// next_attempt_at <= now, or processing with an expired lease) whose
	// entity is not leased by another worker, oldest first (PostgreSQL: FOR
	// UPDATE SKIP LOCKED). Claimed rows become processing with attempts+1.
	ClaimDeliveries(ctx context.Context, owner string, now time.Time, lease time.Duration, limit int) ([]Delivery, error)
	// AcquireEntityLeases takes or steals (when expired) the lease on each
	// entity for its delivery, for a claimed batch at once (one statement
	// per few hundred leases); taken[i] is false when another live lease
	// holds leases[i]'s entity. Of two leases on one entity only the first
	// can be taken. Under store.WithSharedCommit it may share a commit (see
	// InTx).
	AcquireEntityLeases(ctx context.Context, owner string, leases []EntityLease, now, expires time.Time) (taken []bool, err error)
	// FinishDelivery records the outcome of a claimed delivery when owner
	// still holds its lease, and releases the entity lease owner holds for
	// this delivery, in one transaction; ErrNotFound when the delivery's
	// lease was lost (the entity lease, of no use then, is released all the
	// same).
	FinishDelivery(ctx context.Context, d Delivery, owner string) error
	// FinishDeliveries is FinishDelivery for a batch, in one transaction:
	// lost[i] reports that ds[i]'s lease was lost (its row unchanged, its
	// entity lease released). An error means none was recorded.
	FinishDeliveries(ctx context.Context, ds []Delivery, owner string) (lost []bool, err error)
	// RequeueDelivery makes a finished delivery (succeeded, ignored,
	// suppressed or failed) due again (operator replay): status queued,
	// attempts 0, lease and outcome cleared. The status guard is in the
	// UPDATE itself, so a delivery a worker claimed in between is never
	// reset under it. requeued is false, and d the row as it stands, when
	// the delivery exists but has not finished; ErrNotFound when it does not
	// exist.
	RequeueDelivery(ctx context.Context, id string, now time.Time) (d Delivery, requeued bool, err error)
	// RequeueDeliveries is RequeueDelivery for every delivery a filter
	// matches, with the same guard in each UPDATE, in batches.
	RequeueDeliveries(ctx context.Context, r BulkRequeue) (BulkRequeueResult, error)
	// NextDeliveryDue returns the earliest next_attempt_at of a pending
	// delivery, or zero when none.
	NextDeliveryDue(ctx context.Context) (time.Time, error)
	// DeliveryStats counts the deliveries per status and finds the oldest
	// queued one, in one read (the metrics gauges; callers cache it).
	DeliveryStats(ctx context.Context) (DeliveryStats, error)
}

// DeliveryStats is the inbox at one instant.
type DeliveryStats struct {
	// ByStatus holds the number of deliveries per status; a status
	// without any is absent.
	ByStatus map[string]int64
	// OldestQueuedAt is the received_at of the oldest queued delivery;
	// zero when none is queued.
	OldestQueuedAt time.Time
}

// InsertedDelivery is the result of one InsertDeliveries input.
type InsertedDelivery struct {
	ID        string
	Duplicate bool
}

// Suppression records that the gateway deleted the task of a source entity:
// later deliveries for it are suppressed.
type Suppression struct {
	WorkspaceID string
	ExternalID  string
	TaskID      string
	Reason      string
	CreatedAt   time.Time
}

// SuppressionPage selects a page of suppressions ordered by (workspace, external ID).
type SuppressionPage struct {
	WorkspaceID      string
	AfterWorkspaceID string
	AfterExternalID  string
	Limit            int
}

// SourceEntity is what a workspace holds for one external ID of a source
// entity: whether it is suppressed, the task holding the ID, and the task a
// transfer alias maps the ID to.
type SourceEntity struct {
	Suppressed  bool
	Task        *Task
	AliasTaskID string
}

// SuppressionQueries manages suppressions and source aliases.
type SuppressionQueries interface {
	// LookupSourceEntity reads the suppression, the task holding externalID
	// and its alias, in one round trip where the driver can: the reads a
	// delivery starts with.
	LookupSourceEntity(ctx context.Context, workspaceID, externalID string) (SourceEntity, error)
	UpsertSuppression(ctx context.Context, s Suppression) error
	GetSuppression(ctx context.Context, workspaceID, externalID string) (Suppression, error)
	ListSuppressions(ctx context.Context, p SuppressionPage) ([]Suppression, error)
	DeleteSuppression(ctx context.Context, workspaceID, externalID string) (bool, error)

	// InsertAlias maps externalID to taskID unless the alias exists.
	InsertAlias(ctx context.Context, workspaceID, externalID, taskID string, at time.Time) error
	// ResolveAlias returns the task an aliased external ID points to.
	ResolveAlias(ctx context.Context, workspaceID, externalID string) (string, error)
	ListAliases(ctx context.Context, taskID string) ([]string, error)
}

// Projection is a github_task_prs / gitlab_task_mrs row.
type Projection struct {
	Provider          string // github → github_task_prs, gitlab → gitlab_task_mrs
	TaskID            string
	ConnectionID      string
	ProviderID        int64
	Repository        string
	Number            int64
	URL               string
	Title             string
	State             string
	Draft             bool
	Merged            bool
	MergedAt          *time.Time
	HeadBranch        string
	BaseBranch        string
	HeadSHA           string
	Author            string
	ProviderUpdatedAt *time.Time
	LastSyncedAt      *time.Time
	SyncAttempts      int
	NextSyncAt        *time.Time
	SyncError         string
}

// ProjectionQueries manages the provider PR/MR projection.
type ProjectionQueries interface {
	// UpsertProjection writes p unless the stored row has a newer
	// provider_updated_at (stale payloads never overwrite fresher data).
	UpsertProjection(ctx context.Context, p Projection) error
	// ListProjectionsForTasks returns the rows of the given tasks, each
	// provider's ordered by repository and number (one query per provider,
	// however many tasks).
	ListProjectionsForTasks(ctx context.Context, taskIDs ...string) ([]Projection, error)
	// ListProjectionsDue returns rows whose next_sync_at <= now.
	ListProjectionsDue(ctx context.Context, now time.Time, limit int) ([]Projection, error)
	// UpdateProjectionSync records a refresh attempt's bookkeeping.
	UpdateProjectionSync(ctx context.Context, p Projection) error
	// ListProjectionsOfContribution returns provider's projection rows of
	// the contribution numbered number in repository (compared
	// case-insensitively), in every task, ordered by task ID and connection ID.
	ListProjectionsOfContribution(ctx context.Context, provider, repository string, number int64) ([]Projection, error)
	// GetProjection reads the row of p's provider, TaskID, ConnectionID
	// and ProviderID (inside a transaction, of a task the transaction has
	// locked); ErrNotFound when there is none.
	GetProjection(ctx context.Context, p Projection) (Projection, error)
	// DeleteProjection deletes the row of p's provider, TaskID,
	// ConnectionID and ProviderID; deleted reports whether one existed.
	DeleteProjection(ctx context.Context, p Projection) (deleted bool, err error)
}
