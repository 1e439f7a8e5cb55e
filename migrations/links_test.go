package migrations_test

import (
	"context"
	"testing"

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
