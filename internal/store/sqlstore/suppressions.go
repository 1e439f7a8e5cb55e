package sqlstore

import (
	"context"
	"database/sql"
	"time"

	"github.com/trackergateway/gateway/internal/store"
)

func (q queries) UpsertSuppression(ctx context.Context, s store.Suppression) error {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	_, err := q.ex.Exec(ctx, `INSERT INTO suppressions (workspace_id, external_id, task_id, reason, created_at)
		VALUES ($1, $2, $3, $4, $5) ON CONFLICT (workspace_id, external_id) DO NOTHING`,
		s.WorkspaceID, s.ExternalID, nullString(s.TaskID), s.Reason, s.CreatedAt)
	return q.wrap("upsert suppression", err)
}

func scanSuppression(r Row) (store.Suppression, error) {
	var s store.Suppression
	var task sql.NullString
	err := r.Scan(&s.WorkspaceID, &s.ExternalID, &task, &s.Reason, &s.CreatedAt)
	s.TaskID = task.String
	return s, err
}

func (q queries) GetSuppression(ctx context.Context, workspaceID, externalID string) (store.Suppression, error) {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	s, err := scanSuppression(q.ex.QueryRow(ctx, suppressionByExternalID, workspaceID, externalID))
	return s, q.wrap("get suppression", err)
}

// The reads of one (workspace_id, external_id), each also a method of its own.
const (
	suppressionByExternalID = `SELECT workspace_id, external_id, task_id, reason, created_at
		FROM suppressions WHERE workspace_id = $1 AND external_id = $2`
	aliasByExternalID = `SELECT task_id FROM source_aliases WHERE workspace_id = $1 AND external_id = $2`
	// suppressedOrAliased is LookupSourceEntity's suppression and alias
	// reads as one statement.
	suppressedOrAliased = `SELECT EXISTS (SELECT 1 FROM suppressions WHERE workspace_id = $1 AND external_id = $2),
		(` + aliasByExternalID + `)`
)

func (q queries) LookupSourceEntity(ctx context.Context, workspaceID, externalID string) (store.SourceEntity, error) {
	var e store.SourceEntity
	err := q.batch(ctx, lookupQueries(workspaceID, externalID, &e)...)
	return e, q.wrap("lookup source entity", err)
}

// lookupQueries are the reads of a source entity into e: two statements,
// not three, since every delivery of an entity runs them and on SQLite each
// statement is a read transaction of its own.
func lookupQueries(workspaceID, externalID string, e *store.SourceEntity) []BatchQuery {
	args := []any{workspaceID, externalID}
	return []BatchQuery{
		{SQL: suppressedOrAliased, Args: args, Scan: requiredRow(func(r Row) error {
			var alias sql.NullString
			err := r.Scan(&e.Suppressed, &alias)
			e.AliasTaskID = alias.String
			return err
		})},
		{SQL: `SELECT ` + taskColumns + ` FROM tasks WHERE ` + taskByExternalID, Args: args, Scan: optionalTask(&e.Task)},
	}
}

func (q queries) ListSuppressions(ctx context.Context, p store.SuppressionPage) ([]store.Suppression, error) {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	query := `SELECT workspace_id, external_id, task_id, reason, created_at FROM suppressions
		WHERE (workspace_id > $1 OR (workspace_id = $1 AND external_id > $2))`
	args := []any{p.AfterWorkspaceID, p.AfterExternalID}
	if p.WorkspaceID != "" {
		query += ` AND workspace_id = $4`
	}
	query += ` ORDER BY workspace_id, external_id LIMIT $3`
	args = append(args, p.Limit)
	if p.WorkspaceID != "" {
		args = append(args, p.WorkspaceID)
	}
	rows, err := q.ex.Query(ctx, query, args...)
	if err != nil {
		return nil, q.wrap("list suppressions", err)
	}
	defer rows.Close()
	var out []store.Suppression
	for rows.Next() {
		s, err := scanSuppression(rows)
		if err != nil {
			return nil, q.wrap("scan suppression", err)
		}
		out = append(out, s)
	}
	return out, q.wrap("list suppressions", rows.Err())
}

func (q queries) DeleteSuppression(ctx context.Context, workspaceID, externalID string) (bool, error) {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	n, err := q.ex.Exec(ctx, `DELETE FROM suppressions WHERE workspace_id = $1 AND external_id = $2`, workspaceID, externalID)
	return n > 0, q.wrap("delete suppression", err)
}

func (q queries) InsertAlias(ctx context.Context, workspaceID, externalID, taskID string, at time.Time) error {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	_, err := q.ex.Exec(ctx, `INSERT INTO source_aliases (workspace_id, external_id, task_id, created_at)
		VALUES ($1, $2, $3, $4) ON CONFLICT (workspace_id, external_id) DO NOTHING`, workspaceID, externalID, taskID, at)
	return q.wrap("insert alias", err)
}

func (q queries) ResolveAlias(ctx context.Context, workspaceID, externalID string) (string, error) {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	var id string
	err := q.ex.QueryRow(ctx, aliasByExternalID, workspaceID, externalID).Scan(&id)
	return id, q.wrap("resolve alias", err)
}

func (q queries) ListAliases(ctx context.Context, taskID string) ([]string, error) {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	rows, err := q.ex.Query(ctx, `SELECT external_id FROM source_aliases WHERE task_id = $1 ORDER BY external_id`, taskID)
	if err != nil {
		return nil, q.wrap("list aliases", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, q.wrap("scan alias", err)
		}
		out = append(out, s)
	}
	return out, q.wrap("list aliases", rows.Err())
}
