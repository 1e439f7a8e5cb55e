package idempotency

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/trackergateway/gateway/internal/failure"
	"github.com/trackergateway/gateway/internal/store"
)

// associationNamespace derives the stable operation ID of a link.
var associationNamespace = uuid.MustParse("0b6f4c1e-7d4a-5b8e-9c3f-2a1d6e5f4b3a")

// OutcomeLinked is the stored outcome of a link operation (it creates no
// task and emits no event).
const OutcomeLinked = "Linked"

// AssociateContribution links a PR/MR to an existing, completed task. It is
// a ledger operation of its own: under a deterministic operation ID (task,
// step key) it records the operation, its one remote_contribution_associate
// step (succeeded, with present_exact evidence) and the association row —
// carrying that operation's idempotency key and ownership marker — in one
// transaction, so every association row belongs to a recorded operation
// and a creation whose step finds the row can prove its own effect absent.
// Repeated and out-of-order events converge on one row. The row that exists
// wins: a PR/MR already associated elsewhere stays there, nothing is
// written, and the returned association says where.
func (c *Coordinator) AssociateContribution(ctx context.Context, task store.Task, req RemoteContributionRequest) (store.Association, error) {
	req.TaskID, req.WorkspaceID = task.ID, task.WorkspaceID
	if err := c.validateContribution(req); err != nil {
		return store.Association{}, err
	}
	if task.CreationState != store.CreationComplete {
		return store.Association{}, failure.New(failure.Conflict, "task %s is still being created", task.ID)
	}
	if a, err := c.st.GetAssociation(ctx, req.Provider, req.ConnectionID, req.ContributionID); err == nil {
		return a, nil // read first: a held PR/MR writes nothing
	} else if !errors.Is(err, store.ErrNotFound) {
		return store.Association{}, fmt.Errorf("read association: %w", err)
	}
	op, step, err := c.linkOperation(task, req)
	if err != nil {
		return store.Association{}, err
	}
	err = c.st.InTx(ctx, func(tx store.Queries) error {
		// An earlier link of this task and contribution is the same
		// operation: its row is restored under its own marker (the row goes
		// when its task is deleted, so this is rare).
		existing, steps, err := lockVerified(ctx, tx, op.ID, nil)
		switch {
		case err == nil:
			s, ok := findCreationStep(steps, step.Kind, step.StepKey)
			if !ok {
				return fmt.Errorf("%w: link operation %s has no step %s", ErrHandleMismatch, op.ID, step.StepKey)
			}
			row, err := associationFor(existing, s)
			if err != nil {
				return err
			}
			row.ClaimedAt = c.now()
			inserted, err := tx.InsertAssociation(ctx, row)
			if err != nil || !inserted {
				return err
			}
			return c.succeedFromAuthority(ctx, tx, existing, s)
		case !errors.Is(err, ErrHandleMismatch) || !isMissingOperation(ctx, tx, op.ID):
			return err
		}
		row, err := associationFor(op, step)
		if err != nil {
			return err
		}
		row.ClaimedAt = c.now()
		inserted, err := tx.InsertAssociation(ctx, row)
		if err != nil || !inserted {
			return err // held elsewhere: record nothing
		}
		evidence, err := evidenceFor(step, effectPresentExact, observeOwned(row), row.ClaimedAt)
		if err != nil {
			return err
		}
		step.EvidenceJSON, step.EvidenceSHA256, step.ProviderHandle = evidence, sha256Hex([]byte(evidence)), providerHandle(row)
		if err := tx.InsertOperation(ctx, op); err != nil {
			return err
		}
		return tx.InsertCreationStep(ctx, step)
	})
	if err != nil {
		return store.Association{}, fmt.Errorf("associate contribution: %w", err)
	}
	stored, err := c.st.GetAssociation(ctx, req.Provider, req.ConnectionID, req.ContributionID)
	if err != nil {
		return store.Association{}, fmt.Errorf("read association: %w", err)
	}
	return stored, nil
}

func isMissingOperation(ctx context.Context, tx store.Queries, opID string) bool {
	_, err := tx.GetOperation(ctx, opID)
	return errors.Is(err, store.ErrNotFound)
}

// linkOperation builds the completed operation and succeeded step of a link
// (evidence is added once the row is written).
func (c *Coordinator) linkOperation(task store.Task, req RemoteContributionRequest) (store.Operation, store.CreationStep, error) {
	body, err := Canonical(req)
	if err != nil {
		return store.Operation{}, store.CreationStep{}, err
	}
	key := req.StepKey()
	opID := uuid.NewSHA1(associationNamespace, []byte(task.ID+"\x00"+key)).String()
	token := make([]byte, 32)
	if _, err := rand.Read(token); err != nil {
		return store.Operation{}, store.CreationStep{}, fmt.Errorf("link token: %w", err)
	}
	tokenHash := sha256Hex(token)
	plan := CreationPlan{Version: 1, TaskID: task.ID, WorkspaceID: task.WorkspaceID, WorkflowStepID: task.WorkflowStepID,
		RequestSHA256: RequestHash(body), DatabaseRows: []DatabaseRow{},
		Steps: []PlanStep{{Kind: StepRemoteContributionAssociate, StepKey: key, Request: body}}}
	planJSON, err := Canonical(plan)
	if err != nil {
		return store.Operation{}, store.CreationStep{}, fmt.Errorf("link plan: %w", err)
	}
	actorJSON, err := Canonical(ActorBindingDocument{Version: 1, Actor: "connection", PrincipalID: req.ConnectionID,
		WorkspaceID: task.WorkspaceID, AuthMode: "webhook_signature", AuthorityKind: "connection", AuthorityID: req.ConnectionID})
	if err != nil {
		return store.Operation{}, store.CreationStep{}, fmt.Errorf("link actor: %w", err)
	}
	now := c.now()
	op := store.Operation{ID: opID, WorkspaceID: task.WorkspaceID, TaskID: task.ID, State: store.OpCompleted,
		PlanJSON: string(planJSON), ManifestSHA256: ManifestHash(planJSON), ActorJSON: string(actorJSON),
		ActorBindingSHA256: ActorBindingHash(actorJSON), CompletionTokenSHA256: tokenHash, Outcome: OutcomeLinked,
		CreatedAt: now, UpdatedAt: now}
	reqHash := RequestHash(body)
	step := store.CreationStep{OperationID: opID, Kind: StepRemoteContributionAssociate, StepKey: key,
		RequestJSON: string(body), RequestSHA256: reqHash, State: store.StepSucceeded, Attempt: 1,
		IdempotencyKey:  IdempotencyKey(opID, StepRemoteContributionAssociate, key, reqHash),
		OwnershipMarker: OwnershipMarker(opID, StepRemoteContributionAssociate, key, tokenHash),
		Compensation:    store.CompensationNone, Disposition: "none", CreatedAt: now, UpdatedAt: now}
	return op, step, nil
}
