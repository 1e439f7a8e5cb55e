package main

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/trackergateway/gateway/connectors/github"
)

// TestUntrustedTrafficEndToEnd drives the receive-path defences through the
// real server: GitHub's form-encoded deliveries make their task, other
// content types are 415, no provider's secret header is stored, a burst of
// wrong API tokens turns into 429 with Retry-After (the right token still
// passes), and /readyz is ready.
func TestUntrustedTrafficEndToEnd(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, dialect string) {
		g := startGateway(t, newDatabaseURL(t, dialect))

		// A form-encoded GitHub delivery: the JSON in "payload", the
		// signature over the raw form body.
		raw := readFixture(t, "github/issues.opened.json")
		form := []byte("payload=" + url.QueryEscape(string(raw)))
		h := hook{Conn: "github", Event: "issues", Body: form}.header(githubSecret)
		h.Set("Content-Type", github.ContentTypeForm)
		h.Set("X-Gitlab-Token", "a-gitlab-token-that-must-not-be-stored")
		h.Set("Cookie", "session=must-not-be-stored")
		status, body, err := g.postWebhook("github", h, form)
		if err != nil || status != http.StatusAccepted {
			t.Fatalf("form-encoded delivery = %d %s (%v), want 202", status, body, err)
		}
		var r receipt
		if err := json.Unmarshal(body, &r); err != nil {
			t.Fatal(err)
		}
		d := g.waitDelivery(t, r.DeliveryID)
		if d.Status != "succeeded" || d.action() != "create" {
			t.Fatalf("form-encoded delivery ended %s/%s (%s), want succeeded/create", d.Status, d.action(), str(d.LastError))
		}
		tk := g.onlyTask(t)
		if tk.ExternalID != "github:github.com:issue:444500041" {
			t.Errorf("task external_id = %q, want the fixture's issue", tk.ExternalID)
		}
		_, full := g.apiDo(t, http.MethodGet, "/api/v1/deliveries/"+r.DeliveryID, nil)
		for _, secret := range []string{"must-not-be-stored", "sha256="} {
			if strings.Contains(string(full), secret) {
				t.Errorf("stored delivery shows %q: %s", secret, full)
			}
		}

		// Any other content type is refused before the body is read.
		h = hook{Conn: "jira", Body: raw}.header(jiraSecret)
		h.Set("Content-Type", "text/plain")
		if status, body, _ := g.postWebhook("jira", h, raw); status != http.StatusUnsupportedMediaType ||
			!strings.Contains(string(body), "application/json") {
			t.Errorf("text/plain to jira = %d %s, want 415 naming application/json", status, body)
		}

		// Guessing tokens: 401s, then 429 with Retry-After; the right token
		// from that address still passes, and failing again stays 429.
		get := func(token string) *http.Response {
			req, _ := http.NewRequest(http.MethodGet, g.URL+"/api/v1/workspaces", nil)
			req.Header.Set("Authorization", "bearer "+token)
			resp, err := g.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return resp
		}
		if resp := get(testAdminToken); resp.StatusCode != http.StatusOK {
			t.Fatalf("lower-case bearer scheme = %d, want 200", resp.StatusCode)
		}
		codes := map[int]int{}
		for range 30 {
			codes[get("wrong-token-0123456789").StatusCode]++
		}
		if codes[http.StatusUnauthorized] != 20 || codes[http.StatusTooManyRequests] != 10 {
			t.Errorf("30 wrong tokens answered %v, want 20 × 401 then 10 × 429", codes)
		}
		if resp := get(testAdminToken); resp.StatusCode != http.StatusOK {
			t.Errorf("right token from a throttled address = %d, want 200", resp.StatusCode)
		}
		if resp := get(""); resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
			t.Errorf("no token from a throttled address = %d (Retry-After %q), want 429 with Retry-After",
				resp.StatusCode, resp.Header.Get("Retry-After"))
		}

		resp, err := g.client.Get(g.URL + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("/readyz = %d, want 200", resp.StatusCode)
		}
	})
}

// TestInflightBoundFlag: the bound set on the command line is the one the
// receiver keeps (a body bigger than the whole bound can never be held).
func TestInflightBoundFlag(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, dialect string) {
		g := startGateway(t, newDatabaseURL(t, dialect), "--max-inflight-body-bytes", "100KiB")
		small := hook{Conn: "github", Event: "issues", Body: readFixture(t, "github/issues.opened.json")}
		if status, body := g.send(t, small); status != http.StatusAccepted {
			t.Fatalf("13 KB body under a 100 KiB bound = %d %s, want 202", status, body)
		}
		big := hook{Conn: "github", Event: "issues", Body: []byte(`{"pad":"` + strings.Repeat("x", 200<<10) + `"}`)}
		status, body, err := g.postWebhook("github", big.header(githubSecret), big.Body)
		if err != nil || status != http.StatusServiceUnavailable {
			t.Fatalf("200 KiB body over a 100 KiB bound = %d %s (%v), want 503", status, body, err)
		}
	})
}

// TestProviderTextWithNULMakesItsTask: a provider's text may hold
// characters PostgreSQL refuses (NUL); the delivery still makes its task, the
// same on both databases: a title's control characters become spaces, a
// description loses its NULs, a label that is not clean text is dropped.
func TestProviderTextWithNULMakesItsTask(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, dialect string) {
		g := startGateway(t, newDatabaseURL(t, dialect))
		body := mutate(t, githubIssueOpened(t, 7001, 71, "Null\x00title"), func(m map[string]any) {
			issue := obj(t, m, "issue")
			issue["body"] = "before\x00after"
			issue["labels"] = []any{map[string]any{"name": "bug\x00"}}
		})
		d := g.process(t, hook{Conn: "github", Event: "issues", Body: body})
		if d.Status != "succeeded" || d.action() != "create" {
			t.Fatalf("delivery ended %s/%s (%s), want succeeded/create", d.Status, d.action(), str(d.LastError))
		}
		tk := g.onlyTask(t)
		if tk.Title != "Null title" || tk.Description != "beforeafter" || len(tk.Labels) != 0 {
			t.Errorf("task = %q %q %q, want the text without NUL", tk.Title, tk.Description, tk.Labels)
		}
	})
}
