package idempotency

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/trackergateway/gateway/internal/failure"
	"github.com/trackergateway/gateway/internal/httpapi"
	"github.com/trackergateway/gateway/internal/store"
)

// StepResolution is an operator's resolution of an unknown step: the effect
// they claim, which the coordinator proves from the effect authority row
// itself before recording it.
type StepResolution struct {
	OperationID string
	Kind        string
	StepKey     string
	// Effect is present_exact (→ succeeded) or absent_proven (→ failed).
	Effect string
	// Generation, when set, must equal the operation's current generation
	// (the one the operator inspected).
	Generation *int64
}

// conflict is the typed refusal of the operator API: nothing was written.
func conflict(format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	return failure.Wrap(failure.Conflict, fmt.Errorf("%w: %s", ErrCreationStateConflict, msg), "%s", msg)
}

// ResolveTaskCreationStep resolves an unknown step with evidence, under the
// operation lock: unknown → succeeded when the association is exactly this
// operation's (present_exact), unknown → failed when the step's effect is
// proven absent (no row, or the exact row of another recorded operation).
// Anything else — a step not unknown, a stale generation, an operation not
// preparing, an observation that does not prove the claimed effect — is a
// typed conflict with zero writes. The resolution advances the operation's
// generation, fencing any recovery that read the step before it.
func (c *Coordinator) ResolveTaskCreationStep(ctx context.Context, r StepResolution) (store.CreationStep, error) {
	if r.Kind != StepRemoteContributionAssociate {
		return store.CreationStep{}, failure.New(failure.Invalid, "kind must be %s", StepRemoteContributionAssociate)
	}
	if r.Effect != effectPresentExact && r.Effect != effectAbsentProven {
		return store.CreationStep{}, failure.New(failure.Invalid, "effect must be %s or %s", effectPresentExact, effectAbsentProven)
	}
	if r.StepKey == "" {
		return store.CreationStep{}, failure.New(failure.Invalid, "step_key is required")
	}
	if _, err := c.st.GetOperation(ctx, r.OperationID); err != nil {
		return store.CreationStep{}, httpapi.Reword(fmt.Errorf("resolve step: %w", err), errOperationNotFound)
	}
	err := c.st.InTx(ctx, func(tx store.Queries) error {
		op, steps, err := lockVerified(ctx, tx, r.OperationID, nil)
		if err != nil {
			if errors.Is(err, ErrHandleMismatch) {
				return failure.Wrap(failure.Conflict, err, "the operation's stored bindings do not verify")
			}
			return err
		}
		if r.Generation != nil && *r.Generation != op.Generation {
			return conflict("stale generation %d (the operation is at %d)", *r.Generation, op.Generation)
		}
		if op.State != store.OpPreparing {
			return conflict("operation is %s, not preparing", op.State)
		}
		s, ok := findCreationStep(steps, r.Kind, r.StepKey)
		if !ok {
			return failure.New(failure.NotFound, "step not found")
		}
		if s.State != store.StepUnknown {
			return conflict("step is %s, not unknown", s.State)
		}
		obs, err := observeEffect(ctx, tx, op, s)
		if err != nil {
			return err
		}
		if obs.effect() != r.Effect {
			return conflict("the association row does not prove %s (observed %s)", r.Effect, obs.effect())
		}
		now := c.now()
		if obs.verdict == effectOurs {
			if err := c.succeedFromAuthority(ctx, tx, op, s); err != nil {
				return err
			}
		} else {
			evidence, err := evidenceFor(s, effectAbsentProven, obs.observation(), now)
			if err != nil {
				return err
			}
			s.State, s.EvidenceJSON, s.EvidenceSHA256 = store.StepFailed, evidence, sha256Hex([]byte(evidence))
			s.LeaseExpiresAt, s.Error, s.UpdatedAt = nil, "resolved by an operator: effect absent", now
			if err := tx.UpdateCreationStep(ctx, s); err != nil {
				return err
			}
		}
		op.Generation, op.LeaseOwner, op.LeaseExpiresAt, op.UpdatedAt = op.Generation+1, "", nil, now
		return tx.UpdateOperation(ctx, op)
	})
	if err != nil {
		return store.CreationStep{}, fmt.Errorf("resolve step: %w", err)
	}
	steps, err := c.st.ListCreationSteps(ctx, r.OperationID)
	if err != nil {
		return store.CreationStep{}, fmt.Errorf("resolve step: %w", err)
	}
	resolved, _ := findCreationStep(steps, r.Kind, r.StepKey)
	return resolved, nil
}

var errOperationNotFound = failure.New(failure.NotFound, "creation operation not found")

// CreationView is an operation and its steps as operators see them.
type CreationView struct {
	Operation store.Operation
	Steps     []store.CreationStep
	// NextAction is the recovery action legal for the current condition
	// ("" when none is).
	NextAction RecoveryAction
}

// InspectTaskCreation reads an operation and its steps (no locks, no writes).
func (c *Coordinator) InspectTaskCreation(ctx context.Context, opID string) (CreationView, error) {
	op, err := c.st.GetOperation(ctx, opID)
	if err != nil {
		return CreationView{}, httpapi.Reword(fmt.Errorf("inspect creation: %w", err), errOperationNotFound)
	}
	steps, err := c.st.ListCreationSteps(ctx, opID)
	if err != nil {
		return CreationView{}, fmt.Errorf("inspect creation: %w", err)
	}
	return CreationView{Operation: op, Steps: steps, NextAction: DecideRecovery(op, steps, c.now())}, nil
}

// EvidenceEffect is the effect a step's stored evidence records ("" when it
// has none or it does not parse).
func EvidenceEffect(s store.CreationStep) string {
	if s.EvidenceJSON == "" {
		return ""
	}
	var ev struct {
		Effect string `json:"effect"`
	}
	if json.Unmarshal([]byte(s.EvidenceJSON), &ev) != nil {
		return ""
	}
	return ev.Effect
}

func timeOrNil(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := t.UTC().Format(time.RFC3339Nano)
	return &s
}
