package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trackergateway/gateway/connectors/providers"
	"github.com/trackergateway/gateway/internal/events"
	"github.com/trackergateway/gateway/internal/httpapi"
	"github.com/trackergateway/gateway/internal/idempotency"
	"github.com/trackergateway/gateway/internal/inbox"
	"github.com/trackergateway/gateway/internal/mcpserver"
	"github.com/trackergateway/gateway/internal/mcpserver/mcptest"
	"github.com/trackergateway/gateway/internal/server"
	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/store/sqlstore"
	"github.com/trackergateway/gateway/internal/store/storetest"
	"github.com/trackergateway/gateway/internal/tasks"
)

// The callers of the tests: the admin, and a workspace token that sees
// workspace "ws" only. Their bearer tokens reach the REST API the tools are
// compared with.
var (
	admin = httpapi.Principal{Name: "admin", Admin: true}
	wsBot = httpapi.Principal{Name: "ws-bot", Workspaces: []string{"ws"}}
)

var tokenOf = map[string]string{"admin": "admin-secret-0123456789", "ws-bot": "ws-bot-secret-0123456789"}

// env is the MCP surface and the REST API (with /mcp) over one fresh store
// holding the workspaces "ws" and "other".
type env struct {
	st   *sqlstore.Store
	mcp  *mcpserver.Gateway
	rest *httptest.Server
}

func newEnv(t *testing.T, st *sqlstore.Store) *env {
	t.Helper()
	ctx := context.Background()
	storetest.SeedWorkspace(t, st, "ws")
	storetest.SeedWorkspace(t, st, "other")
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, p := range []httpapi.Principal{admin, wsBot} {
		if err := st.UpsertToken(ctx, store.Token{ID: "t-" + p.Name, Name: p.Name, TokenSHA256: httpapi.HashToken(tokenOf[p.Name]),
			Admin: p.Admin, Workspaces: p.Workspaces, CreatedAt: created}); err != nil {
			t.Fatalf("upsert token: %v", err)
		}
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	clock := storetest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), time.Millisecond)
	api := tasks.NewAPI(tasks.NewService(st, logger, clock.Now), idempotency.New(st, logger, clock.Now, providers.ContributionKinds()), nil, st, logger, clock.Now)
	ops := inbox.NewOperators(st, logger, clock.Now)
	feed := events.NewFeed(st, logger)
	e := &env{st: st, mcp: mcpserver.New(api, ops, feed, logger, "test")}
	e.rest = httptest.NewServer(server.NewRouter(server.Deps{Tasks: api, Deliveries: ops, MCP: e.mcp, Events: feed,
		Authenticator: httpapi.NewAuthenticator(st, logger, nil), Logger: logger}))
	t.Cleanup(e.rest.Close)
	return e
}

// forEachEnv runs fn per dialect, each on a fresh store.
func forEachEnv(t *testing.T, fn func(t *testing.T, e *env)) {
	t.Helper()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) { fn(t, newEnv(t, st)) })
}

// session connects a new client, over the in-memory transport, to a server
// acting as p.
func (e *env) session(t *testing.T, p httpapi.Principal) *mcp.ClientSession {
	t.Helper()
	return mcptest.ConnectInMemory(t, e.mcp.Server(p))
}

// restJSON sends a REST request as p and returns its status and its JSON
// object body.
func (e *env) restJSON(t *testing.T, p httpapi.Principal, method, path string, body any) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, e.rest.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tokenOf[p.Name])
	resp, err := e.rest.Client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("%s %s = %d %q, want a JSON object", method, path, resp.StatusCode, raw)
	}
	return resp.StatusCode, out
}

// restError sends a REST request as p and returns its status and the
// message of its {"error": ...} body.
func (e *env) restError(t *testing.T, p httpapi.Principal, method, path string, body any) (int, string) {
	t.Helper()
	status, out := e.restJSON(t, p, method, path, body)
	msg, ok := out["error"].(string)
	if !ok || msg == "" {
		t.Fatalf("%s %s = %d %v, want an error body", method, path, status, out)
	}
	return status, msg
}

// tasksOf lists every task of a workspace, archived ones included, straight
// from the store.
func (e *env) tasksOf(t *testing.T, ws string) []store.Task {
	t.Helper()
	ts, err := e.st.ListTasks(context.Background(), store.TaskPage{WorkspaceID: ws, Limit: 1000, IncludeArchived: true})
	if err != nil {
		t.Fatalf("list tasks of %s: %v", ws, err)
	}
	return ts
}

func createArgs(ws, title, ext string) map[string]any {
	return map[string]any{"workspace_id": ws, "title": title, "external_id": ext}
}

func openSQLite(t *testing.T) *sqlstore.Store { return storetest.Open(t, store.DialectSQLite) }
