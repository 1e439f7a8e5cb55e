package providerapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/trackergateway/gateway/internal/tracing"
)

// TestProviderRequestSpan: with tracing on, a provider API request is a
// provider.request client span under the caller's span, naming the
// method, host and status and none of the request's credentials; with
// tracing off none is made.
func TestProviderRequestSpan(t *testing.T) {
	t.Parallel()
	const token = "glpat-secret-token-value"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNotFound)
	}))
	t.Cleanup(srv.Close)
	base, _ := url.Parse(srv.URL)
	hc := guarded(srv.Client(), nil, "gitlab", base)

	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	send := func(ctx context.Context) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/api/v4/projects/1?private_token="+token, nil)
		req.Header.Set("Private-Token", token)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	send(context.Background())
	if n := len(rec.Ended()); n != 0 {
		t.Fatalf("%d spans with tracing off", n)
	}

	ctx, parent := tracing.Start(tracing.WithProvider(context.Background(), tp), "delivery.process")
	send(ctx)
	parent.End()
	var span sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == "provider.request" {
			span = s
		}
	}
	if span == nil || span.Parent().SpanID() != parent.SpanContext().SpanID() {
		t.Fatalf("no provider.request span under the caller's")
	}
	got := map[string]string{}
	for _, kv := range span.Attributes() {
		got[string(kv.Key)] = kv.Value.Emit()
		if strings.Contains(kv.Value.Emit(), token) {
			t.Errorf("attribute %s holds the token", kv.Key)
		}
	}
	for key, want := range map[string]string{"gateway.provider": "gitlab", "http.request.method": "GET",
		"server.address": "127.0.0.1", "http.response.status_code": "404"} {
		if got[key] != want {
			t.Errorf("%s = %q, want %q", key, got[key], want)
		}
	}
}
