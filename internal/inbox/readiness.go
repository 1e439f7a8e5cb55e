package inbox

import (
	"context"
	"errors"
	"sync"
	"time"
)

// ReadinessStore is what the readiness check needs from the store.
type ReadinessStore interface {
	// Migrated reports whether every migration is applied.
	Migrated(ctx context.Context) (bool, error)
	// ProbeDurableWrite commits one small write with a full sync.
	ProbeDurableWrite(ctx context.Context, at time.Time) error
}

// Readiness answers /readyz: ready while the database is reachable and
// migrated and can make writes durable. A failed inbox commit makes it not
// ready at once; the next successful durable write (a commit, or the
// check's own probe) makes it ready again, so a gateway taken out of a load
// balancer comes back by itself once the disk has room.
type Readiness struct {
	st       ReadinessStore
	receiver *Receiver
	now      func() time.Time

	mu       sync.Mutex
	probedAt time.Time
	probeErr error
}

// probeInterval bounds how often the check writes: /readyz is
// unauthenticated, and each probe costs an fsync.
const probeInterval = time.Second

// Not-ready reasons.
var (
	ErrNotMigrated    = errors.New("database is not reachable or not migrated")
	ErrCommitsFailing = errors.New("durable commits are failing")
)

// NewReadiness returns the check for st and the receiver's commits; now
// may be nil (time.Now).
func NewReadiness(st ReadinessStore, receiver *Receiver, now func() time.Time) *Readiness {
	if now == nil {
		now = time.Now
	}
	return &Readiness{st: st, receiver: receiver, now: now}
}

// Check returns nil when the gateway is ready, else why it is not.
func (r *Readiness) Check(ctx context.Context) error {
	if ok, err := r.st.Migrated(ctx); err != nil || !ok {
		return ErrNotMigrated
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	failing := r.receiver.commits.failing.Load()
	now := r.now()
	if r.probedAt.IsZero() || now.Sub(r.probedAt) >= probeInterval {
		r.probedAt = now
		r.probeErr = r.st.ProbeDurableWrite(ctx, now)
		if r.probeErr == nil {
			r.receiver.commits.failing.Store(false)
			failing = false
		}
	}
	if r.probeErr != nil || failing {
		return ErrCommitsFailing
	}
	return nil
}
