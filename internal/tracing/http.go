package tracing

import (
	"context"
	"net"
	"net/http"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
)

// Server makes srv trace its requests when ctx carries a provider: one
// HTTP server span per request (webhooks, API, MCP, console), named after
// its route by the router, and each request's context carrying ctx's
// values (the provider, the messaging conventions' opt-in) for the spans
// beneath. With tracing off srv is left as it is.
func Server(ctx context.Context, srv *http.Server) {
	tp := Provider(ctx)
	if tp == nil {
		return
	}
	srv.Handler = otelhttp.NewHandler(srv.Handler, "http.server", otelhttp.WithTracerProvider(tp),
		otelhttp.WithPropagators(Propagator),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return r.Method }))
	base := context.WithoutCancel(ctx)
	srv.BaseContext = func(net.Listener) context.Context { return base }
}
