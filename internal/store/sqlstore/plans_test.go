package sqlstore_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/store/sqlstore"
	"github.com/trackergateway/gateway/internal/store/storetest"
)

// TestFinishFindsTheDeliveryByKey: with a large inbox and a backlog, the
// UPDATE that finishes a delivery looks it up by primary key. A plan through
// the partial index of pending deliveries would filter the whole backlog
// for every delivery finished, which made processing slower the more the
// inbox held. PostgreSQL is asked for the generic plan its prepared
// statements settle on; SQLite for its query plan.
func TestFinishFindsTheDeliveryByKey(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		t.Parallel()
		seedBurstAfterStatistics(t, st, "deliveries")
		args := []any{"00000000-0000-7000-8000-000000000001", "owner", store.DeliverySucceeded, 1, nil,
			time.Now(), nil, time.Now(), "issues.opened", nil, nil, nil, nil}
		plan := explain(t, st, sqlstore.FinishDeliverySQL, args)
		byKey := map[string]string{store.DialectPostgres: "deliveries_pkey", store.DialectSQLite: "sqlite_autoindex_deliveries_1"}[st.Dialect()]
		if !strings.Contains(plan, byKey) || strings.Contains(plan, "idx_deliveries_due") {
			t.Errorf("finish plan does not look the delivery up by %s:\n%s", byKey, plan)
		}
	})
}

// TestClaimReadsEntityLeasesOncePerClaim: the claim checks its candidates'
// entity leases against one read of the lease table per claim, never a read
// per candidate. The statistics are those autovacuum leaves in production:
// the lease table analyzed while (nearly) empty. With a correlated check,
// PostgreSQL's generic plan then scanned the whole lease table, dead rows
// and all, for every candidate row: with a large inbox, claims cost twice
// as much and the drain ran a fifth slower than on an empty database.
func TestClaimReadsEntityLeasesOncePerClaim(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		t.Parallel()
		seedBurstAfterStatistics(t, st, "entity_leases", "deliveries")
		now := time.Now()
		plan := explain(t, st, sqlstore.ClaimDeliveriesSQL(st.Driver().SkipLocked()), []any{now, "owner", now.Add(time.Minute), 32})
		var once bool
		switch st.Dialect() {
		case store.DialectPostgres:
			once = strings.Contains(plan, "hashed SubPlan") && !strings.Contains(plan, "Anti Join")
		case store.DialectSQLite:
			once = strings.Contains(plan, "LIST SUBQUERY") && !strings.Contains(plan, "CORRELATED")
		}
		if !once {
			t.Errorf("the claim reads entity_leases per candidate row:\n%s", plan)
		}
	})
}

// seedBurstAfterStatistics stores 60,000 finished deliveries, analyzes
// tables, and then stores a backlog of 6,000 queued ones: the statistics
// are those of a settled inbox, and the backlog arrives after them, as a
// burst does.
func seedBurstAfterStatistics(t *testing.T, st *sqlstore.Store, tables ...string) {
	t.Helper()
	stmts := []string{seedDeliveries[st.Dialect()]("succeeded", 1, 60000)}
	for _, table := range tables {
		stmts = append(stmts, "ANALYZE "+table)
	}
	stmts = append(stmts, seedDeliveries[st.Dialect()]("queued", 60001, 66000))
	for _, q := range stmts {
		if _, err := st.Driver().Exec(context.Background(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// seedDeliveries is the statement that stores deliveries from..to in a
// status, per dialect.
var seedDeliveries = map[string]func(status string, from, to int) string{
	store.DialectPostgres: func(status string, from, to int) string {
		return fmt.Sprintf(`INSERT INTO deliveries (id, connection_id, provider, event, delivery_key, status,
			attempts, next_attempt_at, received_at, outcome_external_id)
			SELECT gen_random_uuid(), 'gh', 'github', 'issues', 'key-' || i, '%s', 1, now(), now(),
				'github:github.com:issue:' || i
			FROM generate_series(%d, %d) AS i`, status, from, to)
	},
	store.DialectSQLite: func(status string, from, to int) string {
		return fmt.Sprintf(`WITH RECURSIVE n(i) AS (SELECT %d UNION ALL SELECT i + 1 FROM n WHERE i < %d)
			INSERT INTO deliveries (id, connection_id, provider, event, delivery_key, status,
			attempts, next_attempt_at, received_at, outcome_external_id)
			SELECT lower(hex(randomblob(16))), 'gh', 'github', 'issues', 'key-' || i, '%s', 1,
				'2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z', 'github:github.com:issue:' || i
			FROM n`, from, to, status)
	},
}

// explain returns the plan of query as the dialect runs it: on PostgreSQL
// the generic plan of the prepared statement.
func explain(t *testing.T, st *sqlstore.Store, query string, args []any) string {
	t.Helper()
	ctx := context.Background()
	tx, err := st.Driver().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	explainSQL := "EXPLAIN QUERY PLAN " + query
	if st.Dialect() == store.DialectPostgres {
		for _, s := range []string{`SET LOCAL plan_cache_mode = force_generic_plan`, `PREPARE explained AS ` + query} {
			if _, err := tx.Exec(ctx, s); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
		}
		// EXECUTE takes its arguments as literals; the generic plan does
		// not depend on them.
		explainSQL = `EXPLAIN EXECUTE explained(` + strings.TrimSuffix(strings.Repeat("NULL, ", len(args)), ", ") + `)`
		args = nil
	}
	rows, err := tx.Query(ctx, explainSQL, args...)
	if err != nil {
		t.Fatalf("explain: %v", err)
	}
	defer rows.Close()
	var lines []string
	for rows.Next() {
		// PostgreSQL answers a line of text per plan node, SQLite
		// (id, parent, unused, detail) per step.
		var line string
		dest := []any{&line}
		if st.Dialect() == store.DialectSQLite {
			var id, parent, unused int
			dest = []any{&id, &parent, &unused, &line}
		}
		if err := rows.Scan(dest...); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, line)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}
