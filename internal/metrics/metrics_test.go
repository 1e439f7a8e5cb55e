package metrics

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/trackergateway/gateway/internal/store"
)

// fakeStats counts its reads and answers stats or err.
type fakeStats struct {
	reads atomic.Int64
	stats store.DeliveryStats
	err   error
}

func (f *fakeStats) DeliveryStats(context.Context) (store.DeliveryStats, error) {
	f.reads.Add(1)
	return f.stats, f.err
}

func TestInboxGaugesReadOnceAnInterval(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := func() time.Time { return now }
	m := New(prometheus.NewRegistry())
	st := &fakeStats{stats: store.DeliveryStats{
		ByStatus:       map[string]int64{store.DeliveryQueued: 3, store.DeliverySucceeded: 7},
		OldestQueuedAt: now.Add(-90 * time.Second),
	}}
	m.WatchInbox(st, clock, time.Minute)

	// Five scrapes within the interval: one database read.
	for range 5 {
		if _, err := m.Registry().Gather(); err != nil {
			t.Fatalf("gather: %v", err)
		}
	}
	if got := st.reads.Load(); got != 1 {
		t.Errorf("database reads after 5 scrapes = %d, want 1", got)
	}
	for _, tc := range []struct {
		status string
		want   float64
	}{{store.DeliveryQueued, 3}, {store.DeliverySucceeded, 7}, {store.DeliveryFailed, 0}} {
		if got := value(t, m, "gateway_deliveries", "status", tc.status); got != tc.want {
			t.Errorf("gateway_deliveries{status=%q} = %v, want %v", tc.status, got, tc.want)
		}
	}
	if got := value(t, m, "gateway_delivery_oldest_queued_seconds"); got != 90 {
		t.Errorf("oldest queued seconds = %v, want 90", got)
	}

	// Within the interval the cached reading is served, its age growing.
	st.stats = store.DeliveryStats{ByStatus: map[string]int64{store.DeliveryQueued: 1}}
	now = now.Add(30 * time.Second)
	if got := value(t, m, "gateway_deliveries", "status", store.DeliveryQueued); got != 3 {
		t.Errorf("queued within the interval = %v, want 3 (cached)", got)
	}
	if got := value(t, m, "gateway_delivery_oldest_queued_seconds"); got != 120 {
		t.Errorf("oldest queued seconds 30s later = %v, want 120", got)
	}

	// Once the interval has passed, the next scrape reads again.
	now = now.Add(30 * time.Second)
	if got := value(t, m, "gateway_deliveries", "status", store.DeliveryQueued); got != 1 {
		t.Errorf("queued after the interval = %v, want 1 (read again)", got)
	}
	if got := value(t, m, "gateway_delivery_oldest_queued_seconds"); got != 0 {
		t.Errorf("oldest queued seconds with none queued = %v, want 0", got)
	}
	if got := st.reads.Load(); got != 2 {
		t.Errorf("database reads = %d, want 2", got)
	}

	// A failed read keeps the last values, and the next scrape retries.
	st.err = errors.New("database down")
	now = now.Add(time.Minute)
	if got := value(t, m, "gateway_deliveries", "status", store.DeliveryQueued); got != 1 {
		t.Errorf("queued after a failed read = %v, want 1 (the last reading)", got)
	}
	st.err = nil
	st.stats = store.DeliveryStats{ByStatus: map[string]int64{store.DeliveryQueued: 4}}
	if got := value(t, m, "gateway_deliveries", "status", store.DeliveryQueued); got != 4 {
		t.Errorf("queued after the store recovered = %v, want 4", got)
	}
}

func TestInboxGaugesUnwatchedStayZero(t *testing.T) {
	t.Parallel()
	m := New(prometheus.NewRegistry())
	if got := value(t, m, "gateway_deliveries", "status", store.DeliveryQueued); got != 0 {
		t.Errorf("queued without a store = %v, want 0", got)
	}
}

func TestTaskAction(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		status, action, result string
		want                   string
	}{
		{store.DeliverySucceeded, "create", "", "create"},
		{store.DeliverySucceeded, "update", "updated to revision 2", "update"},
		{store.DeliverySucceeded, "update", "stale update skipped (older than the last applied event)", "stale"},
		{store.DeliverySucceeded, "archive", "", "archive"},
		{store.DeliverySucceeded, "close", "", "archive"},
		{store.DeliverySucceeded, "reopen", "", "unarchive"},
		{store.DeliverySucceeded, "alias", "", "link"},
		{store.DeliverySucceeded, "link", "", "link"},
		{store.DeliverySucceeded, "delete", "", "delete"},
		{store.DeliverySucceeded, "made-up", "", "other"},
		{store.DeliveryIgnored, "ignore", "", "ignore"},
		{store.DeliverySuppressed, "update", "", "suppress"},
		{store.DeliveryFailed, "create", "", ""},
	} {
		d := store.Delivery{Status: tc.status, OutcomeAction: tc.action, OutcomeResult: tc.result}
		if got := TaskAction(d); got != tc.want {
			t.Errorf("TaskAction(%s, %q, %q) = %q, want %q", tc.status, tc.action, tc.result, got, tc.want)
		}
	}
}

func TestNilMetricsRecordNothing(t *testing.T) {
	t.Parallel()
	var m *Metrics
	m.WebhookAnswered("gh", 202)
	m.WebhookAcknowledged(context.Background(), "gh", time.Now())
	m.InboxCommitted(3)
	m.DeliveryFinished(store.Delivery{Status: store.DeliverySucceeded})
	m.RecoveryAction("resume")
	m.ProviderAPIRequest("github", 200)
	m.RetentionDeleted("deliveries", 3)
	m.Preset(Known{RecoveryActions: []string{"resume_preparing"}})
	m.MissedDeliveryRedelivered("gh")
	m.WatchInbox(nil, nil, 0)
	if got := m.ProviderTransport("github", http.DefaultTransport); got != http.DefaultTransport {
		t.Errorf("nil metrics wrapped the transport")
	}
	rec := httptest.NewRecorder()
	m.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusNotFound {
		t.Errorf("GET /metrics on nil metrics = %d, want 404", rec.Code)
	}
}

func TestCounters(t *testing.T) {
	t.Parallel()
	m := New(prometheus.NewRegistry())
	m.WebhookAnswered("gh", 202)
	m.WebhookAnswered("", 404)
	m.RetentionDeleted("deliveries", 3)
	m.RetentionDeleted("deliveries", 0)
	m.ProviderAPIRequest("github", 0)
	m.MissedDeliveryRedelivered("gh")
	m.MissedDeliveryRedelivered("gh")
	for _, tc := range []struct {
		family string
		labels []string
		want   float64
	}{
		{"gateway_webhook_requests_total", []string{"connection", "gh", "code", "202"}, 1},
		{"gateway_webhook_requests_total", []string{"connection", "unknown", "code", "404"}, 1},
		{"gateway_retention_deleted_total", []string{"kind", "deliveries"}, 3},
		{"gateway_provider_api_requests_total", []string{"provider", "github", "code", "error"}, 1},
		{"gateway_missed_deliveries_redelivered_total", []string{"connection", "gh"}, 2},
	} {
		if got := value(t, m, tc.family, tc.labels...); got != tc.want {
			t.Errorf("%s%v = %v, want %v", tc.family, tc.labels, got, tc.want)
		}
	}
}

// value gathers m and returns the counter or gauge of family whose labels
// include the name/value pairs given; it fails the test when none matches.
func value(t *testing.T, m *Metrics, family string, labels ...string) float64 {
	t.Helper()
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() != family {
			continue
		}
	metrics:
		for _, mt := range mf.GetMetric() {
			have := map[string]string{}
			for _, lp := range mt.GetLabel() {
				have[lp.GetName()] = lp.GetValue()
			}
			for i := 0; i+1 < len(labels); i += 2 {
				if have[labels[i]] != labels[i+1] {
					continue metrics
				}
			}
			if mt.GetCounter() != nil {
				return mt.GetCounter().GetValue()
			}
			return mt.GetGauge().GetValue()
		}
	}
	t.Fatalf("%s%v: not gathered", family, labels)
	return 0
}

// TestInboxCommitted: each inbox transaction is one observation of the
// receipts it committed.
func TestInboxCommitted(t *testing.T) {
	t.Parallel()
	m := New(prometheus.NewRegistry())
	m.InboxCommitted(1)
	m.InboxCommitted(30)
	count, sum := histogram(t, m, "gateway_inbox_commit_receipts")
	if count != 2 || sum != 31 {
		t.Errorf("gateway_inbox_commit_receipts: %d observations summing to %v, want 2 summing to 31", count, sum)
	}
}

// histogram gathers m and returns the sample count and sum of the
// unlabelled histogram family.
func histogram(t *testing.T, m *Metrics, family string) (uint64, float64) {
	t.Helper()
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() == family && len(mf.GetMetric()) == 1 {
			h := mf.GetMetric()[0].GetHistogram()
			return h.GetSampleCount(), h.GetSampleSum()
		}
	}
	t.Fatalf("%s: not gathered", family)
	return 0, 0
}

func TestProviderTransportCountsByStatus(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer srv.Close()
	m := New(prometheus.NewRegistry())
	client := &http.Client{Transport: m.ProviderTransport("github", nil)}
	resp, err := client.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if _, err := client.Get("http://127.0.0.1:0/"); err == nil {
		t.Fatal("a request to port 0 succeeded")
	}
	for _, code := range []string{"429", "error"} {
		if got := value(t, m, "gateway_provider_api_requests_total", "provider", "github", "code", code); got != 1 {
			t.Errorf("provider API requests{code=%q} = %v, want 1", code, got)
		}
	}
}

func TestStatusRecorder(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		handler func(w http.ResponseWriter)
		want    int
	}{
		{"WriteHeader", func(w http.ResponseWriter) { w.WriteHeader(http.StatusAccepted); w.WriteHeader(http.StatusOK) }, http.StatusAccepted},
		{"Write alone", func(w http.ResponseWriter) { _, _ = w.Write([]byte("x")) }, http.StatusOK},
		{"nothing", func(http.ResponseWriter) {}, http.StatusOK},
	} {
		rec := &StatusRecorder{ResponseWriter: httptest.NewRecorder()}
		tc.handler(rec)
		if got := rec.Status(); got != tc.want {
			t.Errorf("%s: Status() = %d, want %d", tc.name, got, tc.want)
		}
	}
}
