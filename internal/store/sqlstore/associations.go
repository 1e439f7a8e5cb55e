package sqlstore

import (
	"context"

	"github.com/trackergateway/gateway/internal/store"
)

const associationColumns = `provider, connection_id, contribution_id, contribution_kind, task_id, workspace_id,
	repository_id, operation_id, idempotency_key, ownership_marker, claimed_at`

func (q queries) InsertAssociation(ctx context.Context, a store.Association) (bool, error) {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	n, err := q.ex.Exec(ctx, `INSERT INTO task_remote_contribution_associations (`+associationColumns+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
		ON CONFLICT (provider, connection_id, contribution_id) DO NOTHING`,
		a.Provider, a.ConnectionID, a.ContributionID, a.ContributionKind, a.TaskID, a.WorkspaceID,
		a.RepositoryID, a.OperationID, a.IdempotencyKey, a.OwnershipMarker, a.ClaimedAt)
	return n == 1, q.wrap("insert association", err)
}

func scanAssociation(r Row) (store.Association, error) {
	var a store.Association
	err := r.Scan(&a.Provider, &a.ConnectionID, &a.ContributionID, &a.ContributionKind, &a.TaskID, &a.WorkspaceID,
		&a.RepositoryID, &a.OperationID, &a.IdempotencyKey, &a.OwnershipMarker, &a.ClaimedAt)
	return a, err
}

func (q queries) GetAssociation(ctx context.Context, provider, connectionID, contributionID string) (store.Association, error) {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	a, err := scanAssociation(q.ex.QueryRow(ctx, `SELECT `+associationColumns+` FROM task_remote_contribution_associations
		WHERE provider = $1 AND connection_id = $2 AND contribution_id = $3`+q.d.ForUpdate(), provider, connectionID, contributionID))
	return a, q.wrap("get association", err)
}

func (q queries) ListAssociationsForTask(ctx context.Context, taskID string) ([]store.Association, error) {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	rows, err := q.ex.Query(ctx, `SELECT `+associationColumns+` FROM task_remote_contribution_associations
		WHERE task_id = $1 ORDER BY claimed_at, contribution_id`, taskID)
	if err != nil {
		return nil, q.wrap("list associations", err)
	}
	defer rows.Close()
	var out []store.Association
	for rows.Next() {
		a, err := scanAssociation(rows)
		if err != nil {
			return nil, q.wrap("scan association", err)
		}
		out = append(out, a)
	}
	return out, q.wrap("list associations", rows.Err())
}

func (q queries) DeleteAssociationsOwnedBy(ctx context.Context, operationID, marker string) (int64, error) {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	n, err := q.ex.Exec(ctx, `DELETE FROM task_remote_contribution_associations WHERE operation_id = $1 AND ownership_marker = $2`,
		operationID, marker)
	return n, q.wrap("delete owned associations", err)
}

func (q queries) DeleteAssociationsForTask(ctx context.Context, taskID string) error {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	_, err := q.ex.Exec(ctx, `DELETE FROM task_remote_contribution_associations WHERE task_id = $1`, taskID)
	return q.wrap("delete task associations", err)
}
