package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trackergateway/gateway/internal/config"
	"github.com/trackergateway/gateway/internal/console"
	"github.com/trackergateway/gateway/internal/failure"
	"github.com/trackergateway/gateway/internal/recovery"
	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/store/sqlstore"
	"github.com/trackergateway/gateway/internal/store/storetest"
)

// fakeRecovery stands for recovery.Recoverer: gh can be recovered, gl has
// no api_token. It answers what the test set and records the runs asked.
type fakeRecovery struct {
	mu       sync.Mutex
	hooks    []recovery.HookState
	hooksErr error
	result   recovery.Result
	runs     []recovery.Options
	// bounded: every read of the hooks had a deadline at most
	// hooksTimeout away.
	bounded, unbounded int
}

var errNoToken = failure.New(failure.Invalid, `connection "gl": recovery needs api_token and hooks, or an app, in its configuration (it has no api_token)`)

func (f *fakeRecovery) Recoverable(id string) error {
	if id == "gl" {
		return errNoToken
	}
	return nil
}

func (f *fakeRecovery) WindowHint(id string) string { return "the window of " + id }

func (f *fakeRecovery) Hooks(ctx context.Context, id string) ([]recovery.HookState, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) <= 10*time.Second {
		f.bounded++
	} else {
		f.unbounded++
	}
	return slices.Clone(f.hooks), f.hooksErr
}

func (f *fakeRecovery) Recover(ctx context.Context, id string, opts recovery.Options) (recovery.Result, error) {
	if err := f.Recoverable(id); err != nil {
		return recovery.Result{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.runs = append(f.runs, opts)
	return f.result, nil
}

func (f *fakeRecovery) asked() []recovery.Options {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.runs)
}

// section is the part of the missed deliveries page about one connection.
func section(t *testing.T, body, id string) string {
	t.Helper()
	_, rest, ok := strings.Cut(body, `<section class="card" id="recover-`+id+`"`)
	if !ok {
		t.Fatalf("the page has no section for %s", id)
	}
	if i := strings.Index(rest, `<section class="card" id="recover-`); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

// Each hook's state as the provider gave it; a hook it does not deliver
// through stands out, and a connection recovery cannot run for says why.
func TestRecoverPage(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		code200, code503 := 200, 503
		until := start.Add(2 * time.Hour)
		fake := &fakeRecovery{hooks: []recovery.HookState{
			{Kind: "repository", Owner: "acme/api", ID: 11, Active: true, Events: []string{"issues", "pull_request"},
				LastResponse: &recovery.LastResponse{Code: &code200, Status: "active", Message: "OK"}},
			{Kind: "repository", Owner: "acme/old", ID: 12, Events: []string{"issues"},
				LastResponse: &recovery.LastResponse{Code: &code503, Status: "failed", Message: "Service Unavailable"}},
			{Kind: "project", Owner: "acme/web", ID: 21, Events: []string{"issues_events"}, AlertStatus: "temporarily_disabled", DisabledUntil: &until},
			{Kind: "group", Owner: "acme", ID: 22, Events: []string{"merge_requests_events"}, AlertStatus: "disabled"},
			{Kind: "repository", Owner: "acme/gone", ID: 13, Events: []string{}, Error: "GET .../hooks/13: 404 Not Found"},
		}}
		e := newEnvWithRecovery(t, st, func(func() time.Time) console.Recovery { return fake })
		b := e.login(t, adminToken)
		res := b.get(t, "/ui/recover")
		if res.status != http.StatusOK {
			t.Fatalf("GET /ui/recover = %d", res.status)
		}
		wantIn(t, "the page", res.body, []string{`<a href="/ui/recover" aria-current="page">Missed deliveries</a>`, "<h1>Missed deliveries</h1>"}, nil)
		gh := section(t, res.body, "gh")
		wantIn(t, "gh's section", gh, []string{
			// The dry run's form, with the default window.
			`name="connection" value="gh"`, `name="dry_run" value="true"`, `name="since" value="24h"`, `name="csrf" value="` + b.csrf + `"`,
			"Find missed deliveries (dry run)",
			// The hooks, their events and last responses.
			"repository <code>acme/api</code> hook <code>11</code>", `<span class="status s-succeeded">active</span>`,
			"<code>issues</code>, <code>pull_request</code>", "200 active <span class=\"muted\">OK</span>",
			// Off: GitHub's switched-off hook, GitLab's disabled ones and
			// until when, each marked.
			"The provider does not deliver through 3 hooks of this connection",
			`<span class="status s-failed">switched off</span>`, "503 failed",
			`<span class="status s-failed">temporarily disabled</span> until <time datetime="2026-03-04T12:30:15Z"`, "in 2h",
			`<span class="status s-failed">disabled</span>`,
			// A hook whose state could not be read says why.
			"not read: GET .../hooks/13: 404 Not Found",
		}, []string{"No recovery for this connection"})
		if n := strings.Count(gh, `class="hook-off"`); n != 3 {
			t.Errorf("%d hooks marked off, want 3", n)
		}
		wantIn(t, "gl's section", section(t, res.body, "gl"), []string{"No recovery for this connection",
			"it has no api_token", "docs/providers.md"}, []string{"<form", "Hooks"})
		if runs := fake.asked(); len(runs) != 0 {
			t.Errorf("showing the page ran recovery %d times", len(runs))
		}

		// Hooks that cannot be read at all, or not in time: the page says
		// so, and still offers the dry run.
		for _, tt := range []struct {
			err  error
			want string
		}{
			{failure.New(failure.Invalid, "connection \"gh\" api: bad api_url"), "The hooks' state could not be read: connection \"gh\" api: bad api_url"},
			{context.DeadlineExceeded, "The hooks' state could not be read: the provider did not answer within 10s"},
		} {
			fake.mu.Lock()
			fake.hooks, fake.hooksErr = nil, tt.err
			fake.mu.Unlock()
			wantIn(t, "gh's section without hooks", section(t, b.get(t, "/ui/recover").body, "gh"),
				[]string{tt.want, "Find missed deliveries (dry run)"}, []string{"<table class=\"list hooks\">"})
		}
		fake.mu.Lock()
		defer fake.mu.Unlock()
		if fake.bounded != 3 || fake.unbounded != 0 {
			t.Errorf("the hooks were read %d times within 10s and %d times without that bound, want 3 and 0", fake.bounded, fake.unbounded)
		}
	})
}

// A run's answer as recovery gave it: what it could not finish, the
// requests the provider refused with their errors; and what was asked.
func TestRecoverShowsTheRun(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		fake := &fakeRecovery{result: recovery.Result{Checked: 3, Missing: 2, Redelivered: new(1), Deliveries: []recovery.Delivery{
			{GUID: "guid-accepted", HookID: 11, DeliveryID: 905, Event: "issues", Action: "opened", DeliveredAt: start.Add(-5 * time.Minute),
				StatusCode: 503, Redelivered: new(true), Request: store.RedeliveryAccepted},
			{GUID: "guid-refused", HookID: 11, DeliveryID: 904, Event: "push", DeliveredAt: start.Add(-3 * time.Hour),
				Request: store.RedeliveryFailed, Error: "422 Validation Failed"},
		}, Unfinished: []recovery.Unfinished{{Hook: "repository acme/old hook 12", HookID: 12, Reason: recovery.StopProviderError,
			Error: "list deliveries: 404 Not Found"}}}}
		e := newEnvWithRecovery(t, st, func(func() time.Time) console.Recovery { return fake })
		b := e.login(t, adminToken)
		b.get(t, "/ui/recover")
		res := b.post(t, "/ui/recover", url.Values{"connection": {"gh"}, "since": {"6h"}, "dry_run": {"false"}})
		if res.status != http.StatusOK {
			t.Fatalf("confirm = %d, want 200 with the run's answer; body:\n%s", res.status, res.body)
		}
		wantIn(t, "the run", section(t, res.body, "gh"), []string{
			"Recovery over the last 6h", "Asked the provider to redeliver <strong>1</strong> delivery; <strong>3</strong> checked, <strong>2</strong> missing.",
			"The run did not finish:", "repository acme/old hook 12: list deliveries: 404 Not Found", "(provider_error)", "Run it again, or over a shorter window",
			"<code>guid-accepted</code>", "<code>issues.opened</code>", "2026-03-04 10:25:15 UTC", "5m ago", `<span class="status s-accepted">accepted</span>`,
			"<code>guid-refused</code>", "<code>push</code>", "no response", `<span class="status s-failed">failed</span> <span class="error-text">422 Validation Failed</span>`,
			`name="since" value="6h"`,
		}, []string{"Would redeliver", `name="dry_run" value="false"`})
		want := []recovery.Options{{Since: 6 * time.Hour}}
		if got := fake.asked(); !slices.Equal(got, want) {
			t.Errorf("runs asked %+v, want %+v", got, want)
		}
	})
}

// ghHook is the test GitHub's one hook: repository acme/api, hook 11.
const ghHook = "repos/acme/api/hooks/11"

const ghToken = "ghp_console_test_0123456789"

// fakeGitHub answers as GitHub's hook API does for one hook (the shapes of
// internal/recovery's fakes): its deliveries newest first, redelivery
// requests with 202, recorded, and the hook itself.
type fakeGitHub struct {
	srv         *httptest.Server
	mu          sync.Mutex
	deliveries  []map[string]any
	redelivered []string
	requests    int
}

func newFakeGitHub(t *testing.T) *fakeGitHub {
	f := &fakeGitHub{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.requests++
		f.mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer "+ghToken {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"message":"Bad credentials"}`)
			return
		}
		path := strings.TrimPrefix(r.URL.Path, "/")
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodGet && path == ghHook+"/deliveries":
			f.mu.Lock()
			_ = json.NewEncoder(w).Encode(f.deliveries)
			f.mu.Unlock()
		case r.Method == http.MethodPost && strings.HasPrefix(path, ghHook+"/deliveries/") && strings.HasSuffix(path, "/attempts"):
			f.mu.Lock()
			f.redelivered = append(f.redelivered, strings.TrimPrefix(path, ghHook+"/"))
			f.mu.Unlock()
			w.WriteHeader(http.StatusAccepted)
			_, _ = io.WriteString(w, `{}`)
		case r.Method == http.MethodGet && path == ghHook:
			_, _ = fmt.Fprintf(w, `{"type":"Repository","id":11,"name":"web","active":true,"events":["issues","pull_request"],
				"config":{"content_type":"json","url":"https://gateway.example.com/webhooks/gh"},
				"last_response":{"code":503,"status":"failed","message":"Service Unavailable"}}`)
		default:
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"message":"Not Found"}`)
		}
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// deliver adds an attempt of guid ago before start, answered with code
// (0: none came); tests add them newest first.
func (f *fakeGitHub) deliver(id int64, guid string, ago time.Duration, code int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deliveries = append(f.deliveries, map[string]any{"id": id, "guid": guid, "delivered_at": start.Add(-ago).Format(time.RFC3339),
		"redelivery": false, "duration": 0.3, "status": "failed", "status_code": code, "event": "issues", "action": "opened",
		"repository_id": 1296269})
}

func (f *fakeGitHub) asked() ([]string, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := slices.Clone(f.redelivered)
	slices.Sort(out)
	return out, f.requests
}

// newRecoveryEnv is the console over the real recovery: gh is a GitHub
// connection with the fake's hook, gl a GitLab one without api_token.
func newRecoveryEnv(t *testing.T, st *sqlstore.Store, gh *fakeGitHub) *env {
	t.Helper()
	conns := map[string]config.Connection{
		"gh": {ID: "gh", Provider: "github", Host: "github.com", APIToken: ghToken, APIURL: gh.srv.URL + "/",
			Hooks: []config.Hook{{Repository: "acme/api", ID: 11}}},
		"gl": {ID: "gl", Provider: "gitlab", Host: "gitlab.com", Hooks: []config.Hook{{Project: "acme/web", ID: 21}}},
	}
	return newEnvWithRecovery(t, st, func(now func() time.Time) console.Recovery {
		return recovery.New(st, func(id string) (config.Connection, bool) { c, ok := conns[id]; return c, ok },
			slog.New(slog.DiscardHandler), now)
	})
}

// The dry run lists what is missing and asks nothing; confirming asks
// the provider for exactly the missing deliveries, once however often it
// is posted.
func TestRecoverDryRunThenConfirm(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		gh := newFakeGitHub(t)
		gh.deliver(105, "guid-missing-1", 10*time.Minute, 503)
		gh.deliver(104, "guid-ok", 20*time.Minute, 202)
		gh.deliver(103, "guid-held", 30*time.Minute, 502)
		gh.deliver(102, "guid-missing-2", 40*time.Minute, 0)
		gh.deliver(101, "guid-missing-1", 50*time.Minute, 503)
		gh.deliver(100, "guid-too-old", 30*time.Hour, 500)
		e := newRecoveryEnv(t, st, gh)
		// The gateway committed guid-held although GitHub saw it fail.
		e.seedDelivery(t, "gh", "11:guid-held", 30*time.Minute, store.DeliverySucceeded, "")
		b := e.login(t, adminToken)

		res := b.get(t, "/ui/recover")
		wantIn(t, "the page", section(t, res.body, "gh"), []string{`<span class="status s-succeeded">active</span>`,
			"503 failed <span class=\"muted\">Service Unavailable</span>"}, []string{"hook-off"})
		wantIn(t, "the page", section(t, res.body, "gl"), []string{"it has no api_token"}, nil)

		res = b.post(t, "/ui/recover", url.Values{"connection": {"gh"}, "since": {"24h"}, "dry_run": {"true"}})
		if res.status != http.StatusOK {
			t.Fatalf("dry run = %d; body:\n%s", res.status, res.body)
		}
		wantIn(t, "the dry run", section(t, res.body, "gh"), []string{
			"Dry run over the last 24h",
			"<strong>4</strong> deliveries checked; <strong>2</strong> missing, of which <strong>2</strong> would be redelivered now.",
			"<code>guid-missing-1</code>", "<code>guid-missing-2</code>", "<code>issues.opened</code>", "<code>11</code>",
			"2026-03-04 10:20:15 UTC", "10m ago", `<td class="num">503</td>`, "no response", "Would redeliver", "<td>yes</td>",
			`name="dry_run" value="false"`, `name="since" value="24h"`, "Redeliver 2 deliveries",
		}, []string{"guid-ok", "guid-held", "guid-too-old", "<td>no</td>"})
		if asked, requests := gh.asked(); len(asked) != 0 || requests == 0 {
			t.Fatalf("the dry run asked for %v (%d requests), want nothing asked but the deliveries read", asked, requests)
		}

		want := []string{"deliveries/102/attempts", "deliveries/105/attempts"}
		for i := range 2 {
			res = b.post(t, "/ui/recover", url.Values{"connection": {"gh"}, "since": {"24h"}, "dry_run": {"false"}})
			if res.status != http.StatusOK {
				t.Fatalf("confirm %d = %d; body:\n%s", i+1, res.status, res.body)
			}
			redelivered := []string{"2", "0"}[i]
			wantIn(t, fmt.Sprintf("confirmation %d", i+1), section(t, res.body, "gh"), []string{
				"Recovery over the last 24h", "Asked the provider to redeliver <strong>" + redelivered + "</strong> deliveries",
				"<code>guid-missing-1</code>", "<code>guid-missing-2</code>", `<span class="status s-accepted">accepted</span>`,
			}, []string{"Would redeliver", `name="dry_run" value="false"`})
			if asked, _ := gh.asked(); !slices.Equal(asked, want) {
				t.Errorf("after confirmation %d the provider was asked for %v, want %v", i+1, asked, want)
			}
		}
		// A dry run now says they were asked for already.
		res = b.post(t, "/ui/recover", url.Values{"connection": {"gh"}, "since": {"24h"}, "dry_run": {"true"}})
		wantIn(t, "the dry run after", section(t, res.body, "gh"), []string{
			"<strong>0</strong> would be redelivered now (the others were asked for before)"}, []string{"Redeliver 0"})
	})
}

// Posts that ask nothing: a bad window, a connection recovery cannot run
// for, one that does not exist, no dry_run, no CSRF token, a workspace
// token.
func TestRecoverRefusals(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		gh := newFakeGitHub(t)
		gh.deliver(105, "guid-missing", 10*time.Minute, 503)
		e := newRecoveryEnv(t, st, gh)
		admin := e.login(t, adminToken)
		admin.get(t, "/ui/recover")
		_, read := gh.asked()

		tests := []struct {
			name   string
			form   url.Values
			status int
			want   []string
		}{
			{"beyond three days", url.Values{"connection": {"gh"}, "since": {"96h"}, "dry_run": {"false"}}, http.StatusBadRequest,
				[]string{"since must be positive and at most 72h", `name="since" value="96h"`}},
			{"not a duration", url.Values{"connection": {"gh"}, "since": {"yesterday"}, "dry_run": {"false"}}, http.StatusBadRequest,
				[]string{`since "yesterday" is not a duration (e.g. 24h)`}},
			{"not configured", url.Values{"connection": {"gl"}, "dry_run": {"false"}}, http.StatusBadRequest,
				[]string{"it has no api_token"}},
			{"unknown connection", url.Values{"connection": {"nope"}, "dry_run": {"false"}}, http.StatusNotFound,
				[]string{"connection not found"}},
			{"no dry_run", url.Values{"connection": {"gh"}}, http.StatusBadRequest, []string{"dry_run must be true or false"}},
		}
		for _, tt := range tests {
			res := admin.post(t, "/ui/recover", tt.form)
			if res.status != tt.status {
				t.Errorf("%s: status %d, want %d", tt.name, res.status, tt.status)
			}
			wantIn(t, tt.name, res.body, tt.want, nil)
		}

		confirm := url.Values{"connection": {"gh"}, "dry_run": {"false"}}
		if res := e.do(t, admin, http.MethodPost, "/ui/recover", confirm, nil); res.status != http.StatusForbidden {
			t.Errorf("a confirmation without csrf = %d, want 403", res.status)
		}
		eng := e.login(t, engToken)
		if res := eng.get(t, "/ui/recover"); res.status != http.StatusNotFound || strings.Contains(res.body, "Missed deliveries") {
			t.Errorf("GET /ui/recover with a workspace token = %d, want 404", res.status)
		}
		if res := eng.post(t, "/ui/recover", confirm); res.status != http.StatusNotFound {
			t.Errorf("POST /ui/recover with a workspace token = %d, want 404", res.status)
		}
		// The refused posts read nothing at the provider either (the
		// 400s' pages read the hook again, nothing more).
		if asked, requests := gh.asked(); len(asked) != 0 || requests > read+3 {
			t.Errorf("the refused posts asked for %v and made %d requests, want none asked and only the hook read", asked, requests-read)
		}
	})
}

// The form says why its window is at most 72h in the terms of the
// connection's provider (recovery.Recoverer.WindowHint): GitHub's three
// days for a GitHub connection, not for the others.
func TestRecoverFormSaysTheProvidersWindow(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		res := newEnv(t, st).login(t, adminToken).get(t, "/ui/recover")
		wantIn(t, "the form", section(t, res.body, "gh"), []string{"30m, 6h, 72h (the window of gh)."}, []string{"GitHub keeps"})

		gh := newFakeGitHub(t)
		res = newRecoveryEnv(t, st, gh).login(t, adminToken).get(t, "/ui/recover")
		wantIn(t, "the form of a GitHub connection", section(t, res.body, "gh"),
			[]string{"30m, 6h, 72h (GitHub keeps three days of hook deliveries)."}, nil)
	})
}
