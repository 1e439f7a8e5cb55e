package sqlstore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/store/sqlstore"
	"github.com/trackergateway/gateway/internal/store/storetest"
)

// TestOutboundPlans: with thousands of a subscription's deliveries stored,
// the claim walks the due index in its own order (no sort of every due
// row), and the lookups of what a task still owes (the claim's order
// check, the fan-out's, the finish's release of the next event) go through
// the task index, never through every delivery of the subscription: each
// would otherwise cost as much as the subscription's whole backlog.
func TestOutboundPlans(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		t.Parallel()
		ctx := context.Background()
		seed := map[string]string{
			store.DialectPostgres: `INSERT INTO outbound_deliveries (subscription_id, event_id, task_id, event_type, event_at, status,
				next_attempt_at, created_at)
				SELECT 'sub_a', i, 'task-' || (i % 500), 'task.updated', now(), CASE WHEN i % 10 = 0 THEN 'pending' ELSE 'succeeded' END,
					now(), now() FROM generate_series(1, 20000) AS i`,
			store.DialectSQLite: `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000)
				INSERT INTO outbound_deliveries (subscription_id, event_id, task_id, event_type, event_at, status,
				next_attempt_at, created_at)
				SELECT 'sub_a', i, 'task-' || (i % 500), 'task.updated', 0, CASE WHEN i % 10 = 0 THEN 'pending' ELSE 'succeeded' END,
					0, 0 FROM n`,
		}[st.Dialect()]
		if err := st.InsertSubscription(ctx, store.Subscription{ID: "sub_a", WorkspaceID: "ws", URL: "https://example.com",
			Enabled: true, Secret: "whsec_c2VjcmV0", CreatedAt: time.Now(), UpdatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Driver().Exec(ctx, seed); err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		taskIndex := "idx_outbound_deliveries_task"
		claim := explainNamed(t, st, "claim", sqlstore.ClaimOutboundSQL(st.Driver()), []any{now, "owner", now.Add(time.Minute), 64})
		release := explainNamed(t, st, "release", sqlstore.ReleaseChainSQL, []any{now, "sub_a", store.OutboundParked, "task-1"})
		owed := explainNamed(t, st, "owed", sqlstore.InsertOutboundDeliverySQL, []any{now, store.OutboundParked, "owner",
			now.Add(time.Minute), "sub_a", 30001, "task-1", "task.updated", now, true, now, true})
		if !strings.Contains(claim, "idx_outbound_deliveries_due") || !strings.Contains(claim, taskIndex) ||
			strings.Contains(claim, "TEMP B-TREE") || strings.Contains(claim, "Seq Scan on outbound_deliveries") {
			t.Errorf("the claim does not walk the due index and look the order up by task:\n%s", claim)
		}
		for name, plan := range map[string]string{"release": release, "fan-out's check of the task": owed} {
			if !strings.Contains(plan, taskIndex) || strings.Contains(plan, "Seq Scan on outbound_deliveries") {
				t.Errorf("the %s does not look the task up through %s:\n%s", name, taskIndex, plan)
			}
		}
	})
}

// explainNamed is explain for a test that explains several statements: on
// PostgreSQL each is prepared under a name of its own (a prepared statement
// outlives the transaction, on its pooled connection).
func explainNamed(t *testing.T, st *sqlstore.Store, name, query string, args []any) string {
	t.Helper()
	if st.Dialect() != store.DialectPostgres {
		return explain(t, st, query, args)
	}
	ctx := context.Background()
	tx, err := st.Driver().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	stmt := "explained_" + name
	for _, s := range []string{`SET LOCAL plan_cache_mode = force_generic_plan`, `PREPARE ` + stmt + ` AS ` + query} {
		if _, err := tx.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	defer func() { _, _ = st.Driver().Exec(ctx, `DEALLOCATE `+stmt) }()
	rows, err := tx.Query(ctx, `EXPLAIN EXECUTE `+stmt+`(`+strings.TrimSuffix(strings.Repeat("NULL, ", len(args)), ", ")+`)`)
	if err != nil {
		t.Fatalf("explain: %v", err)
	}
	defer rows.Close()
	var lines []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n")
}

// TestOutboundClaimPlanAfterABurst: on PostgreSQL, statistics taken while
// outbound_deliveries was empty (a burst after a quiet spell, before
// autovacuum analyzes again) must not turn the claim into a read and sort
// of every due row: under the settings the claim runs with, it walks the
// due index in order, checks each candidate's order through the task
// index, and stops at its limit.
func TestOutboundClaimPlanAfterABurst(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		if st.Dialect() != store.DialectPostgres {
			t.Skip("the planner settings are PostgreSQL's")
		}
		t.Parallel()
		ctx := context.Background()
		if err := st.InsertSubscription(ctx, store.Subscription{ID: "sub_a", WorkspaceID: "ws", URL: "https://example.com",
			Enabled: true, Secret: "whsec_c2VjcmV0", CreatedAt: time.Now(), UpdatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
		for _, s := range []string{`ANALYZE outbound_deliveries`, `ANALYZE outbound_subscriptions`,
			`INSERT INTO outbound_deliveries (subscription_id, event_id, task_id, event_type, event_at, status, next_attempt_at, created_at)
				SELECT 'sub_a', i, 'task-' || i, 'task.created', now(), 'pending', now() - interval '1 minute', now()
				FROM generate_series(1, 30000) AS i`} {
			if _, err := st.Driver().Exec(ctx, s); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
		}
		tx, err := st.Driver().Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tx.Rollback(ctx) }()
		if _, err := tx.Exec(ctx, sqlstore.ClaimOutboundPlanner); err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		rows, err := tx.Query(ctx, `EXPLAIN `+sqlstore.ClaimOutboundSQL(st.Driver()), now, "owner", now.Add(time.Minute), 64)
		if err != nil {
			t.Fatal(err)
		}
		var lines []string
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			lines = append(lines, line)
		}
		rows.Close()
		plan := strings.Join(lines, "\n")
		if !strings.Contains(plan, "Index Scan using idx_outbound_deliveries_due") || strings.Contains(plan, "Sort Key") {
			t.Errorf("after a burst the claim does not walk the due index in order:\n%s", plan)
		}
		// The order check runs per candidate (a subplan through the task
		// index), never as a join the planner may turn into a read of every
		// unfinished delivery per candidate.
		if !strings.Contains(plan, "SubPlan") || strings.Contains(plan, "Anti Join") {
			t.Errorf("after a burst the claim's order check is not a per-candidate lookup:\n%s", plan)
		}
	})
}
