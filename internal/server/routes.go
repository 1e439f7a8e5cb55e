// Package server is the gateway's HTTP surface: the one table of every
// route it serves, and the router built from it. The domain packages
// provide the handlers; only this table chooses methods, paths and who may
// call them.
package server

import (
	"log/slog"
	"net/http"
	"strings"

	"github.com/gorilla/mux"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/trackergateway/gateway/docs"
	"github.com/trackergateway/gateway/internal/console"
	"github.com/trackergateway/gateway/internal/events"
	"github.com/trackergateway/gateway/internal/httpapi"
	"github.com/trackergateway/gateway/internal/idempotency"
	"github.com/trackergateway/gateway/internal/inbox"
	"github.com/trackergateway/gateway/internal/ingest"
	"github.com/trackergateway/gateway/internal/mcpserver"
	"github.com/trackergateway/gateway/internal/metrics"
	"github.com/trackergateway/gateway/internal/outbound"
	"github.com/trackergateway/gateway/internal/recovery"
	"github.com/trackergateway/gateway/internal/tasks"
)

// Deps are the handlers the routes are served by, and what authenticates
// their callers. Every field is required.
type Deps struct {
	Receiver     *inbox.Receiver
	Tasks        *tasks.API
	Deliveries   *inbox.Operators
	Suppressions *ingest.Suppressions
	// Installations lists the GitHub App installations of a connection.
	Installations *ingest.Installations
	Creations     *idempotency.Operators
	Recovery      *recovery.Operators
	Readiness     *inbox.Readiness
	Metrics       *metrics.Metrics
	Console       *console.Console
	// MCP serves the agent tools over streamable HTTP.
	MCP *mcpserver.Gateway
	// Events serves the task events feed.
	Events *events.Feed
	// Subscriptions serves the webhook subscriptions of each workspace.
	Subscriptions *outbound.API
	// Authenticator checks the bearer token of every /api/ route.
	Authenticator *httpapi.Authenticator
	// Logger is where the admin requirement writes its errors.
	Logger *slog.Logger
}

// access says who may call a route.
type access int

const (
	// public: anyone (health), or a caller the handler authenticates
	// itself (a webhook's provider signature).
	public access = iota
	// token: a valid bearer token; the handler scopes it to its workspaces.
	token
	// admin: the admin token; anyone else is answered 404.
	admin
	// session: a signed-in console session (internal/console). The console
	// is HTML for people, so it authenticates with its own session cookie,
	// not a bearer token: a page without a session redirects to the sign-in
	// form, and every form post must carry the session's CSRF token. The
	// handler scopes the session's principal as token routes do.
	session
	// sessionAdmin: a console session of the admin token; anyone else is
	// answered 404, as admin routes are.
	sessionAdmin
)

type route struct {
	method, path string
	access       access
	handler      http.HandlerFunc
}

// table is every route of the gateway. Handlers read their path variables
// by the names written here: {connection}, {id}, {operation_id}, {sid}.
func table(d Deps) []route {
	const (
		GET, POST, PATCH, DELETE = http.MethodGet, http.MethodPost, http.MethodPatch, http.MethodDelete
	)
	return []route{
		// Webhooks: authenticated by the provider's signature.
		{POST, "/webhooks/{connection}", public, d.Receiver.ServeHTTP},

		// Tasks.
		{POST, "/api/v1/tasks", token, d.Tasks.CreateTask},
		{GET, "/api/v1/tasks/{id}", token, d.Tasks.GetTask},
		{PATCH, "/api/v1/tasks/{id}", token, d.Tasks.UpdateTask},
		{DELETE, "/api/v1/tasks/{id}", token, d.Tasks.DeleteTask},
		{GET, "/api/v1/tasks/{id}/contributions", token, d.Tasks.ListContributions},

		// Workspaces and their tasks.
		{GET, "/api/v1/workspaces", token, d.Tasks.ListWorkspaces},
		{POST, "/api/v1/workspaces", admin, d.Tasks.CreateWorkspace},
		{GET, "/api/v1/workspaces/{id}/tasks", token, d.Tasks.ListTasks},
		{GET, "/api/v1/workspaces/{id}/tasks/by-external-id", token, d.Tasks.LookupTask},
		{DELETE, "/api/v1/workspaces/{id}/tasks/by-external-id", token, d.Tasks.ReleaseExternalID},
		{GET, "/api/v1/workspaces/{id}/events", token, d.Events.ListEvents},

		// Webhook subscriptions of a workspace (task events out).
		{POST, "/api/v1/workspaces/{id}/subscriptions", token, d.Subscriptions.CreateSubscription},
		{GET, "/api/v1/workspaces/{id}/subscriptions", token, d.Subscriptions.ListSubscriptions},
		{GET, "/api/v1/workspaces/{id}/subscriptions/{sid}", token, d.Subscriptions.GetSubscription},
		{PATCH, "/api/v1/workspaces/{id}/subscriptions/{sid}", token, d.Subscriptions.UpdateSubscription},
		{DELETE, "/api/v1/workspaces/{id}/subscriptions/{sid}", token, d.Subscriptions.DeleteSubscription},
		{POST, "/api/v1/workspaces/{id}/subscriptions/{sid}/rotate-secret", token, d.Subscriptions.RotateSecret},
		{GET, "/api/v1/workspaces/{id}/subscriptions/{sid}/deliveries", token, d.Subscriptions.ListDeliveries},
		{POST, "/api/v1/workspaces/{id}/subscriptions/{sid}/replay", token, d.Subscriptions.ReplayDeliveries},

		// Operators.
		{GET, "/api/v1/deliveries", admin, d.Deliveries.ListDeliveries},
		{POST, "/api/v1/deliveries/replay", admin, d.Deliveries.ReplayDeliveries},
		{GET, "/api/v1/deliveries/{id}", admin, d.Deliveries.GetDelivery},
		{POST, "/api/v1/deliveries/{id}/replay", admin, d.Deliveries.ReplayDelivery},
		{GET, "/api/v1/suppressions", admin, d.Suppressions.ListSuppressions},
		{DELETE, "/api/v1/suppressions", admin, d.Suppressions.ClearSuppression},
		{GET, "/api/v1/creations/{operation_id}", admin, d.Creations.InspectCreation},
		{POST, "/api/v1/creations/{operation_id}/steps/resolve", admin, d.Creations.ResolveStep},
		{POST, "/api/v1/connections/{id}/recover", admin, d.Recovery.Recover},
		{GET, "/api/v1/connections/{id}/hooks", admin, d.Recovery.ListHooks},
		{GET, "/api/v1/connections/{id}/installations", admin, d.Installations.ListInstallations},

		// The API's own description (docs/openapi.yaml).
		{GET, "/api/v1/openapi.yaml", public, docs.Handler().ServeHTTP},

		// Health.
		{GET, "/healthz", public, healthz},
		{GET, "/readyz", public, readyz(d.Readiness)},

		// Prometheus metrics: counts and latencies, nothing secret.
		{GET, "/metrics", public, d.Metrics.ServeHTTP},

		// The operator console: HTML pages (internal/console), outside the
		// JSON API and its OpenAPI description. Sign-in and the stylesheet
		// are public; the sign-in is throttled as bearer tokens are. The
		// root is where a person opening the gateway's address lands: the
		// console (a temporary redirect, so the root stays free to serve
		// something else one day).
		{GET, "/", public, redirectTo("/ui/", http.StatusFound)},
		{GET, "/ui", public, redirectTo("/ui/", http.StatusMovedPermanently)},
		{GET, "/ui/", session, d.Console.Overview},
		{GET, "/ui/console.css", public, d.Console.Stylesheet},
		{GET, "/ui/login", public, d.Console.LoginPage},
		{POST, "/ui/login", public, d.Console.Login},
		{POST, "/ui/logout", session, d.Console.Logout},
		{GET, "/ui/deliveries", sessionAdmin, d.Console.Deliveries},
		{GET, "/ui/deliveries/{id}", sessionAdmin, d.Console.Delivery},
		{POST, "/ui/deliveries/{id}/replay", sessionAdmin, d.Console.ReplayDelivery},
		{GET, "/ui/replay", sessionAdmin, d.Console.BulkReplayPage},
		{POST, "/ui/replay", sessionAdmin, d.Console.BulkReplay},
		{GET, "/ui/suppressions", sessionAdmin, d.Console.Suppressions},
		{POST, "/ui/suppressions/clear", sessionAdmin, d.Console.ClearSuppression},
		{GET, "/ui/recover", sessionAdmin, d.Console.RecoverPage},
		{GET, "/ui/connections/{id}/installations", sessionAdmin, d.Console.ConnectionInstallations},
		{POST, "/ui/recover", sessionAdmin, d.Console.Recover},
		{GET, "/ui/workspaces/{id}/tasks", session, d.Console.WorkspaceTasks},
		{GET, "/ui/tasks/{id}", session, d.Console.Task},
		{GET, "/ui/subscriptions", session, d.Console.Subscriptions},
		{GET, "/ui/subscriptions/{id}", session, d.Console.Subscription},
		{POST, "/ui/subscriptions/{id}/replay", session, d.Console.ReplaySubscription},

		// Agent tools (Model Context Protocol, streamable HTTP): the same
		// bearer tokens, the tools scope them as the API does. Stateless,
		// so POST only: GET, a stream the server would send on unasked, is
		// not offered (405), and there is no session to DELETE.
		{POST, "/mcp", token, d.MCP.ServeHTTP},
	}
}

// NewRouter builds the gateway's router from the table. An unknown path
// answers a JSON 404 and a known path with another method a JSON 405
// (httpapi.HandleRoutingErrors); both come before authentication, as
// neither reveals more than the published route list.
func NewRouter(d Deps) *mux.Router {
	authenticate := d.Authenticator.Middleware
	requireAdmin := httpapi.RequireAdmin(d.Logger)
	r := mux.NewRouter()
	httpapi.HandleRoutingErrors(r)
	for _, rt := range table(d) {
		var h http.Handler = withCause(rt.path, rt.handler)
		switch rt.access {
		case admin:
			h = authenticate(requireAdmin(h))
		case token:
			h = authenticate(h)
		case session:
			h = d.Console.RequireSession(h)
		case sessionAdmin:
			h = d.Console.RequireSession(d.Console.RequireAdmin(h))
		}
		r.Handle(rt.path, nameSpan(rt.method, rt.path, h)).Methods(rt.method)
	}
	return r
}

// nameSpan names the request's HTTP server span (when tracing records it)
// after its route, "METHOD /path/{id}", as the HTTP semantic conventions
// ask: the span is started before routing, which alone knows the route.
func nameSpan(method, path string, h http.Handler) http.Handler {
	name := method + " " + path
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if span := trace.SpanFromContext(r.Context()); span.IsRecording() {
			span.SetName(name)
			span.SetAttributes(attribute.String("http.route", path))
		}
		h.ServeHTTP(w, r)
	})
}

// withCause names the surface a route belongs to as the cause of the task
// events its requests make (events.WithCause): the API, or the console's
// operator. The agent tools name themselves (internal/mcpserver, whichever
// transport serves them); webhooks change tasks only later, through their
// delivery, which names itself.
func withCause(path string, h http.Handler) http.Handler {
	var cause events.Cause
	switch {
	case strings.HasPrefix(path, "/api/"):
		cause.Actor = events.ActorAPI
	case path == "/ui" || strings.HasPrefix(path, "/ui/"):
		cause.Actor = events.ActorOperator
	default:
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(events.WithCause(r.Context(), cause)))
	})
}

// Routes returns the table as "METHOD /path" strings, in table order (for
// tests and documentation checks).
func Routes() []string {
	// Only methods and paths are read: the handlers are method values of
	// nil pointers, never called.
	rts := table(Deps{})
	out := make([]string, 0, len(rts))
	for _, rt := range rts {
		out = append(out, rt.method+" "+rt.path)
	}
	return out
}
