package events

import (
	"context"
	"encoding/json"

	"go.opentelemetry.io/otel/trace"

	"github.com/trackergateway/gateway/internal/store"
)

// Cause says what made a task change: a tracker's delivery (its
// connection, the delivery's id in the inbox and the provider's event
// name), or a caller of the gateway's own surfaces (actor). Work a
// connection does without a delivery (a PR/MR refreshed through the
// provider API, a creation that recovery finished) names the connection
// alone. TraceID and SpanID name the span that made the change when
// tracing recorded it (docs/tracing.md): a consumer finds the change's
// trace, and the outbound attempts join it.
type Cause struct {
	Connection    string `json:"connection,omitempty"`
	DeliveryID    string `json:"delivery_id,omitempty"`
	ProviderEvent string `json:"provider_event,omitempty"`
	Actor         string `json:"actor,omitempty"`
	TraceID       string `json:"trace_id,omitempty"`
	SpanID        string `json:"span_id,omitempty"`
}

// Actors of the gateway's own surfaces.
const (
	ActorAPI      = "api"      // the REST API
	ActorMCP      = "mcp"      // the agent tools
	ActorOperator = "operator" // the console
)

// causeKey is the context key of a request's cause.
type causeKey struct{}

// WithCause returns ctx carrying c as the cause of the task changes made
// under it.
//
// The cause travels in the context rather than as an argument because it
// belongs to the request, not to any one call: a delivery's processing or
// an API request passes through the task service, the creation coordinator
// (whose creations may be written in a batch with others') and the
// projection before an event is appended, and each of those would
// otherwise take, and hand on, a parameter it does not use. The surfaces
// set it once where a request enters (the inbox's applier, the router, the
// agent tools); the places that append events read it.
func WithCause(ctx context.Context, c Cause) context.Context {
	return context.WithValue(ctx, causeKey{}, c)
}

// CauseFrom is the cause ctx carries (WithCause), with the sampled span
// ctx holds (its trace and span ids; none with tracing off); the zero Cause
// when ctx carries none.
func CauseFrom(ctx context.Context) Cause {
	c, ok := ctx.Value(causeKey{}).(Cause)
	if !ok {
		return c
	}
	if sc := trace.SpanContextFromContext(ctx); sc.IsSampled() {
		c.TraceID, c.SpanID = sc.TraceID().String(), sc.SpanID().String()
	}
	return c
}

// IsZero reports whether c names nothing (a trace alone names no cause).
func (c Cause) IsZero() bool {
	return c.Connection == "" && c.DeliveryID == "" && c.ProviderEvent == "" && c.Actor == ""
}

// SpanOf is the span that made e's change, as its cause names it; invalid
// when none was recorded.
func SpanOf(e store.TaskEvent) trace.SpanContext {
	var d struct {
		Cause Cause `json:"cause"`
	}
	if json.Unmarshal([]byte(e.Payload), &d) != nil || d.Cause.TraceID == "" {
		return trace.SpanContext{}
	}
	tid, err1 := trace.TraceIDFromHex(d.Cause.TraceID)
	sid, err2 := trace.SpanIDFromHex(d.Cause.SpanID)
	if err1 != nil || err2 != nil {
		return trace.SpanContext{}
	}
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid,
		TraceFlags: trace.FlagsSampled, Remote: true})
}
