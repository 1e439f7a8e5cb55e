package server_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/mux"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/trackergateway/gateway/connectors"
	"github.com/trackergateway/gateway/connectors/providers"
	"github.com/trackergateway/gateway/internal/config"
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
	"github.com/trackergateway/gateway/internal/server"
	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/store/sqlstore"
	"github.com/trackergateway/gateway/internal/store/storetest"
	"github.com/trackergateway/gateway/internal/tasks"
)

const (
	adminToken = "admin-token-0123456789"
	wsToken    = "workspace-token-0123456789"
	// someID fills every path variable: no row has it.
	someID = "7d1f9c2e-0000-4000-8000-000000000000"
)

// newRouter builds the gateway's router on st with real handlers, a
// workspace, and an admin and a workspace token.
func newRouter(t *testing.T, st *sqlstore.Store) *mux.Router {
	t.Helper()
	ctx := context.Background()
	logger := slog.New(slog.DiscardHandler)
	now := time.Now
	if err := st.UpsertWorkspace(ctx, store.Workspace{ID: "ws", Name: "ws", TaskPrefix: "WS", CreatedAt: now(),
		Steps: []store.Step{{ID: "backlog", Name: "Backlog"}}}); err != nil {
		t.Fatalf("upsert workspace: %v", err)
	}
	for _, tok := range []store.Token{
		{ID: "t-admin", Name: "admin", TokenSHA256: httpapi.HashToken(adminToken), Admin: true, CreatedAt: now()},
		{ID: "t-ws", Name: "ws-bot", TokenSHA256: httpapi.HashToken(wsToken), Workspaces: []string{"ws"}, CreatedAt: now()},
	} {
		if err := st.UpsertToken(ctx, tok); err != nil {
			t.Fatalf("upsert token: %v", err)
		}
	}
	noConnections := func(string) (config.Connection, bool) { return config.Connection{}, false }
	coord := idempotency.New(st, logger, now, providers.ContributionKinds())
	receiver := inbox.NewReceiver(st, map[string]connectors.Adapter{}, noConnections, logger, now)
	taskAPI := tasks.NewAPI(tasks.NewService(st, logger, now), coord, nil, st, logger, now)
	deliveries := inbox.NewOperators(st, logger, now)
	suppressions := ingest.NewSuppressions(st, logger)
	installations := ingest.NewInstallations(st, noConnections, logger)
	authenticator := httpapi.NewAuthenticator(st, logger, now)
	missed := recovery.New(st, noConnections, logger, now)
	feed := events.NewFeed(st, logger)
	subscriptions := outbound.NewAPI(st, logger, now, false)
	return server.NewRouter(server.Deps{
		Receiver:      receiver,
		Tasks:         taskAPI,
		Deliveries:    deliveries,
		Suppressions:  suppressions,
		Installations: installations,
		Console: console.New(console.Deps{Sessions: st, Activity: st, Authenticator: authenticator,
			Deliveries: deliveries, Suppressions: suppressions, Tasks: taskAPI, Recovery: missed, Installations: installations,
			Subscriptions: subscriptions}, logger, now),
		Creations:     idempotency.NewOperators(coord, logger),
		Recovery:      recovery.NewOperators(missed, logger),
		Readiness:     inbox.NewReadiness(st, receiver, now),
		Metrics:       metrics.New(prometheus.NewRegistry()),
		MCP:           mcpserver.New(taskAPI, deliveries, feed, logger, "test"),
		Events:        feed,
		Subscriptions: subscriptions,
		Authenticator: authenticator,
		Logger:        logger,
	})
}

// request is a request for a table route, its path variables filled in.
func request(route, token string) *http.Request {
	method, path, _ := strings.Cut(route, " ")
	for _, v := range []string{"{connection}", "{id}", "{operation_id}"} {
		path = strings.ReplaceAll(path, v, someID)
	}
	body := ""
	if method == http.MethodPost || method == http.MethodPatch {
		body = "{}"
	}
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return req
}

func TestRoutesAreUnique(t *testing.T) {
	t.Parallel()
	routes := server.Routes()
	if len(routes) == 0 {
		t.Fatal("the route table is empty")
	}
	seen := map[string]bool{}
	for _, rt := range routes {
		method, path, ok := strings.Cut(rt, " ")
		if !ok || method == "" || !strings.HasPrefix(path, "/") {
			t.Errorf("route %q is not \"METHOD /path\"", rt)
		}
		if seen[rt] {
			t.Errorf("route %q is in the table twice", rt)
		}
		seen[rt] = true
	}
}

// Every route of the table is served on its method, by its own handler
// (not the JSON 404/405 of unknown paths and methods), with the access the
// table gives it; the router serves nothing else.
func TestEveryRouteAnswers(t *testing.T) {
	t.Parallel()
	admin := map[string]bool{
		"POST /api/v1/workspaces":                             true,
		"GET /api/v1/deliveries":                              true,
		"GET /api/v1/deliveries/{id}":                         true,
		"POST /api/v1/deliveries/{id}/replay":                 true,
		"GET /api/v1/suppressions":                            true,
		"DELETE /api/v1/suppressions":                         true,
		"GET /api/v1/creations/{operation_id}":                true,
		"POST /api/v1/creations/{operation_id}/steps/resolve": true,
		"POST /api/v1/connections/{id}/recover":               true,
		"GET /api/v1/connections/{id}/hooks":                  true,
		"GET /api/v1/connections/{id}/installations":          true,
	}
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		r := newRouter(t, st)
		var walked []string
		_ = r.Walk(func(route *mux.Route, _ *mux.Router, _ []*mux.Route) error {
			path, _ := route.GetPathTemplate()
			methods, _ := route.GetMethods()
			for _, m := range methods {
				walked = append(walked, m+" "+path)
			}
			return nil
		})
		if routes := server.Routes(); !slices.Equal(walked, routes) {
			t.Errorf("router serves %q, want the table %q", walked, routes)
		}
		for i, rt := range server.Routes() {
			_, path, _ := strings.Cut(rt, " ")
			var match mux.RouteMatch
			if !r.Match(request(rt, adminToken), &match) || match.MatchErr != nil {
				t.Errorf("%s: no route matches (%v)", rt, match.MatchErr)
				continue
			}
			if got, _ := match.Route.GetPathTemplate(); got != path {
				t.Errorf("%s: matched by %s", rt, got)
			}
			rec := httptest.NewRecorder()
			r.ServeHTTP(rec, request(rt, adminToken))
			if body := strings.TrimSpace(rec.Body.String()); rec.Code == http.StatusMethodNotAllowed ||
				(rec.Code == http.StatusNotFound && body == `{"error":"not found"}`) {
				t.Errorf("%s as admin = %d %s, want its handler's answer", rt, rec.Code, body)
			}

			// The API's own description is the one public /api/ route; the
			// console's sign-in answers a missing token with its form and a
			// 401; the agent tools take the API's tokens.
			public := (!strings.HasPrefix(path, "/api/") && path != "/mcp" || path == "/api/v1/openapi.yaml") && rt != "POST /ui/login"
			// Each route's unauthenticated request from an address of its
			// own: the failure throttle's burst is smaller than the table.
			anonymous := request(rt, "")
			anonymous.RemoteAddr = fmt.Sprintf("192.0.2.%d:1234", i+1)
			rec = httptest.NewRecorder()
			r.ServeHTTP(rec, anonymous)
			if got := rec.Code == http.StatusUnauthorized; got == public {
				t.Errorf("%s without a token = %d, want a 401 only for /api/ routes but the OpenAPI document, and for /mcp", rt, rec.Code)
			}
			if !admin[rt] {
				continue
			}
			rec = httptest.NewRecorder()
			r.ServeHTTP(rec, request(rt, wsToken))
			if body := strings.TrimSpace(rec.Body.String()); rec.Code != http.StatusNotFound || body != `{"error":"not found"}` {
				t.Errorf("%s with a workspace token = %d %s, want the admin requirement's 404", rt, rec.Code, body)
			}
		}
	})
}

// A path of the table with a method it does not serve is a 405 naming the
// methods it does; an unknown path is a 404, before any authentication.
func TestRoutingErrors(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		r := newRouter(t, st)
		tests := []struct {
			method, path string
			status       int
			allow        string
		}{
			{http.MethodPut, "/api/v1/tasks/" + someID, http.StatusMethodNotAllowed, "DELETE, GET, PATCH"},
			{http.MethodGet, "/webhooks/github", http.StatusMethodNotAllowed, "POST"},
			{http.MethodPost, "/api/v1/suppressions", http.StatusMethodNotAllowed, "DELETE, GET"},
			{http.MethodGet, "/api/v1/nothing", http.StatusNotFound, ""},
			{http.MethodGet, "/nothing", http.StatusNotFound, ""},
			{http.MethodPost, "/metrics", http.StatusMethodNotAllowed, "GET"},
		}
		for _, tt := range tests {
			rec := httptest.NewRecorder()
			r.ServeHTTP(rec, httptest.NewRequest(tt.method, tt.path, nil))
			if rec.Code != tt.status || rec.Header().Get("Allow") != tt.allow {
				t.Errorf("%s %s = %d Allow %q, want %d Allow %q", tt.method, tt.path, rec.Code,
					rec.Header().Get("Allow"), tt.status, tt.allow)
			}
		}
	})
}

// The root leads a person who opens the gateway's address to the console,
// signed in or not; only GET is served there.
func TestRootRedirectsToTheConsole(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		r := newRouter(t, st)
		rec := httptest.NewRecorder()
		r.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
		if rec.Code != http.StatusFound || rec.Header().Get("Location") != "/ui/" {
			t.Errorf("GET / = %d Location %q, want 302 to /ui/", rec.Code, rec.Header().Get("Location"))
		}
		rec = httptest.NewRecorder()
		r.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/", nil))
		if rec.Code != http.StatusMethodNotAllowed {
			t.Errorf("POST / = %d, want 405", rec.Code)
		}
	})
}
