package sqlstore

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/trackergateway/gateway/internal/store"
)

// repositoriesPerStatement bounds the rows of one multi-row upsert.
const repositoriesPerStatement = 100

// ApplyInstallationChange runs one upsert of the installation row and one
// per batch of repositories, each guarded by (updated_at, received_at):
// every statement is right on its own, so the change needs no transaction
// of its own and applies in any order.
func (q queries) ApplyInstallationChange(ctx context.Context, c store.InstallationChange) error {
	suspended := c.SuspendedAt
	var deleted *time.Time
	switch c.Action {
	case "suspend":
		if suspended == nil {
			at := c.At
			suspended = &at
		}
	case "unsuspend":
		suspended = nil
	case "deleted":
		at := c.At
		deleted = &at
	}
	if err := q.upsertInstallation(ctx, c, suspended, deleted); err != nil {
		return err
	}
	present := c.Repositories
	if c.Action == "created" {
		// The whole set: every other repository the installation had is
		// gone, unless a newer change says otherwise.
		if err := q.dropOtherRepositories(ctx, c); err != nil {
			return err
		}
	}
	if err := q.upsertRepositories(ctx, c, present, true); err != nil {
		return err
	}
	return q.upsertRepositories(ctx, c, c.RemovedRepositories, false)
}

func (q queries) upsertInstallation(ctx context.Context, c store.InstallationChange, suspended, deleted *time.Time) error {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	_, err := q.ex.Exec(ctx, `INSERT INTO github_installations (connection_id, installation_id, account_login,
		account_type, repository_selection, suspended_at, deleted_at, updated_at, received_at, last_delivery_id)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
		ON CONFLICT (connection_id, installation_id) DO UPDATE SET account_login = excluded.account_login,
			account_type = excluded.account_type, repository_selection = excluded.repository_selection,
			suspended_at = excluded.suspended_at, deleted_at = excluded.deleted_at, updated_at = excluded.updated_at,
			received_at = excluded.received_at, last_delivery_id = excluded.last_delivery_id
		WHERE (github_installations.updated_at, github_installations.received_at) <= (excluded.updated_at, excluded.received_at)`,
		c.ConnectionID, c.InstallationID, c.AccountLogin, c.AccountType, c.RepositorySelection, suspended, deleted,
		c.At, c.ReceivedAt, c.DeliveryID)
	return q.wrap("upsert installation", err)
}

func (q queries) dropOtherRepositories(ctx context.Context, c store.InstallationChange) error {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	query := `UPDATE github_installation_repositories SET present = $3, updated_at = $4, received_at = $5, delivery_id = $6
		WHERE connection_id = $1 AND installation_id = $2 AND present
		AND (updated_at, received_at) < ($4, $5)`
	args := []any{c.ConnectionID, c.InstallationID, false, c.At, c.ReceivedAt, c.DeliveryID}
	if len(c.Repositories) > 0 {
		query += ` AND repository NOT IN (` + inList(len(args)+1, len(c.Repositories)) + `)`
		for _, r := range c.Repositories {
			args = append(args, r)
		}
	}
	_, err := q.ex.Exec(ctx, query, args...)
	return q.wrap("drop installation repositories", err)
}

func (q queries) upsertRepositories(ctx context.Context, c store.InstallationChange, repos []string, present bool) error {
	for start := 0; start < len(repos); start += repositoriesPerStatement {
		chunk := repos[start:min(start+repositoriesPerStatement, len(repos))]
		if err := q.upsertRepositoryChunk(ctx, c, chunk, present); err != nil {
			return err
		}
	}
	return nil
}

func (q queries) upsertRepositoryChunk(ctx context.Context, c store.InstallationChange, repos []string, present bool) error {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	args := []any{c.ConnectionID, c.InstallationID, present, c.At, c.ReceivedAt, c.DeliveryID}
	var values strings.Builder
	for i, r := range repos {
		if i > 0 {
			values.WriteString(", ")
		}
		args = append(args, r)
		values.WriteString("($1, $2, $" + strconv.Itoa(len(args)) + ", $3, $4, $5, $6)")
	}
	_, err := q.ex.Exec(ctx, `INSERT INTO github_installation_repositories (connection_id, installation_id, repository,
		present, updated_at, received_at, delivery_id) VALUES `+values.String()+`
		ON CONFLICT (connection_id, installation_id, repository) DO UPDATE SET present = excluded.present,
			updated_at = excluded.updated_at, received_at = excluded.received_at, delivery_id = excluded.delivery_id
		WHERE (github_installation_repositories.updated_at, github_installation_repositories.received_at)
			<= (excluded.updated_at, excluded.received_at)`, args...)
	return q.wrap("upsert installation repositories", err)
}

func (q queries) ListInstallations(ctx context.Context, connectionID string) ([]store.Installation, error) {
	var list []store.Installation
	err := q.batch(ctx,
		BatchQuery{SQL: `SELECT connection_id, installation_id, account_login, account_type, repository_selection,
			suspended_at, deleted_at, updated_at, last_delivery_id FROM github_installations
			WHERE connection_id = $1 ORDER BY installation_id`, Args: []any{connectionID}, Scan: func(rows Rows) error {
			for rows.Next() {
				var in store.Installation
				if err := rows.Scan(&in.ConnectionID, &in.InstallationID, &in.AccountLogin, &in.AccountType,
					&in.RepositorySelection, &in.SuspendedAt, &in.DeletedAt, &in.UpdatedAt, &in.LastDeliveryID); err != nil {
					return err
				}
				list = append(list, in)
			}
			return rows.Err()
		}},
		BatchQuery{SQL: `SELECT installation_id, repository FROM github_installation_repositories
			WHERE connection_id = $1 AND present ORDER BY installation_id, repository`, Args: []any{connectionID},
			Scan: func(rows Rows) error {
				byID := make(map[int64]int, len(list))
				for i, in := range list {
					byID[in.InstallationID] = i
				}
				for rows.Next() {
					var id int64
					var repo string
					if err := rows.Scan(&id, &repo); err != nil {
						return err
					}
					if i, ok := byID[id]; ok {
						list[i].Repositories = append(list[i].Repositories, repo)
					}
				}
				return rows.Err()
			}},
	)
	return list, q.wrap("list installations", err)
}
