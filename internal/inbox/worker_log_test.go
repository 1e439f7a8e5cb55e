package inbox

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/store/sqlstore"
	"github.com/trackergateway/gateway/internal/store/storetest"
)

// syncBuffer is a bytes.Buffer safe to read while a logger writes to it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// records returns the JSON log records written so far.
func (b *syncBuffer) records(t *testing.T) []map[string]any {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	dec := json.NewDecoder(bytes.NewReader(b.buf.Bytes()))
	for dec.More() {
		var r map[string]any
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("decode log record: %v", err)
		}
		out = append(out, r)
	}
	return out
}

// Every delivery that reaches a final status gets exactly one line an
// operator can read without debug logging: INFO when it succeeded, was
// ignored or suppressed, WARN when it failed; a retry gets none.
func TestWorkerLogsEachFinishedDelivery(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		clock := newTestClock()
		ids := insert(t, st, clock.Now(), body("e-ok", modeOK), body("", modeIgnore), body("e-perm", modePermanent),
			body("e-transient", modeTransient))
		// Received 1.5s before the worker gets to them (the clock is the
		// test's: it moves only here).
		clock.Advance(1500 * time.Millisecond)
		logs := &syncBuffer{}
		logger := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
		w := NewWorker(st, newFakeProcessor(), logger, clock.Now, fastOptions(WorkerOptions{Concurrency: 2}))
		runInBackground(t, w.Run)
		waitStatus(t, st, ids[0], store.DeliverySucceeded, nil)
		waitStatus(t, st, ids[1], store.DeliveryIgnored, nil)
		waitStatus(t, st, ids[2], store.DeliveryFailed, nil)
		waitStatus(t, st, ids[3], store.DeliveryRetrying, nil)

		want := map[string]map[string]any{
			ids[0]: {"level": "INFO", "status": "succeeded", "event": "issue.ok", "action": "create", "task": "task-e-ok"},
			ids[1]: {"level": "INFO", "status": "ignored", "event": "issue.ignore", "action": "ignore", "task": ""},
			ids[2]: {"level": "WARN", "status": "failed", "event": "issue.permanent", "action": "", "task": ""},
		}
		lines := map[string]int{}
		waitFor(t, "the finished lines", func() bool {
			clear(lines)
			for _, r := range logs.records(t) {
				if r["msg"] == "delivery finished" {
					lines[r["delivery_id"].(string)]++
				}
			}
			return len(lines) >= len(want)
		})
		for _, r := range logs.records(t) {
			if r["msg"] != "delivery finished" {
				continue
			}
			id, _ := r["delivery_id"].(string)
			w, ok := want[id]
			if !ok {
				t.Errorf("finished line for delivery %s, which did not finish: %v", id, r)
				continue
			}
			for k, v := range w {
				if r[k] != v {
					t.Errorf("delivery %s: %s = %v, want %v (line %v)", id, k, r[k], v, r)
				}
			}
			if r["connection"] != connFake {
				t.Errorf("delivery %s: connection = %v, want %s", id, r["connection"], connFake)
			}
			if e, _ := r["error"].(string); (w["status"] == "failed") != strings.Contains(e, "does not exist") {
				t.Errorf("delivery %s: error = %q, want the failure's error only when it failed", id, e)
			}
			if r["duration_ms"] != float64(1500) {
				t.Errorf("delivery %s: duration_ms = %v, want 1500 (received to finished)", id, r["duration_ms"])
			}
		}
		for id := range want {
			if lines[id] != 1 {
				t.Errorf("delivery %s: %d finished lines, want 1", id, lines[id])
			}
		}
	})
}

// failingClaimStore fails its first claims as the store does when its
// database is away: with an error that already names the claim.
type failingClaimStore struct {
	store.Store
	failures atomic.Int64
}

func (s *failingClaimStore) ClaimDeliveries(ctx context.Context, owner string, now time.Time, lease time.Duration, limit int) ([]store.Delivery, error) {
	if s.failures.Add(-1) >= 0 {
		return nil, fmt.Errorf("claim deliveries: %w", store.ErrUnavailable)
	}
	return s.Store.ClaimDeliveries(ctx, owner, now, lease, limit)
}

// TestWorkerLogsFailingClaimsOnce: claims that keep failing give one WARN
// line carrying the store's error as it is (not named twice), and one INFO
// line when they succeed again; the delivery is then processed.
func TestWorkerLogsFailingClaimsOnce(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		clock := newTestClock()
		fs := &failingClaimStore{Store: st}
		fs.failures.Store(3)
		id := insert(t, st, clock.Now(), body("e-claim", modeOK))[0]
		logs := &syncBuffer{}
		logger := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
		w := NewWorker(fs, newFakeProcessor(), logger, clock.Now, fastOptions(WorkerOptions{Concurrency: 1}))
		runInBackground(t, w.Run)
		waitStatus(t, st, id, store.DeliverySucceeded, nil)
		// The recovered line follows the claim's whole batch, which may
		// finish after the delivery's status is written.
		waitFor(t, "the recovered line", func() bool {
			return slices.ContainsFunc(logs.records(t), func(r map[string]any) bool { return r["msg"] == "claim deliveries recovered" })
		})

		var failed, recovered []map[string]any
		for _, r := range logs.records(t) {
			switch r["msg"] {
			case "claim deliveries failed":
				failed = append(failed, r)
			case "claim deliveries recovered":
				recovered = append(recovered, r)
			}
		}
		if len(failed) != 1 || len(recovered) != 1 {
			t.Fatalf("%d failed and %d recovered lines, want 1 and 1: %v", len(failed), len(recovered), logs.records(t))
		}
		if got, want := failed[0]["error"], "claim deliveries: "+store.ErrUnavailable.Error(); got != want {
			t.Errorf("failed line's error = %q, want %q", got, want)
		}
		if failed[0]["level"] != "WARN" || recovered[0]["level"] != "INFO" {
			t.Errorf("levels = %v, %v; want WARN, INFO", failed[0]["level"], recovered[0]["level"])
		}
	})
}
