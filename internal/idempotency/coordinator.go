package idempotency

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/trackergateway/gateway/internal/failure"
	"github.com/trackergateway/gateway/internal/httpapi"
	"github.com/trackergateway/gateway/internal/metrics"
	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/tasks/taskrules"
	"github.com/trackergateway/gateway/internal/tracing"
)

// Typed errors of the coordinator.
var (
	// ErrHandleMismatch: a handle, stored hash, request or ownership marker
	// does not match what the ledger holds; nothing was written.
	ErrHandleMismatch = errors.New("creation handle does not match the ledger")
	// ErrCreationStateConflict: the operation is not in a state that allows
	// the call (e.g. a stale recovery generation); nothing was written.
	ErrCreationStateConflict = errors.New("creation state conflict")
	// ErrStepFailed: a required step failed permanently; the creation was
	// aborted.
	ErrStepFailed = errors.New("creation step failed")
	// ErrUnsupportedStep: Begin was asked for a step kind without an executor.
	ErrUnsupportedStep = errors.New("step kind has no executor in the gateway")
)

// Actor is who begins a creation: an API token or a webhook connection.
type Actor struct {
	Kind     string // "api_token" | "connection"
	ID       string // token name or connection id
	AuthMode string // "bearer" | "webhook_signature"
}

// CreateRequest is a validated-enough create: the coordinator validates the
// external ID itself, and calls Validate for the remaining create-time
// validation only after the lookup missed (Found wins over invalid fields).
type CreateRequest struct {
	WorkspaceID     string
	ExternalID      string // raw; normalized by the coordinator
	Title           string
	Description     string
	WorkflowStepID  string
	Labels          []string
	Source          *store.Source
	SourceUpdatedAt *time.Time
	OwnerConnection string
	// Steps are the required creation steps (remote_contribution_associate).
	Contributions []RemoteContributionRequest
	Actor         Actor
	// Validate runs after a lookup miss and before any write; it may fill
	// the request's remaining fields from the caller's input.
	Validate func(req *CreateRequest) error
	// KnownAbsent says the caller has just looked the external ID up in
	// the workspace itself and found no task holding it, so Create does not
	// read it again. A task created since is still found: the unique index
	// refuses Begin's insert and Create answers from the re-read.
	KnownAbsent bool
}

// Result is a create's task and outcome.
type Result struct {
	Task    store.Task
	Outcome Outcome
}

// CreationHandle is the private capability of the caller that began a
// creation. It is never serialized; only the token's SHA-256 is stored.
type CreationHandle struct {
	OperationID      string
	TaskID           string
	WorkspaceID      string
	CompletionToken  []byte
	ActorBindingHash string
	ManifestHash     string
	// plannedSteps is how many steps Begin planned: with none, ExecuteSteps
	// has nothing to read (a round trip saved on PostgreSQL).
	plannedSteps int
}

// BeginResult is what BeginTaskCreation returns; Handle is non-nil only for
// Created.
type BeginResult struct {
	Task    store.Task
	Outcome Outcome
	Handle  *CreationHandle
}

// Failpoints simulate a crash at the ledger's durable boundaries in tests:
// when Hook returns an error for a name, the coordinator stops right there,
// abandoning its in-memory state, and returns the error.
const (
	FailAfterBegin            = "after_begin"
	FailAfterStepClaim        = "after_step_claim"
	FailAfterEffectWrite      = "after_effect_write"
	FailAfterPhaseA           = "after_phase_a"
	FailAfterPhaseB           = "after_phase_b"
	FailInsideAbortCompensate = "inside_abort_compensation"
)

// Coordinator is the idempotent creation coordinator and the ledger's owner.
type Coordinator struct {
	st       store.Store
	logger   *slog.Logger
	now      func() time.Time
	leaseTTL time.Duration
	// Failpoint, when set, is consulted at each durable boundary.
	Failpoint func(name string) error
	// Metrics, when set, counts the recovery actions taken.
	Metrics *metrics.Metrics
	// workspaces are the snapshots creations plan against.
	workspaces workspaces
	// batches gathers the creations written at once (createAtOnce) that
	// arrive together.
	batches atOnceBatches
	// contributionKinds is what a remote_contribution_associate step may
	// name (validateContribution).
	contributionKinds ContributionKinds
}

// ContributionKinds maps each provider whose pull or merge requests the
// gateway associates with tasks to the kind of those contributions
// ("github" → "pull_request"). The caller's wiring names them, so the
// identity rules know no provider.
type ContributionKinds map[string]string

// New returns a coordinator; kinds are the contributions its creations and
// associations accept.
func New(st store.Store, logger *slog.Logger, now func() time.Time, kinds ContributionKinds) *Coordinator {
	return &Coordinator{st: st, logger: logger, now: func() time.Time { return now().UTC() }, leaseTTL: 30 * time.Second,
		contributionKinds: kinds}
}

func (c *Coordinator) failpoint(name string) error {
	if c.Failpoint == nil {
		return nil
	}
	if err := c.Failpoint(name); err != nil {
		return fmt.Errorf("failpoint %s: %w", name, err)
	}
	return nil
}

// Lookup is the read-only probe: the task holding the identity, including
// archived and unsettled ones, with its Found outcome.
func (c *Coordinator) Lookup(ctx context.Context, workspaceID, rawExternalID string) (store.Task, Outcome, error) {
	ext, err := NormalizeExternalID(rawExternalID)
	if err != nil {
		return store.Task{}, 0, err
	}
	if ext == "" {
		return store.Task{}, 0, failure.New(failure.Invalid, "external_id is required")
	}
	return c.lookup(ctx, workspaceID, ext)
}

func (c *Coordinator) lookup(ctx context.Context, workspaceID, ext string) (store.Task, Outcome, error) {
	t, err := c.st.LookupTaskByExternalID(ctx, workspaceID, ext)
	if err != nil {
		return t, 0, err
	}
	if t.ExternalIDSettledAt != nil && t.CreationState == store.CreationComplete {
		return t, FoundSettled, nil
	}
	return t, FoundUnsettled, nil
}

// Create runs the whole create: authorize (the caller's job, before this) →
// validate the external ID → look up → validate the rest → Begin → steps →
// Complete. A Found outcome runs nothing else: no steps, no compensation, no
// rollback against the existing task.
func (c *Coordinator) Create(ctx context.Context, req CreateRequest) (res Result, err error) {
	ctx, span := startCreate(ctx, req)
	defer func() { endCreate(span, res, err) }()
	if len(req.Contributions) == 0 && c.Failpoint == nil {
		wctx, write := tracing.Start(ctx, "task.create.write")
		res, err = c.createAtOnce(wctx, req)
		endChild(write, err)
		return res, err
	}
	begun, err := c.BeginTaskCreation(ctx, req)
	if err != nil {
		return Result{}, err
	}
	if begun.Handle == nil {
		return Result{Task: begun.Task, Outcome: begun.Outcome}, nil
	}
	if err := c.failpoint(FailAfterBegin); err != nil {
		return Result{}, err
	}
	if err := c.ExecuteSteps(ctx, begun.Handle); err != nil {
		if errors.Is(err, ErrStepFailed) {
			if abortErr := c.AbortTaskCreation(ctx, begun.Handle, err.Error()); abortErr != nil {
				return Result{}, fmt.Errorf("abort after step failure: %w", abortErr)
			}
			return Result{}, failure.Wrap(failure.Conflict, err, "task not created: %s", stepFailureMessage(err))
		}
		return Result{}, err
	}
	return c.CompleteTaskCreation(ctx, begun.Handle)
}

func stepFailureMessage(err error) string {
	var se *stepError
	if errors.As(err, &se) {
		return se.reason
	}
	return "a required step failed"
}

type stepError struct{ reason string }

func (e *stepError) Error() string { return e.reason }
func (e *stepError) Unwrap() error { return ErrStepFailed }

// BeginTaskCreation is lookup-first; on a miss it validates the rest and, in
// one transaction, allocates the identifier, admits the task into its step,
// and writes the preparing task row, the operation and its planned steps.
func (c *Coordinator) BeginTaskCreation(ctx context.Context, req CreateRequest) (_ BeginResult, err error) {
	ctx, span := tracing.Start(ctx, "task.create.begin")
	defer func() { endChild(span, err) }()
	ext, found, workspace, err := c.lookupFirst(ctx, req)
	if err != nil || found.Outcome != 0 {
		return found, err
	}
	b, err := c.prepareBegin(ctx, req, ext, workspace)
	if err == nil {
		// Warm the memo that Complete's verification (under the lock)
		// reads.
		rememberCanonicalPlan(b.op.PlanJSON, b.plan)
		if err = c.st.InTx(unacknowledged(ctx), func(tx store.Queries) error { return b.write(ctx, tx) }); err == nil {
			return b.result, nil
		}
		err = fmt.Errorf("begin task creation: %w", err)
	}
	return c.beginFailed(ctx, req.WorkspaceID, ext, err)
}

// result is what Create answers for a Begin that found the task (or failed).
func (r BeginResult) result() Result { return Result{Task: r.Task, Outcome: r.Outcome} }

// lookupFirst normalizes the external ID and looks it up: found has a Found
// outcome when a task holds it (a zero outcome otherwise). workspace reads
// the workspace a miss needs next; it is read alongside the lookup, so the
// create waits for one read instead of two in a row.
func (c *Coordinator) lookupFirst(ctx context.Context, req CreateRequest) (ext string, found BeginResult,
	workspace func() (store.Workspace, error), err error) {
	ext, err = NormalizeExternalID(req.ExternalID)
	if err != nil {
		return "", found, nil, err
	}
	workspace = c.readWorkspace(ctx, req.WorkspaceID)
	// The caller's miss counts only for the key Create would read: the
	// external ID as given is already normalized.
	if ext == "" || (req.KnownAbsent && ext == req.ExternalID) {
		return ext, found, workspace, nil
	}
	t, outcome, err := c.lookup(ctx, req.WorkspaceID, ext)
	switch {
	case err == nil:
		return ext, BeginResult{Task: t, Outcome: outcome}, nil, nil
	case !errors.Is(err, store.ErrNotFound):
		return ext, found, nil, fmt.Errorf("lookup external id: %w", err)
	}
	return ext, found, workspace, nil
}

// beginFailed answers a Begin that failed after a lookup miss: any
// pre-insert failure (the unique backstop, WIP capacity, validation)
// re-reads the identity before it surfaces, so a concurrent create that won
// makes this one Found.
func (c *Coordinator) beginFailed(ctx context.Context, workspaceID, ext string, err error) (BeginResult, error) {
	if ext != "" && !errors.Is(err, store.ErrUnavailable) {
		if t, outcome, lerr := c.lookup(ctx, workspaceID, ext); lerr == nil {
			return BeginResult{Task: t, Outcome: outcome}, nil
		}
	}
	if errors.Is(err, store.ErrExternalIDTaken) {
		// The holder vanished between the violation and the re-read.
		return BeginResult{}, failure.Wrap(failure.Conflict, err, "external_id was taken concurrently; retry")
	}
	return BeginResult{}, err
}

// beginning is a Begin made ready before its transaction: the rows it
// writes (the task before its admission) and what Begin returns once it
// has committed.
type beginning struct {
	ws     store.Workspace
	op     store.Operation
	steps  []store.CreationStep
	task   store.Task
	plan   CreationPlan
	result BeginResult
	// created is the task.created of a creation written at once
	// (createAtOnce), its payload built before the transaction.
	created store.CreatedEvent
}

// write is Begin's transaction.
func (b *beginning) write(ctx context.Context, tx store.Queries) error {
	// The operation and its steps first: they lock nothing that other
	// creates wait for. Then the task domain's admission (the WIP limit of
	// its step, under the workspace row: see taskrules.Admit), then the
	// identifier from the workspace sequence, whose row every create in
	// the workspace waits for until this transaction ends. On PostgreSQL
	// the sequence UPDATE and the inserts travel with the COMMIT, so
	// concurrent creates in a workspace hold its row only while the server
	// runs the task's INSERT and the COMMIT, not for a round trip; a unique
	// violation on the external ID rolls the number back with the rest.
	if err := tx.InsertOperation(ctx, b.op); err != nil {
		return err
	}
	for _, s := range b.steps {
		if err := tx.InsertCreationStep(ctx, s); err != nil {
			return err
		}
	}
	admitted, err := taskrules.Admit(ctx, tx, taskrules.Admission{Workspace: b.ws, Task: b.task})
	if err != nil {
		return err
	}
	b.result.Task = admitted
	// The identifier is known once the INSERT has run (with the COMMIT on
	// PostgreSQL).
	return tx.InsertNumberedTasks(ctx, []store.Task{admitted}, func(ids []string) { b.result.Task.Identifier = ids[0] })
}

func (c *Coordinator) prepareBegin(ctx context.Context, req CreateRequest, ext string, workspace func() (store.Workspace, error)) (*beginning, error) {
	if req.Validate != nil {
		if err := req.Validate(&req); err != nil {
			return nil, err
		}
	}
	for _, cr := range req.Contributions {
		if err := c.validateContribution(cr); err != nil {
			return nil, err
		}
	}
	// Both stores keep microseconds: a creation written at once answers
	// with its rows as written, which then read back the same.
	now := c.now().Truncate(time.Microsecond)
	token := make([]byte, 32)
	if _, err := rand.Read(token); err != nil {
		return nil, fmt.Errorf("completion token: %w", err)
	}
	tokenHash := sha256Hex(token)
	opID, taskID := store.TimeOrderedID(), store.TimeOrderedID()
	actorDoc := ActorBindingDocument{Version: 1, Actor: req.Actor.Kind, PrincipalID: req.Actor.ID,
		WorkspaceID: req.WorkspaceID, AuthMode: req.Actor.AuthMode, AuthorityKind: req.Actor.Kind, AuthorityID: req.Actor.ID}
	actorJSON, err := Canonical(actorDoc)
	if err != nil {
		return nil, fmt.Errorf("actor binding: %w", err)
	}
	// Workspaces and steps are never deleted (config only adds or updates
	// them, and the tasks' foreign keys hold), so they are read before the
	// write transaction, keeping it short.
	ws, err := workspace()
	if err != nil {
		return nil, httpapi.Reword(fmt.Errorf("begin task creation: %w", err),
			failure.New(failure.NotFound, "workspace %q not found", req.WorkspaceID))
	}
	step, err := taskrules.Step(ws, req.WorkflowStepID)
	if err != nil {
		return nil, err
	}
	// The rows and the canonical plan are built before the transaction: the
	// single SQLite writer (and PostgreSQL's row locks) are held only for
	// the statements.
	task := store.Task{ID: taskID, WorkspaceID: ws.ID,
		Title: req.Title, Description: req.Description, WorkflowStepID: step.ID, Labels: req.Labels,
		Source: req.Source, SourceUpdatedAt: req.SourceUpdatedAt, OwnerConnection: req.OwnerConnection,
		ExternalID: ext, CreationState: store.CreationPreparing, CreationOperationID: opID,
		CreatedAt: now, UpdatedAt: now}
	if task.Labels == nil {
		task.Labels = []string{}
	}
	plan, steps, err := buildPlan(opID, task, tokenHash, req, now)
	if err != nil {
		return nil, err
	}
	planJSON, err := Canonical(plan)
	if err != nil {
		return nil, fmt.Errorf("creation plan: %w", err)
	}
	lease := now.Add(c.leaseTTL)
	op := store.Operation{ID: opID, WorkspaceID: ws.ID, TaskID: taskID, State: store.OpPreparing,
		PlanJSON: string(planJSON), ManifestSHA256: ManifestHash(planJSON), ActorJSON: string(actorJSON),
		ActorBindingSHA256: ActorBindingHash(actorJSON), CompletionTokenSHA256: tokenHash, ExternalID: ext,
		LeaseOwner: "caller", LeaseExpiresAt: &lease, CreatedAt: now, UpdatedAt: now}
	return &beginning{ws: ws, op: op, steps: steps, task: task, plan: plan, result: BeginResult{Outcome: Created,
		Handle: &CreationHandle{OperationID: opID, TaskID: taskID, WorkspaceID: ws.ID, CompletionToken: token,
			ActorBindingHash: op.ActorBindingSHA256, ManifestHash: op.ManifestSHA256, plannedSteps: len(steps)}}}, nil
}

func (c *Coordinator) validateContribution(r RemoteContributionRequest) error {
	kind, ok := c.contributionKinds[r.Provider]
	if !ok {
		return fmt.Errorf("%w: remote_contribution_associate provider %q", ErrUnsupportedStep, r.Provider)
	}
	if r.ContributionKind != kind {
		return fmt.Errorf("%w: contribution kind %q", ErrUnsupportedStep, r.ContributionKind)
	}
	if r.ConnectionID == "" || r.ContributionID == "" {
		return fmt.Errorf("remote_contribution_associate: connection and contribution ids are required")
	}
	return nil
}

// PlanStepKinds refuses every kind without an executor (Begin's guard for
// callers building plans from other sources).
func PlanStepKinds(kinds []string) error {
	for _, k := range kinds {
		if !knownStepKinds[k] {
			return fmt.Errorf("unknown step kind %q", k)
		}
		if k != StepRemoteContributionAssociate {
			return fmt.Errorf("%w: %s", ErrUnsupportedStep, k)
		}
	}
	return nil
}

func buildPlan(opID string, task store.Task, tokenHash string, req CreateRequest, now time.Time) (CreationPlan, []store.CreationStep, error) {
	reqJSON, err := Canonical(struct {
		WorkspaceID    string   `json:"workspace_id"`
		ExternalID     string   `json:"external_id"`
		Title          string   `json:"title"`
		Description    string   `json:"description"`
		WorkflowStepID string   `json:"workflow_step_id"`
		Labels         []string `json:"labels"`
	}{task.WorkspaceID, task.ExternalID, task.Title, task.Description, task.WorkflowStepID, task.Labels})
	if err != nil {
		return CreationPlan{}, nil, err
	}
	// The identifier is allocated after the plan, inside Begin's transaction
	// (to keep the workspace lock short); the row hash binds the task's
	// identity.
	rowJSON, err := Canonical(map[string]any{"id": task.ID, "workspace_id": task.WorkspaceID,
		"external_id": task.ExternalID, "creation_operation_id": opID})
	if err != nil {
		return CreationPlan{}, nil, err
	}
	plan := CreationPlan{Version: 1, TaskID: task.ID, WorkspaceID: task.WorkspaceID, WorkflowStepID: task.WorkflowStepID,
		RequestSHA256: sha256Hex(reqJSON),
		DatabaseRows:  []DatabaseRow{{Table: "tasks", Key: task.ID, RowSHA256: sha256Hex(rowJSON)}},
		Steps:         []PlanStep{}}
	var steps []store.CreationStep
	seen := map[string]bool{}
	for _, cr := range req.Contributions {
		cr.TaskID, cr.WorkspaceID = task.ID, task.WorkspaceID
		key := cr.StepKey()
		if seen[key] {
			return CreationPlan{}, nil, failure.New(failure.Invalid, "duplicate step %s", key)
		}
		seen[key] = true
		body, err := Canonical(cr)
		if err != nil {
			return CreationPlan{}, nil, err
		}
		plan.Steps = append(plan.Steps, PlanStep{Kind: StepRemoteContributionAssociate, StepKey: key, Request: body})
		reqHash := RequestHash(body)
		steps = append(steps, store.CreationStep{OperationID: opID, Kind: StepRemoteContributionAssociate, StepKey: key,
			RequestJSON: string(body), RequestSHA256: reqHash,
			IdempotencyKey:  IdempotencyKey(opID, StepRemoteContributionAssociate, key, reqHash),
			State:           store.StepPlanned,
			OwnershipMarker: OwnershipMarker(opID, StepRemoteContributionAssociate, key, tokenHash),
			Compensation:    store.CompensationNone, Disposition: "none", CreatedAt: now, UpdatedAt: now})
	}
	// Every planned kind must have an executor here (Begin refuses the rest).
	kinds := make([]string, 0, len(plan.Steps))
	for _, ps := range plan.Steps {
		kinds = append(kinds, ps.Kind)
	}
	if err := PlanStepKinds(kinds); err != nil {
		return CreationPlan{}, nil, err
	}
	sortPlan(&plan)
	return plan, steps, nil
}

// verifyStored recomputes every binding the ledger holds for op and its
// steps: the manifest and actor hashes, each step's request hash, idempotency
// key and ownership marker, and each step against the plan. When h is non-nil
// the handle must match too (token by its SHA-256).
func verifyStored(op store.Operation, steps []store.CreationStep, h *CreationHandle) (CreationPlan, error) {
	var plan CreationPlan
	if ManifestHash([]byte(op.PlanJSON)) != op.ManifestSHA256 {
		return plan, fmt.Errorf("%w: manifest hash", ErrHandleMismatch)
	}
	if ActorBindingHash([]byte(op.ActorJSON)) != op.ActorBindingSHA256 {
		return plan, fmt.Errorf("%w: actor binding hash", ErrHandleMismatch)
	}
	plan, err := parseCanonicalPlan(op.PlanJSON)
	if err != nil {
		return plan, err
	}
	if plan.TaskID != op.TaskID || plan.WorkspaceID != op.WorkspaceID {
		return plan, fmt.Errorf("%w: plan task or workspace", ErrHandleMismatch)
	}
	if h != nil {
		if h.OperationID != op.ID || h.TaskID != op.TaskID || h.WorkspaceID != op.WorkspaceID {
			return plan, fmt.Errorf("%w: handle identity", ErrHandleMismatch)
		}
		if !constantTimeEqual(sha256Hex(h.CompletionToken), op.CompletionTokenSHA256) {
			return plan, fmt.Errorf("%w: completion token", ErrHandleMismatch)
		}
		if h.ManifestHash != op.ManifestSHA256 || h.ActorBindingHash != op.ActorBindingSHA256 {
			return plan, fmt.Errorf("%w: handle hashes", ErrHandleMismatch)
		}
	}
	if len(steps) != len(plan.Steps) {
		return plan, fmt.Errorf("%w: %d steps stored, %d planned", ErrHandleMismatch, len(steps), len(plan.Steps))
	}
	for i, s := range steps {
		p := plan.Steps[i]
		if s.Kind != p.Kind || s.StepKey != p.StepKey || s.RequestJSON != string(p.Request) {
			return plan, fmt.Errorf("%w: step %s differs from the plan", ErrHandleMismatch, s.StepKey)
		}
		if RequestHash([]byte(s.RequestJSON)) != s.RequestSHA256 {
			return plan, fmt.Errorf("%w: step %s request hash", ErrHandleMismatch, s.StepKey)
		}
		if IdempotencyKey(op.ID, s.Kind, s.StepKey, s.RequestSHA256) != s.IdempotencyKey {
			return plan, fmt.Errorf("%w: step %s idempotency key", ErrHandleMismatch, s.StepKey)
		}
		if OwnershipMarker(op.ID, s.Kind, s.StepKey, op.CompletionTokenSHA256) != s.OwnershipMarker {
			return plan, fmt.Errorf("%w: step %s ownership marker", ErrHandleMismatch, s.StepKey)
		}
		if s.EvidenceJSON != "" && sha256Hex([]byte(s.EvidenceJSON)) != s.EvidenceSHA256 {
			return plan, fmt.Errorf("%w: step %s evidence hash", ErrHandleMismatch, s.StepKey)
		}
	}
	return plan, nil
}

func constantTimeEqual(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	var v byte
	for i := 0; i < len(a); i++ {
		v |= a[i] ^ b[i]
	}
	return v == 0
}

// lockVerified locks the operation and its steps (lock order: operation,
// then steps) and verifies every binding.
func lockVerified(ctx context.Context, tx store.Queries, opID string, h *CreationHandle) (store.Operation, []store.CreationStep, error) {
	op, steps, err := tx.LockOperationAndSteps(ctx, opID)
	return verifyLocked(op, steps, err, opID, h)
}

// lockVerifiedCreation is lockVerified that also locks the operation's task
// (operation, task, steps: the lock order), in the same round trip; the task
// is nil when it is gone.
func lockVerifiedCreation(ctx context.Context, tx store.Queries, opID string, h *CreationHandle) (store.Operation, []store.CreationStep, *store.Task, error) {
	op, steps, task, err := tx.LockCreation(ctx, opID)
	op, steps, err = verifyLocked(op, steps, err, opID, h)
	return op, steps, task, err
}

func verifyLocked(op store.Operation, steps []store.CreationStep, err error, opID string, h *CreationHandle) (store.Operation, []store.CreationStep, error) {
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return op, nil, fmt.Errorf("%w: operation %s", ErrHandleMismatch, opID)
		}
		return op, nil, err
	}
	if _, err := verifyStored(op, steps, h); err != nil {
		return op, nil, err
	}
	return op, steps, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
