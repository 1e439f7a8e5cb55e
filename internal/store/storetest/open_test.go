package storetest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// recorder is a testing.TB whose cleanups run when the test says, and
// which records failures and logs instead of acting on them, so that a
// helper's cleanup can be watched. onLog sees every line logged.
type recorder struct {
	testing.TB
	mu       sync.Mutex
	cleanups []func()
	failures []string
	logs     []string
	onLog    func(line string)
}

func (r *recorder) Helper()           {}
func (r *recorder) Cleanup(fn func()) { r.cleanups = append(r.cleanups, fn) }
func (r *recorder) Errorf(f string, a ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failures = append(r.failures, fmt.Sprintf(f, a...))
}
func (r *recorder) Fatalf(f string, a ...any) { r.Errorf(f, a...) }
func (r *recorder) Logf(f string, a ...any) {
	line := fmt.Sprintf(f, a...)
	r.mu.Lock()
	r.logs = append(r.logs, line)
	r.mu.Unlock()
	if r.onLog != nil {
		r.onLog(line)
	}
}

// runCleanups runs the cleanups as testing does, last registered first.
func (r *recorder) runCleanups() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
	r.cleanups = nil
}

func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func databaseName(t *testing.T, dbURL string) string {
	t.Helper()
	cfg, err := pgx.ParseConfig(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	return cfg.Database
}

func databaseExists(t *testing.T, conn *pgx.Conn, name string) bool {
	t.Helper()
	var exists bool
	if err := conn.QueryRow(context.Background(), `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil {
		t.Fatalf("read pg_database: %v", err)
	}
	return exists
}

// holdDatabaseLock takes, in an open transaction of conn, a lock on the
// database object that CREATE DATABASE (from it as a template) and DROP
// DATABASE wait for, as they wait on a busy server's checkpoint; release
// ends it.
func holdDatabaseLock(t *testing.T, conn *pgx.Conn, name string) (release func()) {
	t.Helper()
	ctx := context.Background()
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatalf("begin: %v", err)
	}
	if _, err := tx.Exec(ctx, `COMMENT ON DATABASE `+pgx.Identifier{name}.Sanitize()+` IS 'held by a test'`); err != nil {
		t.Fatalf("lock database %s: %v", name, err)
	}
	var once sync.Once
	release = func() { once.Do(func() { _ = tx.Rollback(ctx) }) }
	t.Cleanup(release)
	return release
}

// An attempt meant to fail (it waits behind holdDatabaseLock until its
// deadline) is short; one meant to succeed has the whole generous deadline,
// so that a busy server never fails the test.
var (
	// shortThenGenerous: a first attempt that times out, then one that
	// has time to finish.
	shortThenGenerous = limits{deadlines: []time.Duration{time.Second, databaseDeadline}}
	// shortOnly: two attempts that both time out.
	shortOnly = limits{deadlines: []time.Duration{time.Second, time.Second}}
)

// Dropping at cleanup forces out a connection the test left open.
func TestNewDatabaseDropsWithAConnectionStillOpen(t *testing.T) {
	t.Parallel()
	url := PostgresURL(t)
	admin := connect(t, url)
	rec := &recorder{TB: t}
	dbURL := newDatabase(rec, url, "", databaseLimits, databaseLimits)
	name := databaseName(t, dbURL)
	left := connect(t, dbURL)
	rec.runCleanups()
	if len(rec.failures) > 0 || databaseExists(t, admin, name) {
		t.Errorf("cleanup with a connection open: failures %q, database %s still exists: %v", rec.failures, name, databaseExists(t, admin, name))
	}
	if err := left.Ping(context.Background()); err == nil {
		t.Errorf("the connection left open on the dropped database still answers")
	}
}

// A drop that outlasts its deadline is tried again; one that never
// succeeds is logged, the database left to the sweeper, and the test does
// not fail for it.
func TestNewDatabaseCleanupNeverFailsTheTest(t *testing.T) {
	t.Parallel()
	url := PostgresURL(t)
	admin := connect(t, url)

	t.Run("a slow drop is tried again", func(t *testing.T) {
		t.Parallel()
		rec := &recorder{TB: t}
		name := databaseName(t, newDatabase(rec, url, "", databaseLimits, shortThenGenerous))
		release := holdDatabaseLock(t, connect(t, url), name)
		// The first attempt times out behind the lock, whatever the load;
		// the second finds it released and has all the time it needs.
		rec.onLog = func(line string) {
			if strings.Contains(line, "attempt 1") {
				release()
			}
		}
		rec.runCleanups()
		if len(rec.failures) > 0 || databaseExists(t, admin, name) {
			t.Errorf("failures %q, database %s still exists: %v; logs %q", rec.failures, name, databaseExists(t, admin, name), rec.logs)
		}
	})

	t.Run("a drop that keeps failing is left to the sweeper", func(t *testing.T) {
		t.Parallel()
		rec := &recorder{TB: t}
		name := databaseName(t, newDatabase(rec, url, "", databaseLimits, shortOnly))
		release := holdDatabaseLock(t, connect(t, url), name)
		// Both attempts time out behind the lock.
		rec.runCleanups()
		if len(rec.failures) > 0 {
			t.Errorf("a failed drop failed the test: %q", rec.failures)
		}
		if !databaseExists(t, admin, name) || !strings.Contains(strings.Join(rec.logs, "\n"), "database "+name+" left for the sweeper") {
			t.Errorf("database %s exists: %v, logs %q; want it left, and logged", name, databaseExists(t, admin, name), rec.logs)
		}
		release()
		if errs := sweepDatabases(url, func(n string, _ bool) bool { return n == name }); len(errs) > 0 || databaseExists(t, admin, name) {
			t.Errorf("sweep: %v; database %s still exists: %v", errs, name, databaseExists(t, admin, name))
		}
	})
}

// A CREATE DATABASE that outlasts its deadline is tried again under
// another name, and the name it gave up on is dropped at cleanup too.
func TestNewDatabaseCreationIsTriedAgain(t *testing.T) {
	t.Parallel()
	url := PostgresURL(t)
	admin := connect(t, url)
	template := databaseName(t, NewDatabase(t, url, ""))
	release := holdDatabaseLock(t, connect(t, url), template)
	rec := &recorder{TB: t, onLog: func(line string) {
		if strings.Contains(line, "create database") && strings.Contains(line, "attempt 1") {
			release()
		}
	}}
	// The first attempt times out behind the lock on its template, whatever
	// the load; the second, released, has all the time it needs.
	name := databaseName(t, newDatabase(rec, url, "TEMPLATE "+template, shortThenGenerous, databaseLimits))
	if len(rec.failures) > 0 || !databaseExists(t, admin, name) {
		t.Fatalf("failures %q, database %s exists: %v; logs %q", rec.failures, name, databaseExists(t, admin, name), rec.logs)
	}
	if !strings.Contains(strings.Join(rec.logs, "\n"), "attempt 1") {
		t.Errorf("the first attempt did not fail behind the lock; logs %q", rec.logs)
	}
	rec.runCleanups()
	if len(rec.failures) > 0 || databaseExists(t, admin, name) {
		t.Errorf("cleanup: failures %q, database %s still exists: %v; logs %q", rec.failures, name, databaseExists(t, admin, name), rec.logs)
	}
}

func TestIsStale(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	for _, tc := range []struct {
		name    string
		invalid bool
		want    bool
	}{
		{fmt.Sprintf("gw_test_%d_4242_7", now.Add(-2*time.Hour).Unix()), false, true},
		{fmt.Sprintf("gw_test_%d_4242_7", now.Add(-time.Minute).Unix()), false, false},
		{fmt.Sprintf("gw_test_%d_4242_7", now.Add(-time.Minute).Unix()), true, true},
		{"gw_test_4242_7", false, false}, // no creation time: only when invalid
		{"gw_test_4242_7", true, true},
	} {
		if got := isStale(tc.name, tc.invalid, now); got != tc.want {
			t.Errorf("isStale(%s, invalid %v) = %v, want %v", tc.name, tc.invalid, got, tc.want)
		}
	}
}
