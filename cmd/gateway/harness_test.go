package main

// The end-to-end harness: a real gateway started with the same Main as the
// binary (in-process, or as a subprocess of the built binary), a fresh
// database per test on each dialect, signed webhook posts, and API reads
// that poll with a deadline instead of sleeping.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/trackergateway/gateway/connectors"
	"github.com/trackergateway/gateway/connectors/gitea"
	"github.com/trackergateway/gateway/connectors/github"
	"github.com/trackergateway/gateway/connectors/gitlab"
	"github.com/trackergateway/gateway/connectors/jira"
	"github.com/trackergateway/gateway/connectors/linear"
	"github.com/trackergateway/gateway/internal/store/storetest"
)

// Known secrets and names of the test configuration.
const (
	testAdminToken = "e2e-admin-token-0123456789abcdef"
	githubSecret   = "e2e-github-secret"
	githubOld      = "e2e-github-secret-previous" // rotation: still accepted
	gitlabSecret   = "e2e-gitlab-secret"
	jiraSecret     = "e2e-jira-secret"
	giteaSecret    = "e2e-gitea-secret"
	linearSecret   = "e2e-linear-secret"

	testWorkspace = "eng"
	gitlabHost    = "gitlab.example.com"
	jiraSite      = "some-instance-test.atlassian.net"
	giteaHost     = "gitea.example.com"
	linearOrg     = "acme"
)

// testConfig has one workspace and one connection per provider; the
// connection IDs are the provider names. GitHub archives tasks linked to a
// merged pull request (on_merge: archive); GitLab keeps the default (none).
const testConfig = `workspaces:
  - id: eng
    name: Engineering
    task_prefix: ENG
    steps:
      - {id: backlog, name: Backlog}
      - {id: doing, name: In progress, wip_limit: 3}
connections:
  - id: github
    provider: github
    host: github.com
    workspace: eng
    step: backlog
    secrets: ["` + githubSecret + `", "` + githubOld + `"]
    on_merge: archive
  - id: gitlab
    provider: gitlab
    host: ` + gitlabHost + `
    workspace: eng
    step: backlog
    secrets: ["` + gitlabSecret + `"]
  - id: jira
    provider: jira
    host: ` + jiraSite + `
    workspace: eng
    step: backlog
    secrets: ["` + jiraSecret + `"]
  - id: gitea
    provider: gitea
    host: ` + giteaHost + `
    workspace: eng
    step: backlog
    secrets: ["` + giteaSecret + `"]
  - id: linear
    provider: linear
    host: ` + linearOrg + `
    workspace: eng
    step: backlog
    secrets: ["` + linearSecret + `"]
`

// waitTimeout bounds every poll of the API.
const waitTimeout = 60 * time.Second

var adaptersByConn = map[string]connectors.Adapter{
	"github": github.Adapter{},
	"gitlab": gitlab.Adapter{},
	"jira":   jira.Adapter{},
	"gitea":  gitea.Adapter{},
	"linear": linear.Adapter{},
}

var secretsByConn = map[string]string{"github": githubSecret, "gitlab": gitlabSecret, "jira": jiraSecret,
	"gitea": giteaSecret, "linear": linearSecret}

// noEnv is the environment Main sees in-process: nothing, so the developer's
// GATEWAY_* variables never leak into a test.
func noEnv(string) (string, bool) { return "", false }

// engBotToken is a workspace token the console and agent tool tests
// configure: it may see workspace eng only.
const engBotToken = "e2e-eng-bot-token-0123456789"

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// ---------------------------------------------------------------- databases

var dialects = []string{"sqlite", "postgres"}

// forEachDialect runs fn as parallel subtests "sqlite" and "postgres"; the
// PostgreSQL one skips visibly without GATEWAY_TEST_POSTGRES_URL.
func forEachDialect(t *testing.T, fn func(t *testing.T, dialect string)) {
	t.Helper()
	for _, d := range dialects {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			fn(t, d)
		})
	}
}

// newDatabaseURL returns the URL of a fresh database of the dialect: a
// SQLite file in t.TempDir(), or a PostgreSQL schema (dropped at cleanup)
// selected by search_path.
func newDatabaseURL(t *testing.T, dialect string) string {
	t.Helper()
	switch dialect {
	case "sqlite":
		return "sqlite:" + filepath.Join(t.TempDir(), "gateway.db")
	case "postgres":
		url := storetest.PostgresURL(t)
		return withQuery(url, "search_path", storetest.NewSchema(t, url))
	}
	t.Fatalf("unknown dialect %q", dialect)
	return ""
}

// withQuery adds key=value to a URL's query; pgx passes unknown keys such as
// search_path to the server as run-time parameters.
func withQuery(url, key, value string) string {
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	return url + sep + key + "=" + value
}

func writeConfig(t *testing.T) string {
	t.Helper()
	return writeTempFile(t, "gateway.yaml", testConfig)
}

// writeTempFile writes text to a file name in a new temporary directory,
// readable by its owner only (configurations and keys), and returns its
// path.
func writeTempFile(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// ----------------------------------------------------------------- gateway

// gateway is a running server as its clients see it.
type gateway struct {
	URL    string // http://127.0.0.1:PORT
	DBURL  string
	Config string
	client *http.Client
	logs   *logTail // its stderr, the tail
}

func newClient() *http.Client {
	return &http.Client{Timeout: 2 * time.Minute, Transport: &http.Transport{
		MaxIdleConns: 256, MaxIdleConnsPerHost: 256, IdleConnTimeout: 30 * time.Second,
	}}
}

// logTail keeps the last bytes written to it (the gateway's JSON logs), to
// show them when a test fails.
type logTail struct {
	mu     sync.Mutex
	buf    []byte
	leaked []string // secrets seen in the logs
}

const logTailBytes = 64 << 10

// secretValues must never appear in logs (docs/design.md, "Non-negotiables").
var secretValues = []string{testAdminToken, githubSecret, githubOld, gitlabSecret, jiraSecret}

// leakedSecrets returns the secrets that appear in b.
func leakedSecrets(b []byte) []string {
	var out []string
	for _, s := range secretValues {
		if bytes.Contains(b, []byte(s)) {
			out = append(out, s)
		}
	}
	return out
}

func (l *logTail) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.leaked = append(l.leaked, leakedSecrets(p)...)
	l.buf = append(l.buf, p...)
	if len(l.buf) > 2*logTailBytes {
		l.buf = append([]byte(nil), l.buf[len(l.buf)-logTailBytes:]...)
	}
	return len(p), nil
}

func (l *logTail) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buf
	if len(b) > logTailBytes {
		b = b[len(b)-logTailBytes:]
	}
	return string(b)
}

// listeningAddr parses "gateway listening on http://ADDR (database: …)".
func listeningAddr(line string) (string, bool) {
	rest, ok := strings.CutPrefix(line, "gateway listening on ")
	if !ok {
		return "", false
	}
	url, _, _ := strings.Cut(rest, " ")
	return url, strings.HasPrefix(url, "http://")
}

// scanListening reads r until the listening line and sends the URL on ch,
// then drains r so the writer never blocks.
func scanListening(r io.Reader, ch chan<- string) {
	sc := bufio.NewScanner(r)
	sent := false
	for sc.Scan() {
		if url, ok := listeningAddr(sc.Text()); ok && !sent {
			ch <- url
			sent = true
		}
	}
	_, _ = io.Copy(io.Discard, r)
}

// startGateway runs `gateway serve` in-process through Main on dbURL with the
// test configuration, on a free port; it is stopped (ctx cancelled, Main
// awaited) at cleanup.
func startGateway(t *testing.T, dbURL string, extraArgs ...string) *gateway {
	t.Helper()
	return startGatewayWith(t, context.Background(), dbURL, extraArgs...)
}

// startGatewayWith is startGateway with the values of base (such as the
// tracer provider a tracing test records spans with) in Main's context.
func startGatewayWith(t *testing.T, base context.Context, dbURL string, extraArgs ...string) *gateway {
	t.Helper()
	cfg := writeConfig(t)
	ctx, cancel := context.WithCancel(base)
	outR, outW := io.Pipe()
	logs := &logTail{}
	args := append([]string{"serve", "--listen", "127.0.0.1:0", "--database-url", dbURL, "--config", cfg,
		"--admin-token", testAdminToken}, extraArgs...)
	done := make(chan int, 1)
	go func() {
		code := Main(ctx, args, noEnv, outW, logs)
		_ = outW.Close()
		done <- code
	}()
	urls := make(chan string, 1)
	go scanListening(outR, urls)

	g := &gateway{DBURL: dbURL, Config: cfg, client: newClient(), logs: logs}
	select {
	case g.URL = <-urls:
	case code := <-done:
		cancel()
		t.Fatalf("gateway exited with code %d before listening; logs:\n%s", code, logs)
	case <-time.After(waitTimeout):
		cancel()
		t.Fatalf("gateway did not print its listening line within %s; logs:\n%s", waitTimeout, logs)
	}
	t.Cleanup(func() {
		// Close the client's idle connections first: the server's graceful
		// shutdown waits up to 5s for a connection that never sent a request.
		g.client.CloseIdleConnections()
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("gateway serve exited with code %d, want 0", code)
			}
		case <-time.After(waitTimeout):
			t.Errorf("gateway serve did not return within %s of its context being cancelled", waitTimeout)
		}
		logs.mu.Lock()
		leaked := logs.leaked
		logs.mu.Unlock()
		if len(leaked) > 0 {
			t.Errorf("the gateway logged secrets %q", leaked)
		}
		if t.Failed() {
			t.Logf("gateway logs (tail):\n%s", logs)
		}
	})
	return g
}

// ------------------------------------------------------------- subprocess

var (
	binOnce sync.Once
	binDir  string
	binPath string
	binErr  error
)

// gatewayBinary builds ./cmd/gateway once per test run.
func gatewayBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		binDir, binErr = os.MkdirTemp("", "gateway-e2e-bin-")
		if binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "gateway")
		cmd := exec.Command("go", "build", "-o", binPath, ".")
		out, err := cmd.CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatalf("build gateway binary: %v", binErr)
	}
	return binPath
}

// process is a gateway running as a subprocess of the built binary.
type process struct {
	*gateway
	name   string
	cmd    *exec.Cmd
	logs   string // log file
	urls   chan string
	exited chan struct{}
	state  *os.ProcessState // set once exited is closed
}

// subprocessEnv is the parent's environment without GATEWAY_* variables.
func subprocessEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GATEWAY_") {
			env = append(env, kv)
		}
	}
	return env
}

// startProcess runs `gateway serve` from the built binary on dbURL and waits
// for it to listen; its logs go to a file in t.TempDir(). It is stopped at
// cleanup unless killed first.
func startProcess(t *testing.T, dbURL, cfg, name string, extraArgs ...string) *process {
	t.Helper()
	p := spawnProcess(t, dbURL, cfg, name, extraArgs...)
	p.waitListening(t)
	return p
}

// spawnProcess starts the process without waiting for it to listen.
func spawnProcess(t *testing.T, dbURL, cfg, name string, extraArgs ...string) *process {
	t.Helper()
	return spawnProcessEnv(t, nil, dbURL, cfg, name, extraArgs...)
}

// spawnProcessEnv is spawnProcess with more environment variables
// (KEY=VALUE) for the process.
func spawnProcessEnv(t *testing.T, env []string, dbURL, cfg, name string, extraArgs ...string) *process {
	t.Helper()
	bin := gatewayBinary(t)
	logPath := filepath.Join(t.TempDir(), name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"serve", "--listen", "127.0.0.1:0", "--database-url", dbURL, "--config", cfg,
		"--admin-token", testAdminToken}, extraArgs...)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(subprocessEnv(), env...)
	cmd.Stderr = logFile
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	p := &process{gateway: &gateway{DBURL: dbURL, Config: cfg, client: newClient()}, name: name, cmd: cmd,
		logs: logPath, urls: make(chan string, 1), exited: make(chan struct{})}
	scanned := make(chan struct{})
	go func() { scanListening(stdout, p.urls); close(scanned) }()
	go func() {
		<-scanned // Wait closes stdout: read it to the end first
		_ = cmd.Wait()
		p.state = cmd.ProcessState
		_ = logFile.Close()
		close(p.exited)
	}()
	t.Cleanup(func() {
		p.client.CloseIdleConnections()
		p.stop(t)
		if b, err := os.ReadFile(logPath); err == nil {
			if leaked := leakedSecrets(b); len(leaked) > 0 {
				t.Errorf("%s logged secrets %q", name, leaked)
			}
		}
		if t.Failed() {
			if b, err := os.ReadFile(logPath); err == nil {
				if len(b) > logTailBytes {
					b = b[len(b)-logTailBytes:]
				}
				t.Logf("%s logs (tail):\n%s", name, b)
			}
		}
	})
	return p
}

// waitListening waits for the listening line and sets p.URL.
func (p *process) waitListening(t *testing.T) {
	t.Helper()
	select {
	case p.URL = <-p.urls:
	case <-p.exited:
		b, _ := os.ReadFile(p.logs)
		t.Fatalf("%s exited (%v) before listening; logs:\n%s", p.name, p.state, b)
	case <-time.After(waitTimeout):
		t.Fatalf("%s did not print its listening line within %s", p.name, waitTimeout)
	}
}

// stop sends SIGTERM, then SIGKILL if the process has not exited in time.
func (p *process) stop(t *testing.T) {
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		if p.state != nil && !p.state.Success() {
			t.Errorf("gateway process exited with %v after SIGTERM, want success", p.state)
		}
	case <-time.After(30 * time.Second):
		t.Errorf("gateway process did not stop within 30s of SIGTERM; killing it")
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		<-p.exited
	}
}

// ------------------------------------------------------------- webhooks

// hook is one webhook delivery as a provider sends it.
type hook struct {
	Conn  string // connection ID: github | gitlab | jira | gitea | linear
	Event string // X-GitHub-Event / X-Gitlab-Event / X-Gitea-Event; unused for Jira and Linear
	Body  []byte
	// Key is the provider's delivery ID header (X-GitHub-Delivery,
	// Idempotency-Key, X-Atlassian-Webhook-Identifier); empty: a fresh one
	// per request, as for a new delivery.
	Key string
}

// withKey returns h with a fixed delivery key.
func (h hook) withKey(key string) hook { h.Key = key; return h }

// header returns the signed headers of h, as the provider would send them.
func (h hook) header(secret string) http.Header {
	hd := http.Header{}
	switch h.Conn {
	case "github":
		hd.Set("X-GitHub-Event", h.Event)
		if h.Key != "" {
			hd.Set("X-GitHub-Delivery", h.Key)
		}
	case "gitlab":
		hd.Set("X-Gitlab-Event", h.Event)
		if h.Key != "" {
			hd.Set("Idempotency-Key", h.Key)
		}
	case "jira":
		if h.Key != "" {
			hd.Set("X-Atlassian-Webhook-Identifier", h.Key)
		}
	case "gitea":
		hd.Set("X-Gitea-Event", h.Event)
		if h.Key != "" {
			hd.Set("X-Gitea-Delivery", h.Key)
		}
	case "linear":
		if h.Key != "" {
			hd.Set("Linear-Delivery", h.Key)
		}
	}
	if a, ok := adaptersByConn[h.Conn]; ok {
		a.Sign(hd, h.Body, []byte(secret))
	}
	return hd
}

// receipt is the 202 body of a webhook post.
type receipt struct {
	DeliveryID string `json:"delivery_id"`
	Status     string `json:"status"`
}

// postWebhook posts body with header to /webhooks/{conn}; transport errors
// are returned, not fatal (the crash test expects them).
func (g *gateway) postWebhook(conn string, header http.Header, body []byte) (int, []byte, error) {
	req, err := http.NewRequest(http.MethodPost, g.URL+"/webhooks/"+conn, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := g.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return resp.StatusCode, out, err
}

// send signs and posts h, returning the status and body.
func (g *gateway) send(t *testing.T, h hook) (int, []byte) {
	t.Helper()
	if r, ok := adaptersByConn[h.Conn].(connectors.Restamper); ok {
		// Linear signs a timestamp in the body and refuses an old one.
		var err error
		if h.Body, err = r.Restamp(h.Body, time.Now()); err != nil {
			t.Fatalf("restamp: %v", err)
		}
	}
	status, body, err := g.postWebhook(h.Conn, h.header(secretsByConn[h.Conn]), h.Body)
	if err != nil {
		t.Fatalf("post webhook to %s: %v", h.Conn, err)
	}
	return status, body
}

// deliver posts h and requires a 202 receipt.
func (g *gateway) deliver(t *testing.T, h hook) receipt {
	t.Helper()
	status, body := g.send(t, h)
	if status != http.StatusAccepted {
		t.Fatalf("POST /webhooks/%s (%s) = %d %s, want 202", h.Conn, h.Event, status, body)
	}
	var r receipt
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("receipt %s: %v", body, err)
	}
	if r.DeliveryID == "" || (r.Status != "accepted" && r.Status != "duplicate") {
		t.Fatalf("receipt = %s, want a delivery_id and status accepted|duplicate", body)
	}
	return r
}

// process posts h and waits until its delivery is final.
func (g *gateway) process(t *testing.T, h hook) delivery {
	t.Helper()
	return g.waitDelivery(t, g.deliver(t, h).DeliveryID)
}

// ------------------------------------------------------------- fixtures

const fixturesDir = "../../fixtures"

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixturesDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fixtureHook builds the delivery of a fixture file ("github/issues.opened.json"):
// the connection is the folder, the GitHub event the part of the name before
// the first dot, the GitLab event the hook of the body's object_kind.
func fixtureHook(t testing.TB, name string) hook {
	t.Helper()
	return bodyHook(t, strings.Split(name, "/")[0], filepath.Base(name), readFixture(t, name))
}

func bodyHook(t testing.TB, conn, file string, body []byte) hook {
	t.Helper()
	h := hook{Conn: conn, Body: body}
	switch conn {
	case "github", "gitea":
		h.Event, _, _ = strings.Cut(file, ".")
	case "gitlab":
		var probe struct {
			ObjectKind string `json:"object_kind"`
		}
		if err := json.Unmarshal(body, &probe); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		h.Event = map[string]string{"issue": "Issue Hook", "merge_request": "Merge Request Hook"}[probe.ObjectKind]
	}
	return h
}

// mutate rewrites a JSON body (numbers kept exact).
func mutate(t testing.TB, body []byte, fn func(m map[string]any)) []byte {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("decode fixture: %v", err)
	}
	fn(m)
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// obj returns m[key] as an object, failing the test when it is not one.
func obj(t testing.TB, m map[string]any, key string) map[string]any {
	t.Helper()
	v, ok := m[key].(map[string]any)
	if !ok {
		t.Fatalf("fixture field %q is %T, want an object", key, m[key])
	}
	return v
}

// githubIssueOpened is issues.opened.json for another issue: id, number and
// title rewritten.
func githubIssueOpened(t testing.TB, id, number int64, title string) []byte {
	t.Helper()
	return mutate(t, readFixture(t, "github/issues.opened.json"), func(m map[string]any) {
		issue := obj(t, m, "issue")
		issue["id"], issue["number"], issue["title"] = id, number, title
	})
}

// ------------------------------------------------------------------ API

// apiDo performs an admin API request; body is JSON-encoded when not nil.
func (g *gateway) apiDo(t *testing.T, method, path string, body any) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, g.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testAdminToken)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := g.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return resp.StatusCode, out
}

// getJSON GETs path, requires 200 and decodes the body into out.
func (g *gateway) getJSON(t *testing.T, path string, out any) {
	t.Helper()
	status, body := g.apiDo(t, http.MethodGet, path, nil)
	if status != http.StatusOK {
		t.Fatalf("GET %s = %d %s, want 200", path, status, body)
	}
	if err := json.Unmarshal(body, out); err != nil {
		t.Fatalf("GET %s: decode %s: %v", path, body, err)
	}
}

type source struct {
	Provider string `json:"provider"`
	Kind     string `json:"kind"`
	Ref      string `json:"ref"`
	URL      string `json:"url"`
}

type task struct {
	ID             string     `json:"id"`
	WorkspaceID    string     `json:"workspace_id"`
	Identifier     string     `json:"identifier"`
	Title          string     `json:"title"`
	Description    string     `json:"description"`
	WorkflowStepID string     `json:"workflow_step_id"`
	Labels         []string   `json:"labels"`
	ArchivedAt     *time.Time `json:"archived_at"`
	ExternalID     string     `json:"external_id"`
	Source         *source    `json:"source"`
}

type outcome struct {
	TaskID     *string `json:"task_id"`
	ExternalID *string `json:"external_id"`
	Action     *string `json:"action"`
	Result     *string `json:"result"`
}

type delivery struct {
	ID          string              `json:"id"`
	Connection  string              `json:"connection"`
	Provider    string              `json:"provider"`
	Event       string              `json:"event"`
	DeliveryKey string              `json:"delivery_key"`
	Status      string              `json:"status"`
	Attempts    int                 `json:"attempts"`
	LastError   *string             `json:"last_error"`
	Outcome     *outcome            `json:"outcome"`
	Headers     map[string][]string `json:"headers"`
	Body        json.RawMessage     `json:"body"`
	TraceID     string              `json:"trace_id"`
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func (d delivery) action() string {
	return outcomeField(d, func(o *outcome) *string { return o.Action })
}
func (d delivery) taskID() string {
	return outcomeField(d, func(o *outcome) *string { return o.TaskID })
}
func (d delivery) result() string {
	return outcomeField(d, func(o *outcome) *string { return o.Result })
}

func outcomeField(d delivery, f func(*outcome) *string) string {
	if d.Outcome == nil {
		return ""
	}
	return str(f(d.Outcome))
}

func finalStatus(s string) bool {
	switch s {
	case "succeeded", "ignored", "suppressed", "failed":
		return true
	}
	return false
}

// poll calls fn until it reports done or the deadline passes.
func poll(t *testing.T, what string, timeout time.Duration, fn func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !fn() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		<-tick.C
	}
}

// getDelivery reads one delivery with its headers and body; the answer must
// not show any secret (the signature headers, GitLab's token).
func (g *gateway) getDelivery(t *testing.T, id string) delivery {
	t.Helper()
	status, body := g.apiDo(t, http.MethodGet, "/api/v1/deliveries/"+id, nil)
	if status != http.StatusOK {
		t.Fatalf("GET /api/v1/deliveries/%s = %d %s, want 200", id, status, body)
	}
	if leaked := leakedSecrets(body); len(leaked) > 0 {
		t.Errorf("GET /api/v1/deliveries/%s shows secrets %q", id, leaked)
	}
	var d delivery
	if err := json.Unmarshal(body, &d); err != nil {
		t.Fatalf("decode delivery %s: %v", body, err)
	}
	return d
}

// waitDelivery polls the delivery until its status is final.
func (g *gateway) waitDelivery(t *testing.T, id string) delivery {
	t.Helper()
	var d delivery
	poll(t, "delivery "+id+" to be processed", waitTimeout, func() bool {
		d = g.getDelivery(t, id)
		return finalStatus(d.Status)
	})
	return d
}

// deliveries lists every delivery (all pages), newest first.
func (g *gateway) deliveries(t *testing.T) []delivery {
	t.Helper()
	var all []delivery
	cursor := ""
	for {
		var page struct {
			Deliveries []delivery `json:"deliveries"`
			NextCursor string     `json:"next_cursor"`
		}
		path := "/api/v1/deliveries?limit=1000"
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		g.getJSON(t, path, &page)
		all = append(all, page.Deliveries...)
		if page.NextCursor == "" {
			return all
		}
		cursor = page.NextCursor
	}
}

// waitIdle polls the delivery list until no delivery is queued, processing
// or retrying, and returns the list.
func (g *gateway) waitIdle(t *testing.T, timeout time.Duration) []delivery {
	t.Helper()
	var all []delivery
	poll(t, "every delivery to be processed", timeout, func() bool {
		all = g.deliveries(t)
		for _, d := range all {
			if !finalStatus(d.Status) {
				return false
			}
		}
		return true
	})
	return all
}

// tasks lists every task of the test workspace, archived ones included.
func (g *gateway) tasks(t *testing.T) []task {
	t.Helper()
	return g.listTasks(t, true)
}

func (g *gateway) listTasks(t *testing.T, includeArchived bool) []task {
	t.Helper()
	var all []task
	cursor := ""
	for {
		var page struct {
			Tasks      []task `json:"tasks"`
			NextCursor string `json:"next_cursor"`
		}
		path := fmt.Sprintf("/api/v1/workspaces/%s/tasks?limit=1000&include_archived=%t", testWorkspace, includeArchived)
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		g.getJSON(t, path, &page)
		all = append(all, page.Tasks...)
		if page.NextCursor == "" {
			return all
		}
		cursor = page.NextCursor
	}
}

// onlyTask requires exactly one task in the workspace and returns it.
func (g *gateway) onlyTask(t *testing.T) task {
	t.Helper()
	ts := g.tasks(t)
	if len(ts) != 1 {
		t.Fatalf("workspace has %d tasks (%v), want exactly 1", len(ts), taskSummaries(ts))
	}
	return ts[0]
}

func taskSummaries(ts []task) []string {
	out := make([]string, 0, len(ts))
	for _, tk := range ts {
		out = append(out, tk.Identifier+" "+tk.ExternalID+" "+tk.Title)
	}
	return out
}

// getTask reads a task by ID; ok is false on 404.
func (g *gateway) getTask(t *testing.T, id string) (task, bool) {
	t.Helper()
	status, body := g.apiDo(t, http.MethodGet, "/api/v1/tasks/"+id, nil)
	switch status {
	case http.StatusOK:
		var tk task
		if err := json.Unmarshal(body, &tk); err != nil {
			t.Fatalf("decode task %s: %v", body, err)
		}
		return tk, true
	case http.StatusNotFound:
		return task{}, false
	}
	t.Fatalf("GET /api/v1/tasks/%s = %d %s", id, status, body)
	return task{}, false
}

type suppression struct {
	WorkspaceID string `json:"workspace_id"`
	ExternalID  string `json:"external_id"`
	TaskID      string `json:"task_id"`
	Reason      string `json:"reason"`
}

func (g *gateway) suppressions(t *testing.T) []suppression {
	t.Helper()
	var page struct {
		Suppressions []suppression `json:"suppressions"`
	}
	g.getJSON(t, "/api/v1/suppressions?limit=1000", &page)
	return page.Suppressions
}

type contribution struct {
	Provider   string     `json:"provider"`
	Kind       string     `json:"kind"`
	Repository string     `json:"repository"`
	Number     int64      `json:"number"`
	URL        string     `json:"url"`
	Title      string     `json:"title"`
	State      string     `json:"state"`
	MergedAt   *time.Time `json:"merged_at"`
	HeadBranch string     `json:"head_branch"`
	BaseBranch string     `json:"base_branch"`
	HeadSHA    string     `json:"head_sha"`
	Author     string     `json:"author"`
}

func (g *gateway) contributions(t *testing.T, taskID string) []contribution {
	t.Helper()
	var out struct {
		Contributions []contribution `json:"contributions"`
	}
	g.getJSON(t, "/api/v1/tasks/"+taskID+"/contributions", &out)
	return out.Contributions
}
