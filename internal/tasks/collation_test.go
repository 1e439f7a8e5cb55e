package tasks_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/trackergateway/gateway/internal/store/postgres"
	"github.com/trackergateway/gateway/internal/store/sqlstore"
	"github.com/trackergateway/gateway/internal/store/storetest"
)

// nonCDatabaseOptions picks CREATE DATABASE options whose default collation
// is not C: a case-insensitive ICU locale when the server has ICU (15+),
// else en_US.UTF-8.
func nonCDatabaseOptions(t *testing.T, url string) string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(ctx)
	var version int
	var icu bool
	if err := conn.QueryRow(ctx, `SELECT current_setting('server_version_num')::int,
		EXISTS (SELECT 1 FROM pg_collation WHERE collprovider = 'i')`).Scan(&version, &icu); err != nil {
		t.Fatalf("probe server: %v", err)
	}
	if version >= 150000 && icu {
		return "TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'und-u-ks-level2' LOCALE 'C.UTF-8'"
	}
	return "TEMPLATE template0 LC_COLLATE 'en_US.UTF-8' LC_CTYPE 'en_US.UTF-8'"
}

// EXT-1 and ext-1 stay distinct identities even when the database's default
// collation is not C, because tasks.external_id is declared COLLATE "C".
func TestExternalIDIsByteExactInANonCDatabase(t *testing.T) {
	t.Parallel()
	url := storetest.PostgresURL(t)
	dbURL := storetest.NewDatabase(t, url, nonCDatabaseOptions(t, url))
	ctx := context.Background()
	d, err := postgres.Open(ctx, dbURL, postgres.Options{MaxConns: 8}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	st := sqlstore.New(d)
	t.Cleanup(st.Close)
	if err := st.Migrate(ctx); err != nil {
		t.Fatalf("migrate: %v", err)
	}

	var dbCollation string
	if err := d.Pool().QueryRow(ctx, `SELECT COALESCE(NULLIF(daticulocale, ''), datcollate) FROM pg_database
		WHERE datname = current_database()`).Scan(&dbCollation); err != nil {
		t.Fatalf("database collation: %v", err)
	}
	if dbCollation == "C" || dbCollation == "POSIX" {
		t.Fatalf("database default collation = %q, want a non-C one for this test", dbCollation)
	}
	for _, table := range []string{"tasks", "task_creation_operations"} {
		var collation *string
		if err := d.Pool().QueryRow(ctx, `SELECT collation_name FROM information_schema.columns
			WHERE table_schema = current_schema() AND table_name = $1 AND column_name = 'external_id'`, table).Scan(&collation); err != nil {
			t.Fatalf("%s.external_id collation: %v", table, err)
		}
		if collation == nil || *collation != "C" {
			t.Errorf("%s.external_id collation = %v, want \"C\"", table, collation)
		}
	}

	e := newEnv(t, st)
	lower := e.create(t, createFields("ws", "ext-1"))
	wantTuple(t, lower, false, true, "ext-1")
	upper := e.create(t, createFields("ws", "EXT-1"))
	wantTuple(t, upper, false, true, "EXT-1")
	if upper.str("id") == lower.str("id") {
		t.Errorf("EXT-1 found the ext-1 task")
	}
	wantTuple(t, e.create(t, createFields("ws", "ext-1")), true, true, "ext-1")
	for ext, id := range map[string]string{"ext-1": lower.str("id"), "EXT-1": upper.str("id")} {
		r := e.do(t, http.MethodGet, "/api/v1/workspaces/ws/tasks/by-external-id?external_id="+ext, adminToken, "")
		if r.status != http.StatusOK || r.str("id") != id {
			t.Errorf("lookup %s = %d %s, want task %s", ext, r.status, r.raw, id)
		}
	}
	wantError(t, e.do(t, http.MethodGet, "/api/v1/workspaces/ws/tasks/by-external-id?external_id=Ext-1", adminToken, ""),
		http.StatusNotFound, "task not found")
	if n := count(t, e.st, `SELECT COUNT(*) FROM tasks`); n != 2 {
		t.Errorf("tasks = %d, want 2", n)
	}
}
