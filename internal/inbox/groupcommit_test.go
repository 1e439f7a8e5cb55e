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

	"github.com/trackergateway/gateway/connectors"
	"github.com/trackergateway/gateway/internal/store"
)

func withConnection(req *http.Request, conn string) *http.Request {
	return mux.SetURLVars(req, map[string]string{"connection": conn})
}

// TestGroupCommitBatchesWhileCommitting: requests arriving while a commit is
// in flight are committed together in the next transaction, and workers are
// woken once per batch at most.
func TestGroupCommitBatchesWhileCommitting(t *testing.T) {
	t.Parallel()
	w := &recordingWriter{block: make(chan struct{}), entered: make(chan struct{})}
	rc, h := startReceiver(t, w, nil, nil, ReceiverOptions{})

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
			g := newGroupCommit(w, testLogger(t), DefaultMaxBatch, time.Now)
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
			g := newGroupCommit(tt.writer, testLogger(t), DefaultMaxBatch, clock.Now)
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
