package idempotency

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/trackergateway/gateway/internal/tracing"
)

// startCreate starts task.create, the span of one Create; Begin, the steps
// and Complete (or, for a creation without steps, the one transaction that
// writes it, task.create.write) are its children. With tracing off it
// costs a context lookup.
func startCreate(ctx context.Context, req CreateRequest) (context.Context, trace.Span) {
	if tracing.Provider(ctx) == nil {
		return tracing.Start(ctx, "task.create")
	}
	return tracing.Start(ctx, "task.create", trace.WithAttributes(attribute.String("gateway.workspace_id", req.WorkspaceID),
		attribute.String("gateway.external_id", req.ExternalID), attribute.Int("gateway.contributions", len(req.Contributions))))
}

// endCreate records the creation's outcome and ends its span.
func endCreate(span trace.Span, res Result, err error) {
	if span.IsRecording() {
		if err == nil {
			span.SetAttributes(attribute.String("gateway.outcome", res.Outcome.String()), attribute.String("gateway.task_id", res.Task.ID))
		}
	}
	endChild(span, err)
}

// endChild marks a failed part of a creation (a span under its
// task.create, started with tracing.Start) and ends its span.
func endChild(span trace.Span, err error) {
	if err != nil && span.IsRecording() {
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
