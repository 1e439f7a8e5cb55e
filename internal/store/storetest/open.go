// Package storetest opens fresh, migrated stores of every dialect for tests
// and holds the conformance suite that every driver must pass.
package storetest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/store/postgres"
	"github.com/trackergateway/gateway/internal/store/sqlite"
	"github.com/trackergateway/gateway/internal/store/sqlstore"
)

// PostgresURLEnv names the environment variable holding the URL of a
// PostgreSQL server the tests may create schemas and databases in.
const PostgresURLEnv = "GATEWAY_TEST_POSTGRES_URL"

// Dialects lists the dialects tests run against.
var Dialects = []string{store.DialectSQLite, store.DialectPostgres}

// ForDialects runs fn as a subtest per dialect, named after it. The
// PostgreSQL subtest skips, visibly, when no server URL is configured.
func ForDialects(t *testing.T, fn func(t *testing.T, dialect string)) {
	t.Helper()
	for _, d := range Dialects {
		t.Run(d, func(t *testing.T) {
			if d == store.DialectPostgres {
				PostgresURL(t)
			}
			fn(t, d)
		})
	}
}

// ForEachDialect runs fn as a subtest per dialect, each with a fresh store.
func ForEachDialect(t *testing.T, fn func(t *testing.T, s *sqlstore.Store)) {
	t.Helper()
	ForDialects(t, func(t *testing.T, d string) { fn(t, Open(t, d)) })
}

var schemaSeq atomic.Int64

// Open returns a migrated, empty store of the dialect, closed at cleanup.
func Open(t testing.TB, dialect string) *sqlstore.Store {
	t.Helper()
	ctx := context.Background()
	var s *sqlstore.Store
	switch dialect {
	case store.DialectSQLite:
		d, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "gateway.db"))
		if err != nil {
			t.Fatalf("open sqlite: %v", err)
		}
		s = sqlstore.New(d)
	case store.DialectPostgres:
		url := PostgresURL(t)
		schema := NewSchema(t, url)
		d, err := postgres.Open(ctx, url, postgres.Options{Schema: schema, MaxConns: 24}, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err != nil {
			t.Fatalf("open postgres: %v", err)
		}
		s = sqlstore.New(d)
	default:
		t.Fatalf("unknown dialect %q", dialect)
	}
	t.Cleanup(s.Close)
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	return s
}

// PostgresURL returns the test server URL or skips the test with a visible
// reason.
func PostgresURL(t testing.TB) string {
	t.Helper()
	url := os.Getenv(PostgresURLEnv)
	if url == "" {
		t.Skipf("PostgreSQL suite skipped: set %s (CI's .ci/run starts a server and sets it)", PostgresURLEnv)
	}
	return url
}

// NewSchema creates a uniquely named schema, dropped at cleanup, so tests run
// in parallel on one server.
func NewSchema(t testing.TB, url string) string {
	t.Helper()
	name := fmt.Sprintf("t_%d_%d_%s", os.Getpid(), schemaSeq.Add(1), strings.ToLower(sanitize(t.Name())))
	if len(name) > 60 {
		name = name[:60]
	}
	exec(t, url, `CREATE SCHEMA `+pgx.Identifier{name}.Sanitize())
	t.Cleanup(func() {
		exec(t, url, `DROP SCHEMA `+pgx.Identifier{name}.Sanitize()+` CASCADE`)
	})
	return name
}

// NewDatabase creates a database with extra CREATE DATABASE options (e.g. a
// non-C collation), dropped at cleanup, and returns its URL.
func NewDatabase(t testing.TB, url, options string) string {
	t.Helper()
	name := fmt.Sprintf("gw_test_%d_%d", os.Getpid(), schemaSeq.Add(1))
	exec(t, url, `CREATE DATABASE `+name+` `+options)
	t.Cleanup(func() { exec(t, url, `DROP DATABASE `+name+` WITH (FORCE)`) })
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatalf("parse url: %v", err)
	}
	return strings.Replace(url, "/"+cfg.Database+"?", "/"+name+"?", 1)
}

func exec(t testing.TB, url, sql string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connect postgres: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func sanitize(s string) string {
	var b strings.Builder
	for _, r := range s {
		if (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}
