package ingest

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/trackergateway/gateway/connectors"
	"github.com/trackergateway/gateway/connectors/github"
	"github.com/trackergateway/gateway/connectors/gitlab"
	"github.com/trackergateway/gateway/connectors/jira"
	"github.com/trackergateway/gateway/connectors/providers"
	"github.com/trackergateway/gateway/internal/config"
	"github.com/trackergateway/gateway/internal/idempotency"
	"github.com/trackergateway/gateway/internal/inbox"
	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/store/sqlstore"
	"github.com/trackergateway/gateway/internal/store/storetest"
	"github.com/trackergateway/gateway/internal/tasks"
)

const (
	testWorkspace = "ws"
	testSecret    = "webhook-secret"

	// Entities of the fixtures (fixtures/README.md).
	ghIssueExt     = "github:github.com:issue:444500041"        // Codertocat/Hello-World#1
	ghOldIssueExt  = "github:github.com:issue:512748900"        // octo-org/octo-repo#1, transferred to #1 above
	ghPRExt        = "github:github.com:pull_request:279147437" // Codertocat/Hello-World#2
	ghPRID         = "279147437"
	ghIssueRef     = "Codertocat/Hello-World#1"
	glIssueExt     = "gitlab:gitlab.example.com:issue:301" // gitlabhq/gitlab-test#23
	glMRExt        = "gitlab:gitlab.example.com:merge_request:99"
	glMRID         = "99"
	jiraIssueExt   = "jira:acme.atlassian.net:issue:10040" // TES-41
	fixturesFolder = "../../fixtures"
)

// githubConn, gitlabConn and jiraConn are the connections of the tests, as
// config.Parse would default them; tests adjust copies.
func githubConn() config.Connection {
	return config.Connection{ID: "gh-main", Provider: connectors.ProviderGitHub, Host: "github.com", Workspace: testWorkspace,
		Step: "backlog", Secrets: []string{testSecret}, PullRequests: config.PullRequestsLinkOrCreate,
		OnClose: config.OnCloseArchive, OnMerge: config.OnCloseNone}
}

func gitlabConn() config.Connection {
	return config.Connection{ID: "gl-main", Provider: connectors.ProviderGitLab, Host: "gitlab.example.com", Workspace: testWorkspace,
		Step: "backlog", Secrets: []string{testSecret}, PullRequests: config.PullRequestsLinkOrCreate,
		OnClose: config.OnCloseArchive, OnMerge: config.OnCloseNone}
}

func jiraConn() config.Connection {
	return config.Connection{ID: "jira-main", Provider: connectors.ProviderJira, Host: "acme.atlassian.net", Workspace: testWorkspace,
		Step: "backlog", Secrets: []string{testSecret}, PullRequests: config.PullRequestsLinkOrCreate,
		OnClose: config.OnCloseArchive, OnMerge: config.OnCloseNone}
}

// env is a real Applier over a real store, coordinator and task service.
type env struct {
	t     *testing.T
	st    *sqlstore.Store
	clock *storetest.Clock
	coord *idempotency.Coordinator
	svc   *tasks.Service
	app   *Applier
	conns map[string]config.Connection
}

func testLogger(t testing.TB) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}

// newEnv seeds the workspace and builds the applier for conns.
func newEnv(t *testing.T, st *sqlstore.Store, conns ...config.Connection) *env {
	return newEnvWithReader(t, st, nil, conns...)
}

// newEnvWithReader lets a test wrap the store reads/writes of the applier.
func newEnvWithReader(t *testing.T, st *sqlstore.Store, wrap func(Reader) Reader, conns ...config.Connection) *env {
	t.Helper()
	storetest.SeedWorkspace(t, st, testWorkspace)
	e := &env{t: t, st: st, clock: storetest.NewClock(time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC), 0), conns: map[string]config.Connection{}}
	for _, c := range conns {
		e.conns[c.ID] = c
	}
	logger := testLogger(t)
	e.coord = idempotency.New(st, logger, e.clock.Now, providers.ContributionKinds())
	e.svc = tasks.NewService(st, logger, e.clock.Now)
	var reader Reader = st
	if wrap != nil {
		reader = wrap(st)
	}
	adapters := map[string]connectors.Adapter{
		connectors.ProviderGitHub: github.Adapter{},
		connectors.ProviderGitLab: gitlab.Adapter{},
		connectors.ProviderJira:   jira.Adapter{},
	}
	lookup := func(id string) (config.Connection, bool) {
		c, ok := e.conns[id]
		return c, ok
	}
	e.app = New(lookup, adapters, e.coord, e.svc, reader, logger, e.clock.Now)
	return e
}

// fixture reads a fixture file as a JSON object.
func fixture(t testing.TB, provider, name string) map[string]any {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(fixturesFolder, provider, name))
	if err != nil {
		t.Fatalf("read fixture: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("decode fixture %s: %v", name, err)
	}
	return m
}

// delivery builds the inbox row the receiver would store for body posted to
// conn: signed by the adapter, secret headers removed.
func (e *env) delivery(connID, event string, body map[string]any) store.Delivery {
	e.t.Helper()
	conn, ok := e.conns[connID]
	if !ok {
		e.t.Fatalf("no connection %q", connID)
	}
	raw, err := json.Marshal(body)
	if err != nil {
		e.t.Fatalf("encode body: %v", err)
	}
	h := http.Header{}
	var adapter connectors.Adapter
	switch conn.Provider {
	case connectors.ProviderGitHub:
		adapter = github.Adapter{}
		h.Set(github.HeaderEvent, event)
	case connectors.ProviderGitLab:
		adapter = gitlab.Adapter{}
		h.Set(gitlab.HeaderEvent, event)
	case connectors.ProviderJira:
		adapter = jira.Adapter{}
	}
	adapter.Sign(h, raw, []byte(testSecret))
	if err := adapter.Verify(h, raw, conn.SecretBytes()); err != nil {
		e.t.Fatalf("signature: %v", err)
	}
	headers, err := inbox.EncodeHeaders(h, adapter.SecretHeaders())
	if err != nil {
		e.t.Fatalf("encode headers: %v", err)
	}
	return store.Delivery{ID: uuid.NewString(), ConnectionID: conn.ID, Provider: conn.Provider, Event: adapter.EventName(h),
		DeliveryKey: adapter.DeliveryKey(h, raw), Headers: headers, Body: raw, Status: store.DeliveryProcessing,
		Attempts: 1, ReceivedAt: e.clock.Now()}
}

// github/gitlab/jira build a delivery of a fixture, after mutate.
func (e *env) github(name string, mutate ...func(map[string]any)) store.Delivery {
	e.t.Helper()
	return e.fromFixture("gh-main", connectors.ProviderGitHub, name, mutate)
}

func (e *env) gitlab(name string, mutate ...func(map[string]any)) store.Delivery {
	e.t.Helper()
	return e.fromFixture("gl-main", connectors.ProviderGitLab, name, mutate)
}

func (e *env) jira(name string) store.Delivery {
	e.t.Helper()
	return e.fromFixture("jira-main", connectors.ProviderJira, name, nil)
}

func (e *env) fromFixture(connID, provider, name string, mutate []func(map[string]any)) store.Delivery {
	e.t.Helper()
	body := fixture(e.t, provider, name)
	for _, m := range mutate {
		m(body)
	}
	event := ""
	switch provider {
	case connectors.ProviderGitHub:
		event = name[:indexByte(name, '.')]
	case connectors.ProviderGitLab:
		event = "Issue Hook"
		if body["object_kind"] == "merge_request" {
			event = "Merge Request Hook"
		}
	}
	return e.delivery(connID, event, body)
}

func indexByte(s string, c byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return len(s)
}

// process runs the delivery as the worker does (Prepare, then Process) and
// fails the test on an error.
func (e *env) process(d store.Delivery) inbox.Outcome {
	e.t.Helper()
	out, err := e.processErr(d)
	if err != nil {
		e.t.Fatalf("process %s: %v", d.Event, err)
	}
	return out
}

func (e *env) processErr(d store.Delivery) (inbox.Outcome, error) {
	e.t.Helper()
	ctx := context.Background()
	p, err := e.app.Prepare(ctx, d)
	if err != nil {
		return inbox.Outcome{}, err
	}
	return e.app.Process(ctx, d, p)
}

// tasks lists the workspace's completed tasks, archived ones included.
func (e *env) tasks() []store.Task {
	e.t.Helper()
	ts, err := e.st.ListTasks(context.Background(), store.TaskPage{WorkspaceID: testWorkspace, IncludeArchived: true, Limit: 1000})
	if err != nil {
		e.t.Fatalf("list tasks: %v", err)
	}
	return ts
}

// onlyTask returns the workspace's single task.
func (e *env) onlyTask() store.Task {
	e.t.Helper()
	ts := e.tasks()
	if len(ts) != 1 {
		e.t.Fatalf("tasks = %d, want 1 (%v)", len(ts), taskIDs(ts))
	}
	return ts[0]
}

func taskIDs(ts []store.Task) []string {
	out := make([]string, 0, len(ts))
	for _, t := range ts {
		out = append(out, t.ExternalID)
	}
	return out
}

func (e *env) task(id string) store.Task {
	e.t.Helper()
	t, err := e.st.GetTask(context.Background(), id)
	if err != nil {
		e.t.Fatalf("get task %s: %v", id, err)
	}
	return t
}

// byExternalID returns the task holding ext; ok false when none does.
func (e *env) byExternalID(ext string) (store.Task, bool) {
	e.t.Helper()
	t, err := e.st.LookupTaskByExternalID(context.Background(), testWorkspace, ext)
	if errors.Is(err, store.ErrNotFound) {
		return t, false
	}
	if err != nil {
		e.t.Fatalf("lookup %s: %v", ext, err)
	}
	return t, true
}

func (e *env) associations(taskID string) []store.Association {
	e.t.Helper()
	as, err := e.st.ListAssociationsForTask(context.Background(), taskID)
	if err != nil {
		e.t.Fatalf("list associations: %v", err)
	}
	return as
}

func (e *env) projections(taskID string) []store.Projection {
	e.t.Helper()
	ps, err := e.st.ListProjectionsForTasks(context.Background(), taskID)
	if err != nil {
		e.t.Fatalf("list projections: %v", err)
	}
	return ps
}

// association returns the association of a contribution; ok false when none.
func (e *env) association(provider, connID, contributionID string) (store.Association, bool) {
	e.t.Helper()
	a, err := e.st.GetAssociation(context.Background(), provider, connID, contributionID)
	if errors.Is(err, store.ErrNotFound) {
		return a, false
	}
	if err != nil {
		e.t.Fatalf("get association: %v", err)
	}
	return a, true
}

// events counts the outbox events of a task by type.
func (e *env) events(taskID string) map[string]int {
	e.t.Helper()
	evs, err := e.st.ReadTaskEvents(context.Background(), 0, 10000)
	if err != nil {
		e.t.Fatalf("read events: %v", err)
	}
	out := map[string]int{}
	for _, ev := range evs {
		if ev.TaskID == taskID {
			out[ev.Type]++
		}
	}
	return out
}

func statusOf(o inbox.Outcome) string {
	if o.Status == "" {
		return store.DeliverySucceeded
	}
	return o.Status
}

// set returns a mutation setting m[path...] = v.
func set(v any, path ...string) func(map[string]any) {
	return func(m map[string]any) {
		for _, k := range path[:len(path)-1] {
			m = m[k].(map[string]any)
		}
		m[path[len(path)-1]] = v
	}
}
