package recovery

import (
	"context"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/trackergateway/gateway/internal/config"
)

// Run recovers, in the background, every connection that has
// recover_every, until ctx ends. Every replica runs it; a job lease per
// connection ("recovery:<id>", held for one interval and renewed by its
// holder) lets one replica do the work, and the durable request records
// would keep two from asking twice anyway.
//
// ctx must not defer the sync of commits (store.WithDeferredSync): a
// request's record has to be durable before the provider is asked.
func (r *Recoverer) Run(ctx context.Context, conns []config.Connection) {
	owner := uuid.NewString()
	var wg sync.WaitGroup
	for _, c := range conns {
		if every := c.RecoveryInterval(); every > 0 {
			wg.Go(func() { r.runConnection(ctx, c.ID, every, owner) })
		}
	}
	wg.Wait()
}

// backgroundWindow is how far back a background run looks after the first
// one: a few intervals, so a run that failed is covered by the next.
func backgroundWindow(every time.Duration) time.Duration { return min(3*every, MaxWindow) }

func (r *Recoverer) runConnection(ctx context.Context, id string, every time.Duration, owner string) {
	// The first run looks back the whole window: the gateway may have been
	// down for a while before it started.
	since := MaxWindow
	lease := "recovery:" + id
	// A replica that stops hands the lease on at once, so a replica that
	// starts in its place need not wait for it to expire.
	defer func() {
		if err := r.st.ReleaseJobLease(context.WithoutCancel(ctx), lease, owner); err != nil {
			r.logger.Warn("recovery lease not released", "connection", id, "error", err)
		}
	}()
	for {
		now := r.now()
		held, err := r.st.AcquireJobLease(ctx, lease, owner, now, now.Add(every))
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			r.logger.Warn("recovery lease failed", "connection", id, "error", err)
		case !held:
			r.logger.Debug("recovery skipped: another replica runs it", "connection", id)
		default:
			// Bounded by the interval too: a run never delays the next.
			res, err := r.recover(ctx, id, Options{Since: since}, min(every, MaxBackgroundRun))
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				r.logger.Warn("recovery failed", "connection", id, "error", err)
			} else if res.Missing > 0 || len(res.Unfinished) > 0 || res.Skipped > 0 {
				r.logger.Info("recovery run", "connection", id, "checked", res.Checked, "missing", res.Missing,
					"redelivered", res.Count(), "skipped", res.Skipped, "unfinished", len(res.Unfinished))
			}
			since = backgroundWindow(every)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
	}
}
