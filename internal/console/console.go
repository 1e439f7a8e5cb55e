// Package console is the operator console: server-rendered HTML pages
// (html/template, embedded with the stylesheet) under /ui/ on the gateway's
// listener, usable without JavaScript. It signs in with an API token and
// keeps a server-side session (session.go); its pages call the same Go
// functions as the JSON API's handlers, so both show and do the same.
package console

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/trackergateway/gateway/internal/httpapi"
	"github.com/trackergateway/gateway/internal/outbound"
	"github.com/trackergateway/gateway/internal/recovery"
	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/tasks"
)

// Sessions stores the console's sessions.
type Sessions interface {
	InsertConsoleSession(ctx context.Context, s store.ConsoleSession) error
	GetConsoleSession(ctx context.Context, idSHA256 string, now time.Time) (store.ConsoleSession, error)
	DeleteConsoleSession(ctx context.Context, idSHA256 string) error
	DeleteExpiredConsoleSessions(ctx context.Context, now time.Time) (int64, error)
}

// Activity reads what the overview shows, and the task a delivery's
// outcome names.
type Activity interface {
	CountDeliveriesReceived(ctx context.Context, since time.Time) ([]store.DeliveryCount, error)
	CountDeliveriesPerMinute(ctx context.Context, since time.Time) ([]store.DeliveryCount, error)
	DeliveryBacklogs(ctx context.Context) ([]store.ConnectionBacklog, error)
	GetTask(ctx context.Context, id string) (store.Task, error)
}

// Authenticator checks a sign-in's token and resolves a session's.
type Authenticator interface {
	Authenticate(ctx context.Context, addr, token, path string) (httpapi.Principal, error)
	PrincipalBySHA256(ctx context.Context, sha string) (httpapi.Principal, error)
}

// Deliveries are the operator delivery operations (inbox.Operators).
type Deliveries interface {
	List(ctx context.Context, f store.DeliveryFilter, limit int, cursor string) ([]store.Delivery, string, error)
	Get(ctx context.Context, id string) (store.Delivery, error)
	Replay(ctx context.Context, id string) (store.Delivery, error)
	ReplayMatching(ctx context.Context, f store.DeliveryFilter, max int, dryRun bool) (store.BulkRequeueResult, error)
}

// Suppressions are the suppression operations (ingest.Suppressions).
type Suppressions interface {
	List(ctx context.Context, workspaceID string, limit int, cursor string) ([]store.Suppression, string, error)
	Clear(ctx context.Context, workspaceID, externalID string) error
}

// Installations are the GitHub App installations of a connection
// (ingest.Installations).
type Installations interface {
	List(ctx context.Context, connectionID string) ([]store.Installation, error)
	// Offered says whether the connection has App installations to show:
	// it is a GitHub App's, or has recorded some.
	Offered(ctx context.Context, connectionID string) (bool, error)
}

// Tasks are the task reads, scoped to what a principal may see (tasks.API).
type Tasks interface {
	VisibleWorkspaces(ctx context.Context, p httpapi.Principal) ([]store.Workspace, error)
	VisibleWorkspace(ctx context.Context, p httpapi.Principal, id string) (store.Workspace, error)
	VisibleTask(ctx context.Context, p httpapi.Principal, id string) (store.Task, error)
	TaskPage(ctx context.Context, page store.TaskPage, limit int, cursor string) ([]store.Task, string, error)
	Contributions(ctx context.Context, taskID string) ([]tasks.Contribution, error)
	ContributionsOf(ctx context.Context, taskIDs []string) (map[string][]tasks.Contribution, error)
}

// Recovery is missed-delivery recovery (recovery.Recoverer).
type Recovery interface {
	Recoverable(connectionID string) error
	// WindowHint says why a run looks back at most 72h, in the terms of
	// the connection's provider.
	WindowHint(connectionID string) string
	Hooks(ctx context.Context, connectionID string) ([]recovery.HookState, error)
	Recover(ctx context.Context, connectionID string, opts recovery.Options) (recovery.Result, error)
}

// Subscriptions are the webhook subscriptions a principal may see
// (outbound.API).
type Subscriptions interface {
	List(ctx context.Context, p httpapi.Principal, ws string) ([]store.Subscription, error)
	Visible(ctx context.Context, p httpapi.Principal, ws, sid string) (store.Subscription, error)
	Deliveries(ctx context.Context, sid, status string, limit int, cursor string) ([]store.OutboundDelivery, string, error)
	Replay(ctx context.Context, p httpapi.Principal, s store.Subscription, eventID, since string) (outbound.ReplayJSON, error)
	// Lags is the commit time of the oldest event each subscription is
	// owed and has not been delivered (absent or zero: none).
	Lags(ctx context.Context) (map[string]time.Time, error)
}

// Deps are what the console serves from. Every field is required.
type Deps struct {
	Sessions      Sessions
	Activity      Activity
	Authenticator Authenticator
	Deliveries    Deliveries
	Suppressions  Suppressions
	Tasks         Tasks
	Recovery      Recovery
	Installations Installations
	Subscriptions Subscriptions
	// Connections are the IDs of the configured connections, in the
	// order the overview lists them.
	Connections []string
	// TraceURL is the trace UI's URL template ("{trace_id}" in it is
	// replaced): a delivery's trace id links there; "" shows the id alone.
	TraceURL string
}

// Console serves the /ui/ pages: its exported methods are the handlers
// internal/server mounts, behind RequireSession (and RequireAdmin for the
// operator pages) except the sign-in page and the stylesheet.
type Console struct {
	d      Deps
	logger *slog.Logger
	now    func() time.Time
	pages  pages
}

// New returns the console.
func New(d Deps, logger *slog.Logger, now func() time.Time) *Console {
	c := &Console{d: d, logger: logger, now: now}
	c.pages = parsePages(c.templateFuncs())
	return c
}

// fail answers err as an HTML page, with the status and message the
// httpapi error table gives it (500s logged there, with a generic text).
func (c *Console) fail(w http.ResponseWriter, r *http.Request, err error) {
	status, message := httpapi.ErrorResponse(w, r, c.logger, err)
	c.render(w, r, status, "error", "Error", errorPage{Status: status, StatusText: http.StatusText(status), Message: message})
}

type errorPage struct {
	Status     int
	StatusText string
	Message    string
}
