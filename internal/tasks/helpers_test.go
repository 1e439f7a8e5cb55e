package tasks_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trackergateway/gateway/connectors/providers"
	"github.com/trackergateway/gateway/internal/httpapi"
	"github.com/trackergateway/gateway/internal/idempotency"
	"github.com/trackergateway/gateway/internal/server"
	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/store/sqlstore"
	"github.com/trackergateway/gateway/internal/store/storetest"
	"github.com/trackergateway/gateway/internal/tasks"
)

// Bearer tokens of the test principals.
const (
	adminToken = "admin-secret"
	wsToken    = "ws-bot-secret"    // workspace "ws" only
	otherToken = "other-bot-secret" // workspace "other" only
)

// logBuffer collects log output for assertions.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// env is a REST server over a fresh store with workspaces "ws" and "other"
// (steps backlog, and doing with WIP 1) and three tokens.
type env struct {
	st    *sqlstore.Store
	coord *idempotency.Coordinator
	svc   *tasks.Service
	clock *storetest.Clock
	srv   *httptest.Server
	logs  *logBuffer
}

type envOptions struct {
	// wrap, when set, is the store every component uses instead of st.
	wrap func(st store.Store) store.Store
	// creator, when set, replaces the coordinator as the API's creator.
	creator func(c *idempotency.Coordinator, e *env) tasks.Creator
}

func newEnv(t *testing.T, st *sqlstore.Store) *env {
	return newEnvWith(t, st, envOptions{})
}

func newEnvWith(t *testing.T, st *sqlstore.Store, opts envOptions) *env {
	t.Helper()
	ctx := context.Background()
	storetest.SeedWorkspace(t, st, "ws")
	storetest.SeedWorkspace(t, st, "other")
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tok := range []store.Token{
		{ID: "t-admin", Name: "admin", TokenSHA256: httpapi.HashToken(adminToken), Admin: true, CreatedAt: created},
		{ID: "t-ws", Name: "ws-bot", TokenSHA256: httpapi.HashToken(wsToken), Workspaces: []string{"ws"}, CreatedAt: created},
		{ID: "t-other", Name: "other-bot", TokenSHA256: httpapi.HashToken(otherToken), Workspaces: []string{"other"}, CreatedAt: created},
	} {
		if err := st.UpsertToken(ctx, tok); err != nil {
			t.Fatalf("upsert token: %v", err)
		}
	}
	e := &env{st: st, clock: storetest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), time.Microsecond), logs: &logBuffer{}}
	logger := slog.New(slog.NewTextHandler(e.logs, nil))
	var used store.Store = st
	if opts.wrap != nil {
		used = opts.wrap(st)
	}
	e.coord = idempotency.New(used, logger, e.clock.Now, providers.ContributionKinds())
	e.svc = tasks.NewService(used, logger, e.clock.Now)
	var creator tasks.Creator = e.coord
	if opts.creator != nil {
		creator = opts.creator(e.coord, e)
	}
	// The gateway's own routes; these tests call only the task and
	// workspace ones, so the other handlers are left out.
	r := server.NewRouter(server.Deps{Tasks: tasks.NewAPI(e.svc, creator, nil, used, logger, e.clock.Now),
		Authenticator: httpapi.NewAuthenticator(used, logger, nil), Logger: logger})
	e.srv = httptest.NewServer(r)
	t.Cleanup(e.srv.Close)
	return e
}

// forEachDialect runs fn per dialect, in parallel, each on a fresh store.
func forEachDialect(t *testing.T, fn func(t *testing.T, st *sqlstore.Store)) {
	t.Helper()
	for _, d := range storetest.Dialects {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			fn(t, storetest.Open(t, d))
		})
	}
}

// forEachEnv runs fn per dialect with a ready REST env.
func forEachEnv(t *testing.T, fn func(t *testing.T, e *env)) {
	t.Helper()
	forEachDialect(t, func(t *testing.T, st *sqlstore.Store) { fn(t, newEnv(t, st)) })
}

type response struct {
	status int
	raw    string
	body   map[string]any
}

func (r response) str(key string) string {
	s, _ := r.body[key].(string)
	return s
}

func (e *env) do(t testing.TB, method, path, token, body string) response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	if err != nil {
		t.Fatalf("new request: %v", err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	out := response{status: resp.StatusCode, raw: string(raw)}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &out.body); err != nil {
			t.Fatalf("%s %s: body is not a JSON object: %q", method, path, raw)
		}
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s %s: Content-Type = %q, want application/json", method, path, ct)
		}
	}
	return out
}

func toJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// create posts a create as the admin.
func (e *env) create(t testing.TB, fields map[string]any) response {
	t.Helper()
	return e.do(t, http.MethodPost, "/api/v1/tasks", adminToken, toJSON(t, fields))
}

func createFields(ws, ext string) map[string]any {
	f := map[string]any{"workspace_id": ws, "title": "Task " + ext}
	if ext != "" {
		f["external_id"] = ext
	}
	return f
}

// wantTuple checks a create response against one of the spec's outcome
// tuples; ext "" means external_id must be absent.
func wantTuple(t testing.TB, r response, deduplicated, creationComplete bool, ext string) {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("status = %d, want 200 (body %s)", r.status, r.raw)
	}
	for key, want := range map[string]bool{"deduplicated": deduplicated, "creation_complete": creationComplete} {
		got, ok := r.body[key].(bool)
		if !ok {
			t.Errorf("%s missing or not a boolean in %s", key, r.raw)
		} else if got != want {
			t.Errorf("%s = %v, want %v", key, got, want)
		}
	}
	got, present := r.body["external_id"]
	switch {
	case ext == "" && present:
		t.Errorf("external_id = %v, want it absent", got)
	case ext != "" && got != ext:
		t.Errorf("external_id = %v, want %q", got, ext)
	}
	if r.str("id") == "" {
		t.Errorf("id missing in %s", r.raw)
	}
}

func wantError(t testing.TB, r response, status int, message string) {
	t.Helper()
	if r.status != status {
		t.Errorf("status = %d, want %d (body %s)", r.status, status, r.raw)
	}
	if len(r.body) != 1 {
		t.Errorf("error body = %s, want exactly {\"error\": ...}", r.raw)
	}
	msg, ok := r.body["error"].(string)
	if !ok || msg == "" {
		t.Errorf("error body = %s, want a non-empty \"error\" string", r.raw)
		return
	}
	if message != "" && msg != message {
		t.Errorf("error = %q, want %q", msg, message)
	}
}

func count(t testing.TB, st *sqlstore.Store, query string, args ...any) int {
	t.Helper()
	var n int
	if err := st.Driver().QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

func events(t testing.TB, st *sqlstore.Store, taskID, typ string) []store.TaskEvent {
	t.Helper()
	all, err := st.ReadTaskEvents(context.Background(), 0, 100000)
	if err != nil {
		t.Fatalf("read events: %v", err)
	}
	var out []store.TaskEvent
	for _, ev := range all {
		if ev.TaskID == taskID && (typ == "" || ev.Type == typ) {
			out = append(out, ev)
		}
	}
	return out
}

// written is what a refused request must not change.
type written struct {
	tasks, events, ops, assocs int
	seqWS, seqOther            int64
}

func (e *env) written(t testing.TB) written {
	t.Helper()
	ctx := context.Background()
	ws, err := e.st.GetWorkspace(ctx, "ws")
	if err != nil {
		t.Fatal(err)
	}
	other, err := e.st.GetWorkspace(ctx, "other")
	if err != nil {
		t.Fatal(err)
	}
	return written{
		tasks:    count(t, e.st, `SELECT COUNT(*) FROM tasks`),
		events:   count(t, e.st, `SELECT COUNT(*) FROM task_events`),
		ops:      count(t, e.st, `SELECT COUNT(*) FROM task_creation_operations`),
		assocs:   count(t, e.st, `SELECT COUNT(*) FROM task_remote_contribution_associations`),
		seqWS:    ws.TaskSequence,
		seqOther: other.TaskSequence,
	}
}

func (e *env) wantNothingWritten(t testing.TB, before written, what string) {
	t.Helper()
	if after := e.written(t); after != before {
		t.Errorf("%s wrote: before %+v, after %+v", what, before, after)
	}
}

// interceptCreator is the coordinator's Create with a hook between Begin and
// Complete, where a concurrent actor may release or delete.
type interceptCreator struct {
	*idempotency.Coordinator
	between func(task store.Task)
}

func (c interceptCreator) Create(ctx context.Context, req idempotency.CreateRequest) (idempotency.Result, error) {
	begun, err := c.BeginTaskCreation(ctx, req)
	if err != nil {
		return idempotency.Result{}, err
	}
	if begun.Handle == nil {
		return idempotency.Result{Task: begun.Task, Outcome: begun.Outcome}, nil
	}
	c.between(begun.Task)
	if err := c.ExecuteSteps(ctx, begun.Handle); err != nil {
		return idempotency.Result{}, err
	}
	return c.CompleteTaskCreation(ctx, begun.Handle)
}
