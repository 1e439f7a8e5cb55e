package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/trackergateway/gateway/internal/store"
)

const taskColumns = `id, workspace_id, identifier, title, description, workflow_step_id, labels,
	archived_at, source_provider, source_kind, source_ref, source_url, source_updated_at,
	owner_connection, external_id, external_id_settled_at, creation_state, creation_operation_id,
	revision, created_at, updated_at`

func scanTask(r Row) (store.Task, error) {
	var t store.Task
	var labels string
	var sp, sk, sr, su, owner, ext, opID sql.NullString
	err := r.Scan(&t.ID, &t.WorkspaceID, &t.Identifier, &t.Title, &t.Description, &t.WorkflowStepID, &labels,
		&t.ArchivedAt, &sp, &sk, &sr, &su, &t.SourceUpdatedAt,
		&owner, &ext, &t.ExternalIDSettledAt, &t.CreationState, &opID,
		&t.Revision, &t.CreatedAt, &t.UpdatedAt)
	if err != nil {
		return t, err
	}
	if err := json.Unmarshal([]byte(labels), &t.Labels); err != nil {
		return t, fmt.Errorf("decode labels: %w", err)
	}
	if sp.Valid {
		t.Source = &store.Source{Provider: sp.String, Kind: sk.String, Ref: sr.String, URL: su.String}
	}
	t.OwnerConnection = owner.String
	t.ExternalID = ext.String
	t.CreationOperationID = opID.String
	t.CreatedAt = t.CreatedAt.UTC()
	t.UpdatedAt = t.UpdatedAt.UTC()
	return t, nil
}

func labelsJSON(labels []string) string {
	if labels == nil {
		labels = []string{}
	}
	b, _ := json.Marshal(labels)
	return string(b)
}

func sourceArgs(s *store.Source) (any, any, any, any) {
	if s == nil {
		return nil, nil, nil, nil
	}
	return s.Provider, s.Kind, s.Ref, s.URL
}

// taskRow is t's values in the order of taskColumns.
func taskRow(t store.Task) []any {
	sp, sk, sr, su := sourceArgs(t.Source)
	return []any{t.ID, t.WorkspaceID, t.Identifier, t.Title, t.Description, t.WorkflowStepID, labelsJSON(t.Labels),
		t.ArchivedAt, sp, sk, sr, su, t.SourceUpdatedAt,
		nullString(t.OwnerConnection), nullString(t.ExternalID), t.ExternalIDSettledAt, t.CreationState, nullString(t.CreationOperationID),
		t.Revision, t.CreatedAt, t.UpdatedAt}
}

func (q queries) InsertTask(ctx context.Context, t store.Task) error {
	return q.execLater(ctx, "insert task", nil, `INSERT INTO tasks (`+taskColumns+`) VALUES
		($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21)`,
		taskRow(t)...)
}

// InsertNumberedTasks advances the workspace's sequence once, by
// len(ts), and inserts ts in one statement, each with the identifier
// PREFIX-N it is given in order, computed in the INSERT from the workspace
// row the UPDATE just wrote. Nothing waits for an answer (numbered gets the
// identifiers from the UPDATE's RETURNING, by the same rule), so on
// PostgreSQL both statements travel with the transaction's next statement
// that returns data or its COMMIT, and the workspace row stays locked only
// while the server runs them, not for a round trip to the gateway.
func (q queries) InsertNumberedTasks(ctx context.Context, ts []store.Task, numbered func(identifiers []string)) error {
	if len(ts) == 0 {
		return nil
	}
	ws := ts[0].WorkspaceID
	for _, t := range ts {
		if t.WorkspaceID != ws {
			return fmt.Errorf("insert numbered tasks: tasks of workspaces %q and %q", ws, t.WorkspaceID)
		}
	}
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	n := int64(len(ts))
	var sql strings.Builder
	sql.WriteString(`INSERT INTO tasks (` + taskColumns + `) VALUES `)
	args := make([]any, 0, len(ts)*taskArgs)
	for i, t := range ts {
		if i > 0 {
			sql.WriteString(", ")
		}
		row := taskRow(t)
		// The identifier is the i-th number of the len(ts) the UPDATE
		// took: the row's sequence minus len(ts)-1-i.
		row[2] = n - 1 - int64(i)
		first := len(args) + 1
		args = append(args, row...)
		sql.WriteString(valuesRow(first, taskArgs, 2, fmt.Sprintf(
			`(SELECT task_prefix || '-' || CAST(task_sequence - $%d AS TEXT) FROM workspaces WHERE id = $%d)`, first+2, first+1)))
	}
	return q.write(ctx, func(q queries) error {
		if err := q.queryLater(ctx, "advance task sequence", func(r Row) error {
			var prefix string
			var last int64
			if err := r.Scan(&prefix, &last); err != nil {
				return err
			}
			identifiers := make([]string, len(ts))
			for i := range identifiers {
				identifiers[i] = prefix + "-" + strconv.FormatInt(last-n+1+int64(i), 10)
			}
			numbered(identifiers)
			return nil
		}, `UPDATE workspaces SET task_sequence = task_sequence + $2 WHERE id = $1 RETURNING task_prefix, task_sequence`,
			ws, n); err != nil {
			return err
		}
		return q.execLater(ctx, "insert tasks", nil, sql.String(), args...)
	})
}

// taskArgs is the number of taskColumns.
const taskArgs = 21

func (q queries) getTask(ctx context.Context, what, where string, args ...any) (store.Task, error) {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	t, err := scanTask(q.ex.QueryRow(ctx, `SELECT `+taskColumns+` FROM tasks WHERE `+where, args...))
	return t, q.wrap(what, err)
}

// isCanonicalUUID reports whether id is a canonical (lowercase, hyphenated)
// UUID, the only form task and creation operation ids take. Anything else
// names no row: without this check PostgreSQL would fail the uuid cast (a
// 500) where SQLite finds nothing (a 404).
func isCanonicalUUID(id string) bool {
	if len(id) != 36 || strings.ToLower(id) != id {
		return false
	}
	_, err := uuid.Parse(id)
	return err == nil
}

func (q queries) GetTask(ctx context.Context, id string) (store.Task, error) {
	if !isCanonicalUUID(id) {
		return store.Task{}, fmt.Errorf("get task: %w", store.ErrNotFound)
	}
	return q.getTask(ctx, "get task", `id = $1`, id)
}

func (q queries) LockTask(ctx context.Context, id string) (store.Task, error) {
	if !isCanonicalUUID(id) {
		return store.Task{}, fmt.Errorf("lock task: %w", store.ErrNotFound)
	}
	return q.getTask(ctx, "lock task", `id = $1`+q.d.ForUpdate(), id)
}

// taskByExternalID is the predicate of the uniq_tasks_external_id lookup.
const taskByExternalID = `workspace_id = $1 AND external_id = $2`

// LookupTaskByExternalID is the single indexed read of the Found path.
func (q queries) LookupTaskByExternalID(ctx context.Context, workspaceID, externalID string) (store.Task, error) {
	return q.getTask(ctx, "lookup task by external id", taskByExternalID, workspaceID, externalID)
}

// FindTaskBySourceRef reads the task in one statement: the oldest completed
// task whose current reference is ref, else the completed task a former
// reference of ref names (source_ref_aliases).
func (q queries) FindTaskBySourceRef(ctx context.Context, workspaceID, provider, ref string) (store.Task, error) {
	return q.getTask(ctx, "find task by source ref", `id = COALESCE(
		(SELECT id FROM tasks WHERE workspace_id = $1 AND source_provider = $2 AND source_ref = $3
			AND creation_state = 'complete' ORDER BY created_at LIMIT 1),
		(SELECT t.id FROM source_ref_aliases a JOIN tasks t ON t.id = a.task_id
			WHERE a.workspace_id = $1 AND a.provider = $2 AND a.ref = $3
			AND t.workspace_id = $1 AND t.creation_state = 'complete'))`, workspaceID, provider, ref)
}

func (q queries) ListTasks(ctx context.Context, p store.TaskPage) ([]store.Task, error) {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	query := `SELECT ` + taskColumns + ` FROM tasks WHERE workspace_id = $1 AND creation_state = 'complete'`
	args := []any{p.WorkspaceID}
	if !p.IncludeArchived {
		query += ` AND archived_at IS NULL`
	}
	if p.AfterID != "" {
		query += ` AND (created_at > $2 OR (created_at = $2 AND id > $3))`
		args = append(args, p.AfterCreatedAt, p.AfterID)
	}
	args = append(args, p.Limit)
	query += fmt.Sprintf(` ORDER BY created_at, id LIMIT $%d`, len(args))
	rows, err := q.ex.Query(ctx, query, args...)
	if err != nil {
		return nil, q.wrap("list tasks", err)
	}
	defer rows.Close()
	var out []store.Task
	for rows.Next() {
		t, err := scanTask(rows)
		if err != nil {
			return nil, q.wrap("scan task", err)
		}
		out = append(out, t)
	}
	return out, q.wrap("list tasks", rows.Err())
}

func (q queries) CountActiveTasksInStep(ctx context.Context, workspaceID, stepID string) (int, error) {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	var n int
	err := q.ex.QueryRow(ctx, `SELECT COUNT(*) FROM tasks WHERE workspace_id = $1 AND workflow_step_id = $2 AND archived_at IS NULL`,
		workspaceID, stepID).Scan(&n)
	return n, q.wrap("count tasks in step", err)
}

func (q queries) UpdateTask(ctx context.Context, t store.Task) error {
	sp, sk, sr, su := sourceArgs(t.Source)
	return q.execLater(ctx, "update task", exactlyOne("update task"),
		`UPDATE tasks SET title = $2, description = $3, workflow_step_id = $4, labels = $5,
		archived_at = $6, source_provider = $7, source_kind = $8, source_ref = $9, source_url = $10,
		source_updated_at = $11, revision = $12, updated_at = $13, creation_state = $14 WHERE id = $1`,
		t.ID, t.Title, t.Description, t.WorkflowStepID, labelsJSON(t.Labels),
		t.ArchivedAt, sp, sk, sr, su, t.SourceUpdatedAt, t.Revision, t.UpdatedAt, t.CreationState)
}

func (q queries) DeleteTask(ctx context.Context, id string) error {
	if !isCanonicalUUID(id) {
		return fmt.Errorf("delete task: %w", store.ErrNotFound)
	}
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	n, err := q.ex.Exec(ctx, `DELETE FROM tasks WHERE id = $1`, id)
	if err != nil {
		return q.wrap("delete task", err)
	}
	if n == 0 {
		return fmt.Errorf("delete task: %w", store.ErrNotFound)
	}
	return nil
}

func (q queries) ReleaseExternalID(ctx context.Context, workspaceID, externalID string) (store.Task, error) {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	var id string
	err := q.ex.QueryRow(ctx, `UPDATE tasks SET external_id = NULL, external_id_settled_at = NULL
		WHERE workspace_id = $1 AND external_id = $2 RETURNING id`, workspaceID, externalID).Scan(&id)
	if err != nil {
		return store.Task{}, q.wrap("release external id", err)
	}
	return q.GetTask(ctx, id)
}

// SetTaskCreated with settleExternalID is the settlement (docs/design.md,
// "Settlement"): its predicate includes external_id, so a released row is
// never stamped.
func (q queries) SetTaskCreated(ctx context.Context, taskID string, revision int64, at time.Time, settleExternalID string) error {
	query := `UPDATE tasks SET creation_state = $2, revision = $3, updated_at = $4 WHERE id = $1`
	args := []any{taskID, store.CreationComplete, revision, at}
	if settleExternalID != "" {
		query = `UPDATE tasks SET creation_state = $2, revision = $3, updated_at = $4, external_id_settled_at = $4
			WHERE id = $1 AND external_id = $5 AND external_id_settled_at IS NULL`
		args = append(args, settleExternalID)
	}
	return q.execLater(ctx, "set task created", exactlyOne("set task created"), query, args...)
}

func (q queries) SetTaskCreationState(ctx context.Context, taskID, state string, at time.Time) error {
	return q.execLater(ctx, "set creation state", exactlyOne("set creation state"),
		`UPDATE tasks SET creation_state = $2, updated_at = $3 WHERE id = $1`, taskID, state, at)
}
