package idempotency

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/trackergateway/gateway/internal/events"
	"github.com/trackergateway/gateway/internal/failure"
	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/tracing"
)

// unacknowledged marks the commits that no caller is answered on — Begin,
// step claims and effects, phase A, abort intent and compensation — as
// deferred-sync (store.WithDeferredSync). The commit a caller is answered on
// (phase B, Abort's finalization, a release) syncs fully, and the logs are
// sequential, so it makes every earlier commit of the creation durable too;
// a power loss before it can only roll the creation back to an earlier
// state that recovery resumes — or erase an unacknowledged preparing task.
func unacknowledged(ctx context.Context) context.Context { return store.WithDeferredSync(ctx) }

// fence is the authority a ledger call runs under: the caller's handle, or a
// recovery claim (owner and generation) on the operation.
type fence struct {
	h          *CreationHandle
	owner      string
	generation int64
}

func (f fence) claimOwner() string {
	if f.h != nil {
		return "caller"
	}
	return f.owner
}

// lockFenced locks and verifies the operation, and for recovery checks that
// the claim is still this recoverer's (stale generation → typed conflict).
func (c *Coordinator) lockFenced(ctx context.Context, tx store.Queries, opID string, f fence) (store.Operation, []store.CreationStep, error) {
	op, steps, err := lockVerified(ctx, tx, opID, f.h)
	if err != nil {
		return op, nil, err
	}
	return op, steps, f.check(op)
}

// lockFencedCreation is lockFenced that also locks the task (nil when gone).
func (c *Coordinator) lockFencedCreation(ctx context.Context, tx store.Queries, opID string, f fence) (store.Operation, []store.CreationStep, *store.Task, error) {
	op, steps, task, err := lockVerifiedCreation(ctx, tx, opID, f.h)
	if err != nil {
		return op, nil, nil, err
	}
	return op, steps, task, f.check(op)
}

// lockFencedTaskExists is lockFencedCreation that learns only whether the
// task row is there (store.LockCreationTaskExists).
func (c *Coordinator) lockFencedTaskExists(ctx context.Context, tx store.Queries, opID string, f fence) (store.Operation, []store.CreationStep, bool, error) {
	op, steps, exists, err := tx.LockCreationTaskExists(ctx, opID)
	if op, steps, err = verifyLocked(op, steps, err, opID, f.h); err != nil {
		return op, nil, false, err
	}
	return op, steps, exists, f.check(op)
}

// check refuses a recovery whose claim on op is no longer this one's.
func (f fence) check(op store.Operation) error {
	if f.h == nil && (op.LeaseOwner != f.owner || op.Generation != f.generation) {
		return fmt.Errorf("%w: recovery claim of %s lost (generation %d, now %d)", ErrCreationStateConflict, op.ID, f.generation, op.Generation)
	}
	return nil
}

// ExecuteSteps runs every planned or retryable step of the operation.
func (c *Coordinator) ExecuteSteps(ctx context.Context, h *CreationHandle) (err error) {
	ctx, span := tracing.Start(ctx, "task.create.steps")
	defer func() { endChild(span, err) }()
	if h.plannedSteps == 0 {
		// Begin planned no step; phase A verifies the stored plan agrees.
		return nil
	}
	return c.executeSteps(ctx, h.OperationID, fence{h: h})
}

func (c *Coordinator) executeSteps(ctx context.Context, opID string, f fence) error {
	steps, err := c.st.ListCreationSteps(ctx, opID)
	if err != nil {
		return fmt.Errorf("list steps: %w", err)
	}
	for _, s := range steps {
		if s.State != store.StepPlanned && s.State != store.StepRetryWait {
			continue
		}
		if err := c.executeStep(ctx, opID, s.Kind, s.StepKey, f); err != nil {
			return err
		}
	}
	return nil
}

func findCreationStep(steps []store.CreationStep, kind, key string) (store.CreationStep, bool) {
	for _, s := range steps {
		if s.Kind == kind && s.StepKey == key {
			return s, true
		}
	}
	return store.CreationStep{}, false
}

// executeStep: claim (planned|retry_wait → running), effect write with the
// ownership marker, then completion with evidence — three durable steps, so a
// crash between any two is reconciled from the effect authority.
func (c *Coordinator) executeStep(ctx context.Context, opID, kind, key string, f fence) error {
	if kind != StepRemoteContributionAssociate {
		return fmt.Errorf("%w: %s", ErrUnsupportedStep, kind)
	}
	var claimGen int64
	err := c.st.InTx(unacknowledged(ctx), func(tx store.Queries) error {
		op, steps, err := c.lockFenced(ctx, tx, opID, f)
		if err != nil {
			return err
		}
		if op.State != store.OpPreparing {
			return fmt.Errorf("%w: operation is %s", ErrCreationStateConflict, op.State)
		}
		s, _ := findCreationStep(steps, kind, key)
		if s.State != store.StepPlanned && s.State != store.StepRetryWait {
			return fmt.Errorf("%w: step %s is %s", ErrCreationStateConflict, key, s.State)
		}
		now := c.now()
		lease := now.Add(c.leaseTTL)
		s.State, s.Attempt, s.ClaimGeneration = store.StepRunning, s.Attempt+1, s.ClaimGeneration+1
		s.ClaimOwner, s.LeaseExpiresAt, s.UpdatedAt = f.claimOwner(), &lease, now
		claimGen = s.ClaimGeneration
		return tx.UpdateCreationStep(ctx, s)
	})
	if err != nil {
		return fmt.Errorf("claim step: %w", err)
	}
	if err := c.failpoint(FailAfterStepClaim); err != nil {
		return err
	}

	refused := false
	err = c.st.InTx(unacknowledged(ctx), func(tx store.Queries) error {
		op, s, err := c.lockClaimedStep(ctx, tx, opID, kind, key, claimGen, f)
		if err != nil {
			return err
		}
		want, err := associationFor(op, s)
		if err != nil {
			return err
		}
		want.ClaimedAt = c.now()
		inserted, err := tx.InsertAssociation(ctx, want)
		if err != nil || inserted {
			return err
		}
		// The row exists: decide exactly as recovery does (observeEffect).
		obs, err := observeEffect(ctx, tx, op, s)
		if err != nil {
			return err
		}
		refused = obs.verdict != effectOurs
		return nil
	})
	if err != nil {
		return fmt.Errorf("step effect: %w", err)
	}
	if refused {
		return c.settleRefusedEffect(ctx, opID, kind, key, claimGen, f)
	}
	if err := c.failpoint(FailAfterEffectWrite); err != nil {
		return err
	}

	err = c.st.InTx(unacknowledged(ctx), func(tx store.Queries) error {
		op, s, err := c.lockClaimedStep(ctx, tx, opID, kind, key, claimGen, f)
		if err != nil {
			return err
		}
		return c.succeedFromAuthority(ctx, tx, op, s)
	})
	if err != nil {
		return fmt.Errorf("complete step: %w", err)
	}
	return nil
}

// succeedFromAuthority reloads the effect row and, when it is exactly ours,
// records present_exact evidence and marks the step succeeded.
func (c *Coordinator) succeedFromAuthority(ctx context.Context, tx store.Queries, op store.Operation, s store.CreationStep) error {
	want, err := associationFor(op, s)
	if err != nil {
		return err
	}
	got, err := tx.GetAssociation(ctx, want.Provider, want.ConnectionID, want.ContributionID)
	if err != nil {
		return err
	}
	if !ownedBy(got, op, s) {
		return fmt.Errorf("%w: effect row is not owned by this operation", ErrHandleMismatch)
	}
	now := c.now()
	evidence, err := evidenceFor(s, effectPresentExact, observeOwned(got), now)
	if err != nil {
		return err
	}
	s.State, s.EvidenceJSON, s.EvidenceSHA256 = store.StepSucceeded, evidence, sha256Hex([]byte(evidence))
	s.LeaseExpiresAt, s.ProviderHandle, s.Error, s.UpdatedAt = nil, providerHandle(got), "", now
	return tx.UpdateCreationStep(ctx, s)
}

// lockClaimedStep locks and verifies the operation and returns the step,
// which must still be running under this executor's claim generation.
func (c *Coordinator) lockClaimedStep(ctx context.Context, tx store.Queries, opID, kind, key string, claimGen int64, f fence) (store.Operation, store.CreationStep, error) {
	op, steps, err := c.lockFenced(ctx, tx, opID, f)
	if err != nil {
		return op, store.CreationStep{}, err
	}
	s, _ := findCreationStep(steps, kind, key)
	if s.State != store.StepRunning || s.ClaimGeneration != claimGen {
		return op, s, fmt.Errorf("%w: step claim lost", ErrCreationStateConflict)
	}
	return op, s, nil
}

// settleRefusedEffect records what the effect write found instead of its own
// row, under the step claim, with the same transition recovery makes for the
// same observation (applyObservation): a row another recorded operation owns
// proves this step's effect absent, so the step fails and the creation
// aborts; a row nobody provably owns is a conflict that leaves the step
// unknown for an operator.
func (c *Coordinator) settleRefusedEffect(ctx context.Context, opID, kind, key string, claimGen int64, f fence) error {
	var obs effectObservation
	err := c.st.InTx(unacknowledged(ctx), func(tx store.Queries) error {
		op, s, err := c.lockClaimedStep(ctx, tx, opID, kind, key, claimGen, f)
		if err != nil {
			return err
		}
		// Observed again under the claim: the row may have changed since.
		if obs, err = observeEffect(ctx, tx, op, s); err != nil {
			return err
		}
		return c.applyObservation(ctx, tx, op, s, obs)
	})
	if err != nil {
		return fmt.Errorf("settle step effect: %w", err)
	}
	switch obs.verdict {
	case effectForeignProven:
		return &stepError{reason: obs.reason()}
	case effectConflict:
		return failure.Wrap(failure.Conflict, fmt.Errorf("%w: %s", ErrCreationStateConflict, obs.reason()),
			"task creation is blocked: %s; an operator must resolve the step", obs.reason())
	case effectAbsent:
		// The row went away between the write and this reading: the step
		// is retry_wait and the next attempt writes it.
		return fmt.Errorf("%w: step %s effect row vanished; retry", ErrCreationStateConflict, key)
	}
	return nil
}

func associationFor(op store.Operation, s store.CreationStep) (store.Association, error) {
	var req RemoteContributionRequest
	if err := decodeStrict([]byte(s.RequestJSON), &req); err != nil {
		return store.Association{}, fmt.Errorf("%w: step request: %v", ErrHandleMismatch, err)
	}
	if req.TaskID != op.TaskID || req.WorkspaceID != op.WorkspaceID {
		return store.Association{}, fmt.Errorf("%w: step request names another task", ErrHandleMismatch)
	}
	return store.Association{Provider: req.Provider, ConnectionID: req.ConnectionID, ContributionID: req.ContributionID,
		ContributionKind: req.ContributionKind, TaskID: req.TaskID, WorkspaceID: req.WorkspaceID,
		RepositoryID: req.RepositoryID, OperationID: op.ID, IdempotencyKey: s.IdempotencyKey,
		OwnershipMarker: s.OwnershipMarker}, nil
}

// ownedBy: the row is this operation's exact effect.
func ownedBy(a store.Association, op store.Operation, s store.CreationStep) bool {
	want, err := associationFor(op, s)
	if err != nil {
		return false
	}
	return a.OperationID == op.ID && a.OwnershipMarker == s.OwnershipMarker && a.IdempotencyKey == s.IdempotencyKey &&
		a.TaskID == want.TaskID && a.WorkspaceID == want.WorkspaceID && a.RepositoryID == want.RepositoryID &&
		a.ContributionKind == want.ContributionKind
}

func observeAssociation(a *store.Association) map[string]any {
	if a == nil {
		return map[string]any{"row": nil}
	}
	row := map[string]any{"provider": a.Provider, "connection_id": a.ConnectionID, "contribution_id": a.ContributionID,
		"contribution_kind": a.ContributionKind, "task_id": a.TaskID, "workspace_id": a.WorkspaceID,
		"repository_id": a.RepositoryID, "operation_id": a.OperationID, "idempotency_key": a.IdempotencyKey,
		"ownership_marker": a.OwnershipMarker, "claimed_at_us": strconv.FormatInt(a.ClaimedAt.UnixMicro(), 10)}
	canon, _ := Canonical(row)
	return map[string]any{"row": row, "row_sha256": sha256Hex(canon)}
}

type stepEvidence struct {
	Version       int            `json:"version"`
	Kind          string         `json:"kind"`
	StepKey       string         `json:"step_key"`
	RequestSHA256 string         `json:"request_sha256"`
	Observation   map[string]any `json:"observation"`
	ObservedAt    string         `json:"observed_at"`
	Effect        string         `json:"effect"`
}

func evidenceFor(s store.CreationStep, effect string, observation map[string]any, at time.Time) (string, error) {
	b, err := Canonical(stepEvidence{Version: 1, Kind: s.Kind, StepKey: s.StepKey, RequestSHA256: s.RequestSHA256,
		Observation: observation, ObservedAt: at.Format(time.RFC3339Nano), Effect: effect})
	if err != nil {
		return "", fmt.Errorf("step evidence: %w", err)
	}
	return string(b), nil
}

// verifyEvidence re-proves a succeeded step against the effect authority:
// the stored evidence must describe exactly the row that exists now.
func verifyEvidence(ctx context.Context, tx store.Queries, op store.Operation, s store.CreationStep) error {
	var ev stepEvidence
	if err := json.Unmarshal([]byte(s.EvidenceJSON), &ev); err != nil {
		return fmt.Errorf("%w: step %s evidence: %v", ErrHandleMismatch, s.StepKey, err)
	}
	if ev.Effect != effectPresentExact || ev.RequestSHA256 != s.RequestSHA256 || ev.StepKey != s.StepKey || ev.Kind != s.Kind {
		return fmt.Errorf("%w: step %s evidence does not match the step", ErrHandleMismatch, s.StepKey)
	}
	want, err := associationFor(op, s)
	if err != nil {
		return err
	}
	got, err := tx.GetAssociation(ctx, want.Provider, want.ConnectionID, want.ContributionID)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("%w: step %s effect row is gone", ErrHandleMismatch, s.StepKey)
		}
		return err
	}
	current, _ := Canonical(observeOwned(got))
	stored, _ := Canonical(ev.Observation)
	if string(current) != string(stored) || !ownedBy(got, op, s) || s.ProviderHandle != providerHandle(got) {
		return fmt.Errorf("%w: step %s effect row differs from its evidence", ErrHandleMismatch, s.StepKey)
	}
	return nil
}

// CompleteTaskCreation finishes a creation in two durable phases:
// preparing → completing, then completing → completed with settlement, the
// task's first revision and task.created in one transaction.
func (c *Coordinator) CompleteTaskCreation(ctx context.Context, h *CreationHandle) (res Result, err error) {
	ctx, span := tracing.Start(ctx, "task.create.complete")
	defer func() { endChild(span, err) }()
	return c.complete(ctx, h.OperationID, fence{h: h})
}

// errTaskGone: the task row of an unfinished creation was deleted underneath
// it (only possible by bypassing the task service, which refuses to delete a
// task still being created). The surface's not-found error (spec:
// settlement, zero rows, task deleted).
var errTaskGone = failure.New(failure.NotFound, "task not found")

// complete runs phase A, then phase B. Without a failpoint the two are one
// transaction (both); a failpoint stands for a crash between them, so with
// one they commit apart: phase A with deferred sync, phase B, the commit
// the caller is answered on, fully synced.
func (c *Coordinator) complete(ctx context.Context, opID string, f fence) (Result, error) {
	cm := &completion{c: c, opID: opID, f: f}
	if c.Failpoint == nil {
		if err := c.st.InTx(ctx, func(tx store.Queries) error { return cm.both(ctx, tx) }); err != nil {
			return Result{}, fmt.Errorf("complete task creation: %w", err)
		}
		return cm.finish(ctx)
	}
	if err := c.st.InTx(unacknowledged(ctx), func(tx store.Queries) error { return cm.phaseA(ctx, tx) }); err != nil {
		return Result{}, fmt.Errorf("complete task creation (phase a): %w", err)
	}
	if cm.replay == nil && !cm.taskGone { // otherwise phase A has the answer
		if err := c.failpoint(FailAfterPhaseA); err != nil {
			return Result{}, err
		}
		if err := c.st.InTx(ctx, func(tx store.Queries) error { return cm.phaseB(ctx, tx) }); err != nil {
			return Result{}, fmt.Errorf("complete task creation (phase b): %w", err)
		}
	}
	return cm.finish(ctx)
}

// completion is one Complete of an operation: its two phases as
// transactions, and what they found.
type completion struct {
	c    *Coordinator
	opID string
	f    fence
	// replay is the stored result phase A found (already completed).
	replay *Result
	// taskGone: phase A found the task row deleted and recorded the abort.
	taskGone bool
	res      Result
}

// both is phase A and phase B as one transaction (the commit the caller is
// answered on, fully synced): what phase A verifies and then phase B again
// is verified once, under the locks phase B takes, and the task and the
// operation are written once, as phase B leaves them (phase A's completing
// state would be overwritten before the commit). A crash leaves the
// creation as before phase A or as after phase B, which the two commits
// allow too: nothing runs between them.
func (cm *completion) both(ctx context.Context, tx store.Queries) error {
	op, steps, locked, err := cm.c.lockFencedCreation(ctx, tx, cm.opID, cm.f)
	if err != nil {
		return err
	}
	if op.State != store.OpPreparing {
		// Completed, or completing since an earlier run's phase A
		// (recovery finishes it): phase B's own case.
		return cm.phaseBLocked(ctx, tx, op, steps, locked)
	}
	if err := completePredicate(ctx, tx, op, steps); err != nil {
		return err
	}
	if locked == nil {
		return cm.recordTaskGone(ctx, tx, op)
	}
	return cm.settle(ctx, tx, op, *locked)
}

// recordTaskGone records, under the operation lock, that the task row of a
// preparing creation is gone, so that the abort (or recovery's
// abort_preparing) compensates the effects.
func (cm *completion) recordTaskGone(ctx context.Context, tx store.Queries, op store.Operation) error {
	cm.taskGone = true
	op.Error, op.UpdatedAt = "aborted: task deleted during creation", cm.c.now()
	return tx.UpdateOperation(ctx, op)
}

// phaseA: preparing → completing, after verifying the handle and evidence.
func (cm *completion) phaseA(ctx context.Context, tx store.Queries) error {
	c := cm.c
	// The task's row lock is taken with the operation's and the steps'
	// (store.LockCreation). Phase A needs only to know the row is there:
	// it is read with its columns in phase B, which settles it.
	op, steps, taskExists, err := c.lockFencedTaskExists(ctx, tx, cm.opID, cm.f)
	if err != nil {
		return err
	}
	switch op.State {
	case store.OpCompleted:
		r, err := c.replayCompleted(ctx, tx, op)
		cm.replay = &r
		return err
	case store.OpCompleting:
		return nil // phase A already committed
	case store.OpPreparing:
	default:
		return fmt.Errorf("%w: cannot complete an operation in state %s", ErrCreationStateConflict, op.State)
	}
	if err := completePredicate(ctx, tx, op, steps); err != nil {
		return err
	}
	if !taskExists {
		// Nothing left to complete.
		return cm.recordTaskGone(ctx, tx, op)
	}
	now := c.now()
	if err := tx.SetTaskCreationState(ctx, op.TaskID, store.CreationCompleting, now); err != nil {
		return err
	}
	op.State, op.UpdatedAt = store.OpCompleting, now
	return tx.UpdateOperation(ctx, op)
}

// phaseB: completing → completed with settlement, revision one and
// task.created.
func (cm *completion) phaseB(ctx context.Context, tx store.Queries) error {
	c := cm.c
	// No workspace lock here: phase B rewrites a task row it already
	// updated in this transaction, so PostgreSQL re-checks the row's
	// foreign keys (FOR KEY SHARE on the workspace row). Workspace locks
	// are FOR NO KEY UPDATE, which does not conflict with that, so a
	// Begin holding the workspace cannot deadlock with this phase.
	// The task row lock is held from here to commit, so the row read
	// now is the row settlement sees.
	op, steps, locked, err := c.lockFencedCreation(ctx, tx, cm.opID, cm.f)
	if err != nil {
		return err
	}
	return cm.phaseBLocked(ctx, tx, op, steps, locked)
}

// phaseBLocked is phase B once op, its steps and its task (nil when gone)
// are locked.
func (cm *completion) phaseBLocked(ctx context.Context, tx store.Queries, op store.Operation, steps []store.CreationStep, locked *store.Task) error {
	if op.State == store.OpCompleted {
		var err error
		cm.res, err = cm.c.replayCompleted(ctx, tx, op)
		return err
	}
	if op.State != store.OpCompleting {
		return fmt.Errorf("%w: phase b found state %s", ErrCreationStateConflict, op.State)
	}
	for _, s := range steps {
		if err := verifyEvidence(ctx, tx, op, s); err != nil {
			return err
		}
	}
	if locked == nil {
		return fmt.Errorf("%w: %w", errTaskGone, store.ErrNotFound)
	}
	return cm.settle(ctx, tx, op, *locked)
}

// settle is phase B's writes, of op and its task as read under their
// locks: settlement, the task complete at revision 1, task.created and the
// operation completed.
func (cm *completion) settle(ctx context.Context, tx store.Queries, op store.Operation, task store.Task) error {
	c := cm.c
	now := c.now()
	outcome := Created
	settle := ""
	if op.ExternalID != "" {
		// Settlement: its predicate includes external_id, so a released
		// identity is never stamped (identity lost). The task row is
		// locked, so whether it settles is known from the row read
		// under the lock, and the stamp travels in the same UPDATE that
		// completes the task, without a round trip of its own.
		if task.ExternalID == op.ExternalID && task.ExternalIDSettledAt == nil {
			settle = op.ExternalID
			task.ExternalIDSettledAt = &now
		} else {
			outcome = CreatedIdentityLost
		}
	} else if op.ReleaseApplied {
		outcome = CreatedIdentityLost
	}
	if outcome == CreatedIdentityLost && task.ExternalID != "" {
		return fmt.Errorf("%w: settlement missed a task that holds %q", ErrCreationStateConflict, task.ExternalID)
	}
	task.Revision, task.UpdatedAt, task.CreationState = 1, now, store.CreationComplete
	if err := tx.SetTaskCreated(ctx, task.ID, task.Revision, now, settle); err != nil {
		return err
	}
	// The event and the operation's completion travel with the COMMIT
	// on PostgreSQL: the outbox lock is never held across a round trip.
	payload, err := events.Data{Task: events.TaskOf(task), Revision: 1, Cause: creationCause(ctx, op)}.Payload()
	if err != nil {
		return fmt.Errorf("task event: %w", err)
	}
	if err := tx.FinishCreation(ctx, op.ID, outcome.String(), store.TaskEvent{WorkspaceID: task.WorkspaceID,
		TaskID: task.ID, Revision: 1, Type: store.EventTaskCreated, Payload: payload, CreatedAt: now}); err != nil {
		return err
	}
	cm.res = Result{Task: task, Outcome: outcome}
	return nil
}

// creationCause is the cause of op's task.created: the one ctx carries
// when the caller that began the creation completes it, else (recovery
// completing it) the one its recorded actor names.
func creationCause(ctx context.Context, op store.Operation) events.Cause {
	if c := events.CauseFrom(ctx); !c.IsZero() {
		return c
	}
	var actor ActorBindingDocument
	if err := json.Unmarshal([]byte(op.ActorJSON), &actor); err != nil {
		return events.Cause{}
	}
	return actorCause(actor.Actor, actor.PrincipalID)
}

// actorCause is the cause a creation's actor names when no request said
// more: the connection, or the API for a token (the agent tools create as
// their token too).
func actorCause(kind, id string) events.Cause {
	switch kind {
	case "connection":
		return events.Cause{Connection: id}
	case "api_token":
		return events.Cause{Actor: events.ActorAPI}
	}
	return events.Cause{}
}

// finish answers the Complete whose transactions committed.
func (cm *completion) finish(ctx context.Context) (Result, error) {
	c := cm.c
	switch {
	case cm.replay != nil:
		return *cm.replay, nil
	case cm.taskGone:
		if err := c.abort(ctx, cm.opID, cm.f, "task deleted during creation"); err != nil {
			c.logger.Warn("abort after task deletion failed; recovery will retry", "operation_id", cm.opID, "error", err)
		}
		return Result{}, errTaskGone
	}
	if err := c.failpoint(FailAfterPhaseB); err != nil {
		return Result{}, err
	}
	return cm.res, nil
}

func completePredicate(ctx context.Context, tx store.Queries, op store.Operation, steps []store.CreationStep) error {
	if op.Error != "" {
		return fmt.Errorf("%w: abort requested: %s", ErrCreationStateConflict, op.Error)
	}
	for _, s := range steps {
		if s.State != store.StepSucceeded || s.Compensation != store.CompensationNone {
			return fmt.Errorf("%w: step %s is %s", ErrCreationStateConflict, s.StepKey, s.State)
		}
		if err := verifyEvidence(ctx, tx, op, s); err != nil {
			return err
		}
	}
	return nil
}

func parseOutcome(s string) Outcome {
	for _, o := range []Outcome{Created, FoundSettled, FoundUnsettled, CreatedIdentityLost} {
		if o.String() == s {
			return o
		}
	}
	return 0
}

// replayCompleted returns the stored result of a completed operation.
func (c *Coordinator) replayCompleted(ctx context.Context, tx store.Queries, op store.Operation) (Result, error) {
	task, err := tx.GetTask(ctx, op.TaskID)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return Result{}, failure.New(failure.NotFound, "task not found")
		}
		return Result{}, err
	}
	return Result{Task: task, Outcome: parseOutcome(op.Outcome)}, nil
}

// AbortTaskCreation compensates every effect this operation owns, deletes the
// partial task, and keeps the operation and steps as aborted; no event. It is
// durable in three steps (intent, compensation, finalization), each resumable
// by recovery.
func (c *Coordinator) AbortTaskCreation(ctx context.Context, h *CreationHandle, cause string) error {
	return c.abort(ctx, h.OperationID, fence{h: h}, cause)
}

func (c *Coordinator) abort(ctx context.Context, opID string, f fence, cause string) error {
	aborted := false
	err := c.st.InTx(unacknowledged(ctx), func(tx store.Queries) error {
		op, steps, err := c.lockFenced(ctx, tx, opID, f)
		if err != nil {
			return err
		}
		switch op.State {
		case store.OpAborted:
			aborted = true
			return nil
		case store.OpPreparing:
		default:
			return fmt.Errorf("%w: cannot abort an operation in state %s", ErrCreationStateConflict, op.State)
		}
		now := c.now()
		for _, s := range steps {
			switch s.State {
			case store.StepRunning, store.StepUnknown:
				return fmt.Errorf("%w: step %s is %s; recovery owns it", ErrCreationStateConflict, s.StepKey, s.State)
			case store.StepSucceeded:
				if s.Compensation == store.CompensationNone {
					// Abort, like Complete, requires the effect row to be
					// byte-equivalent to its evidence: a tampered or foreign
					// row is never compensated away (or left orphaned).
					if err := verifyEvidence(ctx, tx, op, s); err != nil {
						return err
					}
					s.Compensation, s.UpdatedAt = store.CompensationRequired, now
					if err := tx.UpdateCreationStep(ctx, s); err != nil {
						return err
					}
				}
			case store.StepPlanned, store.StepRetryWait:
				evidence, err := evidenceFor(s, "absent_proven", observeAssociation(nil), now)
				if err != nil {
					return err
				}
				s.State, s.EvidenceJSON, s.EvidenceSHA256 = store.StepFailed, evidence, sha256Hex([]byte(evidence))
				s.Error, s.UpdatedAt = "not run: creation aborted", now
				if err := tx.UpdateCreationStep(ctx, s); err != nil {
					return err
				}
			}
		}
		if op.Error == "" {
			op.Error = "aborted: " + cause
		}
		op.UpdatedAt = now
		return tx.UpdateOperation(ctx, op)
	})
	if err != nil || aborted {
		return wrapAbort(err)
	}
	if err := c.compensate(ctx, opID, f); err != nil {
		return wrapAbort(err)
	}
	return wrapAbort(c.finalizeAbort(ctx, opID, f))
}

func wrapAbort(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("abort task creation: %w", err)
}

// compensate deletes the effect rows of every step whose compensation is
// required, by operation and ownership marker only.
func (c *Coordinator) compensate(ctx context.Context, opID string, f fence) error {
	return c.st.InTx(unacknowledged(ctx), func(tx store.Queries) error {
		op, steps, err := c.lockFenced(ctx, tx, opID, f)
		if err != nil {
			return err
		}
		now := c.now()
		for _, s := range steps {
			if s.Compensation != store.CompensationRequired {
				continue
			}
			if err := checkCompensable(ctx, tx, op, s); err != nil {
				return err
			}
			n, err := tx.DeleteAssociationsOwnedBy(ctx, op.ID, s.OwnershipMarker)
			if err != nil {
				return err
			}
			if n > 1 {
				return fmt.Errorf("%w: compensation of %s matched %d rows", ErrCreationStateConflict, s.StepKey, n)
			}
			if err := c.failpoint(FailInsideAbortCompensate); err != nil {
				return err // rolls the compensation back: a crash inside it
			}
			s.Compensation, s.UpdatedAt = store.CompensationDone, now
			if err := tx.UpdateCreationStep(ctx, s); err != nil {
				return err
			}
		}
		return nil
	})
}

// checkCompensable refuses to compensate a step whose effect row exists but
// is not exactly this operation's (deleting by marker would then match
// nothing and the row would outlive the aborted task). An absent row has
// nothing left to compensate.
func checkCompensable(ctx context.Context, tx store.Queries, op store.Operation, s store.CreationStep) error {
	want, err := associationFor(op, s)
	if err != nil {
		return err
	}
	got, err := tx.GetAssociation(ctx, want.Provider, want.ConnectionID, want.ContributionID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil
	case err != nil:
		return err
	case !ownedBy(got, op, s):
		return fmt.Errorf("%w: step %s effect row is not owned by this operation", ErrHandleMismatch, s.StepKey)
	}
	return nil
}

func (c *Coordinator) finalizeAbort(ctx context.Context, opID string, f fence) error {
	return c.st.InTx(ctx, func(tx store.Queries) error {
		op, steps, err := c.lockFenced(ctx, tx, opID, f)
		if err != nil {
			return err
		}
		if op.State == store.OpAborted {
			return nil
		}
		for _, s := range steps {
			if s.Compensation == store.CompensationRequired || s.State == store.StepRunning || s.State == store.StepUnknown {
				return fmt.Errorf("%w: step %s not settled for abort", ErrCreationStateConflict, s.StepKey)
			}
			if s.State == store.StepSucceeded && s.Compensation != store.CompensationDone {
				return fmt.Errorf("%w: step %s has a live effect", ErrCreationStateConflict, s.StepKey)
			}
		}
		if err := tx.DeleteTask(ctx, op.TaskID); err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		op.State, op.UpdatedAt, op.LeaseOwner, op.LeaseExpiresAt = store.OpAborted, c.now(), "", nil
		return tx.UpdateOperation(ctx, op)
	})
}

// ReleaseExternalID frees an identity without deleting its task. A task still
// preparing goes through preparing-release (two durable steps); its Complete
// then reports CreatedIdentityLost.
func (c *Coordinator) ReleaseExternalID(ctx context.Context, workspaceID, rawExternalID string) (store.Task, error) {
	ext, err := NormalizeExternalID(rawExternalID)
	if err != nil {
		return store.Task{}, err
	}
	if ext == "" {
		return store.Task{}, failure.New(failure.Invalid, "external_id is required")
	}
	t, err := c.st.LookupTaskByExternalID(ctx, workspaceID, ext)
	if err != nil {
		return t, err
	}
	if t.CreationState != store.CreationPreparing || t.CreationOperationID == "" {
		return c.st.ReleaseExternalID(ctx, workspaceID, ext)
	}
	opID := t.CreationOperationID
	err = c.st.InTx(unacknowledged(ctx), func(tx store.Queries) error {
		op, steps, err := lockVerified(ctx, tx, opID, nil)
		if err != nil {
			return err
		}
		if op.State != store.OpPreparing {
			return failure.New(failure.Conflict, "task creation is %s; retry the release", op.State)
		}
		for _, s := range steps {
			if s.State == store.StepRunning || s.State == store.StepUnknown || s.Compensation == store.CompensationRequired {
				return failure.New(failure.Conflict, "task creation has a step in progress; retry the release")
			}
		}
		op.State, op.UpdatedAt = store.OpPreparingRelease, c.now()
		return tx.UpdateOperation(ctx, op)
	})
	if err != nil {
		return store.Task{}, fmt.Errorf("claim preparing release: %w", err)
	}
	return c.applyPreparingRelease(ctx, opID)
}

// applyPreparingRelease clears the claim and returns the operation to
// preparing with release_applied; recovery retries it after a crash.
func (c *Coordinator) applyPreparingRelease(ctx context.Context, opID string) (store.Task, error) {
	var task store.Task
	err := c.st.InTx(ctx, func(tx store.Queries) error {
		op, _, err := lockVerified(ctx, tx, opID, nil)
		if err != nil {
			return err
		}
		if op.State != store.OpPreparingRelease {
			return fmt.Errorf("%w: release found state %s", ErrCreationStateConflict, op.State)
		}
		t, err := tx.LockTask(ctx, op.TaskID)
		if err != nil {
			return err
		}
		if t.ExternalID != "" {
			if task, err = tx.ReleaseExternalID(ctx, t.WorkspaceID, t.ExternalID); err != nil {
				return err
			}
		} else {
			task = t
		}
		op.State, op.ReleaseApplied, op.UpdatedAt = store.OpPreparing, true, c.now()
		return tx.UpdateOperation(ctx, op)
	})
	if err != nil {
		return store.Task{}, fmt.Errorf("apply preparing release: %w", err)
	}
	return task, nil
}
