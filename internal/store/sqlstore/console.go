package sqlstore

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/trackergateway/gateway/internal/store"
)

func (q queries) InsertConsoleSession(ctx context.Context, s store.ConsoleSession) error {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	_, err := q.ex.Exec(ctx, `INSERT INTO console_sessions (id_sha256, token_sha256, csrf_secret, created_at, expires_at)
		VALUES ($1, $2, $3, $4, $5)`, s.IDSHA256, s.TokenSHA256, s.CSRFSecret, s.CreatedAt, s.ExpiresAt)
	return q.wrap("insert console session", err)
}

func (q queries) GetConsoleSession(ctx context.Context, idSHA256 string, now time.Time) (store.ConsoleSession, error) {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	var s store.ConsoleSession
	err := q.ex.QueryRow(ctx, `SELECT id_sha256, token_sha256, csrf_secret, created_at, expires_at
		FROM console_sessions WHERE id_sha256 = $1 AND expires_at > $2`, idSHA256, now).
		Scan(&s.IDSHA256, &s.TokenSHA256, &s.CSRFSecret, &s.CreatedAt, &s.ExpiresAt)
	s.CreatedAt, s.ExpiresAt = s.CreatedAt.UTC(), s.ExpiresAt.UTC()
	return s, q.wrap("get console session", err)
}

func (q queries) DeleteConsoleSession(ctx context.Context, idSHA256 string) error {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	_, err := q.ex.Exec(ctx, `DELETE FROM console_sessions WHERE id_sha256 = $1`, idSHA256)
	return q.wrap("delete console session", err)
}

func (q queries) DeleteExpiredConsoleSessions(ctx context.Context, now time.Time) (int64, error) {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	n, err := q.ex.Exec(ctx, `DELETE FROM console_sessions WHERE expires_at <= $1`, now)
	return n, q.wrap("delete expired console sessions", err)
}

func (q queries) CountDeliveriesReceived(ctx context.Context, since time.Time) ([]store.DeliveryCount, error) {
	return q.countDeliveries(ctx, `SELECT connection_id, status, COUNT(*) FROM deliveries
		WHERE received_at >= $1 GROUP BY connection_id, status ORDER BY connection_id, status`, since, false)
}

func (q queries) CountDeliveriesPerMinute(ctx context.Context, since time.Time) ([]store.DeliveryCount, error) {
	minute := q.d.MinuteOf("received_at")
	return q.countDeliveries(ctx, `SELECT connection_id, status, `+minute+`, COUNT(*) FROM deliveries
		WHERE received_at >= $1 GROUP BY connection_id, status, `+minute+` ORDER BY connection_id, status, `+minute, since, true)
}

// countDeliveries reads (connection, status, [minute,] count) rows; both
// queries walk idx_deliveries_received from since on.
func (q queries) countDeliveries(ctx context.Context, query string, since time.Time, perMinute bool) ([]store.DeliveryCount, error) {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	rows, err := q.ex.Query(ctx, query, since)
	if err != nil {
		return nil, q.wrap("count deliveries received", err)
	}
	defer rows.Close()
	var out []store.DeliveryCount
	for rows.Next() {
		var c store.DeliveryCount
		dest := []any{&c.ConnectionID, &c.Status, &c.Count}
		if perMinute {
			dest = []any{&c.ConnectionID, &c.Status, &c.Minute, &c.Count}
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, q.wrap("scan delivery count", err)
		}
		c.Minute = c.Minute.UTC()
		out = append(out, c)
	}
	return out, q.wrap("count deliveries received", rows.Err())
}

const deliveryBacklogs = `SELECT connection_id, COUNT(*),
		MIN(CASE WHEN status = 'queued' THEN received_at END)
		FROM deliveries WHERE ` + pendingStatuses + `
		GROUP BY connection_id`

func (q queries) DeliveryBacklogs(ctx context.Context) ([]store.ConnectionBacklog, error) {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	// The predicate is idx_deliveries_due's (pendingStatuses), so the read
	// stays within the pending deliveries however large the inbox; the few
	// groups are sorted here, so no planner reads another index for the
	// order.
	rows, err := q.ex.Query(ctx, deliveryBacklogs)
	if err != nil {
		return nil, q.wrap("delivery backlogs", err)
	}
	defer rows.Close()
	var out []store.ConnectionBacklog
	for rows.Next() {
		var b store.ConnectionBacklog
		var oldest *time.Time
		if err := rows.Scan(&b.ConnectionID, &b.Pending, &oldest); err != nil {
			return nil, q.wrap("scan delivery backlog", err)
		}
		if oldest != nil {
			b.OldestQueuedAt = oldest.UTC()
		}
		out = append(out, b)
	}
	slices.SortFunc(out, func(a, b store.ConnectionBacklog) int { return strings.Compare(a.ConnectionID, b.ConnectionID) })
	return out, q.wrap("delivery backlogs", rows.Err())
}
