package sqlstore

import (
	"context"
	"fmt"
	"time"

	"github.com/trackergateway/gateway/internal/store"
)

// Owner is implemented by drivers whose database one process can own (a
// SQLite file): ClaimOwnership takes that ownership until the driver
// closes; owned is false where it cannot be proven.
type Owner interface {
	ClaimOwnership() (owned bool, err error)
}

// ClaimSoleOwnership asks the driver for ownership (Owner); a driver
// without it (PostgreSQL) is shared by design.
func (s *Store) ClaimSoleOwnership() (bool, error) {
	o, ok := s.driver.(Owner)
	if !ok {
		return false, nil
	}
	return o.ClaimOwnership()
}

// takeBack are TakeBackLeases' statements: each ends the live leases of
// one kind by moving their expiry to now ($1), which is what a claim or
// recovery compares with, and changes nothing else (the owners stay
// recorded).
var takeBack = []struct {
	kind  string
	query string
}{
	// A processing delivery's next_attempt_at is its lease expiry.
	{"deliveries", `UPDATE deliveries SET lease_expires_at = $1, next_attempt_at = $1
		WHERE status = 'processing' AND lease_expires_at > $1`},
	{"entity leases", `UPDATE entity_leases SET expires_at = $1 WHERE expires_at > $1`},
	{"creation operations", `UPDATE task_creation_operations SET lease_expires_at = $1 WHERE lease_expires_at > $1`},
	{"creation steps", `UPDATE task_creation_steps SET lease_expires_at = $1 WHERE lease_expires_at > $1`},
}

// TakeBackLeases runs takeBack in one transaction.
func (s *Store) TakeBackLeases(ctx context.Context, now time.Time) (store.LeasesTakenBack, error) {
	var out store.LeasesTakenBack
	counts := []*int64{&out.Deliveries, &out.Entities, &out.Operations, &out.Steps}
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	tx, err := s.driver.Begin(ctx)
	if err != nil {
		return out, fmt.Errorf("take back leases: begin: %w", s.classify(err))
	}
	for i, tb := range takeBack {
		n, err := tx.Exec(ctx, tb.query, now.UTC())
		if err != nil {
			_ = tx.Rollback(context.WithoutCancel(ctx))
			return store.LeasesTakenBack{}, fmt.Errorf("take back leases of %s: %w", tb.kind, s.classify(err))
		}
		*counts[i] = n
	}
	if err := tx.Commit(ctx); err != nil {
		return store.LeasesTakenBack{}, fmt.Errorf("take back leases: commit: %w", s.classify(err))
	}
	return out, nil
}
