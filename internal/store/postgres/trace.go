package postgres

import (
	"context"

	"github.com/exaring/otelpgx"
	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel/trace"
)

// spanTracer is otelpgx's tracer for the statements of traced work only:
// a statement whose context holds no span (the workers' polling claims,
// the checkpoints, the notification loop) makes none, so an idle gateway
// does not fill the trace store with lone database spans. Each end is
// passed on only when its start was, because otelpgx ends the span its
// context holds.
type spanTracer struct{ t *otelpgx.Tracer }

// tracedKey marks a context whose statement span otelpgx started.
type tracedKey struct{}

func newSpanTracer(tp trace.TracerProvider) spanTracer {
	// Statements are recorded without their arguments (otelpgx's default),
	// which may be a delivery's body or a token's hash.
	return spanTracer{otelpgx.NewTracer(otelpgx.WithTracerProvider(tp), otelpgx.WithTrimSQLInSpanName())}
}

func traced(ctx context.Context) bool { return trace.SpanContextFromContext(ctx).IsValid() }

func (s spanTracer) TraceQueryStart(ctx context.Context, c *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if !traced(ctx) {
		return ctx
	}
	return context.WithValue(s.t.TraceQueryStart(ctx, c, d), tracedKey{}, true)
}

func (s spanTracer) TraceQueryEnd(ctx context.Context, c *pgx.Conn, d pgx.TraceQueryEndData) {
	if ctx.Value(tracedKey{}) != nil {
		s.t.TraceQueryEnd(ctx, c, d)
	}
}

func (s spanTracer) TraceBatchStart(ctx context.Context, c *pgx.Conn, d pgx.TraceBatchStartData) context.Context {
	if !traced(ctx) {
		return ctx
	}
	return context.WithValue(s.t.TraceBatchStart(ctx, c, d), tracedKey{}, true)
}

func (s spanTracer) TraceBatchQuery(ctx context.Context, c *pgx.Conn, d pgx.TraceBatchQueryData) {
	if ctx.Value(tracedKey{}) != nil {
		s.t.TraceBatchQuery(ctx, c, d)
	}
}

func (s spanTracer) TraceBatchEnd(ctx context.Context, c *pgx.Conn, d pgx.TraceBatchEndData) {
	if ctx.Value(tracedKey{}) != nil {
		s.t.TraceBatchEnd(ctx, c, d)
	}
}
