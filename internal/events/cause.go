package events

import "context"

// Cause says what made a task change: a tracker's delivery (its
// connection, the delivery's id in the inbox and the provider's event
// name), or a caller of the gateway's own surfaces (actor). Work a
// connection does without a delivery (a PR/MR refreshed through the
// provider API, a creation that recovery finished) names the connection
// alone.
type Cause struct {
	Connection    string `json:"connection,omitempty"`
	DeliveryID    string `json:"delivery_id,omitempty"`
	ProviderEvent string `json:"provider_event,omitempty"`
	Actor         string `json:"actor,omitempty"`
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

// CauseFrom is the cause ctx carries (WithCause); the zero Cause when none.
func CauseFrom(ctx context.Context) Cause {
	c, _ := ctx.Value(causeKey{}).(Cause)
	return c
}

// IsZero reports whether c names nothing.
func (c Cause) IsZero() bool { return c == Cause{} }
