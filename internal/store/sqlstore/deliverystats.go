package sqlstore

import (
	"context"
	"time"

	"github.com/trackergateway/gateway/internal/store"
)

// DeliveryStats reads the per-status counts and the oldest queued delivery.
// Each statement reads an index, never the table's rows (which hold the
// bodies): the backlog statuses through the index of due deliveries, the
// rare ones through the partial status index, and succeeded, the rest, as
// the count of every row (the smallest index) less those. The count still
// grows with the inbox, so the metrics gauges cache it and run it at most
// once an interval, never once a scrape.
func (q queries) DeliveryStats(ctx context.Context) (store.DeliveryStats, error) {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	out := store.DeliveryStats{ByStatus: map[string]int64{}}
	var total, others int64
	if err := q.ex.QueryRow(ctx, `SELECT COUNT(*) FROM deliveries`).Scan(&total); err != nil {
		return out, q.wrap("count deliveries", err)
	}
	for _, where := range []string{pendingStatuses, rareStatuses} {
		rows, err := q.ex.Query(ctx, countByStatus(where))
		if err != nil {
			return out, q.wrap("count deliveries", err)
		}
		for rows.Next() {
			var status string
			var n int64
			if err := rows.Scan(&status, &n); err != nil {
				rows.Close()
				return out, q.wrap("scan delivery count", err)
			}
			// retrying is in both predicates: counted once.
			if _, seen := out.ByStatus[status]; !seen {
				out.ByStatus[status] = n
				others += n
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return out, q.wrap("count deliveries", err)
		}
	}
	if n := total - others; n > 0 {
		out.ByStatus[store.DeliverySucceeded] = n
	}
	var oldest *time.Time
	if err := q.ex.QueryRow(ctx, oldestQueued).Scan(&oldest); err != nil {
		return out, q.wrap("oldest queued delivery", err)
	}
	if oldest != nil {
		out.OldestQueuedAt = oldest.UTC()
	}
	return out, nil
}

// countByStatus counts the deliveries of a partial index's predicate.
func countByStatus(predicate string) string {
	return `SELECT status, COUNT(*) FROM deliveries WHERE ` + predicate + ` GROUP BY status`
}

const oldestQueued = `SELECT MIN(received_at) FROM deliveries WHERE status = 'queued' AND ` + pendingStatuses
