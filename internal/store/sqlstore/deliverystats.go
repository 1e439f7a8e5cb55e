package sqlstore

import (
	"context"
	"time"

	"github.com/trackergateway/gateway/internal/store"
)

// DeliveryStats reads the per-status counts and the oldest queued delivery.
// It reads the whole inbox, so its callers (the metrics gauges) cache it
// and run it at most once an interval, never once a scrape.
func (q queries) DeliveryStats(ctx context.Context) (store.DeliveryStats, error) {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	out := store.DeliveryStats{ByStatus: map[string]int64{}}
	rows, err := q.ex.Query(ctx, `SELECT status, COUNT(*) FROM deliveries GROUP BY status`)
	if err != nil {
		return out, q.wrap("count deliveries", err)
	}
	defer rows.Close()
	for rows.Next() {
		var status string
		var n int64
		if err := rows.Scan(&status, &n); err != nil {
			return out, q.wrap("scan delivery count", err)
		}
		out.ByStatus[status] = n
	}
	if err := rows.Err(); err != nil {
		return out, q.wrap("count deliveries", err)
	}
	rows.Close()
	var oldest *time.Time
	if err := q.ex.QueryRow(ctx, `SELECT MIN(received_at) FROM deliveries WHERE status = 'queued'`).Scan(&oldest); err != nil {
		return out, q.wrap("oldest queued delivery", err)
	}
	if oldest != nil {
		out.OldestQueuedAt = oldest.UTC()
	}
	return out, nil
}
