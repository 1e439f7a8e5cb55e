package outbound

import (
	"context"
	"net/url"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/trackergateway/gateway/internal/events"
	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/tracing"
)

// startAttempt starts the span of one attempt, event.deliver, as a child
// of parent, the span that made the event's change (the trace its cause
// names), so the attempt joins the delivery's trace; its context is what
// the request carries as traceparent. With tracing off it costs a context
// lookup.
func startAttempt(ctx context.Context, d store.OutboundDelivery, parent trace.SpanContext) (context.Context, trace.Span) {
	if tracing.Provider(ctx) == nil {
		return tracing.Start(ctx, "event.deliver")
	}
	if parent.IsValid() {
		ctx = trace.ContextWithRemoteSpanContext(ctx, parent)
	}
	return tracing.Start(ctx, "event.deliver", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("gateway.subscription_id", d.SubscriptionID),
			attribute.String("gateway.event_id", events.FormatID(d.EventID)),
			attribute.String("gateway.task_id", d.TaskID), attribute.Int("gateway.attempt", d.Attempts),
			attribute.String("http.request.method", "POST")))
}

// endAttempt records what the attempt learnt on its span: the answer's
// status code, or why there was none.
func endAttempt(span trace.Span, a answer) {
	if !span.IsRecording() {
		return
	}
	if a.code != 0 {
		span.SetAttributes(attribute.Int("http.response.status_code", a.code))
	}
	if a.err != nil {
		span.SetStatus(codes.Error, a.err.Error())
	}
}

// serverAddress is the host of a subscription URL: the span names where it
// sent, never the URL, whose path or query may hold a token.
func serverAddress(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Hostname()
}
