// Package mcpserver exposes the task system to agents over the Model Context
// Protocol: the tools call the same functions as the REST API (internal/tasks
// and the inbox operator routes), so they apply the same rules in the same
// order, answer the same JSON as structured content, and fail with the REST
// error message as a tool error.
package mcpserver

import (
	"context"
	"log/slog"
	"net/http"
	"net/url"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trackergateway/gateway/internal/events"
	"github.com/trackergateway/gateway/internal/httpapi"
	"github.com/trackergateway/gateway/internal/inbox"
	"github.com/trackergateway/gateway/internal/tasks"
)

// Tasks are the task functions the tools call (tasks.API, as REST uses it).
type Tasks interface {
	Create(ctx context.Context, p httpapi.Principal, raw []byte) (tasks.CreateJSON, error)
	Lookup(ctx context.Context, p httpapi.Principal, wsID, externalID string) (tasks.LookupJSON, error)
	Release(ctx context.Context, p httpapi.Principal, wsID, externalID string) error
	List(ctx context.Context, p httpapi.Principal, wsID string, query url.Values) (tasks.TaskListJSON, error)
	Update(ctx context.Context, p httpapi.Principal, id string, body func() ([]byte, error)) (tasks.TaskJSON, error)
}

// Deliveries are the operator delivery functions the admin tools call
// (inbox.Operators, as REST uses it).
type Deliveries interface {
	ListJSON(ctx context.Context, query url.Values) (inbox.DeliveryListJSON, error)
	ReplayMatchingJSON(ctx context.Context, req inbox.ReplayRequest) (inbox.ReplayResultJSON, error)
}

// Events is the events feed the list_task_events tool reads (events.Feed,
// as REST uses it).
type Events interface {
	List(ctx context.Context, p httpapi.Principal, wsID string, query url.Values) (events.Page, error)
}

// Gateway is the MCP surface of the gateway: it builds one server per
// caller, whose tools act as that caller, and serves them over streamable
// HTTP.
type Gateway struct {
	tasks      Tasks
	deliveries Deliveries
	events     Events
	logger     *slog.Logger
	version    string
	// schemas spares every per-request server the reflection over the tool
	// types.
	schemas *mcp.SchemaCache
	http    http.Handler
}

// New returns the MCP surface over the task, delivery and event functions;
// version is what the server reports as its implementation version.
func New(tasks Tasks, deliveries Deliveries, events Events, logger *slog.Logger, version string) *Gateway {
	g := &Gateway{tasks: tasks, deliveries: deliveries, events: events, logger: logger, version: version,
		schemas: mcp.NewSchemaCache()}
	// Stateless: every POST is answered on its own, by a server built for
	// the principal of that request, and no session outlives it. So any
	// replica answers any request, a token's workspaces are read at every
	// call, and no long-lived stream holds up a graceful stop. GET (a
	// stream for messages the server sends unasked) is not offered: the
	// tools never send any.
	g.http = mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		p, ok := httpapi.PrincipalFrom(r.Context())
		if !ok {
			return nil // unreachable behind the authenticator: a 400
		}
		return g.Server(p)
	}, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true,
		// The API's bound on a JSON body.
		MaxRequestBodyBytes: httpapi.MaxJSONBody,
		// The SDK refuses a request that reached a loopback address under
		// another host name, against DNS rebinding: a page in a browser
		// reaching a local server that trusts whoever can connect. Here
		// every request needs a bearer token such a page does not have,
		// and the check would refuse /mcp behind a reverse proxy on the
		// same host.
		DisableLocalhostProtection: true})
	return g
}

// instructions tell a model how the tools fit together.
const instructions = `Tasks of the tracker gateway, per workspace. To file work, call create_task with an
external_id you derive from what the task is about (for example "agent:repo-x:fix-flaky-test"):
repeating the call with the same external_id never makes a second task, it answers the task
already made with deduplicated: true, so a retried or repeated call is safe. creation_complete:
false means another create of that ID is still running: wait and call get_task_by_external_id
again; do not release the ID to create again. Errors carry the same message as the REST API.`

// Server returns an MCP server whose tools act as p. A workspace token's
// server lists only the task tools (list_task_events among them); the
// admin's adds list_deliveries and replay_deliveries, so a model is never offered a tool it may not call.
func (g *Gateway) Server(p httpapi.Principal) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "tracker-gateway", Version: g.version},
		&mcp.ServerOptions{Instructions: instructions, SchemaCache: g.schemas,
			// Tools only, and a fixed list: no logging to the client, no
			// list-changed notifications.
			Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}}})
	t := toolset{Gateway: g, caller: p}
	t.addTaskTools(s)
	if p.Admin {
		t.addDeliveryTools(s)
	}
	return s
}

// ServeHTTP serves MCP over streamable HTTP (POST /mcp). It must run behind
// httpapi.Authenticator.Middleware, whose principal the tools act as.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) { g.http.ServeHTTP(w, r) }

// toolset is the tools of one caller.
type toolset struct {
	*Gateway
	caller httpapi.Principal
}
