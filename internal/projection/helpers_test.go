package projection

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/trackergateway/gateway/connectors/providers"
	"github.com/trackergateway/gateway/internal/config"
	"github.com/trackergateway/gateway/internal/idempotency"
	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/store/sqlstore"
	"github.com/trackergateway/gateway/internal/store/storetest"
)

const (
	testWorkspace = "ws"
	githubToken   = "ghp_0123456789abcdefTOKENgithub"
	gitlabToken   = "glpat-0123456789TOKENgitlab"

	// The pull request of fixtures/github/pull_request.*.json and the merge
	// request of fixtures/gitlab/merge_request.json.
	ghRepo   = "Codertocat/Hello-World"
	ghNumber = 2
	ghPRID   = 279147437
	glRepo   = "gitlabhq/gitlab-test"
	glIID    = 1
	glMRID   = 99

	ghPath = "/repos/Codertocat/Hello-World/pulls/2"
	glPath = "/api/v4/projects/gitlabhq%2Fgitlab-test/merge_requests/1"
)

// reply is one scripted answer of the fake API.
type reply struct {
	status int
	header map[string]string
	body   string
}

// apiRequest is what the fake API saw.
type apiRequest struct {
	method        string
	path          string // escaped
	authorization string
	privateToken  string
}

// fakeAPI answers like the GitHub and GitLab REST APIs: each path has a
// script of replies, played in order; the last one repeats.
type fakeAPI struct {
	t        testing.TB
	srv      *httptest.Server
	mu       sync.Mutex
	scripts  map[string][]reply
	requests []apiRequest
}

func newFakeAPI(t testing.TB) *fakeAPI {
	f := &fakeAPI{t: t, scripts: map[string][]reply{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	path := r.URL.EscapedPath()
	f.requests = append(f.requests, apiRequest{method: r.Method, path: path, authorization: r.Header.Get("Authorization"),
		privateToken: r.Header.Get("PRIVATE-TOKEN")})
	script := f.scripts[path]
	var rep reply
	switch len(script) {
	case 0:
		rep = reply{status: http.StatusNotFound, body: `{"message":"Not Found"}`}
	case 1:
		rep = script[0]
	default:
		rep, f.scripts[path] = script[0], script[1:]
	}
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	for k, v := range rep.header {
		w.Header().Set(k, v)
	}
	w.WriteHeader(rep.status)
	_, _ = w.Write([]byte(rep.body))
}

// script sets the replies of path.
func (f *fakeAPI) script(path string, replies ...reply) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.scripts[path] = replies
}

func (f *fakeAPI) calls() []apiRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]apiRequest(nil), f.requests...)
}

// githubPull is GitHub's answer for the pull request: the recorded pull
// request representation of the merged fixture, with edits.
func githubPull(t testing.TB, edit func(pr map[string]any)) string {
	t.Helper()
	var payload map[string]any
	readJSON(t, filepath.Join("..", "..", "fixtures", "github", "pull_request.closed.merged.json"), &payload)
	pr := payload["pull_request"].(map[string]any)
	if edit != nil {
		edit(pr)
	}
	return mustJSON(t, pr)
}

// gitlabMR is GitLab's recorded answer for a merge request (client-go's
// testdata), as the merge request of the fixtures, with edits.
func gitlabMR(t testing.TB, edit func(mr map[string]any)) string {
	t.Helper()
	var mr map[string]any
	readJSON(t, filepath.Join("testdata", "gitlab_get_merge_request.json"), &mr)
	mr["id"], mr["iid"] = glMRID, glIID
	if edit != nil {
		edit(mr)
	}
	return mustJSON(t, mr)
}

func readJSON(t testing.TB, path string, v any) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("decode %s: %v", path, err)
	}
}

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func ok(body string) reply { return reply{status: http.StatusOK, body: body} }

// env is a projector over a real store, with tasks created through the real
// coordinator.
type env struct {
	t     *testing.T
	st    *sqlstore.Store
	clock *storetest.Clock
	coord *idempotency.Coordinator
	api   *fakeAPI
	conns map[string]config.Connection
	proj  *Projector
}

func newEnv(t *testing.T, st *sqlstore.Store) *env {
	t.Helper()
	storetest.SeedWorkspace(t, st, testWorkspace)
	e := &env{t: t, st: st, clock: storetest.NewClock(time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC), 0), api: newFakeAPI(t)}
	e.conns = map[string]config.Connection{
		"gh-main": {ID: "gh-main", Provider: "github", Host: "github.com", Workspace: testWorkspace, Step: "backlog",
			APIToken: githubToken, APIURL: e.api.srv.URL + "/"},
		"gl-main": {ID: "gl-main", Provider: "gitlab", Host: "gitlab.example.com", Workspace: testWorkspace, Step: "backlog",
			APIToken: gitlabToken, APIURL: e.api.srv.URL + "/api/v4"},
		"gh-payload-only": {ID: "gh-payload-only", Provider: "github", Host: "github.com", Workspace: testWorkspace, Step: "backlog",
			APIURL: e.api.srv.URL + "/"},
		"gl-payload-only": {ID: "gl-payload-only", Provider: "gitlab", Host: "gitlab.example.com", Workspace: testWorkspace, Step: "backlog",
			APIURL: e.api.srv.URL + "/api/v4"},
	}
	logger := slog.New(slog.DiscardHandler)
	e.coord = idempotency.New(st, logger, e.clock.Now, providers.ContributionKinds())
	e.proj = New(st, func(id string) (config.Connection, bool) {
		c, ok := e.conns[id]
		return c, ok
	}, logger, e.clock.Now)
	e.proj.HTTPClient = e.api.srv.Client()
	return e
}

// contribution describes the PR/MR of one provider's fixtures.
type contribution struct {
	provider, kind, repo string
	number, id           int64
	path                 string
}

var (
	githubPR  = contribution{"github", "pull_request", ghRepo, ghNumber, ghPRID, ghPath}
	gitlabMRc = contribution{"gitlab", "merge_request", glRepo, glIID, glMRID, glPath}
)

// createTask creates the task of a PR/MR through the coordinator, with its
// remote_contribution_associate step (task.created lands in the outbox).
func (e *env) createTask(c contribution, connID string) store.Task {
	e.t.Helper()
	ext := c.provider + ":host:" + c.kind + ":" + strconv.FormatInt(c.id, 10)
	res, err := e.coord.Create(context.Background(), idempotency.CreateRequest{WorkspaceID: testWorkspace, ExternalID: ext,
		Title: "PR task", WorkflowStepID: "backlog", OwnerConnection: connID,
		Contributions: []idempotency.RemoteContributionRequest{{Provider: c.provider, RepositoryID: c.repo,
			ContributionKind: c.kind, ContributionID: strconv.FormatInt(c.id, 10), ConnectionID: connID}},
		Actor: idempotency.Actor{Kind: "connection", ID: connID, AuthMode: "webhook_signature"}})
	if err != nil {
		e.t.Fatalf("create task: %v", err)
	}
	if res.Outcome != idempotency.Created {
		e.t.Fatalf("create outcome = %v, want Created", res.Outcome)
	}
	return res.Task
}

// payloadRow is the row the webhook payload gives (what the ingest service writes):
// the opened pull request / open merge request, never synced.
func payloadRow(c contribution, taskID, connID string) store.Projection {
	p := store.Projection{Provider: c.provider, TaskID: taskID, ConnectionID: connID, ProviderID: c.id,
		Repository: c.repo, Number: c.number, State: "open"}
	switch c.provider {
	case "github":
		u := time.Date(2019, 5, 15, 15, 20, 33, 0, time.UTC)
		p.URL, p.Title, p.HeadBranch, p.BaseBranch = "https://github.com/Codertocat/Hello-World/pull/2", "Update the README with new information.", "changes", "master"
		p.HeadSHA, p.Author, p.ProviderUpdatedAt = "ec26c3e57ca3a959ca5aad62de7213c562f8c821", "Codertocat", &u
	case "gitlab":
		u := time.Date(2013, 12, 3, 17, 23, 34, 0, time.UTC)
		p.URL, p.Title, p.HeadBranch, p.BaseBranch = "http://example.com/diaspora/merge_requests/1", "MS-Viewport", "ms-viewport", "master"
		p.HeadSHA, p.ProviderUpdatedAt = "da1560886d4f094c3e6c9ef40349f7d38b5d27d7", &u
	}
	return p
}

func (e *env) upsert(p store.Projection) {
	e.t.Helper()
	if err := e.st.UpsertProjection(context.Background(), p); err != nil {
		e.t.Fatalf("upsert projection: %v", err)
	}
}

func (e *env) runOnce() {
	e.t.Helper()
	if err := e.proj.RunOnce(context.Background()); err != nil {
		e.t.Fatalf("run once: %v", err)
	}
}

// row returns the task's only projection row.
func (e *env) row(taskID string) store.Projection {
	e.t.Helper()
	rows, err := e.st.ListProjectionsForTasks(context.Background(), taskID)
	if err != nil {
		e.t.Fatalf("list projections: %v", err)
	}
	if len(rows) != 1 {
		e.t.Fatalf("projection rows = %d, want 1: %+v", len(rows), rows)
	}
	return rows[0]
}

func (e *env) rows(taskID string) []store.Projection {
	e.t.Helper()
	rows, err := e.st.ListProjectionsForTasks(context.Background(), taskID)
	if err != nil {
		e.t.Fatalf("list projections: %v", err)
	}
	return rows
}

func timeEq(a *time.Time, b time.Time) bool { return a != nil && a.Equal(b) }
