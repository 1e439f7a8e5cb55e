package sqlstore

import (
	"context"
	"database/sql"
	"time"

	"github.com/trackergateway/gateway/internal/store"
)

func (q queries) UpsertWorkspace(ctx context.Context, ws store.Workspace) error {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	return q.write(ctx, func(q queries) error {
		_, err := q.ex.Exec(ctx, `INSERT INTO workspaces (id, name, task_prefix, task_sequence, created_at)
			VALUES ($1, $2, $3, 0, $4)
			ON CONFLICT (id) DO UPDATE SET name = excluded.name`, ws.ID, ws.Name, ws.TaskPrefix, ws.CreatedAt)
		if err != nil {
			return q.wrap("upsert workspace", err)
		}
		return q.upsertSteps(ctx, ws)
	})
}

func (q queries) CreateWorkspace(ctx context.Context, ws store.Workspace) error {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	return q.write(ctx, func(q queries) error {
		_, err := q.ex.Exec(ctx, `INSERT INTO workspaces (id, name, task_prefix, task_sequence, created_at)
			VALUES ($1, $2, $3, 0, $4)`, ws.ID, ws.Name, ws.TaskPrefix, ws.CreatedAt)
		if err != nil {
			return q.wrap("create workspace", err)
		}
		return q.upsertSteps(ctx, ws)
	})
}

// upsertSteps writes the configured steps; steps no longer configured stay
// (tasks may still reference them).
func (q queries) upsertSteps(ctx context.Context, ws store.Workspace) error {
	for i, st := range ws.Steps {
		var wip any
		if st.WIPLimit != nil {
			wip = *st.WIPLimit
		}
		_, err := q.ex.Exec(ctx, `INSERT INTO workflow_steps (workspace_id, id, name, position, wip_limit)
			VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (workspace_id, id) DO UPDATE SET name = excluded.name,
				position = excluded.position, wip_limit = excluded.wip_limit`,
			ws.ID, st.ID, st.Name, i, wip)
		if err != nil {
			return q.wrap("upsert workflow step", err)
		}
	}
	return nil
}

const workspaceColumns = `id, name, task_prefix, task_sequence, created_at`

func scanWorkspace(r Row) (store.Workspace, error) {
	var ws store.Workspace
	err := r.Scan(&ws.ID, &ws.Name, &ws.TaskPrefix, &ws.TaskSequence, &ws.CreatedAt)
	return ws, err
}

func (q queries) GetWorkspace(ctx context.Context, id string) (store.Workspace, error) {
	return q.getWorkspace(ctx, id, "")
}

func (q queries) LockWorkspace(ctx context.Context, id string) (store.Workspace, error) {
	return q.getWorkspace(ctx, id, q.d.ForUpdate())
}

// getWorkspace reads the workspace row (locked when lock is set), then its
// steps, in one round trip where the driver can.
func (q queries) getWorkspace(ctx context.Context, id, lock string) (store.Workspace, error) {
	var ws store.Workspace
	err := q.batch(ctx,
		BatchQuery{SQL: `SELECT ` + workspaceColumns + ` FROM workspaces WHERE id = $1` + lock, Args: []any{id},
			Scan: requiredRow(func(r Row) (err error) {
				ws, err = scanWorkspace(r)
				return err
			})},
		BatchQuery{SQL: stepsQuery + ` WHERE workspace_id = $1` + stepsOrder, Args: []any{id},
			Scan: func(r Rows) error {
				steps, err := scanWorkflowSteps(r)
				ws.Steps = steps[id]
				return err
			}})
	return ws, q.wrap("get workspace", err)
}

func (q queries) ListWorkspaces(ctx context.Context) ([]store.Workspace, error) {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	rows, err := q.ex.Query(ctx, `SELECT `+workspaceColumns+` FROM workspaces ORDER BY id`)
	if err != nil {
		return nil, q.wrap("list workspaces", err)
	}
	var out []store.Workspace
	var ids []string
	for rows.Next() {
		ws, err := scanWorkspace(rows)
		if err != nil {
			rows.Close()
			return nil, q.wrap("scan workspace", err)
		}
		out = append(out, ws)
		ids = append(ids, ws.ID)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, q.wrap("list workspaces", err)
	}
	steps, err := q.listSteps(ctx)
	if err != nil {
		return nil, err
	}
	for i := range out {
		out[i].Steps = steps[out[i].ID]
	}
	return out, nil
}

const (
	stepsQuery = `SELECT workspace_id, id, name, position, wip_limit FROM workflow_steps`
	stepsOrder = ` ORDER BY workspace_id, position, id`
)

// listSteps returns every workspace's steps by workspace.
func (q queries) listSteps(ctx context.Context) (map[string][]store.Step, error) {
	rows, err := q.ex.Query(ctx, stepsQuery+stepsOrder)
	if err != nil {
		return nil, q.wrap("list steps", err)
	}
	defer rows.Close()
	out, err := scanWorkflowSteps(rows)
	if err == nil {
		err = rows.Err()
	}
	return out, q.wrap("list steps", err)
}

func scanWorkflowSteps(rows Rows) (map[string][]store.Step, error) {
	out := map[string][]store.Step{}
	for rows.Next() {
		var st store.Step
		var wip sql.NullInt64
		if err := rows.Scan(&st.WorkspaceID, &st.ID, &st.Name, &st.Position, &wip); err != nil {
			return nil, err
		}
		if wip.Valid {
			n := int(wip.Int64)
			st.WIPLimit = &n
		}
		out[st.WorkspaceID] = append(out[st.WorkspaceID], st)
	}
	return out, nil
}

func (q queries) UpsertToken(ctx context.Context, tok store.Token) error {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	return q.write(ctx, func(q queries) error {
		var id string
		err := q.ex.QueryRow(ctx, `INSERT INTO api_tokens (id, name, token_sha256, admin, created_at)
			VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (name) DO UPDATE SET token_sha256 = excluded.token_sha256, admin = excluded.admin
			RETURNING id`, tok.ID, tok.Name, tok.TokenSHA256, tok.Admin, tok.CreatedAt).Scan(&id)
		if err != nil {
			return q.wrap("upsert token", err)
		}
		if _, err := q.ex.Exec(ctx, `DELETE FROM api_token_workspaces WHERE token_id = $1`, id); err != nil {
			return q.wrap("reset token workspaces", err)
		}
		for _, ws := range tok.Workspaces {
			if _, err := q.ex.Exec(ctx, `INSERT INTO api_token_workspaces (token_id, workspace_id) VALUES ($1, $2)`, id, ws); err != nil {
				return q.wrap("grant token workspace", err)
			}
		}
		return nil
	})
}

func (q queries) GetTokenBySHA256(ctx context.Context, sha string) (store.Token, error) {
	return q.getToken(ctx, `token_sha256 = $1`, sha)
}

func (q queries) GetTokenByName(ctx context.Context, name string) (store.Token, error) {
	return q.getToken(ctx, `name = $1`, name)
}

func (q queries) getToken(ctx context.Context, where string, arg any) (store.Token, error) {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	var tok store.Token
	err := q.ex.QueryRow(ctx, `SELECT id, name, token_sha256, admin, created_at FROM api_tokens WHERE `+where, arg).
		Scan(&tok.ID, &tok.Name, &tok.TokenSHA256, &tok.Admin, &tok.CreatedAt)
	if err != nil {
		return tok, q.wrap("get token", err)
	}
	rows, err := q.ex.Query(ctx, `SELECT workspace_id FROM api_token_workspaces WHERE token_id = $1 ORDER BY workspace_id`, tok.ID)
	if err != nil {
		return tok, q.wrap("get token workspaces", err)
	}
	defer rows.Close()
	for rows.Next() {
		var ws string
		if err := rows.Scan(&ws); err != nil {
			return tok, q.wrap("scan token workspace", err)
		}
		tok.Workspaces = append(tok.Workspaces, ws)
	}
	return tok, q.wrap("get token workspaces", rows.Err())
}

func (q queries) EnsureGeneratedSecret(ctx context.Context, name, value string, at time.Time) (string, bool, error) {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	n, err := q.ex.Exec(ctx, `INSERT INTO generated_secrets (name, value, created_at) VALUES ($1, $2, $3)
		ON CONFLICT (name) DO NOTHING`, name, value, at)
	if err != nil {
		return "", false, q.wrap("store generated secret", err)
	}
	stored, err := q.GetGeneratedSecret(ctx, name)
	return stored, n == 1, err
}

func (q queries) GetGeneratedSecret(ctx context.Context, name string) (string, error) {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	var v string
	err := q.ex.QueryRow(ctx, `SELECT value FROM generated_secrets WHERE name = $1`, name).Scan(&v)
	return v, q.wrap("get generated secret", err)
}
