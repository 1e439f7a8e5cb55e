package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/trackergateway/gateway/connectors/providers"
	"github.com/trackergateway/gateway/internal/store"
)

// projectionTable is the registered provider's projection table; a provider
// without one is ErrNotFound.
func projectionTable(provider string) (string, error) {
	if p, ok := providers.Lookup(provider); ok && p.Projection != nil {
		return p.Projection.Table, nil
	}
	return "", fmt.Errorf("projection for provider %q: %w", provider, store.ErrNotFound)
}

const projectionColumns = `task_id, connection_id, provider_id, repository, number, url, title, state, draft, merged,
	merged_at, head_branch, base_branch, head_sha, author, provider_updated_at, last_synced_at,
	sync_attempts, next_sync_at, sync_error`

func (q queries) UpsertProjection(ctx context.Context, p store.Projection) error {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	table, err := projectionTable(p.Provider)
	if err != nil {
		return err
	}
	_, err = q.ex.Exec(ctx, `INSERT INTO `+table+` (`+projectionColumns+`) VALUES
		($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20)
		ON CONFLICT (task_id, connection_id, provider_id) DO UPDATE SET repository = excluded.repository,
			number = excluded.number, url = excluded.url, title = excluded.title, state = excluded.state,
			draft = excluded.draft, merged = excluded.merged, merged_at = excluded.merged_at,
			head_branch = excluded.head_branch, base_branch = excluded.base_branch, head_sha = excluded.head_sha,
			author = excluded.author, provider_updated_at = excluded.provider_updated_at,
			last_synced_at = COALESCE(excluded.last_synced_at, `+table+`.last_synced_at),
			sync_attempts = excluded.sync_attempts, next_sync_at = excluded.next_sync_at, sync_error = excluded.sync_error
		WHERE `+table+`.provider_updated_at IS NULL OR excluded.provider_updated_at IS NULL
		   OR excluded.provider_updated_at >= `+table+`.provider_updated_at`,
		p.TaskID, p.ConnectionID, p.ProviderID, p.Repository, p.Number, p.URL, p.Title, p.State, p.Draft, p.Merged,
		p.MergedAt, p.HeadBranch, p.BaseBranch, p.HeadSHA, p.Author, p.ProviderUpdatedAt, p.LastSyncedAt,
		p.SyncAttempts, p.NextSyncAt, nullString(p.SyncError))
	return q.wrap("upsert projection", err)
}

func scanProjection(r Row, provider string) (store.Projection, error) {
	p := store.Projection{Provider: provider}
	var syncErr sql.NullString
	err := r.Scan(&p.TaskID, &p.ConnectionID, &p.ProviderID, &p.Repository, &p.Number, &p.URL, &p.Title, &p.State,
		&p.Draft, &p.Merged, &p.MergedAt, &p.HeadBranch, &p.BaseBranch, &p.HeadSHA, &p.Author,
		&p.ProviderUpdatedAt, &p.LastSyncedAt, &p.SyncAttempts, &p.NextSyncAt, &syncErr)
	p.SyncError = syncErr.String
	return p, err
}

func (q queries) listProjections(ctx context.Context, where string, args ...any) ([]store.Projection, error) {
	var out []store.Projection
	for _, provider := range providers.All() {
		if provider.Projection == nil {
			continue
		}
		var err error
		if out, err = q.appendProjections(ctx, out, provider.Name, provider.Projection.Table, where, args...); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// appendProjections appends the rows of provider's table that match where.
func (q queries) appendProjections(ctx context.Context, out []store.Projection, provider, table, where string, args ...any) ([]store.Projection, error) {
	rows, err := q.ex.Query(ctx, `SELECT `+projectionColumns+` FROM `+table+` WHERE `+where, args...)
	if err != nil {
		return nil, q.wrap("list projections", err)
	}
	defer rows.Close()
	for rows.Next() {
		p, err := scanProjection(rows, provider)
		if err != nil {
			return nil, q.wrap("scan projection", err)
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, q.wrap("list projections", err)
	}
	return out, nil
}

func (q queries) ListProjectionsForTasks(ctx context.Context, taskIDs ...string) ([]store.Projection, error) {
	if len(taskIDs) == 0 {
		return nil, nil
	}
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	args := make([]any, len(taskIDs))
	for i, id := range taskIDs {
		args[i] = id
	}
	return q.listProjections(ctx, `task_id IN (`+inList(1, len(taskIDs))+`) ORDER BY repository, number`, args...)
}

func (q queries) ListProjectionsDue(ctx context.Context, now time.Time, limit int) ([]store.Projection, error) {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	return q.listProjections(ctx, `next_sync_at IS NOT NULL AND next_sync_at <= $1 ORDER BY next_sync_at LIMIT $2`, now, limit)
}

func (q queries) UpdateProjectionSync(ctx context.Context, p store.Projection) error {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	table, err := projectionTable(p.Provider)
	if err != nil {
		return err
	}
	_, err = q.ex.Exec(ctx, `UPDATE `+table+` SET sync_attempts = $4, next_sync_at = $5, sync_error = $6, last_synced_at = $7
		WHERE task_id = $1 AND connection_id = $2 AND provider_id = $3`,
		p.TaskID, p.ConnectionID, p.ProviderID, p.SyncAttempts, p.NextSyncAt, nullString(p.SyncError), p.LastSyncedAt)
	return q.wrap("update projection sync", err)
}

// ListProjectionsOfContribution reads the rows by number (each projection
// table's number index) and compares the repository case-insensitively.
func (q queries) ListProjectionsOfContribution(ctx context.Context, provider, repository string, number int64) ([]store.Projection, error) {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	table, err := projectionTable(provider)
	if err != nil {
		return nil, err
	}
	return q.appendProjections(ctx, nil, provider, table,
		`number = $1 AND LOWER(repository) = LOWER($2) ORDER BY task_id, connection_id, provider_id`, number, repository)
}

func (q queries) GetProjection(ctx context.Context, p store.Projection) (store.Projection, error) {
	table, err := projectionTable(p.Provider)
	if err != nil {
		return store.Projection{}, err
	}
	if !isCanonicalUUID(p.TaskID) {
		return store.Projection{}, store.ErrNotFound // names no row (PostgreSQL would fail the uuid cast)
	}
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	row, err := scanProjection(q.ex.QueryRow(ctx, `SELECT `+projectionColumns+` FROM `+table+`
		WHERE task_id = $1 AND connection_id = $2 AND provider_id = $3`, p.TaskID, p.ConnectionID, p.ProviderID), p.Provider)
	if err != nil {
		return store.Projection{}, q.wrap("get projection", err)
	}
	return row, nil
}

func (q queries) DeleteProjection(ctx context.Context, p store.Projection) (bool, error) {
	table, err := projectionTable(p.Provider)
	if err != nil {
		return false, err
	}
	if !isCanonicalUUID(p.TaskID) {
		return false, nil // names no row (PostgreSQL would fail the uuid cast)
	}
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	n, err := q.ex.Exec(ctx, `DELETE FROM `+table+` WHERE task_id = $1 AND connection_id = $2 AND provider_id = $3`,
		p.TaskID, p.ConnectionID, p.ProviderID)
	return n > 0, q.wrap("delete projection", err)
}
