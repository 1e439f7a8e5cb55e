// Package store is the storage contract of the gateway: one interface with a
// PostgreSQL and a SQLite implementation (internal/store/sqlstore over the
// drivers in internal/store/postgres and internal/store/sqlite), proven
// equivalent by one conformance suite (internal/store/storetest).
//
// The contract is deliberately made of small statements; the protocols that
// combine them (the external-ID create sequence, the creation ledger, the
// inbox) live in their owning packages and run them inside InTx.
//
// Lock order, kept everywhere (docs/design.md, "The creation ledger"):
// workspace → creation operation → task → steps and effect rows → outbox.
// Rows a transaction inserts itself may come before the locks it then
// takes, since no other transaction can wait for them: Begin inserts its
// operation and steps before it locks the workspace, to hold that row as
// briefly as it can (docs/internals.md, "The creation protocol").
//
// Inside InTx, the writes that answer nothing but an error (InsertTask,
// InsertNumberedTasks, InsertOperation, InsertCreationStep,
// InsertCompletedOperations, UpdateTask, SetTaskCreationState,
// SetTaskCreated, FinishCreation, UpdateOperation, UpdateCreationStep) may
// be sent later, with the
// transaction's next statement that returns data or with its commit:
// PostgreSQL pipelines them into that round trip. Their failure then
// surfaces from that later call, with the failed write's own message, and
// fails the transaction just as if the write had failed at once. The updates
// among them are therefore called only on rows the transaction holds locked
// (or wrote itself), whose existence is certain.
package store

import (
	"context"
	"errors"
	"time"
)

// Sentinel errors. Drivers translate their native errors into these.
var (
	// ErrNotFound: no row matched.
	ErrNotFound = errors.New("not found")
	// ErrExternalIDTaken: the insert violated uniq_tasks_external_id, and
	// only that index (attributed by name).
	ErrExternalIDTaken = errors.New("external id taken")
	// ErrConstraint: any other constraint violation. Never treated as Found.
	ErrConstraint = errors.New("constraint violation")
	// ErrUnavailable: the database cannot be reached.
	ErrUnavailable = errors.New("database unavailable")
	// ErrInvalidText: the database refused text (invalid UTF-8 or a NUL
	// character). Input is checked before it reaches SQL; this is the
	// backstop for anything that slips through.
	ErrInvalidText = errors.New("invalid text")
	// ErrDatabaseInUse: another process owns the database
	// (Store.ClaimSoleOwnership).
	ErrDatabaseInUse = errors.New("database in use by another gateway serve")
)

// Dialect names.
const (
	DialectPostgres = "postgres"
	DialectSQLite   = "sqlite"
)

// Store is the storage contract. Every method of Queries runs as its own
// statement outside a transaction; InTx runs fn in one write transaction
// (serializable enough for the protocols: PostgreSQL READ COMMITTED with the
// row locks the Lock* methods take, SQLite BEGIN IMMEDIATE).
type Store interface {
	Queries
	// InTx runs fn in a transaction, committing when fn returns nil.
	InTx(ctx context.Context, fn func(tx Queries) error) error
	Dialect() string
	Ping(ctx context.Context) error
	// Migrated reports whether every embedded migration is applied.
	Migrated(ctx context.Context) (bool, error)
	// ProbeDurableWrite commits one small write with a full sync (never
	// deferred): it fails while the database cannot make writes durable
	// (a full disk, a read-only or unreachable database).
	ProbeDurableWrite(ctx context.Context, at time.Time) error
	// WaitForNotification blocks until a delivery notification arrives on
	// channel (PostgreSQL LISTEN/NOTIFY across replicas; in-process on SQLite)
	// or ctx ends.
	WaitForNotification(ctx context.Context, channel string) error
	Notify(ctx context.Context, channel string) error
	// ClaimSoleOwnership makes this process the only one that works the
	// database (claims deliveries, holds entity and creation leases), for
	// as long as the store is open, where one process can own it: SQLite,
	// through an exclusive lock on the file <path>.lock. sole is false
	// where it cannot (PostgreSQL, whose replicas share the database, or a
	// platform without the lock); ErrDatabaseInUse when another process
	// owns it.
	ClaimSoleOwnership() (sole bool, err error)
	// TakeBackLeases ends, as of now, every lease a process left in the
	// database, as if each had expired: processing deliveries become due,
	// entity leases free, creation operations and running steps open to
	// recovery. Only the sole owner may call it (after ClaimSoleOwnership),
	// once, before it starts working: the leases are then its dead
	// predecessor's, and waiting for them to expire would only delay what
	// was cut off.
	TakeBackLeases(ctx context.Context, now time.Time) (LeasesTakenBack, error)
	Close()
}

// LeasesTakenBack counts what TakeBackLeases ended.
type LeasesTakenBack struct {
	Deliveries, Entities, Operations, Steps int64
}

// Queries is every statement of the contract.
type Queries interface {
	WorkspaceQueries
	TaskQueries
	LedgerQueries
	EventQueries
	AssociationQueries
	DeliveryQueries
	SuppressionQueries
	ProjectionQueries
	RetentionQueries
	ConsoleQueries
	RedeliveryQueries
	InstallationQueries
	LinkQueries
	SubscriptionQueries
}

// Workspace is a tenant: tasks, steps and tokens belong to one.
type Workspace struct {
	ID           string
	Name         string
	TaskPrefix   string
	TaskSequence int64
	CreatedAt    time.Time
	Steps        []Step
}

// Step is a workflow step; WIPLimit nil means unlimited.
type Step struct {
	WorkspaceID string
	ID          string
	Name        string
	Position    int
	WIPLimit    *int
}

// Token is an API token; only the SHA-256 of the secret is stored.
type Token struct {
	ID          string
	Name        string
	TokenSHA256 string
	Admin       bool
	Workspaces  []string
	CreatedAt   time.Time
}

// WorkspaceQueries manages workspaces, steps and tokens.
type WorkspaceQueries interface {
	// UpsertWorkspace creates the workspace or updates its name and steps
	// (config is applied idempotently). The prefix and sequence of an
	// existing workspace never change.
	UpsertWorkspace(ctx context.Context, ws Workspace) error
	// CreateWorkspace inserts a new workspace; ErrConstraint when it exists.
	CreateWorkspace(ctx context.Context, ws Workspace) error
	GetWorkspace(ctx context.Context, id string) (Workspace, error)
	ListWorkspaces(ctx context.Context) ([]Workspace, error)
	// LockWorkspace takes the workspace row lock (tier 1 of the lock order).
	LockWorkspace(ctx context.Context, id string) (Workspace, error)

	// EnsureGeneratedSecret stores value under name unless a value exists,
	// and returns the stored one (replicas starting together agree).
	EnsureGeneratedSecret(ctx context.Context, name, value string, at time.Time) (stored string, created bool, err error)
	// GetGeneratedSecret returns a stored generated secret.
	GetGeneratedSecret(ctx context.Context, name string) (string, error)

	UpsertToken(ctx context.Context, tok Token) error
	GetTokenBySHA256(ctx context.Context, sha string) (Token, error)
	GetTokenByName(ctx context.Context, name string) (Token, error)
}

// Task creation states (tasks.creation_state).
const (
	CreationPreparing  = "preparing"
	CreationCompleting = "completing"
	CreationComplete   = "complete"
)

// Source is the provider entity a task mirrors.
type Source struct {
	Provider string
	Kind     string
	Ref      string
	URL      string
}

// Task is a task row.
type Task struct {
	ID                  string
	WorkspaceID         string
	Identifier          string
	Title               string
	Description         string
	WorkflowStepID      string
	Labels              []string
	ArchivedAt          *time.Time
	Source              *Source
	SourceUpdatedAt     *time.Time
	OwnerConnection     string
	ExternalID          string // "" when none
	ExternalIDSettledAt *time.Time
	CreationState       string
	CreationOperationID string
	Revision            int64
	CreatedAt           time.Time
	UpdatedAt           time.Time
}

// TaskPage is one page of a task list, ordered by (created_at, id).
type TaskPage struct {
	WorkspaceID     string
	IncludeArchived bool
	// After is the (created_at, id) of the last task of the previous page.
	AfterCreatedAt time.Time
	AfterID        string
	Limit          int
}

// TaskQueries reads and writes task rows.
type TaskQueries interface {
	InsertTask(ctx context.Context, t Task) error
	// InsertNumberedTasks advances the workspace's task sequence by len(ts)
	// and inserts ts, all of that one workspace, with the identifiers
	// PREFIX-N it yields, in ts's order (their Identifier is ignored), in
	// one transaction; numbered is given the identifiers once the rows are
	// written, which inside a transaction may be as late as its COMMIT.
	InsertNumberedTasks(ctx context.Context, ts []Task, numbered func(identifiers []string)) error
	GetTask(ctx context.Context, id string) (Task, error)
	// LockTask reads the task with a row lock (tier "task").
	LockTask(ctx context.Context, id string) (Task, error)
	LookupTaskByExternalID(ctx context.Context, workspaceID, externalID string) (Task, error)
	// FindTaskBySourceRef finds a completed task of a workspace by its source
	// reference (how pull requests name issues): the completed task whose
	// current source reference is ref (the oldest first); when there is none,
	// the completed task that had ref as a former reference
	// (LinkQueries.InsertRefAlias). A current reference wins over a former
	// one; ErrNotFound when neither matches.
	FindTaskBySourceRef(ctx context.Context, workspaceID, provider, ref string) (Task, error)
	// ListTasks lists completed tasks only; tasks still being created are
	// never listed.
	ListTasks(ctx context.Context, page TaskPage) ([]Task, error)
	CountActiveTasksInStep(ctx context.Context, workspaceID, stepID string) (int, error)
	// UpdateTask writes the mutable fields, the revision and the creation
	// state of t (callers pass a task they loaded).
	UpdateTask(ctx context.Context, t Task) error
	DeleteTask(ctx context.Context, id string) error
	// ReleaseExternalID clears external_id and external_id_settled_at on the
	// task holding the identity, returning it; ErrNotFound when none does.
	ReleaseExternalID(ctx context.Context, workspaceID, externalID string) (Task, error)
	SetTaskCreationState(ctx context.Context, taskID, state string, at time.Time) error
	// SetTaskCreated marks a task complete at its first revision (the
	// creation's last write): only the columns that change, so no index of
	// tasks is rewritten. With settleExternalID it is also the settlement:
	// external_id_settled_at is stamped in the same UPDATE, whose predicate
	// includes external_id (and an unsettled identity). It is for a caller
	// whose transaction holds the task's row lock and so knows the row
	// matches: nothing waits for its answer (on PostgreSQL it travels with
	// the next statement or the COMMIT), and a row count other than one
	// fails the transaction (ErrNotFound).
	SetTaskCreated(ctx context.Context, taskID string, revision int64, at time.Time, settleExternalID string) error
}

// Creation operation states.
const (
	OpPreparing        = "preparing"
	OpPreparingRelease = "preparing-release"
	OpCompleting       = "completing"
	OpCompleted        = "completed"
	OpAborted          = "aborted"
)

// Operation is a task_creation_operations row.
type Operation struct {
	ID                    string
	WorkspaceID           string
	TaskID                string
	State                 string
	PlanJSON              string
	ManifestSHA256        string
	ActorJSON             string
	ActorBindingSHA256    string
	CompletionTokenSHA256 string
	ExternalID            string
	ReleaseApplied        bool
	Outcome               string
	EventID               int64
	RecoveryAction        string
	Generation            int64
	LeaseOwner            string
	LeaseExpiresAt        *time.Time
	Error                 string
	CreatedAt             time.Time
	UpdatedAt             time.Time
}

// Step states (closed set of the protocol).
const (
	StepPlanned   = "planned"
	StepArmed     = "armed"
	StepRunning   = "running"
	StepRetryWait = "retry_wait"
	StepUnknown   = "unknown"
	StepFailed    = "failed"
	StepSucceeded = "succeeded"
	StepCancelled = "cancelled"
)

// Compensation states of a step.
const (
	CompensationNone     = "none"
	CompensationRequired = "required"
	CompensationDone     = "done"
)

// CreationStep is a task_creation_steps row.
type CreationStep struct {
	OperationID     string
	Kind            string
	StepKey         string
	RequestJSON     string
	RequestSHA256   string
	IdempotencyKey  string
	State           string
	Attempt         int
	ClaimOwner      string
	ClaimGeneration int64
	LeaseExpiresAt  *time.Time
	EvidenceJSON    string
	EvidenceSHA256  string
	ProviderHandle  string
	OwnershipMarker string
	Compensation    string
	Disposition     string
	Error           string
	CreatedAt       time.Time
	UpdatedAt       time.Time
}

// LedgerQueries persists the creation ledger.
type LedgerQueries interface {
	InsertOperation(ctx context.Context, op Operation) error
	GetOperation(ctx context.Context, id string) (Operation, error)
	// LockOperationAndSteps reads the operation and then its steps (ordered
	// by kind, key) with row locks, in that order, in one round trip where
	// the driver can.
	LockOperationAndSteps(ctx context.Context, id string) (Operation, []CreationStep, error)
	// LockCreation locks the operation, its task and its steps, in that
	// order (the lock order), in one round trip where the driver can; the
	// task is nil when its row is gone.
	LockCreation(ctx context.Context, id string) (Operation, []CreationStep, *Task, error)
	// LockCreationTaskExists is LockCreation for a caller that only needs
	// to know whether the task row is still there: the same locks in the
	// same order, without reading the task's columns.
	LockCreationTaskExists(ctx context.Context, id string) (Operation, []CreationStep, bool, error)
	// UpdateOperation writes state, release_applied, outcome, event_id,
	// recovery_action, generation, lease and error.
	UpdateOperation(ctx context.Context, op Operation) error
	// FinishCreation is the last write of a creation's phase B: it appends
	// created (the task.created event) under the outbox lock and marks the
	// operation completed with outcome, pointing at that event, its lease
	// cleared. Nothing in it waits for an answer, so on PostgreSQL it
	// travels with the COMMIT and the outbox lock is held only while the
	// server runs it.
	FinishCreation(ctx context.Context, operationID, outcome string, created TaskEvent) error
	// InsertCompletedOperations is the last write of creations written at
	// once (creations that plan no step: Begin and both phases of Complete
	// in one transaction, whose tasks InsertNumberedTasks has just inserted
	// complete): it appends created[i] for ops[i]'s task under the outbox
	// lock, its payload completed with the identifier the task row holds,
	// and inserts ops[i] (completed) pointing at that event. Nothing in it
	// waits for an answer, so on PostgreSQL it travels with the COMMIT, as
	// the tasks' INSERT and their identifiers do.
	InsertCompletedOperations(ctx context.Context, ops []Operation, created []CreatedEvent) error
	// ListOpenOperations returns operations in preparing, preparing-release
	// or completing that were last touched before staleBefore and whose lease
	// (if any) expired before now.
	ListOpenOperations(ctx context.Context, staleBefore, now time.Time, limit int) ([]Operation, error)

	InsertCreationStep(ctx context.Context, s CreationStep) error
	// ListCreationSteps returns an operation's steps ordered by kind, key.
	ListCreationSteps(ctx context.Context, operationID string) ([]CreationStep, error)
	// UpdateCreationStep writes the mutable columns of s.
	UpdateCreationStep(ctx context.Context, s CreationStep) error
}

// Event types of the outbox.
const (
	EventTaskCreated = "task.created"
	EventTaskUpdated = "task.updated"
	EventTaskDeleted = "task.deleted"
)

// TaskEvent is an outbox row.
type TaskEvent struct {
	ID          int64
	WorkspaceID string
	TaskID      string
	Revision    int64
	Type        string
	Payload     string
	CreatedAt   time.Time
}

// CreatedEvent is the task.created event (revision 1) of a creation
// written at once (LedgerQueries.InsertCompletedOperations), of the
// operation's task in its workspace. The task's identifier is assigned by
// the database in that same transaction, so the payload is given around it:
// the event's payload is PayloadBefore, the identifier, then PayloadAfter.
type CreatedEvent struct {
	PayloadBefore string
	PayloadAfter  string
	CreatedAt     time.Time
}

// EventsChannel is the notification channel (Store.WaitForNotification) of
// task events: the store notifies it after committing every transaction
// that appended one, in this process at once and on PostgreSQL to the other
// replicas too.
const EventsChannel = "task_events"

// EventPage selects a page of one workspace's events, oldest first.
type EventPage struct {
	WorkspaceID string
	// AfterID: only events with a larger id.
	AfterID int64
	// Types: only events of these types; empty is every type.
	Types []string
	Limit int
	// Scan bounds a page filtered by Types: only the first Scan events of
	// the workspace after AfterID are looked at (0: no bound).
	Scan int
}

// EventQueries appends to and reads the task_events outbox.
type EventQueries interface {
	// AppendTaskEvent inserts the event and returns its id. It must be the
	// last write of its transaction (outbox is last in the lock order).
	AppendTaskEvent(ctx context.Context, e TaskEvent) (int64, error)
	// ReadTaskEvents returns events with id > afterID, oldest first.
	ReadTaskEvents(ctx context.Context, afterID int64, limit int) ([]TaskEvent, error)
	// ListWorkspaceEvents returns up to p.Limit events of p's workspace
	// with ids above p.AfterID (of p.Types when set), ids ascending. When a
	// filtered page's window (p.Scan) did not reach the workspace's last
	// event, scannedTo is the id of the window's last event, where the next
	// page starts even if this one is short; otherwise it is 0. Ids become
	// visible in commit order (AppendTaskEvent), so a reader that saw an id
	// never sees a smaller one appear later.
	ListWorkspaceEvents(ctx context.Context, p EventPage) (events []TaskEvent, scannedTo int64, err error)
	GetOutboxCursor(ctx context.Context, consumer string) (int64, error)
	SaveOutboxCursor(ctx context.Context, consumer string, lastEventID int64, at time.Time) error
}

// Association is a task_remote_contribution_associations row, the effect
// authority of the remote_contribution_associate step.
type Association struct {
	Provider         string
	ConnectionID     string
	ContributionID   string
	ContributionKind string
	TaskID           string
	WorkspaceID      string
	RepositoryID     string
	OperationID      string
	IdempotencyKey   string
	OwnershipMarker  string
	ClaimedAt        time.Time
}

// AssociationQueries reads and writes associations.
type AssociationQueries interface {
	// InsertAssociation inserts a unless (provider, connection_id,
	// contribution_id) exists; inserted reports which.
	InsertAssociation(ctx context.Context, a Association) (inserted bool, err error)
	GetAssociation(ctx context.Context, provider, connectionID, contributionID string) (Association, error)
	ListAssociationsForTask(ctx context.Context, taskID string) ([]Association, error)
	// DeleteAssociationsOwnedBy deletes the rows whose operation_id and
	// ownership_marker match (compensation) and returns the count.
	DeleteAssociationsOwnedBy(ctx context.Context, operationID, marker string) (int64, error)
	DeleteAssociationsForTask(ctx context.Context, taskID string) error
}
