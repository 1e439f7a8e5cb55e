package sqlstore

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/trackergateway/gateway/internal/store"
)

// finishedPredicate is the predicate of idx_deliveries_finished, repeated
// verbatim in the pruner's queries: SQLite uses a partial index only for a
// query whose WHERE contains the index's own terms.
const finishedPredicate = `(status = 'succeeded' OR status = 'ignored' OR status = 'suppressed' OR status = 'failed')`

// finishedList is store.FinishedStatuses as an SQL list, for the replay's
// guard (which must not read idx_deliveries_finished).
const finishedList = `('succeeded', 'ignored', 'suppressed', 'failed')`

// expiredDeliveries is the WHERE clause of the expired deliveries in
// statuses, with the finish time as $1 and the statuses from $2; it refuses
// any status that has not finished, so a pending delivery can never match.
func expiredDeliveries(statuses []string, finishedBefore time.Time) (string, []any, error) {
	if len(statuses) == 0 {
		return "", nil, fmt.Errorf("expired deliveries: no status given")
	}
	args := []any{finishedBefore}
	for _, s := range statuses {
		if !slices.Contains(store.ProcessedStatuses, s) && !slices.Contains(store.FailedStatuses, s) {
			return "", nil, fmt.Errorf("expired deliveries: status %q has not finished", s)
		}
		args = append(args, s)
	}
	return finishedPredicate + ` AND status IN (` + inList(2, len(statuses)) + `) AND processed_at < $1`, args, nil
}

func countExpired(where string) string { return `SELECT COUNT(*) FROM deliveries WHERE ` + where }

func (q queries) CountExpiredDeliveries(ctx context.Context, statuses []string, finishedBefore time.Time) (int64, error) {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	where, args, err := expiredDeliveries(statuses, finishedBefore)
	if err != nil {
		return 0, err
	}
	var n int64
	err = q.ex.QueryRow(ctx, countExpired(where), args...).Scan(&n)
	return n, q.wrap("count expired deliveries", err)
}

// DeleteExpiredDeliveries picks its batch once (a materialized CTE: as an
// IN subquery PostgreSQL may run it again and delete more than limit) and
// deletes it by primary key. A delivery replayed meanwhile is never
// deleted: on PostgreSQL the batch's FOR UPDATE skips a row being requeued
// right now, re-checks the predicate on one requeued since the statement
// began, and holds the rows it took until the delete commits; SQLite has
// one writer.
func (q queries) DeleteExpiredDeliveries(ctx context.Context, statuses []string, finishedBefore time.Time, limit int) (int64, error) {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	where, args, err := expiredDeliveries(statuses, finishedBefore)
	if err != nil {
		return 0, err
	}
	args = append(args, limit)
	n, err := q.ex.Exec(ctx, fmt.Sprintf(`WITH batch AS MATERIALIZED (SELECT id FROM deliveries WHERE %s LIMIT $%d%s)
		DELETE FROM deliveries WHERE id IN (SELECT id FROM batch)`, where, len(args), q.d.SkipLocked()), args...)
	return n, q.wrap("delete expired deliveries", err)
}

// readBound is the highest event ID every consumer has read: the lowest
// cursor among consumers (0 for one that has none) and every consumer that
// saved a cursor, and below every event an enabled subscription still owes
// (outboundBound); 0 when no consumer is known at all.
func (q queries) readBound(ctx context.Context, consumers []string) (int64, error) {
	rows, err := q.ex.Query(ctx, `SELECT consumer, last_event_id FROM outbox_cursors`)
	if err != nil {
		return 0, q.wrap("read outbox cursors", err)
	}
	defer rows.Close()
	cursors := map[string]int64{}
	for rows.Next() {
		var c string
		var id int64
		if err := rows.Scan(&c, &id); err != nil {
			return 0, q.wrap("scan outbox cursor", err)
		}
		cursors[c] = id
	}
	if err := rows.Err(); err != nil {
		return 0, q.wrap("read outbox cursors", err)
	}
	if len(cursors) == 0 && len(consumers) == 0 {
		return 0, nil
	}
	bound := int64(-1)
	low := func(id int64) {
		if bound < 0 || id < bound {
			bound = id
		}
	}
	for _, c := range consumers {
		low(cursors[c])
	}
	for _, id := range cursors {
		low(id)
	}
	owed, ok, err := q.outboundBound(ctx)
	if err != nil {
		return 0, err
	}
	if ok {
		low(owed)
	}
	return bound, nil
}

func (q queries) CountReadTaskEvents(ctx context.Context, consumers []string, createdBefore time.Time) (int64, error) {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	bound, err := q.readBound(ctx, consumers)
	if err != nil || bound <= 0 {
		return 0, err
	}
	var n int64
	err = q.ex.QueryRow(ctx, `SELECT COUNT(*) FROM task_events WHERE id <= $1 AND created_at < $2`, bound, createdBefore).Scan(&n)
	return n, q.wrap("count read task events", err)
}

// DeleteReadTaskEvents reads the bound before it deletes: cursors only move
// forward, so a bound read earlier is never above a consumer's position.
func (q queries) DeleteReadTaskEvents(ctx context.Context, consumers []string, createdBefore time.Time, limit int) (int64, error) {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	bound, err := q.readBound(ctx, consumers)
	if err != nil || bound <= 0 {
		return 0, err
	}
	n, err := q.ex.Exec(ctx, `DELETE FROM task_events WHERE id IN (
		SELECT id FROM task_events WHERE id <= $1 AND created_at < $2 ORDER BY id LIMIT $3)`, bound, createdBefore, limit)
	return n, q.wrap("delete read task events", err)
}

func (q queries) AcquireJobLease(ctx context.Context, name, owner string, now, expires time.Time) (bool, error) {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	n, err := q.ex.Exec(ctx, `INSERT INTO job_leases (name, owner, expires_at) VALUES ($1, $2, $3)
		ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
		WHERE job_leases.owner = excluded.owner OR job_leases.expires_at <= $4`, name, owner, expires, now)
	return n == 1, q.wrap("acquire job lease", err)
}

func (q queries) ReleaseJobLease(ctx context.Context, name, owner string) error {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	_, err := q.ex.Exec(ctx, `DELETE FROM job_leases WHERE name = $1 AND owner = $2`, name, owner)
	return q.wrap("release job lease", err)
}
