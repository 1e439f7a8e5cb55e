package idempotency

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/trackergateway/gateway/internal/store"
)

// RecoveryAction is the spec's closed set. The launch-dispatch actions
// (reconcile/retry/transfer_launch_dispatch) exist in the set but have no
// condition that selects them here: the gateway never launches agents.
type RecoveryAction string

const (
	ActionReconcileUnknownStep  RecoveryAction = "reconcile_unknown_step"
	ActionRetryCompensation     RecoveryAction = "retry_compensation"
	ActionResumePreparing       RecoveryAction = "resume_preparing"
	ActionCompletePreparing     RecoveryAction = "complete_preparing"
	ActionRetryPreparingRelease RecoveryAction = "retry_preparing_release"
	ActionCompleteCompleting    RecoveryAction = "complete_completing"
	ActionAbortPreparing        RecoveryAction = "abort_preparing"
	ActionReconcileLaunch       RecoveryAction = "reconcile_launch_dispatch"
	ActionRetryLaunch           RecoveryAction = "retry_launch_dispatch"
	ActionTransferLaunch        RecoveryAction = "transfer_launch_dispatch"
	ActionReplayTerminal        RecoveryAction = "replay_terminal"
	// ActionNone: no action is legal for the locked condition.
	ActionNone RecoveryAction = ""
)

// RecoveryActionLabels are the names of every action of the set (ActionNone
// is none): the action label of gateway_recovery_actions_total.
var RecoveryActionLabels = []string{string(ActionReconcileUnknownStep), string(ActionRetryCompensation),
	string(ActionResumePreparing), string(ActionCompletePreparing), string(ActionRetryPreparingRelease),
	string(ActionCompleteCompleting), string(ActionAbortPreparing), string(ActionReconcileLaunch),
	string(ActionRetryLaunch), string(ActionTransferLaunch), string(ActionReplayTerminal)}

// DecideRecovery returns the one legal action for an operation's locked
// condition (running steps whose lease expired count as unknown), or
// ActionNone.
func DecideRecovery(op store.Operation, steps []store.CreationStep, now time.Time) RecoveryAction {
	var unknown, running, compensating, failed, resumable, live int
	for _, s := range steps {
		switch s.State {
		case store.StepUnknown:
			unknown++
		case store.StepRunning:
			if s.LeaseExpiresAt == nil || !s.LeaseExpiresAt.After(now) {
				unknown++
			} else {
				running++
			}
		case store.StepFailed:
			failed++
		case store.StepPlanned, store.StepRetryWait:
			resumable++
		}
		if s.Compensation == store.CompensationRequired {
			compensating++
		}
		if s.State == store.StepSucceeded && s.Compensation == store.CompensationNone {
			live++
		}
	}
	switch op.State {
	case store.OpCompleted, store.OpAborted:
		return ActionReplayTerminal
	case store.OpCompleting:
		return ActionCompleteCompleting
	case store.OpPreparingRelease:
		if unknown == 0 && running == 0 {
			return ActionRetryPreparingRelease
		}
		return ActionNone
	case store.OpPreparing:
	default:
		return ActionNone
	}
	abortWanted := failed > 0 || op.Error != ""
	switch {
	case unknown > 0:
		return ActionReconcileUnknownStep
	case running > 0:
		return ActionNone
	case compensating > 0:
		return ActionRetryCompensation
	case abortWanted:
		// Abort first makes every live effect's compensation required.
		return ActionAbortPreparing
	case resumable > 0:
		return ActionResumePreparing
	case live == len(steps):
		return ActionCompletePreparing
	}
	return ActionNone
}

// RecoverTaskCreation claims the operation for owner (lease and generation),
// and runs legal actions until it is terminal or blocked. It never needs the
// caller's handle: it revalidates the retained hashes instead. It returns the
// actions taken.
func (c *Coordinator) RecoverTaskCreation(ctx context.Context, opID, owner string) ([]RecoveryAction, error) {
	var taken []RecoveryAction
	for range 8 {
		action, gen, err := c.claimRecovery(ctx, opID, owner)
		if err != nil {
			return taken, err
		}
		taken = append(taken, action)
		if action == ActionReplayTerminal {
			return taken, nil
		}
		if err := c.runRecovery(ctx, opID, action, fence{owner: owner, generation: gen}); err != nil {
			return taken, fmt.Errorf("recovery %s: %w", action, err)
		}
		c.Metrics.RecoveryAction(string(action))
	}
	return taken, fmt.Errorf("%w: operation %s did not settle", ErrCreationStateConflict, opID)
}

// claimRecovery locks the operation and, when an action is legal and no other
// live lease holds it, persists the claim (action, generation+1, owner,
// lease); expired running steps become unknown in the same transaction.
// Otherwise it writes nothing and returns a typed conflict.
func (c *Coordinator) claimRecovery(ctx context.Context, opID, owner string) (RecoveryAction, int64, error) {
	var action RecoveryAction
	var gen int64
	err := c.st.InTx(ctx, func(tx store.Queries) error {
		op, steps, err := lockVerified(ctx, tx, opID, nil)
		if err != nil {
			return err
		}
		now := c.now()
		action = DecideRecovery(op, steps, now)
		if action == ActionReplayTerminal {
			return nil // read-only
		}
		if action == ActionNone {
			return fmt.Errorf("%w: no recovery action is legal for %s", ErrCreationStateConflict, opID)
		}
		if op.LeaseOwner != "" && op.LeaseOwner != owner && op.LeaseExpiresAt != nil && op.LeaseExpiresAt.After(now) {
			return fmt.Errorf("%w: %s holds the lease until %s", ErrCreationStateConflict, op.LeaseOwner, op.LeaseExpiresAt.Format(time.RFC3339))
		}
		for _, s := range steps {
			if s.State == store.StepRunning && (s.LeaseExpiresAt == nil || !s.LeaseExpiresAt.After(now)) {
				s.State, s.LeaseExpiresAt, s.UpdatedAt = store.StepUnknown, nil, now
				if err := tx.UpdateCreationStep(ctx, s); err != nil {
					return err
				}
			}
		}
		lease := now.Add(c.leaseTTL)
		op.RecoveryAction, op.Generation, op.LeaseOwner, op.LeaseExpiresAt, op.UpdatedAt = string(action), op.Generation+1, owner, &lease, now
		gen = op.Generation
		return tx.UpdateOperation(ctx, op)
	})
	if err != nil {
		return ActionNone, 0, fmt.Errorf("claim recovery: %w", err)
	}
	return action, gen, nil
}

func (c *Coordinator) runRecovery(ctx context.Context, opID string, action RecoveryAction, f fence) error {
	switch action {
	case ActionReconcileUnknownStep:
		return c.reconcileUnknown(ctx, opID, f)
	case ActionRetryCompensation:
		if err := c.compensate(ctx, opID, f); err != nil {
			return err
		}
		return nil
	case ActionResumePreparing:
		err := c.executeSteps(ctx, opID, f)
		if errors.Is(err, ErrStepFailed) {
			return nil // the next round aborts
		}
		return err
	case ActionCompletePreparing, ActionCompleteCompleting:
		_, err := c.complete(ctx, opID, f)
		return err
	case ActionRetryPreparingRelease:
		_, err := c.applyPreparingRelease(ctx, opID)
		return err
	case ActionAbortPreparing:
		return c.abort(ctx, opID, f, "recovery")
	}
	return fmt.Errorf("%w: action %q", ErrCreationStateConflict, action)
}

// reconcileUnknown decides each unknown step from the effect authority, with
// the live executor's rules (observeEffect, applyObservation): our exact row
// → succeeded; proven absent, or held by another recorded operation →
// retry_wait or failed; a row nobody provably owns → stays unknown with
// conflict evidence, for an operator to resolve.
func (c *Coordinator) reconcileUnknown(ctx context.Context, opID string, f fence) error {
	conflict := ""
	err := c.st.InTx(ctx, func(tx store.Queries) error {
		op, steps, err := c.lockFenced(ctx, tx, opID, f)
		if err != nil {
			return err
		}
		for _, s := range steps {
			if s.State != store.StepUnknown {
				continue
			}
			obs, err := observeEffect(ctx, tx, op, s)
			if err != nil {
				return err
			}
			if err := c.applyObservation(ctx, tx, op, s, obs); err != nil {
				return err
			}
			if obs.verdict == effectConflict {
				conflict = s.StepKey
			}
		}
		return nil
	})
	if err == nil && conflict != "" {
		// Nothing more recovery can do: stop this pass instead of claiming
		// again; the step stays unknown for an operator.
		return fmt.Errorf("%w: step %s: effect row owned by another operation", ErrCreationStateConflict, conflict)
	}
	return err
}

// Recoverer is the background runtime: every replica may run one; leases and
// generations make them safe together.
type Recoverer struct {
	coord *Coordinator
	st    store.Store
	log   *slog.Logger
	owner string
	// Grace is how long an operation must be idle before recovery touches
	// it, so in-flight creates are left to their callers.
	Grace    time.Duration
	Interval time.Duration
	// AbandonedBefore, when set, is an instant before which every open
	// operation was left by a process that is gone (a gateway that owns
	// its database alone sets its start): those are recovered without
	// waiting out Grace.
	AbandonedBefore time.Time
}

// NewRecoverer returns a recovery runtime.
func NewRecoverer(coord *Coordinator, st store.Store, logger *slog.Logger) *Recoverer {
	host, _ := os.Hostname()
	return &Recoverer{coord: coord, st: st, log: logger, owner: fmt.Sprintf("recoverer-%s-%d-%s", host, os.Getpid(), randomHex(4)),
		Grace: 30 * time.Second, Interval: 10 * time.Second}
}

// RunOnce recovers every idle open operation once and returns how many it
// settled.
func (r *Recoverer) RunOnce(ctx context.Context) (int, error) {
	now := r.coord.now()
	idleBefore := now.Add(-r.Grace)
	if r.AbandonedBefore.After(idleBefore) {
		idleBefore = r.AbandonedBefore
	}
	ops, err := r.st.ListOpenOperations(ctx, idleBefore, now, 100)
	if err != nil {
		return 0, fmt.Errorf("list open operations: %w", err)
	}
	settled := 0
	for _, op := range ops {
		actions, err := r.coord.RecoverTaskCreation(ctx, op.ID, r.owner)
		if err != nil {
			if errors.Is(err, ErrCreationStateConflict) {
				r.log.Debug("recovery skipped", "operation_id", op.ID, "task_id", op.TaskID, "error", err)
				continue
			}
			r.log.Warn("recovery failed", "operation_id", op.ID, "task_id", op.TaskID, "error", err)
			continue
		}
		settled++
		r.log.Info("creation recovered", "operation_id", op.ID, "task_id", op.TaskID, "actions", fmt.Sprint(actions))
	}
	return settled, nil
}

// Run recovers periodically until ctx ends.
func (r *Recoverer) Run(ctx context.Context) {
	t := time.NewTicker(r.Interval)
	defer t.Stop()
	for {
		if _, err := r.RunOnce(ctx); err != nil && ctx.Err() == nil {
			r.log.Warn("recovery pass failed", "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
