package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// missedGitHub is a GitHub API holding one repository hook's deliveries.
// A redelivery request is answered 202 and, as GitHub does, posts the
// delivery again to the gateway, same GUID and hook ID, signed.
type missedGitHub struct {
	srv     *httptest.Server
	mu      sync.Mutex
	gateway string // where redeliveries go
	list    []map[string]any
	bodies  map[int64][]byte // by delivery id
	asked   int
}

const (
	recoverHookID = 11
	recoverToken  = "e2e-github-api-token-0123"
)

func newMissedGitHub(t *testing.T) *missedGitHub {
	m := &missedGitHub{bodies: map[int64][]byte{}}
	m.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.mu.Lock()
		defer m.mu.Unlock()
		deliveries := fmt.Sprintf("/repos/acme/api/hooks/%d/deliveries", recoverHookID)
		switch {
		case r.Header.Get("Authorization") != "Bearer "+recoverToken:
			w.WriteHeader(http.StatusUnauthorized)
		case r.Method == http.MethodGet && r.URL.Path == deliveries:
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(m.list)
		case r.Method == http.MethodGet && r.URL.Path == strings.TrimSuffix(deliveries, "/deliveries"):
			// The hook, switched off by someone after it kept failing.
			w.Header().Set("Content-Type", "application/json")
			_, _ = fmt.Fprintf(w, `{"type":"Repository","id":%d,"name":"web","active":false,"events":["issues","pull_request"],
				"config":{"content_type":"json","url":"%s/webhooks/github"},
				"last_response":{"code":503,"status":"failed","message":"Service Unavailable"}}`, recoverHookID, m.gateway)
		case r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, deliveries+"/"):
			var id int64
			_, _ = fmt.Sscanf(strings.TrimPrefix(r.URL.Path, deliveries+"/"), "%d/attempts", &id)
			m.asked++
			var guid string
			for _, d := range m.list {
				if d["id"] == id {
					guid = d["guid"].(string)
				}
			}
			h := hook{Conn: "github", Event: "issues", Body: m.bodies[id], Key: guid}
			hd := h.header(githubSecret)
			hd.Set("X-GitHub-Hook-ID", fmt.Sprint(recoverHookID))
			sendAgain(t, m.gateway, h, hd)
			w.WriteHeader(http.StatusAccepted)
			_, _ = w.Write([]byte(`{}`))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(m.srv.Close)
	return m
}

// sendAgain posts a provider's redelivery of h with header hd to the
// gateway's webhook path, which must accept it.
func sendAgain(t *testing.T, gateway string, h hook, hd http.Header) {
	req, _ := http.NewRequest(http.MethodPost, gateway+"/webhooks/"+h.Conn, strings.NewReader(string(h.Body)))
	req.Header = hd
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusAccepted {
		t.Errorf("redelivery to the gateway: %v %v", resp, err)
	}
	if resp != nil {
		resp.Body.Close()
	}
}

// add lists a delivery attempt of body, answered with code.
func (m *missedGitHub) add(id int64, guid string, code int, body []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.list = append([]map[string]any{{"id": id, "guid": guid, "delivered_at": time.Now().UTC().Add(-time.Minute).Format(time.RFC3339),
		"redelivery": false, "duration": 0.3, "status": "Invalid HTTP Response: 503", "status_code": code, "event": "issues",
		"action": "opened", "installation_id": nil, "repository_id": 1296269}}, m.list...)
	m.bodies[id] = body
}

// recoverConfig is the test configuration with the github connection
// reading the fake GitHub API's hook and, when gitlabAPI is not empty, the
// gitlab connection reading the fake GitLab API's project hook.
func recoverConfig(t *testing.T, githubAPI, gitlabAPI string) string {
	t.Helper()
	cfg := strings.Replace(testConfig, "    on_merge: archive\n", fmt.Sprintf(`    on_merge: archive
    api_url: %s/
    api_token: %s
    hooks:
      - {repository: acme/api, id: %d}
`, githubAPI, recoverToken, recoverHookID), 1)
	if gitlabAPI != "" {
		gitlabSecrets := `    secrets: ["` + gitlabSecret + `"]` + "\n"
		cfg = strings.Replace(cfg, gitlabSecrets, gitlabSecrets+fmt.Sprintf(`    api_url: %s/api/v4
    api_token: %s
    hooks:
      - {project: acme/api, id: %d}
`, gitlabAPI, recoverToken, recoverHookID), 1)
	}
	return writeTempFile(t, "recover.yaml", cfg)
}

// TestRecoverMissedDelivery: a delivery GitHub failed to make while the
// gateway was away is found, redelivered once, arrives through the normal
// webhook path and makes its task; deliveries the inbox holds (by hook ID
// and GUID, as the receiver stored them) are not asked for; a second run,
// the CLI's, finds nothing missing.
func TestRecoverMissedDelivery(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, dialect string) {
		api := newMissedGitHub(t)
		g := startGateway(t, newDatabaseURL(t, dialect), "--config", recoverConfig(t, api.srv.URL, ""))
		api.mu.Lock()
		api.gateway = g.URL
		api.mu.Unlock()

		// Received, but GitHub saw the answer time out: not missing.
		received := githubIssueOpened(t, 7001, 1, "Received while GitHub timed out")
		hd := hook{Conn: "github", Event: "issues", Body: received, Key: "guid-received"}.header(githubSecret)
		hd.Set("X-GitHub-Hook-ID", fmt.Sprint(recoverHookID))
		if status, body, err := g.postWebhook("github", hd, received); err != nil || status != http.StatusAccepted {
			t.Fatalf("post = %d %s %v", status, body, err)
		}
		api.add(1, "guid-received", 0, received)
		// Never received: the gateway answered 503 or was down.
		api.add(2, "guid-missed", 503, githubIssueOpened(t, 7002, 2, "Missed while the gateway was down"))
		// Delivered.
		api.add(3, "guid-ok", 200, githubIssueOpened(t, 7003, 3, "Delivered"))

		c := specClient{t: t, g: g}
		c.call(http.MethodPost, "/api/v1/connections/github/recover", map[string]any{"since": "1h", "dry_run": true}, http.StatusOK)
		c.call(http.MethodGet, "/api/v1/connections/github/hooks", nil, http.StatusOK)
		answer := c.call(http.MethodPost, "/api/v1/connections/github/recover", map[string]any{"since": "1h"}, http.StatusOK)
		status, body := answer.status, answer.body
		var res struct {
			Checked, Missing, Redelivered int
			Deliveries                    []struct {
				GUID        string `json:"guid"`
				HookID      int64  `json:"hook_id"`
				DeliveryID  int64  `json:"delivery_id"`
				Redelivered bool   `json:"redelivered"`
			}
		}
		if status != http.StatusOK || json.Unmarshal(body, &res) != nil {
			t.Fatalf("recover = %d %s, want 200", status, body)
		}
		if res.Checked != 3 || res.Missing != 1 || res.Redelivered != 1 || len(res.Deliveries) != 1 ||
			res.Deliveries[0].GUID != "guid-missed" || res.Deliveries[0].HookID != recoverHookID ||
			res.Deliveries[0].DeliveryID != 2 || !res.Deliveries[0].Redelivered {
			t.Fatalf("recover = %s, want guid-missed (delivery 2 of hook 11) redelivered, 3 checked", body)
		}
		poll(t, "the redelivered issue's task", waitTimeout, func() bool {
			for _, tk := range g.tasks(t) {
				if tk.Title == "Missed while the gateway was down" {
					return true
				}
			}
			return false
		})

		code, out, errOut := runCLI(t, "recover", "--url", g.URL, "--admin-token", testAdminToken, "--connection", "github", "--since", "1h")
		if code != 0 || !strings.HasPrefix(out, "checked 3, missing 0, redelivered 0\n") {
			t.Errorf("gateway recover = %d %q %q, want nothing missing any more", code, out, errOut)
		}
		api.mu.Lock()
		asked := api.asked
		api.mu.Unlock()
		if asked != 1 {
			t.Errorf("GitHub was asked %d times, want once", asked)
		}
		families := g.scrape(t)
		if m := findMetric(families, "gateway_missed_deliveries_redelivered_total", map[string]string{"connection": "github"}); m == nil || m.GetCounter().GetValue() != 1 {
			t.Errorf("gateway_missed_deliveries_redelivered_total{connection=github} = %v, want 1", m)
		}
		if m := findMetric(families, "gateway_provider_api_requests_total", map[string]string{"provider": "github", "code": "202"}); m == nil || m.GetCounter().GetValue() != 1 {
			t.Errorf("gateway_provider_api_requests_total{provider=github,code=202} = %v, want 1", m)
		}
	})
}

// The recover and hooks routes refuse what cannot be recovered.
func TestRecoverRefusals(t *testing.T) {
	t.Parallel()
	api := newMissedGitHub(t)
	g := startGateway(t, newDatabaseURL(t, "sqlite"), "--config", recoverConfig(t, api.srv.URL, ""))
	tests := []struct {
		method, path string
		body         any
		want         int
	}{
		{http.MethodPost, "/api/v1/connections/nope/recover", nil, http.StatusNotFound},
		{http.MethodPost, "/api/v1/connections/gitlab/recover", nil, http.StatusBadRequest},
		{http.MethodPost, "/api/v1/connections/jira/recover", nil, http.StatusBadRequest},
		{http.MethodPost, "/api/v1/connections/github/recover", map[string]any{"since": "73h"}, http.StatusBadRequest},
		{http.MethodPost, "/api/v1/connections/github/recover", map[string]any{"since": "soon"}, http.StatusBadRequest},
		{http.MethodPost, "/api/v1/connections/github/recover", map[string]any{"dryrun": true}, http.StatusBadRequest},
		{http.MethodPost, "/api/v1/connections/github/recover", map[string]any{"dry_run": true}, http.StatusOK},
		{http.MethodGet, "/api/v1/connections/nope/hooks", nil, http.StatusNotFound},
		{http.MethodGet, "/api/v1/connections/gitlab/hooks", nil, http.StatusBadRequest},
	}
	c := specClient{t: t, g: g}
	for _, tc := range tests {
		answer := c.call(tc.method, tc.path, tc.body)
		status, body := answer.status, answer.body
		if status != tc.want {
			t.Errorf("%s %s %v = %d %s, want %d", tc.method, tc.path, tc.body, status, body, tc.want)
		}
	}
	if api.asked != 0 {
		t.Errorf("GitHub was asked for %d redeliveries, want none", api.asked)
	}
}

// missedGitLab is a GitLab API holding one project hook's events; a
// resend posts the event's delivery again to the gateway, with the same
// Idempotency-Key, as GitLab does.
type missedGitLab struct {
	srv     *httptest.Server
	mu      sync.Mutex
	gateway string
	events  []map[string]any
	bodies  map[int64][]byte
	resent  int
}

func newMissedGitLab(t *testing.T) *missedGitLab {
	m := &missedGitLab{bodies: map[int64][]byte{}}
	m.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.mu.Lock()
		defer m.mu.Unlock()
		events := fmt.Sprintf("/api/v4/projects/acme%%2Fapi/hooks/%d/events", recoverHookID)
		w.Header().Set("Content-Type", "application/json")
		switch path := r.URL.EscapedPath(); {
		case r.Header.Get("Private-Token") != recoverToken:
			w.WriteHeader(http.StatusUnauthorized)
		case r.Method == http.MethodGet && path == events:
			_ = json.NewEncoder(w).Encode(m.events)
		case r.Method == http.MethodPost && strings.HasPrefix(path, events+"/") && strings.HasSuffix(path, "/resend"):
			var id int64
			_, _ = fmt.Sscanf(strings.TrimPrefix(path, events+"/"), "%d/resend", &id)
			m.resent++
			var key string
			for _, e := range m.events {
				if e["id"] == id {
					key = e["request_headers"].(map[string]string)["Idempotency-Key"]
				}
			}
			h := hook{Conn: "gitlab", Event: "Issue Hook", Body: m.bodies[id], Key: key}
			hd := h.header(gitlabSecret)
			hd.Set("Content-Type", "application/json")
			sendAgain(t, m.gateway, h, hd)
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte(`{}`))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(m.srv.Close)
	return m
}

// add lists a hook event of body with its Idempotency-Key, answered with
// status.
func (m *missedGitLab) add(id int64, key, status string, body []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.events = append([]map[string]any{{"id": id, "url": "https://gateway.example.com/webhooks/gitlab", "trigger": "issue_hooks",
		"request_headers": map[string]string{"Content-Type": "application/json", "X-Gitlab-Event": "Issue Hook", "Idempotency-Key": key},
		"request_data":    string(body), "response_headers": map[string]string{}, "response_body": "", "execution_duration": 10.0,
		"response_status": status, "created_at": time.Now().UTC().Add(-time.Minute).Format(time.RFC3339)}}, m.events...)
	m.bodies[id] = body
}

// A GitLab project hook event that failed while the gateway was down is
// resent once and makes its task through the webhook path.
func TestRecoverMissedGitLabEvent(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, dialect string) {
		gh, gl := newMissedGitHub(t), newMissedGitLab(t)
		g := startGateway(t, newDatabaseURL(t, dialect), "--config", recoverConfig(t, gh.srv.URL, gl.srv.URL))
		gl.mu.Lock()
		gl.gateway = g.URL
		gl.mu.Unlock()
		missed := mutate(t, readFixture(t, "gitlab/issue.json"), func(m map[string]any) {
			attrs := obj(t, m, "object_attributes")
			attrs["id"], attrs["iid"], attrs["title"] = 8801, 88, "Missed by the gitlab hook"
		})
		gl.add(5, "idem-missed", "internal error", missed)

		c := specClient{t: t, g: g}
		answer := c.call(http.MethodPost, "/api/v1/connections/gitlab/recover", map[string]any{"since": "1h"}, http.StatusOK)
		if !strings.Contains(string(answer.body), `"redelivered":1`) {
			t.Fatalf("recover = %s, want one event resent", answer.body)
		}
		poll(t, "the resent issue's task", waitTimeout, func() bool {
			for _, tk := range g.tasks(t) {
				if tk.Title == "Missed by the gitlab hook" {
					return true
				}
			}
			return false
		})
		again := c.call(http.MethodPost, "/api/v1/connections/gitlab/recover", map[string]any{"since": "1h"}, http.StatusOK)
		if !strings.Contains(string(again.body), `"missing":0`) {
			t.Errorf("second recover = %s, want nothing missing (the inbox holds the Idempotency-Key)", again.body)
		}
		gl.mu.Lock()
		defer gl.mu.Unlock()
		if gl.resent != 1 {
			t.Errorf("GitLab was asked to resend %d times, want once", gl.resent)
		}
	})
}
