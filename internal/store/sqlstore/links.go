package sqlstore

import (
	"context"
	"time"

	"github.com/trackergateway/gateway/internal/store"
)

const linkColumns = `workspace_id, connection_id, link_id, external_id, provider, host, repository, number, url, removed, updated_at`

// UpsertContributionLink replaces the row unless it is later than l: the
// conflict's WHERE leaves a later row alone, and then no row is affected.
// A row without a connection (recorded before links were keyed by
// connection, its connection unknown) of the same link and issue is taken
// over first; each statement is right on its own, and the deliveries of
// one issue are processed one at a time.
func (q queries) UpsertContributionLink(ctx context.Context, l store.ContributionLink) (bool, error) {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	if l.ConnectionID != "" {
		if _, err := q.ex.Exec(ctx, `UPDATE contribution_links SET connection_id = $2
			WHERE workspace_id = $1 AND connection_id = '' AND link_id = $3 AND external_id = $4
			AND NOT EXISTS (SELECT 1 FROM contribution_links k
				WHERE k.workspace_id = $1 AND k.connection_id = $2 AND k.link_id = $3)`,
			l.WorkspaceID, l.ConnectionID, l.LinkID, l.ExternalID); err != nil {
			return false, q.wrap("adopt contribution link", err)
		}
	}
	n, err := q.ex.Exec(ctx, `INSERT INTO contribution_links (`+linkColumns+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
		ON CONFLICT (workspace_id, connection_id, link_id) DO UPDATE SET external_id = excluded.external_id,
			provider = excluded.provider, host = excluded.host, repository = excluded.repository,
			number = excluded.number, url = excluded.url, removed = excluded.removed, updated_at = excluded.updated_at
		WHERE contribution_links.updated_at <= excluded.updated_at`,
		l.WorkspaceID, l.ConnectionID, l.LinkID, l.ExternalID, l.Provider, l.Host, l.Repository, l.Number, l.URL, l.Removed, l.UpdatedAt)
	return n > 0, q.wrap("upsert contribution link", err)
}

func (q queries) ContributionLinksTo(ctx context.Context, workspaceID, provider, host, repository string, number int64) ([]store.ContributionLink, error) {
	return q.listLinks(ctx, "list links to contribution", `workspace_id = $1 AND provider = $2 AND host = $3
		AND repository = $4 AND number = $5 AND NOT removed ORDER BY updated_at, link_id, connection_id`,
		workspaceID, provider, host, repository, number)
}

func (q queries) ContributionLinksFrom(ctx context.Context, workspaceID, externalID string) ([]store.ContributionLink, error) {
	return q.listLinks(ctx, "list links of issue", `workspace_id = $1 AND external_id = $2 AND NOT removed
		ORDER BY link_id, connection_id`, workspaceID, externalID)
}

func (q queries) listLinks(ctx context.Context, what, where string, args ...any) ([]store.ContributionLink, error) {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	rows, err := q.ex.Query(ctx, `SELECT `+linkColumns+` FROM contribution_links WHERE `+where, args...)
	if err != nil {
		return nil, q.wrap(what, err)
	}
	defer rows.Close()
	var out []store.ContributionLink
	for rows.Next() {
		var l store.ContributionLink
		if err := rows.Scan(&l.WorkspaceID, &l.ConnectionID, &l.LinkID, &l.ExternalID, &l.Provider, &l.Host, &l.Repository,
			&l.Number, &l.URL, &l.Removed, &l.UpdatedAt); err != nil {
			return nil, q.wrap("scan contribution link", err)
		}
		l.UpdatedAt = l.UpdatedAt.UTC()
		out = append(out, l)
	}
	return out, q.wrap(what, rows.Err())
}

func (q queries) InsertRefAlias(ctx context.Context, workspaceID, provider, ref, taskID string, at time.Time) error {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	_, err := q.ex.Exec(ctx, `INSERT INTO source_ref_aliases (workspace_id, provider, ref, task_id, created_at)
		VALUES ($1, $2, $3, $4, $5) ON CONFLICT (workspace_id, provider, ref) DO NOTHING`,
		workspaceID, provider, ref, taskID, at)
	return q.wrap("insert ref alias", err)
}
