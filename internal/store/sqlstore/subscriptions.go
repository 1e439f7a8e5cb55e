package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/trackergateway/gateway/internal/store"
)

// Outbound webhooks: subscriptions and their deliveries (store.Subscription
// Queries; docs/design.md, "Task events out").
//
// Lock order: a subscription row, then its deliveries. The fan-out locks
// every enabled subscription (FOR NO KEY UPDATE: the deliveries' foreign
// key only takes KEY SHARE) before it reads which tasks still have an
// event owed, and the finish locks the subscriptions of its batch before
// it releases a task's next event; so whether a new delivery is due or
// parked behind its task's earlier one is decided on a state neither can
// change under the other. Claims take no subscription lock: they lease
// due rows (FOR UPDATE SKIP LOCKED) and check the order again themselves.

// unfinishedOutbound is the predicate of the partial indexes of unfinished
// deliveries, word for word (SQLite uses a partial index only then).
const unfinishedOutbound = `(status = 'pending' OR status = 'retrying')`

const subscriptionColumns = `id, workspace_id, url, types, description, enabled, disabled_reason, secret,
	previous_secret, previous_secret_expires_at, failing_since, position, created_at, updated_at`

func scanSubscription(r Row) (store.Subscription, error) {
	var s store.Subscription
	var types string
	var previous sql.NullString
	err := r.Scan(&s.ID, &s.WorkspaceID, &s.URL, &types, &s.Description, &s.Enabled, &s.DisabledReason, &s.Secret,
		&previous, &s.PreviousSecretExpiresAt, &s.FailingSince, &s.Position, &s.CreatedAt, &s.UpdatedAt)
	if err != nil {
		return s, err
	}
	s.Types = splitTypes(types)
	s.PreviousSecret = previous.String
	s.CreatedAt, s.UpdatedAt = s.CreatedAt.UTC(), s.UpdatedAt.UTC()
	s.PreviousSecretExpiresAt, s.FailingSince = utcPtr(s.PreviousSecretExpiresAt), utcPtr(s.FailingSince)
	return s, nil
}

// Types are stored as one comma-separated text: event type names hold no
// comma, and the fan-out reads them with the subscription anyway.
func joinTypes(ts []string) string { return strings.Join(ts, ",") }

func splitTypes(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

func (q queries) InsertSubscription(ctx context.Context, s store.Subscription) error {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	// The position is the outbox's newest committed event: appends hold
	// the outbox lock from their id to their commit, so any event not yet
	// visible here gets a larger id and is owed.
	_, err := q.ex.Exec(ctx, `INSERT INTO outbound_subscriptions (`+subscriptionColumns+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, (SELECT COALESCE(MAX(id), 0) FROM task_events), $12, $13)`,
		s.ID, s.WorkspaceID, s.URL, joinTypes(s.Types), s.Description, s.Enabled, s.DisabledReason, s.Secret,
		nullString(s.PreviousSecret), s.PreviousSecretExpiresAt, s.FailingSince, s.CreatedAt, s.UpdatedAt)
	return q.wrap("insert subscription", err)
}

func (q queries) GetSubscription(ctx context.Context, id string) (store.Subscription, error) {
	return q.getSubscription(ctx, "get subscription", id, "")
}

func (q queries) LockSubscription(ctx context.Context, id string) (store.Subscription, error) {
	return q.getSubscription(ctx, "lock subscription", id, q.d.ForUpdate())
}

func (q queries) getSubscription(ctx context.Context, what, id, suffix string) (store.Subscription, error) {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	s, err := scanSubscription(q.ex.QueryRow(ctx, `SELECT `+subscriptionColumns+` FROM outbound_subscriptions WHERE id = $1`+suffix, id))
	return s, q.wrap(what, err)
}

func (q queries) ListSubscriptions(ctx context.Context, workspaceID string) ([]store.Subscription, error) {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	query, args := `SELECT `+subscriptionColumns+` FROM outbound_subscriptions ORDER BY created_at, id`, []any(nil)
	if workspaceID != "" {
		query = `SELECT ` + subscriptionColumns + ` FROM outbound_subscriptions WHERE workspace_id = $1 ORDER BY created_at, id`
		args = []any{workspaceID}
	}
	rows, err := q.ex.Query(ctx, query, args...)
	if err != nil {
		return nil, q.wrap("list subscriptions", err)
	}
	defer rows.Close()
	var out []store.Subscription
	for rows.Next() {
		s, err := scanSubscription(rows)
		if err != nil {
			return nil, q.wrap("scan subscription", err)
		}
		out = append(out, s)
	}
	return out, q.wrap("list subscriptions", rows.Err())
}

func (q queries) UpdateSubscription(ctx context.Context, s store.Subscription) error {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	n, err := q.ex.Exec(ctx, `UPDATE outbound_subscriptions SET url = $2, types = $3, description = $4, enabled = $5,
			disabled_reason = $6, secret = $7, previous_secret = $8, previous_secret_expires_at = $9, failing_since = $10,
			updated_at = $11
		WHERE id = $1`,
		s.ID, s.URL, joinTypes(s.Types), s.Description, s.Enabled, s.DisabledReason, s.Secret,
		nullString(s.PreviousSecret), s.PreviousSecretExpiresAt, s.FailingSince, s.UpdatedAt)
	if err != nil {
		return q.wrap("update subscription", err)
	}
	return exactlyOne("update subscription")(n)
}

func (q queries) DeleteSubscription(ctx context.Context, id string) error {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	n, err := q.ex.Exec(ctx, `DELETE FROM outbound_subscriptions WHERE id = $1`, id)
	if err != nil {
		return q.wrap("delete subscription", err)
	}
	return exactlyOne("delete subscription")(n)
}

// parkSubscription parks every unfinished delivery of subscription $1 ($2:
// store.OutboundParked), as disabling it does.
const parkSubscription = `UPDATE outbound_deliveries SET next_attempt_at = $2
	WHERE subscription_id = $1 AND ` + unfinishedOutbound

func (q queries) ParkSubscriptionDeliveries(ctx context.Context, id string) error {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	_, err := q.ex.Exec(ctx, parkSubscription, id, store.OutboundParked)
	return q.wrap("park subscription deliveries", err)
}

// resumeChains makes due the first unfinished delivery of each task of the
// subscription $1, at $2.
const resumeChains = `UPDATE outbound_deliveries SET next_attempt_at = $2
	WHERE subscription_id = $1 AND ` + unfinishedOutbound + `
	  AND NOT EXISTS (SELECT 1 FROM outbound_deliveries e
		WHERE e.subscription_id = outbound_deliveries.subscription_id AND e.task_id = outbound_deliveries.task_id
		  AND e.event_id < outbound_deliveries.event_id AND (e.status = 'pending' OR e.status = 'retrying'))`

func (q queries) ResumeSubscription(ctx context.Context, id string, now time.Time) error {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	_, err := q.ex.Exec(ctx, resumeChains, id, now)
	return q.wrap("resume subscription", err)
}

// fanOutCandidate is an outbox event as the fan-out reads it.
type fanOutCandidate struct {
	id                    int64
	workspace, task, kind string
	at                    time.Time
}

type fanOutSubscription struct {
	id, workspace string
	types         []string
	position      int64
}

func (s fanOutSubscription) wants(e fanOutCandidate) bool {
	return e.id > s.position && e.workspace == s.workspace && (len(s.types) == 0 || slices.Contains(s.types, e.kind))
}

// chainKey is a task's chain of deliveries to one subscription.
type chainKey struct{ subscription, task string }

// outboundKey is one outbound delivery: an event to one subscription.
type outboundKey struct {
	subscription string
	event        int64
}

// outboundDeliveryRowArgs is the number of values of one inserted delivery.
const outboundDeliveryRowArgs = 8

// maxOutboundRows bounds the rows of one INSERT (its placeholders).
const maxOutboundRows = 1024

// paddedRows is how many rows an INSERT of n rows lists: n rounded up to a
// power of two (at most max), the last row repeated to fill it. The
// statement's text then takes one of a few shapes, which both drivers keep
// prepared: parsing a new one on every fan-out cost more than the write
// itself. A repeated row changes nothing: the INSERT skips it as a
// conflict.
func paddedRows(n, max int) int {
	p := 1
	for p < n {
		p *= 2
	}
	return min(p, max)
}

func (q queries) FanOutEvents(ctx context.Context, f store.FanOut) (store.FanOutResult, error) {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	var res store.FanOutResult
	// Nothing to do is the common answer: learn it without a write
	// transaction (on SQLite, without the writer).
	var newest, lowest int64
	err := q.ex.QueryRow(ctx, `SELECT COALESCE((SELECT MAX(id) FROM task_events), 0),
		COALESCE((SELECT MIN(position) FROM outbound_subscriptions WHERE enabled), -1)`).Scan(&newest, &lowest)
	if err != nil || lowest < 0 || newest <= lowest {
		return res, q.wrap("fan out events", err)
	}
	err = q.write(ctx, func(q queries) error {
		res = store.FanOutResult{}
		var subs []fanOutSubscription
		var events []fanOutCandidate
		err := q.batch(ctx,
			BatchQuery{SQL: `SELECT id, workspace_id, types, position FROM outbound_subscriptions WHERE enabled ORDER BY id` + q.d.ForUpdate(),
				Scan: func(r Rows) error {
					for r.Next() {
						var s fanOutSubscription
						var types string
						if err := r.Scan(&s.id, &s.workspace, &types, &s.position); err != nil {
							return err
						}
						s.types = splitTypes(types)
						subs = append(subs, s)
					}
					return nil
				}},
			// Read after the lock is held: each statement sees what was
			// committed before it ran.
			BatchQuery{SQL: `SELECT id, workspace_id, task_id, type, created_at FROM task_events
				WHERE id > (SELECT COALESCE(MIN(position), 0) FROM outbound_subscriptions WHERE enabled) ORDER BY id LIMIT $1`,
				Args: []any{f.Limit},
				Scan: func(r Rows) error {
					for r.Next() {
						var e fanOutCandidate
						if err := r.Scan(&e.id, &e.workspace, &e.task, &e.kind, &e.at); err != nil {
							return err
						}
						events = append(events, e)
					}
					return nil
				}})
		if err != nil {
			return q.wrap("read events to fan out", err)
		}
		if len(subs) == 0 || len(events) == 0 {
			return nil
		}
		res.Events = len(events)
		var rows []newOutboundDelivery
		chains := map[chainKey]bool{}
		leases := 0
		if f.Owner != "" {
			leases = f.LeaseLimit
		}
		for _, e := range events {
			for _, s := range subs {
				if !s.wants(e) {
					continue
				}
				// The first event of a task in the batch is parked when
				// the subscription owes the task an earlier one (the
				// INSERT reads that itself); the task's later ones wait
				// for the first. Only a first may be leased.
				r := newOutboundDelivery{OutboundDelivery: store.OutboundDelivery{SubscriptionID: s.id, EventID: e.id,
					TaskID: e.task, EventType: e.kind, EventAt: e.at.UTC(), NextAttemptAt: store.OutboundParked}}
				k := chainKey{s.id, e.task}
				if !chains[k] {
					chains[k] = true
					r.check, r.NextAttemptAt = true, f.Now
					if leases > 0 {
						r.lease = true
						leases--
					}
				}
				rows = append(rows, r)
			}
		}
		if len(rows) > 0 {
			if err := q.insertOutboundDeliveries(ctx, rows, f, &res); err != nil {
				return err
			}
		}
		last := events[len(events)-1].id
		ids := make([]any, 0, len(subs)+1)
		ids = append(ids, last)
		for _, s := range subs {
			if s.position < last {
				ids = append(ids, s.id)
			}
		}
		if len(ids) == 1 {
			return nil
		}
		return q.execLater(ctx, "move subscription positions", nil,
			`UPDATE outbound_subscriptions SET position = $1 WHERE id IN (`+inList(2, len(ids)-1)+`) AND position < $1`, ids...)
	})
	if err != nil {
		return store.FanOutResult{}, err
	}
	// RETURNING has no order: oldest event first.
	slices.SortFunc(res.Leased, func(a, b store.OutboundDelivery) int {
		return cmp.Or(cmp.Compare(a.EventID, b.EventID), cmp.Compare(a.SubscriptionID, b.SubscriptionID))
	})
	return res, nil
}

// newOutboundDelivery is a delivery the fan-out writes: check says to park
// it when its task's chain owes an earlier event, lease to lease it
// otherwise.
type newOutboundDelivery struct {
	store.OutboundDelivery
	check, lease bool
}

// insertOutboundDelivery is the INSERT of pending deliveries ($1 their
// creation time, $2 the parked time, $3 the lease's owner, $4 its expiry;
// then eight values a row: subscription, event, task, type, event time,
// whether to check the task's chain, the next attempt, and whether to
// lease it; typed for PostgreSQL, which types a VALUES list's parameters as
// text, while SQLite keeps what it is given: those types have numeric
// affinity there). A row to check is parked when the subscription owes its
// task an unfinished delivery already (the task index answers); a row not
// parked and to lease is leased as a claim leases (an attempt counted, due
// again when the lease expires); the others are due at their next attempt.
// A delivery that exists already is left as it is.
const insertOutboundDelivery = `INSERT INTO outbound_deliveries (subscription_id, event_id, task_id, event_type, event_at,
		next_attempt_at, status, created_at, attempts, lease_owner, lease_expires_at)
	SELECT sid, eid, tid, kind, at,
		CASE WHEN parked THEN CAST($2 AS TIMESTAMPTZ) WHEN lease THEN CAST($4 AS TIMESTAMPTZ) ELSE due END,
		'pending', CAST($1 AS TIMESTAMPTZ),
		CASE WHEN lease AND NOT parked THEN 1 ELSE 0 END,
		CASE WHEN lease AND NOT parked THEN CAST($3 AS TEXT) END,
		CASE WHEN lease AND NOT parked THEN CAST($4 AS TIMESTAMPTZ) END
	FROM (SELECT column1 AS sid, column2 AS eid, column3 AS tid, column4 AS kind, column5 AS at, column7 AS due, column8 AS lease,
			column6 AND EXISTS (SELECT 1 FROM outbound_deliveries o
				WHERE o.subscription_id = column1 AND o.task_id = column3 AND (o.status = 'pending' OR o.status = 'retrying')) AS parked
		FROM (VALUES `

// insertOutboundDeliveries writes new pending deliveries created at f.Now,
// parked, leased to f.Owner or due as insertOutboundDelivery decides, and
// counts them in res: the leased ones in res.Leased, the due ones not
// leased in res.Due.
func (q queries) insertOutboundDeliveries(ctx context.Context, rows []newOutboundDelivery, f store.FanOut, res *store.FanOutResult) error {
	expires := f.Now.Add(f.Lease)
	for len(rows) > 0 {
		n := min(len(rows), maxOutboundRows)
		chunk := rows[:n]
		rows = rows[n:]
		args := make([]any, 0, 4+outboundDeliveryRowArgs*paddedRows(len(chunk), maxOutboundRows))
		args = append(args, f.Now, store.OutboundParked, f.Owner, expires)
		var b strings.Builder
		b.WriteString(insertOutboundDelivery)
		byKey := make(map[outboundKey]*newOutboundDelivery, len(chunk))
		for i := range paddedRows(len(chunk), maxOutboundRows) {
			d := &chunk[min(i, len(chunk)-1)]
			if i > 0 {
				b.WriteString(", ")
			}
			k := len(args)
			fmt.Fprintf(&b, "($%d, CAST($%d AS BIGINT), $%d, $%d, CAST($%d AS TIMESTAMPTZ), CAST($%d AS BOOLEAN), CAST($%d AS TIMESTAMPTZ), CAST($%d AS BOOLEAN))",
				k+1, k+2, k+3, k+4, k+5, k+6, k+7, k+8)
			args = append(args, d.SubscriptionID, d.EventID, d.TaskID, d.EventType, d.EventAt, d.check, d.NextAttemptAt, d.lease)
			byKey[outboundKey{d.SubscriptionID, d.EventID}] = d
		}
		// WHERE true: SQLite needs a WHERE before an upsert's ON CONFLICT
		// in an INSERT … SELECT.
		b.WriteString(`) AS v) AS c WHERE true ON CONFLICT (subscription_id, event_id) DO NOTHING
			RETURNING subscription_id, event_id, next_attempt_at, lease_owner`)
		r, err := q.ex.Query(ctx, b.String(), args...)
		if err != nil {
			return q.wrap("insert outbound deliveries", err)
		}
		err = func() error {
			defer r.Close()
			for r.Next() {
				var sub string
				var event int64
				var next time.Time
				var owner sql.NullString
				if err := r.Scan(&sub, &event, &next, &owner); err != nil {
					return err
				}
				res.Inserted++
				d := byKey[outboundKey{sub, event}]
				switch {
				case d == nil:
				case owner.Valid:
					l := d.OutboundDelivery
					l.Status, l.Attempts, l.NextAttemptAt, l.CreatedAt = store.OutboundPending, 1, expires, f.Now
					l.LeaseOwner, l.LeaseExpiresAt = owner.String, &expires
					res.Leased = append(res.Leased, l)
				case next.Before(store.OutboundParked):
					res.Due++
				}
			}
			return r.Err()
		}()
		if err != nil {
			return q.wrap("insert outbound deliveries", err)
		}
	}
	return nil
}

const outboundColumns = `subscription_id, event_id, task_id, event_type, event_at, status, attempts, next_attempt_at,
	last_attempt_at, last_status_code, last_error, lease_owner, lease_expires_at, created_at, finished_at`

func scanOutboundDelivery(r Row) (store.OutboundDelivery, error) {
	var d store.OutboundDelivery
	var owner sql.NullString
	err := r.Scan(&d.SubscriptionID, &d.EventID, &d.TaskID, &d.EventType, &d.EventAt, &d.Status, &d.Attempts, &d.NextAttemptAt,
		&d.LastAttemptAt, &d.LastStatusCode, &d.LastError, &owner, &d.LeaseExpiresAt, &d.CreatedAt, &d.FinishedAt)
	if err != nil {
		return d, err
	}
	d.LeaseOwner = owner.String
	d.EventAt, d.NextAttemptAt, d.CreatedAt = d.EventAt.UTC(), d.NextAttemptAt.UTC(), d.CreatedAt.UTC()
	d.LastAttemptAt, d.LeaseExpiresAt, d.FinishedAt = utcPtr(d.LastAttemptAt), utcPtr(d.LeaseExpiresAt), utcPtr(d.FinishedAt)
	return d, nil
}

func (q queries) scanOutboundDeliveries(rows Rows, what string) ([]store.OutboundDelivery, error) {
	defer rows.Close()
	var out []store.OutboundDelivery
	for rows.Next() {
		d, err := scanOutboundDelivery(rows)
		if err != nil {
			return nil, q.wrap("scan "+what, err)
		}
		out = append(out, d)
	}
	return out, q.wrap(what, rows.Err())
}

// claimOutbound is the claim's UPDATE: $1 now, $2 the owner, $3 the lease
// expiry, $4 the limit; skipLocked is the driver's SkipLocked. Parked
// deliveries are never due, so the due index holds what the claim reads;
// the order check (no earlier unfinished delivery of the task) is there
// for a delivery a replay made due beside its task's others.
//
// On PostgreSQL the order check ends in OFFSET 0, which keeps it a subplan
// run per candidate through the task index. As an anti join, with
// statistics from when the table was nearly empty, the planner read every
// unfinished delivery once per candidate instead (5,000 rows × 64).
func claimOutbound(d Driver) string {
	skipLocked, perCandidate := d.SkipLocked(), ""
	if d.Dialect() == store.DialectPostgres {
		perCandidate = " OFFSET 0"
	}
	return `UPDATE outbound_deliveries SET attempts = attempts + 1, lease_owner = $2, lease_expires_at = $3, next_attempt_at = $3
		WHERE (subscription_id, event_id) IN (SELECT d.subscription_id, d.event_id FROM outbound_deliveries d
			WHERE (d.status = 'pending' OR d.status = 'retrying') AND d.next_attempt_at <= $1
			  AND EXISTS (SELECT 1 FROM outbound_subscriptions s WHERE s.id = d.subscription_id AND s.enabled)
			  AND NOT EXISTS (SELECT 1 FROM outbound_deliveries e
				WHERE e.subscription_id = d.subscription_id AND e.task_id = d.task_id AND e.event_id < d.event_id
				  AND (e.status = 'pending' OR e.status = 'retrying')` + perCandidate + `)
			ORDER BY d.next_attempt_at, d.event_id LIMIT $4` + skipLocked + `)
		RETURNING ` + outboundColumns
}

// claimOutboundPlanner is what a claim on PostgreSQL sets for its own
// transaction: no sort. The claim must walk the due index in its order and
// stop at its limit. With statistics taken while the table was nearly empty
// (a burst after a quiet spell, before autovacuum analyzes the table again)
// the planner otherwise reads every due row through a bitmap scan, checks
// each one's per-task order and sorts them all: 90 ms a claim with 30,000
// rows due instead of 5, and every claim of the burst pays it.
const claimOutboundPlanner = `SET LOCAL enable_sort = off`

func (q queries) ClaimOutboundDeliveries(ctx context.Context, owner string, now time.Time, lease time.Duration, limit int) ([]store.OutboundDelivery, error) {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	var out []store.OutboundDelivery
	claim := func(q queries) error {
		if q.d.Dialect() == store.DialectPostgres {
			if _, err := q.ex.Exec(ctx, claimOutboundPlanner); err != nil {
				return q.wrap("plan the outbound claim", err)
			}
		}
		rows, err := q.ex.Query(ctx, claimOutbound(q.d), now, owner, now.Add(lease), limit)
		if err != nil {
			return q.wrap("claim outbound deliveries", err)
		}
		out, err = q.scanOutboundDeliveries(rows, "claim outbound deliveries")
		return err
	}
	var err error
	if q.d.Dialect() == store.DialectPostgres {
		err = q.write(ctx, claim)
	} else {
		err = claim(q)
	}
	if err != nil {
		return nil, err
	}
	// RETURNING has no order: oldest event first.
	slices.SortFunc(out, func(a, b store.OutboundDelivery) int {
		return cmp.Or(cmp.Compare(a.EventID, b.EventID), cmp.Compare(a.SubscriptionID, b.SubscriptionID))
	})
	return out, nil
}

// finishOutbound writes a claimed delivery's new state where $2 still holds
// its lease.
const finishOutbound = `UPDATE outbound_deliveries SET status = $4, attempts = $5, next_attempt_at = $6, last_attempt_at = $7,
		last_status_code = $8, last_error = $9, finished_at = $10, lease_owner = NULL, lease_expires_at = NULL
	WHERE subscription_id = $1 AND event_id = $3 AND lease_owner = $2`

func (q queries) FinishOutboundDeliveries(ctx context.Context, f store.OutboundFinish) (store.OutboundFinishResult, error) {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	var res store.OutboundFinishResult
	subs := map[string]bool{}
	for _, d := range f.Deliveries {
		subs[d.SubscriptionID] = true
	}
	for _, h := range f.Health {
		subs[h.SubscriptionID] = true
	}
	ids := make([]string, 0, len(subs))
	for id := range subs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	updated := make([]int64, len(f.Deliveries))
	err := q.write(ctx, func(q queries) error {
		res = store.OutboundFinishResult{}
		if len(ids) == 0 {
			return nil
		}
		// SQLite has one writer: its transaction excludes the fan-out's
		// already.
		if q.d.ForUpdate() != "" {
			if err := q.lockSubscriptions(ctx, ids); err != nil {
				return err
			}
		}
		released := map[chainKey]bool{}
		for i, d := range f.Deliveries {
			updated[i] = -1
			if err := q.execLater(ctx, "finish outbound delivery", func(n int64) error { updated[i] = n; return nil },
				finishOutbound, d.SubscriptionID, f.Owner, d.EventID, d.Status, d.Attempts, d.NextAttemptAt, d.LastAttemptAt,
				d.LastStatusCode, d.LastError, d.FinishedAt); err != nil {
				return err
			}
			if store.OutboundFinished(d.Status) {
				released[chainKey{d.SubscriptionID, d.TaskID}] = true
			}
		}
		if err := q.releaseChains(ctx, released, f.Now, &res.Released); err != nil {
			return err
		}
		disabled, err := q.recordHealth(ctx, f)
		if err != nil {
			return err
		}
		res.Disabled = disabled
		for _, id := range disabled {
			if err := q.execLater(ctx, "park subscription deliveries", nil, parkSubscription, id, store.OutboundParked); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return store.OutboundFinishResult{}, err
	}
	res.Lost = make([]bool, len(f.Deliveries))
	for i, n := range updated {
		res.Lost[i] = n == 0
	}
	return res, nil
}

// lockSubscriptions locks subscription rows in id order (ids sorted).
func (q queries) lockSubscriptions(ctx context.Context, ids []string) error {
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	rows, err := q.ex.Query(ctx, `SELECT id FROM outbound_subscriptions WHERE id IN (`+inList(1, len(ids))+`) ORDER BY id`+q.d.ForUpdate(), args...)
	if err != nil {
		return q.wrap("lock subscriptions", err)
	}
	for rows.Next() {
	}
	rows.Close()
	return q.wrap("lock subscriptions", rows.Err())
}

// releaseChain makes due ($1) the first unfinished delivery of the task
// $4 of subscription $2, when it is parked ($3): both lookups go through
// the task index.
const releaseChain = `UPDATE outbound_deliveries SET next_attempt_at = $1
	WHERE subscription_id = $2 AND next_attempt_at = $3 AND event_id = (SELECT MIN(event_id) FROM outbound_deliveries
		WHERE subscription_id = $2 AND task_id = $4 AND ` + unfinishedOutbound + `)`

// releaseChains makes due the next parked delivery of each chain whose
// delivery just finished for good, a statement each (on PostgreSQL they
// travel with the COMMIT).
func (q queries) releaseChains(ctx context.Context, chains map[chainKey]bool, now time.Time, released *int) error {
	count := func(n int64) error {
		*released += int(n)
		return nil
	}
	for k := range chains {
		if err := q.execLater(ctx, "release next outbound delivery", count, releaseChain,
			now, k.subscription, store.OutboundParked, k.task); err != nil {
			return err
		}
	}
	return nil
}

// recordHealth applies f.Health; it returns the subscriptions it disabled.
func (q queries) recordHealth(ctx context.Context, f store.OutboundFinish) ([]string, error) {
	var disabled []string
	for _, h := range f.Health {
		switch {
		case h.Disable != "":
			n, err := q.ex.Exec(ctx, `UPDATE outbound_subscriptions SET enabled = FALSE, disabled_reason = $2, updated_at = $3
				WHERE id = $1 AND enabled`, h.SubscriptionID, h.Disable, f.Now)
			if err != nil {
				return nil, q.wrap("disable subscription", err)
			}
			if n > 0 {
				disabled = append(disabled, h.SubscriptionID)
			}
			continue
		case h.Succeeded:
			if err := q.execLater(ctx, "end failing run", nil, `UPDATE outbound_subscriptions SET failing_since = NULL
				WHERE id = $1 AND failing_since IS NOT NULL`, h.SubscriptionID); err != nil {
				return nil, err
			}
			continue
		case !h.Failed:
			continue
		}
		if err := q.execLater(ctx, "start failing run", nil, `UPDATE outbound_subscriptions SET failing_since = $2
			WHERE id = $1 AND failing_since IS NULL`, h.SubscriptionID, f.Now); err != nil {
			return nil, err
		}
		if f.DisableBefore.IsZero() {
			continue
		}
		n, err := q.ex.Exec(ctx, `UPDATE outbound_subscriptions SET enabled = FALSE, disabled_reason = $2, updated_at = $3
			WHERE id = $1 AND enabled AND failing_since < $4`, h.SubscriptionID, f.FailingReason, f.Now, f.DisableBefore)
		if err != nil {
			return nil, q.wrap("disable failing subscription", err)
		}
		if n > 0 {
			disabled = append(disabled, h.SubscriptionID)
		}
	}
	return disabled, nil
}

const nextOutboundDue = `SELECT MIN(next_attempt_at) FROM outbound_deliveries WHERE ` + unfinishedOutbound

func (q queries) NextOutboundDue(ctx context.Context) (time.Time, error) {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	var t *time.Time
	err := q.ex.QueryRow(ctx, nextOutboundDue).Scan(&t)
	if err != nil || t == nil || !t.Before(store.OutboundParked) {
		return time.Time{}, q.wrap("next outbound delivery due", err)
	}
	return t.UTC(), nil
}

func (q queries) OutboundEvents(ctx context.Context, ids []int64) ([]store.TaskEvent, error) {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	if len(ids) == 0 {
		return nil, nil
	}
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	rows, err := q.ex.Query(ctx, `SELECT `+eventColumns+` FROM task_events WHERE id IN (`+inList(1, len(ids))+`) ORDER BY id`, args...)
	if err != nil {
		return nil, q.wrap("read outbound events", err)
	}
	defer rows.Close()
	var out []store.TaskEvent
	for rows.Next() {
		var e store.TaskEvent
		if err := rows.Scan(&e.ID, &e.WorkspaceID, &e.TaskID, &e.Revision, &e.Type, &e.Payload, &e.CreatedAt); err != nil {
			return nil, q.wrap("scan outbound event", err)
		}
		e.CreatedAt = e.CreatedAt.UTC()
		out = append(out, e)
	}
	return out, q.wrap("read outbound events", rows.Err())
}

func (q queries) ListOutboundDeliveries(ctx context.Context, p store.OutboundDeliveryPage) ([]store.OutboundDelivery, error) {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	where := []string{"subscription_id = $1"}
	args := []any{p.SubscriptionID}
	if p.Status != "" {
		args = append(args, p.Status)
		where = append(where, fmt.Sprintf("status = $%d", len(args)))
	}
	if p.BeforeEventID > 0 {
		args = append(args, p.BeforeEventID)
		where = append(where, fmt.Sprintf("event_id < $%d", len(args)))
	}
	args = append(args, p.Limit)
	rows, err := q.ex.Query(ctx, `SELECT `+outboundColumns+` FROM outbound_deliveries WHERE `+strings.Join(where, " AND ")+
		fmt.Sprintf(` ORDER BY event_id DESC LIMIT $%d`, len(args)), args...)
	if err != nil {
		return nil, q.wrap("list outbound deliveries", err)
	}
	return q.scanOutboundDeliveries(rows, "list outbound deliveries")
}

// replayOutbound makes finished deliveries of subscription $1 pending again,
// due at $2; the caller appends the rows' predicate. The status guard is in
// the UPDATE, so a delivery claimed meanwhile is never reset under its
// sender. It is due at once even when its task owes an earlier event: a
// replay asks for this event now (the claim still sends a task's events
// one at a time).
const replayOutbound = `UPDATE outbound_deliveries SET status = 'pending', attempts = 0, next_attempt_at = $2,
		last_error = '', last_status_code = 0, finished_at = NULL, lease_owner = NULL, lease_expires_at = NULL
	WHERE subscription_id = $1 AND (status = 'succeeded' OR status = 'failed') AND `

func (q queries) ReplayOutboundDeliveries(ctx context.Context, r store.OutboundReplay) (store.OutboundReplayResult, error) {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	var res store.OutboundReplayResult
	err := q.write(ctx, func(q queries) error {
		res = store.OutboundReplayResult{}
		sub, err := q.LockSubscription(ctx, r.SubscriptionID)
		if err != nil {
			return err
		}
		if r.EventID == 0 {
			n, err := q.ex.Exec(ctx, replayOutbound+`event_at >= $3`, sub.ID, r.Now, r.Since)
			if err != nil {
				return q.wrap("replay outbound deliveries", err)
			}
			var owed int
			err = q.ex.QueryRow(ctx, `SELECT COUNT(*) FROM outbound_deliveries WHERE subscription_id = $1 AND `+unfinishedOutbound+
				` AND event_at >= $2`, sub.ID, r.Since).Scan(&owed)
			if err != nil {
				return q.wrap("count owed outbound deliveries", err)
			}
			res.Replayed, res.Skipped = int(n), owed-int(n)
			return nil
		}
		n, err := q.ex.Exec(ctx, replayOutbound+`event_id = $3`, sub.ID, r.Now, r.EventID)
		if err != nil {
			return q.wrap("replay outbound delivery", err)
		}
		if n > 0 {
			res.Replayed = 1
			return nil
		}
		var status string
		err = q.ex.QueryRow(ctx, `SELECT status FROM outbound_deliveries WHERE subscription_id = $1 AND event_id = $2`,
			sub.ID, r.EventID).Scan(&status)
		switch {
		case err == nil:
			res.Skipped = 1 // still owed: it is sent anyway
			return nil
		case !errors.Is(err, ErrNoRows):
			return q.wrap("read outbound delivery", err)
		}
		// Never sent to this subscription (another type, or before it
		// existed): sent now, if the event is its workspace's and the
		// fan-out has passed it.
		var e fanOutCandidate
		err = q.ex.QueryRow(ctx, `SELECT id, workspace_id, task_id, type, created_at FROM task_events WHERE id = $1`, r.EventID).
			Scan(&e.id, &e.workspace, &e.task, &e.kind, &e.at)
		if err != nil {
			return q.wrap("read event to replay", err)
		}
		if e.workspace != sub.WorkspaceID || e.id > sub.Position {
			return fmt.Errorf("read event to replay: %w", store.ErrNotFound)
		}
		res.Replayed = 1
		var inserted store.FanOutResult
		return q.insertOutboundDeliveries(ctx, []newOutboundDelivery{{OutboundDelivery: store.OutboundDelivery{SubscriptionID: sub.ID,
			EventID: e.id, TaskID: e.task, EventType: e.kind, EventAt: e.at.UTC(), NextAttemptAt: r.Now}}}, store.FanOut{Now: r.Now}, &inserted)
	})
	return res, err
}

// SubscriptionLags reads, per subscription, the oldest event owed and not
// delivered: the oldest unfinished delivery's, or, when the fan-out has not
// passed the newest event yet (a disabled subscription stays where it
// stopped), the first event past its position if that is older.
func (q queries) SubscriptionLags(ctx context.Context) ([]store.SubscriptionLag, error) {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	rows, err := q.ex.Query(ctx, `SELECT s.id, s.workspace_id, s.enabled,
			(SELECT MIN(d.event_at) FROM outbound_deliveries d WHERE d.subscription_id = s.id AND (d.status = 'pending' OR d.status = 'retrying')),
			(SELECT e.created_at FROM task_events e WHERE e.id > s.position ORDER BY e.id LIMIT 1)
		FROM outbound_subscriptions s ORDER BY s.id`)
	if err != nil {
		return nil, q.wrap("read subscription lags", err)
	}
	defer rows.Close()
	var out []store.SubscriptionLag
	for rows.Next() {
		var l store.SubscriptionLag
		var owed, unread *time.Time
		if err := rows.Scan(&l.SubscriptionID, &l.WorkspaceID, &l.Enabled, &owed, &unread); err != nil {
			return nil, q.wrap("scan subscription lag", err)
		}
		for _, t := range []*time.Time{owed, unread} {
			if t != nil && (l.Oldest.IsZero() || t.Before(l.Oldest)) {
				l.Oldest = t.UTC()
			}
		}
		out = append(out, l)
	}
	return out, q.wrap("read subscription lags", rows.Err())
}

// orphanedBound is the predicate of the deliveries of subscription $1 whose
// event retention has removed: every event id below the oldest left (the
// pruner removes the oldest first), or every one when none is left.
const orphanedBound = `subscription_id = $1 AND event_id < COALESCE((SELECT MIN(id) FROM task_events), $2)`

func (q queries) CountOrphanedOutboundDeliveries(ctx context.Context) (int64, error) {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	subs, err := q.ListSubscriptions(ctx, "")
	if err != nil {
		return 0, err
	}
	var total int64
	for _, s := range subs {
		var n int64
		if err := q.ex.QueryRow(ctx, `SELECT COUNT(*) FROM outbound_deliveries WHERE `+orphanedBound, s.ID, int64(1)<<62).Scan(&n); err != nil {
			return 0, q.wrap("count orphaned outbound deliveries", err)
		}
		total += n
	}
	return total, nil
}

// DeleteOrphanedOutboundDeliveries deletes by primary key, subscription by
// subscription, from the oldest event.
func (q queries) DeleteOrphanedOutboundDeliveries(ctx context.Context, limit int) (int64, error) {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	subs, err := q.ListSubscriptions(ctx, "")
	if err != nil {
		return 0, err
	}
	var total int64
	for _, s := range subs {
		if total >= int64(limit) {
			break
		}
		n, err := q.ex.Exec(ctx, `DELETE FROM outbound_deliveries WHERE (subscription_id, event_id) IN (
			SELECT subscription_id, event_id FROM outbound_deliveries WHERE `+orphanedBound+` ORDER BY event_id LIMIT $3)`,
			s.ID, int64(1)<<62, int64(limit)-total)
		if err != nil {
			return total, q.wrap("delete orphaned outbound deliveries", err)
		}
		total += n
	}
	return total, nil
}

// outboundBound is the highest event id no enabled subscription owes: below
// every enabled subscription's position and its oldest unfinished delivery.
// ok is false when no subscription is enabled. A disabled subscription
// holds nothing: retention's window is all it keeps for it.
func (q queries) outboundBound(ctx context.Context) (bound int64, ok bool, err error) {
	var position, unfinished *int64
	err = q.ex.QueryRow(ctx, `SELECT (SELECT MIN(position) FROM outbound_subscriptions WHERE enabled),
		(SELECT MIN(d.event_id) FROM outbound_deliveries d
			WHERE (d.status = 'pending' OR d.status = 'retrying')
			  AND EXISTS (SELECT 1 FROM outbound_subscriptions s WHERE s.id = d.subscription_id AND s.enabled))`).Scan(&position, &unfinished)
	if err != nil || position == nil {
		return 0, false, q.wrap("read events owed to subscriptions", err)
	}
	bound = *position
	if unfinished != nil && *unfinished-1 < bound {
		bound = *unfinished - 1
	}
	return bound, true, nil
}
