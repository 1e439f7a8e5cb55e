package metrics

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/trackergateway/gateway/internal/store"
)

// TestLatencyExemplars: the acknowledgement, processing and outbound
// attempt histograms carry the trace id of a sampled observation as an
// exemplar, shown to a scrape that asks for OpenMetrics; an unsampled one
// has none, and the Prometheus text format shows none.
func TestLatencyExemplars(t *testing.T) {
	t.Parallel()
	m := New(prometheus.NewRegistry())
	sampled := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{0x4b, 0xf9, 1},
		SpanID: trace.SpanID{0x0f, 1}, TraceFlags: trace.FlagsSampled})
	unsampled := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{0x77, 2}, SpanID: trace.SpanID{0x0e, 2}})
	m.WebhookAcknowledged(trace.ContextWithSpanContext(context.Background(), sampled), "gh", time.Now())
	m.WebhookAcknowledged(trace.ContextWithSpanContext(context.Background(), unsampled), "gl", time.Now())
	now := time.Now()
	m.DeliveryFinished(store.Delivery{ConnectionID: "gh", Status: store.DeliverySucceeded, ReceivedAt: now, ProcessedAt: &now,
		TraceContext: "00-" + sampled.TraceID().String() + "-" + sampled.SpanID().String() + "-01"})
	m.OutboundAttemptTook(time.Millisecond, sampled)

	scrape := func(accept string) string {
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		rec := httptest.NewRecorder()
		m.ServeHTTP(rec, req)
		return rec.Body.String()
	}
	exemplar := `# {trace_id="` + sampled.TraceID().String() + `"}`
	om := scrape("application/openmetrics-text; version=1.0.0")
	for _, family := range []string{"gateway_webhook_ack_seconds_bucket{connection=\"gh\"", "gateway_delivery_processing_seconds_bucket{connection=\"gh\"",
		"gateway_outbound_attempt_seconds_bucket"} {
		found := false
		for line := range strings.Lines(om) {
			if strings.HasPrefix(line, family) && strings.Contains(line, exemplar) {
				found = true
			}
		}
		if !found {
			t.Errorf("no exemplar %s on %s in the OpenMetrics scrape", exemplar, family)
		}
	}
	if strings.Contains(om, unsampled.TraceID().String()) {
		t.Errorf("an unsampled trace is an exemplar")
	}
	if text := scrape(""); strings.Contains(text, "trace_id") {
		t.Errorf("the text format shows exemplars")
	}
}
