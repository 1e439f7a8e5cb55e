package migrations_test

import (
	"context"
	"testing"

	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/store/storetest"
)

// TestTaskEventsFeedMigration: migration 00022 adds the feed's index of a
// workspace's events by id; migrating down removes it, up adds it back.
func TestTaskEventsFeedMigration(t *testing.T) {
	t.Parallel()
	storetest.ForDialects(t, func(t *testing.T, dialect string) {
		t.Parallel()
		ctx := context.Background()
		db, p := migrationProvider(t, dialect)
		exists := map[string]string{
			store.DialectSQLite: `SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND name = $1`,
			store.DialectPostgres: `SELECT COUNT(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
				WHERE n.nspname = current_schema() AND c.relname = $1`,
		}[dialect]
		check := func(step string, want bool) {
			t.Helper()
			var n int
			if err := db.QueryRowContext(ctx, rebind(dialect, exists), "idx_task_events_workspace").Scan(&n); err != nil {
				t.Fatalf("%s: look for the index: %v", step, err)
			}
			if got := n == 1; got != want {
				t.Errorf("%s: idx_task_events_workspace exists = %v, want %v", step, got, want)
			}
		}
		if _, err := p.UpTo(ctx, 19); err != nil {
			t.Fatalf("migrate to 19: %v", err)
		}
		check("at 19", false)
		if _, err := p.UpTo(ctx, 22); err != nil {
			t.Fatalf("migrate to 22: %v", err)
		}
		check("at 22", true)
		if _, err := p.DownTo(ctx, 19); err != nil {
			t.Fatalf("migrate down to 19: %v", err)
		}
		check("down at 19", false)
		if _, err := p.UpTo(ctx, 22); err != nil {
			t.Fatalf("migrate to 22 again: %v", err)
		}
		check("at 22 again", true)
	})
}
