package recovery

import (
	"context"
	"testing"
	"time"

	"github.com/trackergateway/gateway/internal/config"
	"github.com/trackergateway/gateway/internal/store/sqlstore"
	"github.com/trackergateway/gateway/internal/store/storetest"
)

// The background run recovers each connection with recover_every at once
// (over the whole window: a delivery two days old is found) on one
// replica at a time, skips the others, and stops when its context ends.
func TestRunRecoversInTheBackground(t *testing.T) {
	t.Parallel()
	storetest.ForDialects(t, func(t *testing.T, dialect string) {
		first, second := twoReplicas(t, dialect)
		gh := newFakeGitHub(t)
		gh.deliveries["repos/acme/api/hooks/11"] = []ghDelivery{delivery(1, "g-old", 48*time.Hour, 503)}
		every := gh.connection(repoHook)
		every.RecoverEvery = "10m"
		off := gh.connection(config.Hook{Repository: "acme/off", ID: 12})
		off.ID = "gh-off"
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{}, 2)
		for _, st := range []*sqlstore.Store{first, second} {
			rec := newRecoverer(st, every, off)
			go func() {
				rec.Run(ctx, []config.Connection{every, off})
				done <- struct{}{}
			}()
		}
		deadline := time.Now().Add(30 * time.Second)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for len(gh.asked()) == 0 {
			if time.Now().After(deadline) {
				t.Fatal("the background run asked for nothing within 30s")
			}
			<-tick.C
		}
		cancel()
		for range 2 {
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("Run did not return after its context ended")
			}
		}
		// The replicas that stopped released the lease: a new one takes it.
		if held, err := first.AcquireJobLease(t.Context(), "recovery:gh", "next-replica", now, now.Add(time.Minute)); err != nil || !held {
			t.Errorf("lease after the replicas stopped = %v, %v; want free", held, err)
		}
		if got := gh.asked(); len(got) != 1 || got[0] != "repos/acme/api/hooks/11/1" {
			t.Errorf("redelivery requests = %q, want the two-day-old delivery once", got)
		}
		// One listing and one redelivery: the replica without the lease
		// and the connection without recover_every asked nothing.
		gh.mu.Lock()
		requests := gh.requests
		gh.mu.Unlock()
		if requests != 2 {
			t.Errorf("API requests = %d, want 2", requests)
		}
	})
}
