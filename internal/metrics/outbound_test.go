package metrics

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/trackergateway/gateway/internal/store"
	"go.opentelemetry.io/otel/trace"
)

// settableLags answers what the test last set, counting its reads.
type settableLags struct {
	mu    sync.Mutex
	lags  []store.SubscriptionLag
	reads int
}

func (s *settableLags) SubscriptionLags(context.Context) ([]store.SubscriptionLag, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	return s.lags, nil
}

func TestOutboundMetrics(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); defer mu.Unlock(); now = now.Add(d) }
	m := New(prometheus.NewRegistry())
	lags := &settableLags{lags: []store.SubscriptionLag{{SubscriptionID: "sub_a", Oldest: now.Add(-30 * time.Second)}, {SubscriptionID: "sub_b"}}}
	m.WatchOutbound(lags, clock, time.Minute)

	m.OutboundDelivery("sub_a", store.OutboundSucceeded)
	m.OutboundDelivery("sub_a", store.OutboundSucceeded)
	m.OutboundDelivery("sub_a", store.OutboundRetrying)
	m.OutboundAttemptTook(250*time.Millisecond, trace.SpanContext{})
	if got := value(t, m, "gateway_outbound_deliveries_total", "subscription", "sub_a", "outcome", "succeeded"); got != 2 {
		t.Errorf("succeeded = %v, want 2", got)
	}
	if count, sum := histogram(t, m, "gateway_outbound_attempt_seconds"); count != 1 || sum != 0.25 {
		t.Errorf("attempt seconds: %d observations summing to %v", count, sum)
	}
	if got := value(t, m, "gateway_outbound_lag_seconds", "subscription", "sub_a"); got != 30 {
		t.Errorf("lag of sub_a = %v, want 30", got)
	}
	if got := value(t, m, "gateway_outbound_lag_seconds", "subscription", "sub_b"); got != 0 {
		t.Errorf("lag of sub_b (nothing owed) = %v, want 0", got)
	}
	// Within the interval the age grows without a read; after it, a new
	// reading drops a deleted subscription's series.
	advance(10 * time.Second)
	if got := value(t, m, "gateway_outbound_lag_seconds", "subscription", "sub_a"); got != 40 {
		t.Errorf("lag of sub_a 10s later = %v, want 40", got)
	}
	lags.mu.Lock()
	lags.lags = lags.lags[:1]
	reads := lags.reads
	lags.mu.Unlock()
	if reads != 1 {
		t.Errorf("reads within the interval = %d, want 1", reads)
	}
	advance(time.Minute)
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "gateway_outbound_lag_seconds" {
			continue
		}
		if n := len(mf.GetMetric()); n != 1 {
			t.Errorf("lag series after sub_b was deleted = %d, want 1", n)
		}
	}
}
