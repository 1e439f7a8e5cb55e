package idempotency

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/trackergateway/gateway/internal/store"
)

// associationNamespace derives the stable operation ID of a link.
var associationNamespace = uuid.MustParse("0b6f4c1e-7d4a-5b8e-9c3f-2a1d6e5f4b3a")

// AssociateContribution links a PR/MR to an existing, completed task. It is
// the same effect as the creation step remote_contribution_associate — same
// authority row, idempotency key and ownership marker derivation — under a
// deterministic operation ID (task, step key), so repeated and out-of-order
// events converge on one row. The row that exists wins: a PR/MR already
// associated elsewhere stays there; the returned association says where.
func (c *Coordinator) AssociateContribution(ctx context.Context, task store.Task, req RemoteContributionRequest) (store.Association, error) {
	req.TaskID, req.WorkspaceID = task.ID, task.WorkspaceID
	if err := validateContribution(req); err != nil {
		return store.Association{}, err
	}
	body, err := Canonical(req)
	if err != nil {
		return store.Association{}, err
	}
	key := req.StepKey()
	opID := uuid.NewSHA1(associationNamespace, []byte(task.ID+"\x00"+key)).String()
	reqHash := RequestHash(body)
	a := store.Association{Provider: req.Provider, ConnectionID: req.ConnectionID, ContributionID: req.ContributionID,
		ContributionKind: req.ContributionKind, TaskID: task.ID, WorkspaceID: task.WorkspaceID, RepositoryID: req.RepositoryID,
		OperationID: opID, IdempotencyKey: IdempotencyKey(opID, StepRemoteContributionAssociate, key, reqHash),
		OwnershipMarker: OwnershipMarker(opID, StepRemoteContributionAssociate, key, ""), ClaimedAt: c.now()}
	if _, err := c.st.InsertAssociation(ctx, a); err != nil {
		return store.Association{}, fmt.Errorf("associate contribution: %w", err)
	}
	stored, err := c.st.GetAssociation(ctx, a.Provider, a.ConnectionID, a.ContributionID)
	if err != nil {
		return store.Association{}, fmt.Errorf("read association: %w", err)
	}
	return stored, nil
}
