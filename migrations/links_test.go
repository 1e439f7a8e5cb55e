package migrations_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/store/storetest"
)

// TestContributionLinksMigration: migration 00019 adds source_ref_aliases,
// contribution_links and the projection tables' number indexes, their
// identity text compared byte for byte (COLLATE "C" on PostgreSQL);
// migrating down removes them all and migrating up again adds them back.
func TestContributionLinksMigration(t *testing.T) {
	t.Parallel()
	storetest.ForDialects(t, func(t *testing.T, dialect string) {
		t.Parallel()
		ctx := context.Background()
		db, p := migrationProvider(t, dialect)
		tables := []string{"source_ref_aliases", "contribution_links"}
		indexes := []string{"idx_source_ref_aliases_task", "idx_contribution_links_contribution",
			"idx_contribution_links_issue", "idx_github_task_prs_number", "idx_gitlab_task_mrs_number",
			"idx_gitea_task_prs_number"}
		exists := map[string]string{
			store.DialectSQLite: `SELECT COUNT(*) FROM sqlite_master WHERE name = $1`,
			store.DialectPostgres: `SELECT COUNT(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
				WHERE n.nspname = current_schema() AND c.relname = $1`,
		}[dialect]
		check := func(step string, want bool) {
			t.Helper()
			for _, name := range append(append([]string{}, tables...), indexes...) {
				var n int
				if err := db.QueryRowContext(ctx, rebind(dialect, exists), name).Scan(&n); err != nil {
					t.Fatalf("%s: look for %s: %v", step, name, err)
				}
				if got := n == 1; got != want {
					t.Errorf("%s: %s exists = %v, want %v", step, name, got, want)
				}
			}
		}
		if _, err := p.UpTo(ctx, 18); err != nil {
			t.Fatalf("migrate to 18: %v", err)
		}
		check("at 18", false)
		if _, err := p.UpTo(ctx, 19); err != nil {
			t.Fatalf("migrate to 19: %v", err)
		}
		check("at 19", true)
		if dialect == store.DialectPostgres {
			for _, c := range []struct{ table, column string }{
				{"source_ref_aliases", "ref"}, {"contribution_links", "link_id"},
				{"contribution_links", "external_id"}, {"contribution_links", "repository"},
			} {
				var collation *string
				if err := db.QueryRowContext(ctx, `SELECT collation_name FROM information_schema.columns
					WHERE table_schema = current_schema() AND table_name = $1 AND column_name = $2`,
					c.table, c.column).Scan(&collation); err != nil {
					t.Fatalf("%s.%s collation: %v", c.table, c.column, err)
				}
				if collation == nil || *collation != "C" {
					t.Errorf("%s.%s collation = %v, want \"C\"", c.table, c.column, collation)
				}
			}
		}
		if _, err := p.DownTo(ctx, 18); err != nil {
			t.Fatalf("migrate down to 18: %v", err)
		}
		check("down at 18", false)
		if _, err := p.UpTo(ctx, 19); err != nil {
			t.Fatalf("migrate to 19 again: %v", err)
		}
		check("at 19 again", true)
	})
}

// TestContributionLinksByConnectionMigration: migration 00020 keys
// contribution_links by connection too. A row recorded before takes the
// connection that created its issue's task, else the one connection whose
// deliveries were about the issue, else none (empty); two connections may
// then hold the same link ID. Migrating down keeps the latest row of each
// link ID, and up again works.
func TestContributionLinksByConnectionMigration(t *testing.T) {
	t.Parallel()
	storetest.ForDialects(t, func(t *testing.T, dialect string) {
		t.Parallel()
		ctx := context.Background()
		db, p := migrationProvider(t, dialect)
		if _, err := p.UpTo(ctx, 19); err != nil {
			t.Fatalf("migrate to 19: %v", err)
		}
		base := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
		// at is a timestamp as the dialect stores it.
		at := func(minutes int) any {
			t := base.Add(time.Duration(minutes) * time.Minute)
			if dialect == store.DialectSQLite {
				return t.UnixMicro()
			}
			return t
		}
		exec := func(q string, args ...any) {
			t.Helper()
			if _, err := db.ExecContext(ctx, rebind(dialect, q), args...); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		exec(`INSERT INTO workspaces (id, name, task_prefix, created_at) VALUES ('eng', 'Engineering', 'ENG', $1)`, at(0))
		exec(`INSERT INTO workflow_steps (workspace_id, id, name, position) VALUES ('eng', 'backlog', 'Backlog', 0)`)
		exec(`INSERT INTO tasks (id, workspace_id, identifier, title, workflow_step_id, owner_connection, external_id,
			created_at, updated_at) VALUES ('0195d2a8-3b7c-7000-8000-0000000000a1', 'eng', 'ENG-1', 't', 'backlog',
			'ln-task', 'linear:acme:issue:1', $1, $1)`, at(0))
		for i, d := range []struct{ conn, ext string }{
			{"ln-deliveries", "linear:beta:issue:2"}, {"ln-deliveries", "linear:beta:issue:2"},
			{"ln-one", "linear:gamma:issue:3"}, {"ln-other", "linear:gamma:issue:3"},
		} {
			exec(`INSERT INTO deliveries (id, connection_id, provider, event, delivery_key, status, attempts, next_attempt_at,
				received_at, outcome_external_id) VALUES ($1, $2, 'linear', 'Issue', $3, 'succeeded', 1, $4, $4, $5)`,
				fmt.Sprintf("0195d2a8-3b7c-7000-8000-0000000000b%d", i), d.conn, fmt.Sprintf("k%d", i), at(0), d.ext)
		}
		insertLink := func(conn *string, link, ext string, minutes int) {
			t.Helper()
			cols, vals, args := "", "", []any{link, ext, at(minutes)}
			if conn != nil {
				cols, vals, args = ", connection_id", ", $4", append(args, *conn)
			}
			exec(`INSERT INTO contribution_links (workspace_id, link_id, external_id, provider, host, repository, number,
				updated_at`+cols+`) VALUES ('eng', $1, $2, 'github', 'github.com', 'acme/api', 42, $3`+vals+`)`, args...)
		}
		for _, l := range []struct{ link, ext string }{
			{"att-task", "linear:acme:issue:1"}, {"att-deliveries", "linear:beta:issue:2"},
			{"att-ambiguous", "linear:gamma:issue:3"}, {"att-unknown", "linear:delta:issue:4"},
		} {
			insertLink(nil, l.link, l.ext, 10)
		}
		connections := func(step string) map[string][]string {
			t.Helper()
			rows, err := db.QueryContext(ctx, `SELECT link_id, connection_id FROM contribution_links ORDER BY link_id, connection_id`)
			if err != nil {
				t.Fatalf("%s: read links: %v", step, err)
			}
			defer rows.Close()
			out := map[string][]string{}
			for rows.Next() {
				var link, conn string
				if err := rows.Scan(&link, &conn); err != nil {
					t.Fatalf("%s: scan: %v", step, err)
				}
				out[link] = append(out[link], conn)
			}
			if err := rows.Err(); err != nil {
				t.Fatalf("%s: read links: %v", step, err)
			}
			return out
		}

		if _, err := p.UpTo(ctx, 20); err != nil {
			t.Fatalf("migrate to 20: %v", err)
		}
		want := map[string][]string{"att-task": {"ln-task"}, "att-deliveries": {"ln-deliveries"},
			"att-ambiguous": {""}, "att-unknown": {""}}
		if got := connections("at 20"); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("at 20: connections = %v, want %v", got, want)
		}
		// Another connection's row with the same link ID, newer.
		other := "ln-other-org"
		insertLink(&other, "att-task", "linear:zeta:issue:9", 20)
		want["att-task"] = []string{"ln-other-org", "ln-task"}
		if got := connections("at 20 with two rows of a link"); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("at 20: connections = %v, want %v", got, want)
		}

		if _, err := p.DownTo(ctx, 19); err != nil {
			t.Fatalf("migrate down to 19: %v", err)
		}
		if _, err := db.ExecContext(ctx, `SELECT connection_id FROM contribution_links`); err == nil {
			t.Errorf("contribution_links still has connection_id at 19")
		}
		var ext string
		var n int
		if err := db.QueryRowContext(ctx, `SELECT external_id, (SELECT COUNT(*) FROM contribution_links)
			FROM contribution_links WHERE link_id = 'att-task'`).Scan(&ext, &n); err != nil {
			t.Fatalf("down at 19: read att-task: %v", err)
		}
		if ext != "linear:zeta:issue:9" || n != 4 {
			t.Errorf("down at 19: att-task is %s's, %d rows; want the latest (linear:zeta:issue:9), 4 rows", ext, n)
		}
		if _, err := p.UpTo(ctx, 20); err != nil {
			t.Fatalf("migrate to 20 again: %v", err)
		}
	})
}
