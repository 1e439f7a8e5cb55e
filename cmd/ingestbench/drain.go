package main

// The drain phase: how fast the gateway turns a burst into tasks, next to
// how fast it acknowledges the same burst.

import (
	"fmt"
	"net/http"
	neturl "net/url"
	"sync"
	"sync/atomic"
	"time"
)

// drainResult is one drain run: a burst of n distinct new issues sent by
// the senders as fast as they are acknowledged, then every task waited for.
type drainResult struct {
	n             int
	acked         int
	ackSeconds    float64 // first send to last 202
	createSeconds float64 // first send to the last task's created_at
	// mostSeconds is first send to the created_at by which 99% of the
	// tasks existed: far below createSeconds, a few stragglers (a retried
	// delivery, say) set the rate, not the pace of the whole burst.
	mostSeconds float64
	tasks       int
	gatewayCPU  float64 // seconds of the gateway's CPU over the whole phase
	start       time.Time
	// events is how many task events the active subscriptions were owed
	// (--subscriptions), eventsSeconds first send to the last one's
	// receipt (0: not all arrived).
	events        int
	eventsSeconds float64
}

func (r drainResult) acksPerSecond() float64  { return float64(r.acked) / r.ackSeconds }
func (r drainResult) tasksPerSecond() float64 { return float64(r.tasks) / r.createSeconds }

func (r drainResult) String() string {
	if r.tasks == 0 || r.ackSeconds == 0 {
		return fmt.Sprintf("drain: %d of %d acknowledged, %d tasks: not measured", r.acked, r.n, r.tasks)
	}
	out := fmt.Sprintf("drain of %d new issues: %.0f acks/s (all acknowledged in %.2f s), %.0f tasks/s (every task in %.2f s, 99%% in %.2f s), ratio %.0f%%; gateway CPU %.2f ms per task",
		r.n, r.acksPerSecond(), r.ackSeconds, r.tasksPerSecond(), r.createSeconds, r.mostSeconds, 100*r.tasksPerSecond()/r.acksPerSecond(),
		1000*r.gatewayCPU/float64(r.tasks))
	switch {
	case r.events == 0:
	case r.eventsSeconds == 0:
		out += fmt.Sprintf("; not all %d events were received", r.events)
	default:
		out += fmt.Sprintf("; all %d events received in %.2f s (%.2f s after the last task)", r.events, r.eventsSeconds, r.eventsSeconds-r.createSeconds)
	}
	return out
}

// drain posts n distinct new issues from the senders, as fast as each is
// acknowledged, and waits (bounded) until no delivery is pending; the
// tasks' own created_at stamps say when the last one was made.
func drain(url string, t *template, senders, n int, seq *atomic.Int64) drainResult {
	res := drainResult{n: n}
	var next, acked atomic.Int64
	var lastAck atomic.Int64 // unix nanos
	var wg sync.WaitGroup
	start := time.Now()
	for range senders {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				body, h := t.delivery(seq.Add(1))
				if code, err := post(url, body, h); err == nil && code == http.StatusAccepted {
					acked.Add(1)
					lastAck.Store(time.Now().UnixNano())
				}
			}
		})
	}
	wg.Wait()
	res.start = start
	res.acked = int(acked.Load())
	res.ackSeconds = time.Unix(0, lastAck.Load()).Sub(start).Seconds()

	// The end is read from the tasks' own created_at.
	waitProcessed(url, t.externalID(seq.Load()), 5*time.Minute)
	var created []time.Time
	forEachTask(url, func(_ string, at time.Time) { created = append(created, at) })
	res.tasks = len(created)
	res.createSeconds, res.mostSeconds = createdBy(created, start, 100), createdBy(created, start, 99)
	return res
}

// createdBy returns the seconds from start by which share percent of the
// tasks created at those times existed (0 for none), by the same
// percentile rule as every latency the tool reports.
func createdBy(created []time.Time, start time.Time, share float64) float64 {
	var since latencies
	for _, at := range created {
		since.d = append(since.d, at.Sub(start))
	}
	return since.p(share).Seconds()
}

// waitProcessed waits, at most within, until the deliveries sent up to
// issue lastIssue are final. The polling only has to notice the end (the
// phases read their times from the gateway's own stamps), and it must not
// cost the gateway what it measures: listing the backlog statuses reads and
// sorts the whole backlog (4.5% of the gateway's CPU when done once a
// second in a drain). So it first waits for the task of the last issue
// sent, one indexed lookup a poll; deliveries are claimed in the order they
// arrived, so by then the backlog is nearly empty and listing it is cheap.
func waitProcessed(url, lastExternalID string, within time.Duration) {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) && !taskExists(url, lastExternalID) {
		time.Sleep(100 * time.Millisecond)
	}
	for time.Now().Before(deadline) && pendingDeliveries(url) > 0 {
		time.Sleep(100 * time.Millisecond)
	}
}

// taskExists reports whether the bench workspace has a task holding
// externalID.
func taskExists(url, externalID string) bool {
	return status(url, "/api/v1/workspaces/bench/tasks/by-external-id?external_id="+neturl.QueryEscape(externalID)) == http.StatusOK
}

// pendingDeliveries counts (up to a page each) the deliveries not yet
// finished.
func pendingDeliveries(url string) int {
	n := 0
	for _, status := range []string{"queued", "processing", "retrying"} {
		var page struct {
			Deliveries []deliveryJSON `json:"deliveries"`
		}
		get(url, "/api/v1/deliveries?limit=1&status="+status, &page)
		n += len(page.Deliveries)
	}
	return n
}

// forEachTask calls fn with the id and created_at of every task of the
// bench workspace.
func forEachTask(url string, fn func(id string, created time.Time)) {
	cursor := ""
	for range 1000 {
		var page struct {
			Tasks []struct {
				ID        string    `json:"id"`
				CreatedAt time.Time `json:"created_at"`
			} `json:"tasks"`
			NextCursor string `json:"next_cursor"`
		}
		get(url, "/api/v1/workspaces/bench/tasks?limit=1000&include_archived=true&cursor="+cursor, &page)
		for _, t := range page.Tasks {
			fn(t.ID, t.CreatedAt)
		}
		if cursor = page.NextCursor; cursor == "" {
			return
		}
	}
}
