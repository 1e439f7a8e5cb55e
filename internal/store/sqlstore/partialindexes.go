package sqlstore

import (
	"time"

	"github.com/trackergateway/gateway/internal/store"
)

// PartialIndexRead is a statement that should read a partial index. SQLite
// chooses a partial index only for a statement whose WHERE repeats the
// index's predicate word for word, so a predicate changed in a migration
// and not in the query, or the other way round, would silently turn the
// read into a scan of the whole table.
type PartialIndexRead struct {
	Name  string
	Table string // the table the index is on, as the query names it
	Index string
	Query string
	Args  []any
}

// PartialIndexReads lists those statements with arguments to plan them
// with; exported for the conformance test of their plans.
func (s *Store) PartialIndexReads() []PartialIndexRead {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	expired, expiredArgs, err := expiredDeliveries(store.FinishedStatuses, now)
	if err != nil {
		panic(err) // the finished statuses are finished by definition
	}
	return []PartialIndexRead{
		{"claim deliveries", "deliveries d", "idx_deliveries_due", claimDeliveries(s.driver.SkipLocked()), []any{now, "owner", now, 16}},
		{"next delivery due", "deliveries", "idx_deliveries_due", nextDeliveryDue, nil},
		{"delivery backlogs", "deliveries", "idx_deliveries_due", deliveryBacklogs, nil},
		{"oldest queued delivery", "deliveries", "idx_deliveries_due", oldestQueued, nil},
		{"count pending deliveries", "deliveries", "idx_deliveries_due", countByStatus(pendingStatuses), nil},
		{"count rare deliveries", "deliveries", "idx_deliveries_status", countByStatus(rareStatuses), nil},
		{"count expired deliveries", "deliveries", "idx_deliveries_finished", countExpired(expired), expiredArgs},
		{"list open creation operations", "task_creation_operations", "idx_creation_operations_open", listOpenOperations, []any{now, now, 100}},
	}
}
