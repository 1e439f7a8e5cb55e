package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trackergateway/gateway/internal/providerapi/githubapptest"
)

// testAppID is the GitHub App of the App connection in the tests.
const testAppID = 4242

// appConfig is the test configuration plus a GitHub App connection "gh-app"
// in the same workspace as the github connection, its API at apiURL, its
// key in keyFile.
func appConfig(t *testing.T, apiURL, keyFile string) string {
	t.Helper()
	cfg := testConfig + fmt.Sprintf(`  - id: gh-app
    provider: github
    host: github.com
    workspace: eng
    step: backlog
    secrets: ["%s"]
    api_url: %s/
    app: {id: %d, private_key_file: %s}
`, githubAppSecret, apiURL, testAppID, keyFile)
	return writeTempFile(t, "app.yaml", cfg)
}

// githubAppSecret is the App's webhook secret.
const githubAppSecret = "e2e-github-app-webhook-secret"

func writeKeyFile(t *testing.T, text string) string {
	t.Helper()
	return writeTempFile(t, "app.pem", text)
}

// A key that does not load stops the start before anything is generated,
// with an error that names the connection and the problem, never the key.
func TestAppKeyErrorsStopTheStart(t *testing.T) {
	t.Parallel()
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ecDER, err := x509.MarshalPKCS8PrivateKey(ec)
	if err != nil {
		t.Fatal(err)
	}
	ecPEM := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: ecDER}))
	tests := []struct {
		name, keyFile string
		want          string
	}{
		{"missing", filepath.Join(t.TempDir(), "absent.pem"), "no such file or directory"},
		{"not PEM", writeKeyFile(t, "ghp_not_a_key\n"), "not a PEM private key"},
		{"not RSA", writeKeyFile(t, ecPEM), "ECDSA key, not RSA"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out, errOut bytes.Buffer
			code := Main(context.Background(), []string{"serve", "--listen", "127.0.0.1:0", "--database-url", newDatabaseURL(t, "sqlite"),
				"--config", appConfig(t, "http://127.0.0.1:1", tc.keyFile)}, noEnv, &out, &errOut)
			if code == 0 {
				t.Fatalf("serve started with a bad App key; stdout %q", out.String())
			}
			for _, want := range []string{`connection "gh-app"`, "private_key_file", tc.want} {
				if !strings.Contains(errOut.String(), want) {
					t.Errorf("stderr %q does not contain %q", errOut.String(), want)
				}
			}
			if strings.Contains(out.String(), "generated") {
				t.Errorf("a start refused for its App key printed one-time secrets: %q", out.String())
			}
			if strings.Contains(errOut.String(), "MII") {
				t.Errorf("stderr quotes key material: %q", errOut.String())
			}
		})
	}
}

// An App GitHub refuses is logged at start-up, naming the connection; the
// key is never logged.
func TestRefusedAppIsLoggedAtStart(t *testing.T) {
	t.Parallel()
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"message": "Integration not found"}`)
	}))
	t.Cleanup(api.Close)
	keyPEM := githubapptest.KeyPEM()
	cfg := appConfig(t, api.URL, writeKeyFile(t, keyPEM))
	logs := startGateway(t, newDatabaseURL(t, "sqlite"), "--config", cfg).logs
	poll(t, "the refused App's log line", waitTimeout, func() bool {
		s := logs.String()
		return strings.Contains(s, `"msg":"github app not usable"`) && strings.Contains(s, `"connection":"gh-app"`) &&
			strings.Contains(s, "GitHub refused App 4242")
	})
	body := strings.Split(keyPEM, "\n")[3]
	if strings.Contains(logs.String(), body) {
		t.Error("the logs quote the App's private key")
	}
}

// appGitHub is GitHub's side of the test App: every /app request must
// carry a JWT signed with the App's key (RS256, iss = the App ID, expiring
// within ten minutes), installation tokens are issued for it, and the
// repository API takes only an installation token. It keeps the App
// hook's deliveries; a redelivery posts the delivery again to the gateway,
// signed with the App's secret and carrying the App hook's ID, as GitHub
// does.
type appGitHub struct {
	srv *httptest.Server

	mu         sync.Mutex
	gateway    string
	deliveries []map[string]any // newest first
	bodies     map[int64][]byte
	redelivers int
	tokens     int      // installation tokens issued
	refused    []string // why requests were refused
}

// appHookID is the App's hook, as its deliveries name it.
const appHookID = 9090

func newAppGitHub(t *testing.T) *appGitHub {
	a := &appGitHub{bodies: map[int64][]byte{}}
	mux := http.NewServeMux()
	app := func(h http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			a.mu.Lock()
			defer a.mu.Unlock()
			if err := githubapptest.CheckJWT(r.Header.Get("Authorization"), testAppID); err != nil {
				a.refused = append(a.refused, r.URL.Path+": "+err.Error())
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			h(w, r)
		}
	}
	mux.HandleFunc("GET /app", app(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"id": %d, "slug": "tracker-gateway-test", "events": ["issues", "pull_request"]}`, testAppID)
	}))
	mux.HandleFunc("GET /app/hook/config", app(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"content_type": "json", "url": "%s/webhooks/gh-app"}`, a.gateway)
	}))
	mux.HandleFunc("POST /app/installations/7/access_tokens", app(func(w http.ResponseWriter, r *http.Request) {
		a.tokens++
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"token": "ghs_installation_seven", "expires_at": %q}`, time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
	}))
	mux.HandleFunc("GET /repos/{owner}/{repo}/installation", app(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"id": 7}`)
	}))
	mux.HandleFunc("GET /app/hook/deliveries", app(func(w http.ResponseWriter, r *http.Request) {
		list := a.deliveries
		if r.URL.Query().Get("per_page") == "1" && len(list) > 1 {
			list = list[:1]
		}
		_ = json.NewEncoder(w).Encode(list)
	}))
	mux.HandleFunc("GET /app/hook/deliveries/{id}", app(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"id": %s, "request": {"headers": {"X-GitHub-Hook-ID": "%d", "X-GitHub-Event": "issues"}, "payload": {}}}`,
			r.PathValue("id"), appHookID)
	}))
	mux.HandleFunc("POST /app/hook/deliveries/{id}/attempts", app(func(w http.ResponseWriter, r *http.Request) {
		var id int64
		fmt.Sscan(r.PathValue("id"), &id)
		var guid string
		for _, d := range a.deliveries {
			if d["id"] == id {
				guid = d["guid"].(string)
			}
		}
		a.redelivers++
		h := hook{Conn: "github", Event: "issues", Body: a.bodies[id], Key: guid}
		hd := h.header(githubAppSecret)
		hd.Set("X-GitHub-Hook-ID", fmt.Sprint(appHookID))
		sendAgain(t, a.gateway, hook{Conn: "gh-app", Body: h.Body}, hd)
		w.WriteHeader(http.StatusAccepted)
		fmt.Fprint(w, `{}`)
	}))
	mux.HandleFunc("GET /repos/{owner}/{repo}/pulls/{n}", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "token ghs_installation_seven" {
			a.mu.Lock()
			a.refused = append(a.refused, r.URL.Path+": not the installation token")
			a.mu.Unlock()
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id": 279147437, "number": %s, "state": "open", "title": "Read as installation 7",
			"html_url": "https://github.com/%s/%s/pull/%s", "head": {"ref": "feature", "sha": "abc"}, "base": {"ref": "main"},
			"user": {"login": "octocat"}, "updated_at": %q}`, r.PathValue("n"), r.PathValue("owner"), r.PathValue("repo"), r.PathValue("n"),
			time.Now().UTC().Format(time.RFC3339))
	})
	a.srv = httptest.NewServer(mux)
	t.Cleanup(a.srv.Close)
	return a
}

// add lists a delivery of the App's hook, answered with code.
func (a *appGitHub) add(id int64, guid string, code int, body []byte) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.deliveries = append([]map[string]any{{"id": id, "guid": guid, "delivered_at": time.Now().UTC().Add(-time.Minute).Format(time.RFC3339),
		"redelivery": false, "status": "Invalid HTTP Response: 503", "status_code": code, "event": "issues", "action": "opened",
		"installation_id": 7, "repository_id": 1296269}}, a.deliveries...)
	a.bodies[id] = body
}

// appDelivery posts body to the App connection as GitHub delivers an App's
// event: signed with the App's secret, keyed by the App hook's ID and guid.
func (g *gateway) appDelivery(t *testing.T, event, guid string, body []byte) {
	t.Helper()
	hd := hook{Conn: "github", Event: event, Body: body, Key: guid}.header(githubAppSecret)
	hd.Set("X-GitHub-Hook-ID", fmt.Sprint(appHookID))
	hd.Set("X-GitHub-Hook-Installation-Target-Type", "integration")
	hd.Set("X-GitHub-Hook-Installation-Target-ID", fmt.Sprint(testAppID))
	if status, resp, err := g.postWebhook("gh-app", hd, body); err != nil || status != http.StatusAccepted {
		t.Fatalf("App delivery of %s = %d %s %v, want 202", event, status, resp, err)
	}
}

// A GitHub App connection end to end: an issue moved from a repository
// hook to the App keeps its one task; a pull request's projection is read
// as the installation that covers its repository; a delivery GitHub
// failed to make through the App's hook is found and redelivered once,
// as the App; the App's hook shows with its ID.
func TestGitHubAppEndToEnd(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, dialect string) {
		api := newAppGitHub(t)
		g := startGateway(t, newDatabaseURL(t, dialect), "--config", appConfig(t, api.srv.URL, writeKeyFile(t, githubapptest.KeyPEM())))
		api.mu.Lock()
		api.gateway = g.URL
		api.mu.Unlock()

		// The issue first arrives through the repository hook, then, after
		// the move, an edit through the App: one task.
		g.deliver(t, hook{Conn: "github", Event: "issues", Body: readFixture(t, "github/issues.opened.json")})
		g.waitIdle(t, waitTimeout)
		edited := mutate(t, readFixture(t, "github/issues.opened.app.json"), func(m map[string]any) {
			m["action"] = "edited"
			issue := obj(t, m, "issue")
			issue["title"], issue["updated_at"] = "Edited after the move to the App", "2030-01-01T00:00:00Z"
		})
		g.appDelivery(t, "issues", "guid-app-edit", edited)
		g.waitIdle(t, waitTimeout)
		if tasks := g.tasks(t); len(tasks) != 1 || tasks[0].Title != "Edited after the move to the App" {
			t.Fatalf("tasks = %+v, want the one task, edited through the App", tasks)
		}

		// A pull request through the App: its projection is read with
		// installation 7's token.
		g.appDelivery(t, "pull_request", "guid-app-pr", readFixture(t, "github/pull_request.opened.json"))
		g.waitIdle(t, waitTimeout)
		var prTask string
		for _, tk := range g.tasks(t) {
			if tk.Title == "Update the README with new information." {
				prTask = tk.ID
			}
		}
		if prTask == "" {
			t.Fatalf("no task for the App's pull request: %+v", g.tasks(t))
		}
		poll(t, "the pull request read as the installation", waitTimeout, func() bool {
			c := g.contributions(t, prTask)
			return len(c) == 1 && c[0].Title == "Read as installation 7"
		})

		// Missed through the App's hook: recovered as the App.
		api.add(1, "guid-app-edit", 200, edited)
		api.add(2, "guid-app-missed", 503, githubIssueOpened(t, 8002, 12, "Missed by the App's hook"))
		c := specClient{t: t, g: g}
		var res struct {
			Checked, Missing int
			Redelivered      *int `json:"redelivered"`
			Deliveries       []struct {
				GUID   string `json:"guid"`
				HookID int64  `json:"hook_id"`
			}
		}
		answer := c.call(http.MethodPost, "/api/v1/connections/gh-app/recover", map[string]any{"since": "1h"}, http.StatusOK)
		if err := json.Unmarshal(answer.body, &res); err != nil || res.Checked != 2 || res.Missing != 1 || res.Redelivered == nil ||
			*res.Redelivered != 1 || len(res.Deliveries) != 1 || res.Deliveries[0].GUID != "guid-app-missed" || res.Deliveries[0].HookID != appHookID {
			t.Fatalf("recover = %s, want guid-app-missed of hook %d redelivered", answer.body, appHookID)
		}
		poll(t, "the redelivered issue's task", waitTimeout, func() bool {
			for _, tk := range g.tasks(t) {
				if tk.Title == "Missed by the App's hook" {
					return true
				}
			}
			return false
		})
		again := c.call(http.MethodPost, "/api/v1/connections/gh-app/recover", map[string]any{"since": "1h"}, http.StatusOK)
		if err := json.Unmarshal(again.body, &res); err != nil || res.Missing != 0 {
			t.Errorf("second recover = %s, want nothing missing", again.body)
		}

		var hooks struct {
			Hooks []struct {
				Kind   string   `json:"kind"`
				Owner  string   `json:"owner"`
				ID     int64    `json:"id"`
				Active bool     `json:"active"`
				Events []string `json:"events"`
			} `json:"hooks"`
		}
		hooksAnswer := c.call(http.MethodGet, "/api/v1/connections/gh-app/hooks", nil, http.StatusOK)
		if err := json.Unmarshal(hooksAnswer.body, &hooks); err != nil || len(hooks.Hooks) != 1 || hooks.Hooks[0].Kind != "app" ||
			hooks.Hooks[0].ID != appHookID || !hooks.Hooks[0].Active || len(hooks.Hooks[0].Events) != 2 {
			t.Errorf("hooks = %s, want the App's hook %d, active, two events", hooksAnswer.body, appHookID)
		}

		api.mu.Lock()
		defer api.mu.Unlock()
		if api.redelivers != 1 {
			t.Errorf("GitHub was asked %d times to redeliver, want once", api.redelivers)
		}
		if api.tokens != 1 {
			t.Errorf("installation tokens issued = %d, want 1", api.tokens)
		}
		if len(api.refused) > 0 {
			t.Errorf("GitHub refused the gateway's requests: %q", api.refused)
		}
		if n := len(g.tasks(t)); n != 3 {
			t.Errorf("%d tasks, want 3 (the moved issue, the pull request, the recovered issue)", n)
		}
	})
}
