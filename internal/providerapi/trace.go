package providerapi

import (
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/trackergateway/gateway/internal/tracing"
)

// traced gives each provider API request (the projection's and recovery's
// reads, GitHub App installation tokens) a provider.request client span
// under the caller's, when tracing is on. The span names the method, the
// host and the answer's status: never the URL's query, a header or a body,
// where credentials travel.
type traced struct {
	provider string
	next     http.RoundTripper
}

func (t traced) RoundTrip(req *http.Request) (*http.Response, error) {
	if tracing.Provider(req.Context()) == nil {
		return t.next.RoundTrip(req)
	}
	ctx, span := tracing.Start(req.Context(), "provider.request", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("gateway.provider", t.provider), attribute.String("http.request.method", req.Method),
			attribute.String("server.address", req.URL.Hostname())))
	defer span.End()
	resp, err := t.next.RoundTrip(req.WithContext(ctx))
	switch {
	case err != nil:
		span.SetStatus(codes.Error, "no answer")
	default:
		span.SetAttributes(attribute.Int("http.response.status_code", resp.StatusCode))
		if resp.StatusCode >= 500 {
			span.SetStatus(codes.Error, resp.Status)
		}
	}
	return resp, err
}
