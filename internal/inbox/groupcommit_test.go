package inbox

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/mux"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/trackergateway/gateway/connectors"
	"github.com/trackergateway/gateway/internal/metrics"
	"github.com/trackergateway/gateway/internal/store"
)

func withConnection(req *http.Request, conn string) *http.Request {
	return mux.SetURLVars(req, map[string]string{"connection": conn})
}

// TestGroupCommitBatchesWhileCommitting: requests arriving while a commit is
// in flight are committed together in the next transaction (and the
// metrics observe each commit's receipts), and workers are woken once per
// batch at most.
func TestGroupCommitBatchesWhileCommitting(t *testing.T) {
	t.Parallel()
	w := &recordingWriter{block: make(chan struct{}), entered: make(chan struct{})}
	m := metrics.New(prometheus.NewRegistry())
	rc, h := startReceiver(t, w, nil, nil, ReceiverOptions{Metrics: m})

	codes := make(chan int, 10)
	post := func(key string) {
		codes <- serve(h, webhook(connFake, []byte(`{}`), key, secretCurrent)).Code
	}
	go post("first")
	<-w.entered // the first commit is in flight

	const queued = 5
	var wg sync.WaitGroup
	for i := range queued {
		wg.Go(func() { post(fmt.Sprintf("queued-%d", i)) })
	}
	waitFor(t, "requests to queue behind the commit in flight", func() bool {
		return len(rc.commits.queue) == queued
	})
	close(w.block)
	wg.Wait()
	for range queued + 1 {
		if code := <-codes; code != http.StatusAccepted {
			t.Errorf("status = %d, want %d", code, http.StatusAccepted)
		}
	}

	sizes, _ := w.snapshot()
	if len(sizes) != 2 || sizes[0] != 1 || sizes[1] != queued {
		t.Errorf("batch sizes = %v, want [1 %d]", sizes, queued)
	}
	if count, sum := commitReceipts(t, m); count != 2 || sum != queued+1 {
		t.Errorf("gateway_inbox_commit_receipts: %d commits of %v receipts, want 2 of %d", count, sum, queued+1)
	}
	waitFor(t, "a notification", func() bool {
		_, n := w.snapshot()
		return n >= 1
	})
	if _, n := w.snapshot(); n > len(sizes) {
		t.Errorf("notifications = %d, want at most one per batch (%d)", n, len(sizes))
	}
}

// TestGroupCommitIsolatesBadRow: a row that fails its batch is retried
// alone, so its neighbours still commit.
func TestGroupCommitIsolatesBadRow(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		err       error
		wantAlone bool
	}{
		{"bad row", errors.New("invalid byte sequence for encoding"), true},
		{"database down", fmt.Errorf("insert: %w", store.ErrUnavailable), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := &poisonWriter{err: tt.err}
			g := newGroupCommit(w, testLogger(t), DefaultMaxBatch, time.Now, nil)
			batch := []*commitRequest{
				{ctx: context.Background(), d: store.Delivery{DeliveryKey: "good-1"}, done: make(chan commitResult, 1)},
				{ctx: context.Background(), d: store.Delivery{DeliveryKey: "poison"}, done: make(chan commitResult, 1)},
				{ctx: context.Background(), d: store.Delivery{DeliveryKey: "good-2"}, done: make(chan commitResult, 1)},
			}
			g.commit(context.Background(), batch)
			for _, req := range batch {
				res := <-req.done
				wantErr := req.d.DeliveryKey == "poison" || !tt.wantAlone
				if gotErr := res.err != nil; gotErr != wantErr {
					t.Errorf("%s: err = %v, want error %v", req.d.DeliveryKey, res.err, wantErr)
				}
			}
		})
	}
}

// poisonWriter fails any batch holding the "poison" key.
type poisonWriter struct {
	err error
}

func (w *poisonWriter) InsertDeliveries(_ context.Context, ds []store.Delivery) ([]store.InsertedDelivery, error) {
	out := make([]store.InsertedDelivery, len(ds))
	for i, d := range ds {
		if strings.Contains(d.DeliveryKey, "poison") || errors.Is(w.err, store.ErrUnavailable) {
			return nil, w.err
		}
		out[i] = store.InsertedDelivery{ID: d.DeliveryKey}
	}
	return out, nil
}

func (w *poisonWriter) Notify(context.Context, string) error { return nil }

// TestGroupCommitAlwaysSyncs: the inbox commit never inherits deferred sync
// from the context Run is given; a 202 means fsynced.
func TestGroupCommitAlwaysSyncs(t *testing.T) {
	t.Parallel()
	w := &recordingWriter{}
	rc := NewReceiver(w, map[string]connectors.Adapter{fakeProvider: fakeAdapter{}}, lookupConnection, testLogger(t), nil)
	runInBackground(t, func(ctx context.Context) error { return rc.Run(store.WithDeferredSync(ctx)) })
	rec := serve(rc, withConnection(webhook(connFake, []byte(`{}`), "k1", secretCurrent), connFake))
	if rec.Code != http.StatusAccepted {
		t.Fatalf("status = %d, want %d", rec.Code, http.StatusAccepted)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.deferredSync != 0 {
		t.Errorf("inserts with deferred sync = %d, want 0", w.deferredSync)
	}
}

// TestGroupCommitBusy: the receiver is busy while receipts wait and for a
// hold after a batch of concurrent receipts (busyHold, or the shorter
// serialBusyHold on a serial writer), so workers do not claim in the gap
// between two batches; a lone receipt does not make it busy.
func TestGroupCommitBusy(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		writer   DeliveryWriter
		wantHold time.Duration
	}{
		{"concurrent writer", &recordingWriter{}, busyHold},
		{"serial writer", serialRecordingWriter{&recordingWriter{}}, serialBusyHold},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clock := newTestClock()
			g := newGroupCommit(tt.writer, testLogger(t), DefaultMaxBatch, clock.Now, nil)
			batch := func(n int) []*commitRequest {
				reqs := make([]*commitRequest, n)
				for i := range reqs {
					reqs[i] = &commitRequest{ctx: context.Background(), d: store.Delivery{DeliveryKey: fmt.Sprintf("k%d", i)},
						done: make(chan commitResult, 1)}
				}
				return reqs
			}
			steps := []struct {
				name string
				do   func()
				want bool
			}{
				{"idle", func() {}, false},
				{"after a lone receipt", func() { g.commit(context.Background(), batch(1)) }, false},
				{"after a batch of concurrent receipts", func() { g.commit(context.Background(), batch(busyReceipts)) }, true},
				{"within the hold", func() { clock.Advance(tt.wantHold - time.Millisecond) }, true},
				{"after the hold", func() { clock.Advance(2 * time.Millisecond) }, false},
				{"while receipts wait", func() { g.waiting.Store(busyReceipts) }, true},
				{"once they are answered", func() { g.waiting.Store(0) }, false},
			}
			for _, st := range steps {
				st.do()
				if got := g.busy(); got != st.want {
					t.Errorf("%s: busy = %v, want %v", st.name, got, st.want)
				}
			}
		})
	}
}

// serialRecordingWriter is a recordingWriter on a store whose writes run
// one at a time (SQLite's one writer).
type serialRecordingWriter struct{ *recordingWriter }

func (serialRecordingWriter) SerializesWrites() bool { return true }

// commitReceipts is the sample count and sum of m's
// gateway_inbox_commit_receipts.
func commitReceipts(t *testing.T, m *metrics.Metrics) (uint64, float64) {
	t.Helper()
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "gateway_inbox_commit_receipts" {
			h := mf.GetMetric()[0].GetHistogram()
			return h.GetSampleCount(), h.GetSampleSum()
		}
	}
	t.Fatal("gateway_inbox_commit_receipts: not gathered")
	return 0, 0
}

// pendingRequests are n receipts as submit queues them, their keys
// prefixed.
func pendingRequests(prefix string, n, bodyBytes int) []*commitRequest {
	reqs := make([]*commitRequest, n)
	for i := range reqs {
		reqs[i] = &commitRequest{ctx: context.Background(),
			d:    store.Delivery{DeliveryKey: fmt.Sprintf("%s-%d", prefix, i), Body: make([]byte, bodyBytes)},
			done: make(chan commitResult, 1)}
	}
	return reqs
}

// TestGroupCommitLingersOnlyForACrowd: on a serial writer a batch waits for
// company only while at least lingerCompany requests are still in the
// handler and the last batch showed that receipts come together (slow
// uploads alone are no crowd); on a concurrent writer it never does.
func TestGroupCommitLingersOnlyForACrowd(t *testing.T) {
	t.Parallel()
	serial := func() DeliveryWriter { return serialRecordingWriter{&recordingWriter{}} }
	tests := []struct {
		name        string
		writer      DeliveryWriter
		lastBatch   int
		unsubmitted int64 // requests in the handler that have not submitted
		batch       int
		want        bool
	}{
		{"serial writer, a crowd", serial(), lingerAfterBatch, lingerCompany, 1, true},
		{"serial writer, one short of a crowd", serial(), lingerAfterBatch, lingerCompany - 1, 1, false},
		{"serial writer, a crowd after a small batch", serial(), lingerAfterBatch - 1, 10 * lingerCompany, 1, false},
		{"serial writer, the batch already full", serial(), lingerAfterBatch, lingerCompany, lingerBatch, false},
		{"concurrent writer, a crowd", &recordingWriter{}, lingerBatch, 10 * lingerCompany, 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := newGroupCommit(tt.writer, testLogger(t), DefaultMaxBatch, time.Now, nil)
			g.lastBatch = tt.lastBatch
			g.waiting.Store(int64(tt.batch))
			g.handling.Store(int64(tt.batch) + tt.unsubmitted)
			if got := g.crowded(tt.batch); got != tt.want {
				t.Errorf("crowded(%d) = %v, want %v", tt.batch, got, tt.want)
			}
		})
	}
}

// TestGroupCommitLingerEnds: a lingering batch takes queued receipts until
// it holds lingerBatch, or a body would take it past maxBatchBodyBytes (that
// receipt is carried to the next batch), or the wait or the committer's
// context ends; what it holds then is committed.
func TestGroupCommitLingerEnds(t *testing.T) {
	t.Parallel()
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name      string
		ctx       context.Context
		wait      time.Duration
		queued    []*commitRequest
		wantBatch int
		wantCarry bool
	}{
		{"full", context.Background(), time.Hour, pendingRequests("q", lingerBatch+8, 1), lingerBatch, false},
		{"over the body bytes", context.Background(), time.Hour, pendingRequests("big", 3, maxBatchBodyBytes/2), 2, true},
		{"the wait over", context.Background(), time.Millisecond, pendingRequests("q", 3, 1), 4, false},
		{"committer stopping", canceled, time.Hour, nil, 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := newGroupCommit(serialRecordingWriter{&recordingWriter{}}, testLogger(t), DefaultMaxBatch, time.Now, nil)
			g.lingerFor = tt.wait
			for _, req := range tt.queued {
				g.queue <- req
			}
			type lingered struct {
				batch []*commitRequest
				carry *commitRequest
			}
			ended := make(chan lingered, 1)
			go func() {
				batch, carry := g.linger(tt.ctx, pendingRequests("first", 1, 1))
				ended <- lingered{batch, carry}
			}()
			select {
			case got := <-ended:
				if len(got.batch) != tt.wantBatch || (got.carry != nil) != tt.wantCarry {
					t.Errorf("linger = %d receipts, carry %v; want %d, carry %v",
						len(got.batch), got.carry != nil, tt.wantBatch, tt.wantCarry)
				}
			case <-time.After(testPollDeadline):
				t.Fatalf("linger did not end within %v", testPollDeadline)
			}
		})
	}
}

// TestGroupCommitLingersForTheCrowd: through the committer's loop, a receipt
// that finds a crowd in the handler is committed together with the crowd's
// receipts; without the crowd it commits at once, alone.
func TestGroupCommitLingersForTheCrowd(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		crowd     bool
		wantFirst int // receipts in the first commit
	}{
		{"a crowd", true, lingerBatch},
		{"no crowd", false, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := &recordingWriter{}
			g := newGroupCommit(serialRecordingWriter{w}, testLogger(t), DefaultMaxBatch, time.Now, nil)
			g.lingerFor = time.Hour // only a full batch ends the wait
			if tt.crowd {
				g.lastBatch = lingerAfterBatch
				g.handling.Store(lingerCompany + 1)
			}
			runInBackground(t, func(ctx context.Context) error { g.run(ctx); return nil })

			first := pendingRequests("first", 1, 1)[0]
			g.waiting.Add(1)
			g.queue <- first
			waitFor(t, "the committer to take the first receipt", func() bool { return len(g.queue) == 0 })
			if !tt.crowd {
				awaitCommit(t, first)
			}
			rest := pendingRequests("rest", lingerBatch-1, 1)
			for _, req := range rest {
				g.queue <- req
			}
			for _, req := range rest {
				awaitCommit(t, req)
			}
			if tt.crowd {
				awaitCommit(t, first)
			}
			sizes, _ := w.snapshot()
			if len(sizes) == 0 || sizes[0] != tt.wantFirst {
				t.Errorf("batch sizes = %v, want the first of %d", sizes, tt.wantFirst)
			}
		})
	}
}

// awaitCommit fails t unless req is answered without error by the polling
// deadline.
func awaitCommit(t *testing.T, req *commitRequest) {
	t.Helper()
	select {
	case res := <-req.done:
		if res.err != nil {
			t.Fatalf("%s: %v", req.d.DeliveryKey, res.err)
		}
	case <-time.After(testPollDeadline):
		t.Fatalf("%s: not committed within %v", req.d.DeliveryKey, testPollDeadline)
	}
}

// TestReceiverCountsRequestsInItsHandler: the crowd a batch lingers for is
// the requests inside the handler, counted from the start of a request to
// its answer.
func TestReceiverCountsRequestsInItsHandler(t *testing.T) {
	t.Parallel()
	w := &recordingWriter{block: make(chan struct{}), entered: make(chan struct{})}
	rc, h := startReceiver(t, w, nil, nil, ReceiverOptions{})
	answered := make(chan int, 1)
	go func() { answered <- serve(h, webhook(connFake, []byte(`{}`), "counted", secretCurrent)).Code }()
	<-w.entered
	if got := rc.commits.handling.Load(); got != 1 {
		t.Errorf("requests in the handler while one commits = %d, want 1", got)
	}
	close(w.block)
	if code := <-answered; code != http.StatusAccepted {
		t.Errorf("status = %d, want %d", code, http.StatusAccepted)
	}
	if got := rc.commits.handling.Load(); got != 0 {
		t.Errorf("requests in the handler once answered = %d, want 0", got)
	}
}
