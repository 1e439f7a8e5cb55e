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
	"strconv"
	"strings"
	"sync"
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
		// A schema left behind harms no other test: log, do not fail.
		if err := execWithin(url, `DROP SCHEMA IF EXISTS `+pgx.Identifier{name}.Sanitize()+` CASCADE`, databaseDeadline); err != nil {
			t.Logf("schema %s left behind: %v", name, err)
		}
	})
	return name
}

// limits bound creating or dropping a database: one deadline per attempt,
// as many attempts as deadlines.
type limits struct {
	deadlines []time.Duration
}

// deadline is the deadline of attempt (from 1).
func (l limits) deadline(attempt int) time.Duration { return l.deadlines[attempt-1] }

func (l limits) attempts() int { return len(l.deadlines) }

// databaseDeadline is generous because CREATE and DROP DATABASE wait on
// the whole server, not on the test: DROP DATABASE (PostgreSQL 15) makes the
// checkpointer write and fsync every dirty buffer of every database, behind
// any checkpoint already under way, and CREATE DATABASE copies its template
// through the same busy disk. With many tests writing at once that takes
// longer than a query's 30 seconds.
const databaseDeadline = 2 * time.Minute

// databaseLimits: three attempts, each with databaseDeadline.
var databaseLimits = limits{deadlines: []time.Duration{databaseDeadline, databaseDeadline, databaseDeadline}}

// databasePrefix starts the name of every database NewDatabase creates:
// gw_test_<unix seconds>_<pid>_<sequence>, so that the sweeper can tell how
// old a leftover is.
const databasePrefix = "gw_test_"

// staleDatabaseAge is how old a test database must be for the sweeper to
// drop it: older than any test run.
const staleDatabaseAge = time.Hour

var sweepOnce sync.Once

// NewDatabase creates a database with extra CREATE DATABASE options (e.g. a
// non-C collation) and returns its URL. It is dropped at cleanup, after the
// cleanups registered later (the pools opened on it) have run; a drop that
// still fails is logged and the database left to the sweeper, which drops
// test databases older than an hour the next time a test process creates
// one. A failed drop says nothing about the test.
func NewDatabase(t testing.TB, url, options string) string {
	t.Helper()
	sweepOnce.Do(func() {
		now := time.Now()
		for _, err := range sweepDatabases(url, func(name string, invalid bool) bool { return isStale(name, invalid, now) }) {
			t.Logf("sweep test databases: %v", err)
		}
	})
	return newDatabase(t, url, options, databaseLimits, databaseLimits)
}

// newDatabase creates the database within create's limits, and drops it at
// cleanup within drop's.
func newDatabase(t testing.TB, url, options string, create, drop limits) string {
	t.Helper()
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatalf("parse url: %v", err)
		return ""
	}
	for attempt := 1; ; attempt++ {
		name := fmt.Sprintf("%s%d_%d_%d", databasePrefix, time.Now().Unix(), os.Getpid(), schemaSeq.Add(1))
		// An attempt cut off by its deadline may have left the database.
		t.Cleanup(func() { dropTestDatabase(t, url, name, drop) })
		err := execWithin(url, `CREATE DATABASE `+name+` `+options, create.deadline(attempt))
		if err == nil {
			return strings.Replace(url, "/"+cfg.Database+"?", "/"+name+"?", 1)
		}
		if attempt == create.attempts() {
			t.Fatalf("create database (%d attempts): %v", attempt, err)
			return ""
		}
		t.Logf("create database %s, attempt %d: %v; trying again", name, attempt, err)
	}
}

// dropTestDatabase drops a test's database, forcing out the connections
// still open on it, and tries again when an attempt fails; it logs what it
// could not drop rather than failing the test.
func dropTestDatabase(t testing.TB, url, name string, lim limits) {
	for attempt := 1; ; attempt++ {
		err := execWithin(url, `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`, lim.deadline(attempt))
		switch {
		case err == nil:
			return
		case attempt == lim.attempts():
			t.Logf("database %s left for the sweeper: drop failed %d times: %v", name, attempt, err)
			return
		}
		t.Logf("drop database %s, attempt %d: %v; trying again", name, attempt, err)
	}
}

// isStale says whether a test process left the database behind: it was
// created more than staleDatabaseAge before now, or a cut-off drop left it
// invalid (datconnlimit -2), which nobody can connect to.
func isStale(name string, invalid bool, now time.Time) bool {
	created := databaseCreated(name)
	return invalid || (!created.IsZero() && created.Before(now.Add(-staleDatabaseAge)))
}

// sweepDatabases drops the test databases (by their prefix) that stale
// selects, and returns what it could not do.
func sweepDatabases(url string, stale func(name string, invalid bool) bool) []error {
	ctx, cancel := context.WithTimeout(context.Background(), databaseDeadline)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return []error{err}
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(ctx, `SELECT datname, datconnlimit = -2 FROM pg_database WHERE starts_with(datname, $1)`, databasePrefix)
	if err != nil {
		return []error{err}
	}
	var drop []string
	for rows.Next() {
		var name string
		var invalid bool
		if err := rows.Scan(&name, &invalid); err != nil {
			return []error{err}
		}
		if stale(name, invalid) {
			drop = append(drop, name)
		}
	}
	if err := rows.Err(); err != nil {
		return []error{err}
	}
	var errs []error
	for _, name := range drop {
		if _, err := conn.Exec(ctx, `DROP DATABASE IF EXISTS `+pgx.Identifier{name}.Sanitize()+` WITH (FORCE)`); err != nil {
			errs = append(errs, fmt.Errorf("drop %s: %w", name, err))
		}
	}
	return errs
}

// databaseCreated reads the creation time in a test database's name; the
// zero time (never stale by age) when the name has none.
func databaseCreated(name string) time.Time {
	parts := strings.Split(strings.TrimPrefix(name, databasePrefix), "_")
	if len(parts) != 3 {
		return time.Time{}
	}
	sec, err := strconv.ParseInt(parts[0], 10, 64)
	if err != nil {
		return time.Time{}
	}
	return time.Unix(sec, 0)
}

func exec(t testing.TB, url, sql string) {
	t.Helper()
	if err := execWithin(url, sql, 30*time.Second); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// execWithin runs sql on a connection of its own, within deadline.
func execWithin(url, sql string, deadline time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return fmt.Errorf("connect postgres: %w", err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, sql); err != nil {
		return fmt.Errorf("%s: %w", sql, err)
	}
	return nil
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
