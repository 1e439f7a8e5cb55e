package sqlstore

import (
	"context"
	"database/sql"

	"github.com/trackergateway/gateway/internal/store"
)

// keysPerStatement bounds the placeholders of one IN list.
const keysPerStatement = 200

// HeldDeliveryKeys looks the keys up through uniq_deliveries_key
// (connection_id, delivery_key), the index every receipt already writes.
func (q queries) HeldDeliveryKeys(ctx context.Context, connectionID string, keys []string) (map[string]bool, error) {
	held := map[string]bool{}
	for start := 0; start < len(keys); start += keysPerStatement {
		chunk := keys[start:min(start+keysPerStatement, len(keys))]
		if err := q.heldKeys(ctx, connectionID, chunk, held); err != nil {
			return nil, err
		}
	}
	return held, nil
}

func (q queries) heldKeys(ctx context.Context, connectionID string, keys []string, held map[string]bool) error {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	args := []any{connectionID}
	for _, k := range keys {
		args = append(args, k)
	}
	rows, err := q.ex.Query(ctx, `SELECT delivery_key FROM deliveries WHERE connection_id = $1 AND delivery_key IN (`+
		inList(2, len(keys))+`)`, args...)
	if err != nil {
		return q.wrap("held delivery keys", err)
	}
	defer rows.Close()
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			return q.wrap("scan delivery key", err)
		}
		held[k] = true
	}
	return q.wrap("held delivery keys", rows.Err())
}

func (q queries) ClaimRedelivery(ctx context.Context, r store.Redelivery) (bool, error) {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	n, err := q.ex.Exec(ctx, `INSERT INTO redelivery_requests
		(connection_id, hook_id, guid, provider_delivery_id, event, status, requested_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (connection_id, hook_id, guid) DO NOTHING`,
		r.ConnectionID, r.HookID, r.GUID, r.ProviderDeliveryID, r.Event, store.RedeliveryRequested, r.RequestedAt)
	return n == 1, q.wrap("claim redelivery", err)
}

func (q queries) AnswerRedelivery(ctx context.Context, r store.Redelivery) error {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	n, err := q.ex.Exec(ctx, `UPDATE redelivery_requests SET status = $4, error = $5, answered_at = $6
		WHERE connection_id = $1 AND hook_id = $2 AND guid = $3`,
		r.ConnectionID, r.HookID, r.GUID, r.Status, nullString(r.Error), r.AnsweredAt)
	if err == nil && n == 0 {
		err = store.ErrNotFound
	}
	return q.wrap("answer redelivery", err)
}

func (q queries) ReleaseRedelivery(ctx context.Context, connectionID string, hookID int64, guid string) error {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	_, err := q.ex.Exec(ctx, `DELETE FROM redelivery_requests
		WHERE connection_id = $1 AND hook_id = $2 AND guid = $3 AND status = $4`,
		connectionID, hookID, guid, store.RedeliveryRequested)
	return q.wrap("release redelivery", err)
}

func (q queries) ListRedeliveries(ctx context.Context, connectionID string, hookID int64, guids []string) (map[string]store.Redelivery, error) {
	out := map[string]store.Redelivery{}
	for start := 0; start < len(guids); start += keysPerStatement {
		chunk := guids[start:min(start+keysPerStatement, len(guids))]
		if err := q.listRedeliveries(ctx, connectionID, hookID, chunk, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (q queries) listRedeliveries(ctx context.Context, connectionID string, hookID int64, guids []string, out map[string]store.Redelivery) error {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	args := []any{connectionID, hookID}
	for _, g := range guids {
		args = append(args, g)
	}
	rows, err := q.ex.Query(ctx, `SELECT connection_id, hook_id, guid, provider_delivery_id, event, status, error,
		requested_at, answered_at FROM redelivery_requests
		WHERE connection_id = $1 AND hook_id = $2 AND guid IN (`+inList(3, len(guids))+`)`, args...)
	if err != nil {
		return q.wrap("list redeliveries", err)
	}
	defer rows.Close()
	for rows.Next() {
		var r store.Redelivery
		var msg sql.NullString
		if err := rows.Scan(&r.ConnectionID, &r.HookID, &r.GUID, &r.ProviderDeliveryID, &r.Event, &r.Status, &msg,
			&r.RequestedAt, &r.AnsweredAt); err != nil {
			return q.wrap("scan redelivery", err)
		}
		r.Error = msg.String
		out[r.GUID] = r
	}
	return q.wrap("list redeliveries", rows.Err())
}
