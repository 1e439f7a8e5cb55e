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

	"github.com/google/uuid"

	"github.com/trackergateway/gateway/internal/store"
)

// insertChunk bounds the rows of one multi-row INSERT (and so the number of
// distinct statements the drivers prepare and cache). Batches of up to 128
// concurrent receipts, the usual ones, are one statement (measured on
// PostgreSQL: 32 rows a statement 45% of the ceiling, 64 48%, 128 51%).
const insertChunk = 128

// InsertDeliveries is the group commit of the inbox: every input in one
// transaction, so one fsync acknowledges the whole batch, written with
// multi-row INSERTs (one round trip per chunk, not per delivery). A batch
// that fits one statement needs no explicit transaction: the statement is
// its own, and its commit travels with it (one round trip in all).
func (q queries) InsertDeliveries(ctx context.Context, ds []store.Delivery) ([]store.InsertedDelivery, error) {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	out := make([]store.InsertedDelivery, len(ds))
	if len(ds) <= insertChunk {
		return out, q.insertDeliveryChunk(ctx, ds, out)
	}
	err := q.write(ctx, func(q queries) error {
		for start := 0; start < len(ds); start += insertChunk {
			end := min(start+insertChunk, len(ds))
			if err := q.insertDeliveryChunk(ctx, ds[start:end], out[start:end]); err != nil {
				return err
			}
		}
		return nil
	})
	return out, err
}

type deliveryKey struct{ connection, key string }

func (q queries) insertDeliveryChunk(ctx context.Context, ds []store.Delivery, out []store.InsertedDelivery) error {
	var b strings.Builder
	b.WriteString(`INSERT INTO deliveries (id, connection_id, provider, event, delivery_key, headers, body, body_encoding,
		status, attempts, next_attempt_at, received_at) VALUES `)
	args := make([]any, 0, len(ds)*9)
	ids := make([]string, len(ds))
	for i, d := range ds {
		ids[i] = d.ID
		if ids[i] == "" {
			ids[i] = newRowID()
		}
		if i > 0 {
			b.WriteString(", ")
		}
		body, encoding := d.Body, d.BodyEncoding
		if encoding == "" {
			body, encoding = store.EncodeDeliveryBody(body)
		}
		n := len(args)
		fmt.Fprintf(&b, "($%d, $%d, $%d, $%d, $%d, $%d, $%d, $%d, 'queued', 0, $%d, $%d)", n+1, n+2, n+3, n+4, n+5, n+6, n+7, n+8, n+9, n+9)
		args = append(args, ids[i], d.ConnectionID, d.Provider, d.Event, d.DeliveryKey, d.Headers, body, encoding, d.ReceivedAt)
	}
	b.WriteString(` ON CONFLICT (connection_id, delivery_key) DO NOTHING RETURNING id, connection_id, delivery_key`)
	rows, err := q.ex.Query(ctx, b.String(), args...)
	if err != nil {
		return q.wrap("insert deliveries", err)
	}
	inserted := map[deliveryKey]string{}
	for rows.Next() {
		var id string
		var k deliveryKey
		if err := rows.Scan(&id, &k.connection, &k.key); err != nil {
			rows.Close()
			return q.wrap("scan inserted delivery", err)
		}
		inserted[k] = id
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return q.wrap("insert deliveries", err)
	}
	for i, d := range ds {
		k := deliveryKey{d.ConnectionID, d.DeliveryKey}
		if id, ok := inserted[k]; ok {
			// The first of equal keys in a chunk is the one inserted.
			out[i] = store.InsertedDelivery{ID: id, Duplicate: id != ids[i]}
			continue
		}
		var id string
		if err := q.ex.QueryRow(ctx, `SELECT id FROM deliveries WHERE connection_id = $1 AND delivery_key = $2`,
			d.ConnectionID, d.DeliveryKey).Scan(&id); err != nil {
			return q.wrap("find duplicate delivery", err)
		}
		out[i] = store.InsertedDelivery{ID: id, Duplicate: true}
	}
	return nil
}

const deliverySummaryColumns = `id, connection_id, provider, event, delivery_key, status, attempts, last_error,
	next_attempt_at, lease_owner, lease_expires_at, entity_key, received_at, processed_at,
	outcome_task_id, outcome_external_id, outcome_action, outcome_result`

// deliveryContentColumns follow deliverySummaryColumns when a read needs the
// raw delivery; scanDelivery decodes the body.
const deliveryContentColumns = `headers, body, body_encoding`

func scanDelivery(r Row, withContent bool) (store.Delivery, error) {
	var d store.Delivery
	var lastErr, owner, entity, taskID, extID, action, result sql.NullString
	var encoding string
	dest := []any{&d.ID, &d.ConnectionID, &d.Provider, &d.Event, &d.DeliveryKey, &d.Status, &d.Attempts, &lastErr,
		&d.NextAttemptAt, &owner, &d.LeaseExpiresAt, &entity, &d.ReceivedAt, &d.ProcessedAt,
		&taskID, &extID, &action, &result}
	if withContent {
		dest = append(dest, &d.Headers, &d.Body, &encoding)
	}
	if err := r.Scan(dest...); err != nil {
		return d, err
	}
	d.LastError, d.LeaseOwner, d.EntityKey = lastErr.String, owner.String, entity.String
	d.OutcomeTaskID, d.OutcomeExternalID, d.OutcomeAction, d.OutcomeResult = taskID.String, extID.String, action.String, result.String
	if withContent {
		body, err := store.DecodeDeliveryBody(d.Body, encoding)
		if err != nil {
			return d, err
		}
		d.Body = body
	}
	return d, nil
}

func (q queries) GetDelivery(ctx context.Context, id string) (store.Delivery, error) {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	if _, err := uuid.Parse(id); err != nil {
		return store.Delivery{}, fmt.Errorf("get delivery: %w", store.ErrNotFound)
	}
	d, err := scanDelivery(q.ex.QueryRow(ctx, `SELECT `+deliverySummaryColumns+`, `+deliveryContentColumns+` FROM deliveries WHERE id = $1`, id), true)
	return d, q.wrap("get delivery", err)
}

func (q queries) ListDeliveries(ctx context.Context, f store.DeliveryFilter) ([]store.Delivery, error) {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	var where []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	if f.Status != "" {
		where = append(where, "status = "+arg(f.Status))
	}
	if f.ConnectionID != "" {
		where = append(where, "connection_id = "+arg(f.ConnectionID))
	}
	if f.BeforeID != "" {
		t, id := arg(f.BeforeReceivedAt), arg(f.BeforeID)
		where = append(where, fmt.Sprintf("(received_at < %s OR (received_at = %s AND id < %s))", t, t, id))
	}
	query := `SELECT ` + deliverySummaryColumns + ` FROM deliveries`
	if len(where) > 0 {
		query += ` WHERE ` + strings.Join(where, " AND ")
	}
	query += ` ORDER BY received_at DESC, id DESC LIMIT ` + arg(f.Limit)
	rows, err := q.ex.Query(ctx, query, args...)
	if err != nil {
		return nil, q.wrap("list deliveries", err)
	}
	defer rows.Close()
	var out []store.Delivery
	for rows.Next() {
		d, err := scanDelivery(rows, false)
		if err != nil {
			return nil, q.wrap("scan delivery", err)
		}
		out = append(out, d)
	}
	return out, q.wrap("list deliveries", rows.Err())
}

// ClaimDeliveries is one UPDATE of the rows its subquery picks (PostgreSQL:
// FOR UPDATE SKIP LOCKED, so concurrent claimers take different rows). A
// processing row's next_attempt_at is its lease expiry, so one predicate
// finds due, retrying and abandoned deliveries alike.
func (q queries) ClaimDeliveries(ctx context.Context, owner string, now time.Time, lease time.Duration, limit int) ([]store.Delivery, error) {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	expires := now.Add(lease)
	rows, err := q.ex.Query(ctx, `UPDATE deliveries SET status = 'processing', attempts = attempts + 1,
			lease_owner = $2, lease_expires_at = $3, next_attempt_at = $3
		WHERE id IN (SELECT id FROM deliveries d
			WHERE d.status IN ('queued', 'retrying', 'processing') AND d.next_attempt_at <= $1
			  AND NOT EXISTS (SELECT 1 FROM entity_leases l WHERE l.entity_key = d.entity_key
			                  AND l.expires_at > $1 AND l.delivery_id <> d.id)
			ORDER BY d.next_attempt_at LIMIT $4`+q.d.SkipLocked()+`)
		RETURNING `+deliverySummaryColumns, now, owner, expires, limit)
	if err != nil {
		return nil, q.wrap("claim deliveries", err)
	}
	var out []store.Delivery
	for rows.Next() {
		d, err := scanDelivery(rows, false)
		if err != nil {
			rows.Close()
			return nil, q.wrap("scan claimed delivery", err)
		}
		out = append(out, d)
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(out) == 0 {
		return nil, q.wrap("claim deliveries", err)
	}
	// RETURNING has no order: oldest received first.
	slices.SortFunc(out, func(a, b store.Delivery) int {
		return cmp.Or(a.ReceivedAt.Compare(b.ReceivedAt), cmp.Compare(a.ID, b.ID))
	})
	// The raw deliveries are read after the claim commits: they never change
	// once stored, and reading bodies inside the claim would hold SQLite's
	// single writer for it.
	return out, q.loadContent(ctx, out)
}

// loadContent fills headers and body of claimed deliveries in one query.
func (q queries) loadContent(ctx context.Context, ds []store.Delivery) error {
	args := make([]any, len(ds))
	marks := make([]string, len(ds))
	byID := make(map[string]*store.Delivery, len(ds))
	for i := range ds {
		args[i] = ds[i].ID
		marks[i] = fmt.Sprintf("$%d", i+1)
		byID[ds[i].ID] = &ds[i]
	}
	rows, err := q.ex.Query(ctx, `SELECT id, `+deliveryContentColumns+` FROM deliveries WHERE id IN (`+strings.Join(marks, ", ")+`)`, args...)
	if err != nil {
		return q.wrap("read claimed deliveries", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, headers, encoding string
		var body []byte
		if err := rows.Scan(&id, &headers, &body, &encoding); err != nil {
			return q.wrap("scan claimed delivery", err)
		}
		if body, err = store.DecodeDeliveryBody(body, encoding); err != nil {
			return fmt.Errorf("read claimed delivery %s: %w", id, err)
		}
		if d := byID[id]; d != nil {
			d.Headers, d.Body = headers, body
		}
	}
	return q.wrap("read claimed deliveries", rows.Err())
}

func (q queries) AcquireEntityLease(ctx context.Context, entityKey, owner, deliveryID string, now, expires time.Time) (bool, error) {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	n, err := q.ex.Exec(ctx, `INSERT INTO entity_leases (entity_key, owner, delivery_id, expires_at) VALUES ($1, $2, $3, $4)
		ON CONFLICT (entity_key) DO UPDATE SET owner = excluded.owner, delivery_id = excluded.delivery_id, expires_at = excluded.expires_at
		WHERE entity_leases.expires_at <= $5 OR (entity_leases.owner = excluded.owner AND entity_leases.delivery_id = excluded.delivery_id)`,
		entityKey, owner, deliveryID, expires, now)
	return n == 1, q.wrap("acquire entity lease", err)
}

// FinishDelivery is one round trip on PostgreSQL: both writes travel with
// the COMMIT, and a lost lease is known once it has run. Releasing this
// owner's entity lease for the delivery even then is what a worker that
// lost its claim should do anyway.
func (q queries) FinishDelivery(ctx context.Context, d store.Delivery, owner string) error {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	updated := int64(-1)
	err := q.write(ctx, func(q queries) error {
		err := q.execLater(ctx, "finish delivery", func(n int64) error { updated = n; return nil },
			`UPDATE deliveries SET status = $3, attempts = $4, last_error = $5, next_attempt_at = $6,
			lease_owner = NULL, lease_expires_at = NULL, entity_key = $7, processed_at = $8, event = $9,
			outcome_task_id = $10, outcome_external_id = $11, outcome_action = $12, outcome_result = $13
			WHERE id = $1 AND lease_owner = $2 AND status = 'processing'`,
			d.ID, owner, d.Status, d.Attempts, nullString(d.LastError), d.NextAttemptAt, nullString(d.EntityKey), d.ProcessedAt, d.Event,
			nullString(d.OutcomeTaskID), nullString(d.OutcomeExternalID), nullString(d.OutcomeAction), nullString(d.OutcomeResult))
		if err != nil || d.EntityKey == "" {
			return err
		}
		return q.execLater(ctx, "release entity lease", nil,
			`DELETE FROM entity_leases WHERE entity_key = $1 AND owner = $2 AND delivery_id = $3`, d.EntityKey, owner, d.ID)
	})
	if err == nil && updated == 0 {
		return fmt.Errorf("finish delivery: lease lost: %w", store.ErrNotFound)
	}
	return err
}

// RequeueDelivery guards on a finished status in the UPDATE's own predicate:
// a worker's claim and the replay then serialize on the row (PostgreSQL
// re-checks the predicate once the claim's row lock is released; SQLite has
// one writer), so the one that comes second sees the other's status.
func (q queries) RequeueDelivery(ctx context.Context, id string, now time.Time) (store.Delivery, bool, error) {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	if _, err := uuid.Parse(id); err != nil {
		return store.Delivery{}, false, fmt.Errorf("requeue delivery: %w", store.ErrNotFound)
	}
	d, err := scanDelivery(q.ex.QueryRow(ctx, `UPDATE deliveries SET status = 'queued', attempts = 0, last_error = NULL,
		next_attempt_at = $2, lease_owner = NULL, lease_expires_at = NULL, processed_at = NULL,
		outcome_task_id = NULL, outcome_external_id = NULL, outcome_action = NULL, outcome_result = NULL
		WHERE id = $1 AND status IN ('succeeded', 'ignored', 'suppressed', 'failed')
		RETURNING `+deliverySummaryColumns, id, now), false)
	if err == nil {
		return d, true, nil
	}
	if !errors.Is(err, ErrNoRows) {
		return store.Delivery{}, false, q.wrap("requeue delivery", err)
	}
	// Nothing matched: tell a delivery that has not finished from none.
	d, err = scanDelivery(q.ex.QueryRow(ctx, `SELECT `+deliverySummaryColumns+` FROM deliveries WHERE id = $1`, id), false)
	return d, false, q.wrap("requeue delivery", err)
}

func (q queries) NextDeliveryDue(ctx context.Context) (time.Time, error) {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	var t *time.Time
	err := q.ex.QueryRow(ctx, `SELECT MIN(next_attempt_at) FROM deliveries WHERE status IN ('queued', 'retrying', 'processing')`).Scan(&t)
	if err != nil || t == nil {
		return time.Time{}, q.wrap("next delivery due", err)
	}
	return *t, nil
}
