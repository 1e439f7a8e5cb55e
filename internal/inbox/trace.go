package inbox

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/tracing"
)

// startProcessing starts the span of one processing attempt,
// delivery.process: a child of the receipt's span, whose context the
// delivery keeps (store.Delivery.TraceContext), and linked to it, so an
// attempt an hour later or on another replica joins the receipt's trace.
// With tracing off it costs a context lookup.
func startProcessing(ctx context.Context, d store.Delivery) (context.Context, trace.Span) {
	if tracing.Provider(ctx) == nil {
		return tracing.Start(ctx, "delivery.process")
	}
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(attribute.String("gateway.delivery_id", d.ID), attribute.String("gateway.connection", d.ConnectionID),
			attribute.String("gateway.provider", d.Provider), attribute.Int("gateway.attempt", d.Attempts)),
		trace.WithAttributes(tracing.MessagingAttributes(ctx, "process", d.ConnectionID, d.ID, -1)...)}
	if receipt := tracing.Remote(d.TraceContext); receipt.IsValid() {
		ctx = trace.ContextWithRemoteSpanContext(ctx, receipt)
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: receipt}))
	}
	return tracing.Start(ctx, "delivery.process", opts...)
}

// endProcessing records the attempt's outcome (d as it will be written)
// on span and ends it.
func endProcessing(span trace.Span, d store.Delivery) {
	defer span.End()
	if !span.IsRecording() {
		return
	}
	// The event as the adapter refined it ("issues.opened").
	span.SetAttributes(attribute.String("gateway.event", d.Event), attribute.String("gateway.status", d.Status), attribute.String("gateway.task_id", d.OutcomeTaskID),
		attribute.String("gateway.external_id", d.OutcomeExternalID), attribute.String("gateway.action", d.OutcomeAction))
	if d.Status == store.DeliveryFailed || d.Status == store.DeliveryRetrying {
		span.SetStatus(codes.Error, d.LastError)
	}
}
