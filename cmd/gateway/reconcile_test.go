package main

// End-to-end tests of the providers that keep no delivery history (Gitea
// and Forgejo, Linear): a whole life through webhooks, a resend from the
// provider's UI under a new delivery ID, and recovery by listing what
// changed through a fake of the provider's API.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trackergateway/gateway/internal/ingest"
)

// TestLifecycleWithoutDeliveryHistory: opened → edited → the edit resent
// from the provider's UI under a new delivery ID (a no-op: the same state)
// → deleted → the opened event resent under a new delivery ID
// (suppressed), on both dialects.
func TestLifecycleWithoutDeliveryHistory(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name                    string
		opened, edited, deleted hookFn
		externalID              string
		editedTitle             string
	}{
		{"gitea", fx("gitea/issues.opened.json"), fx("gitea/issues.edited.json"), fx("gitea/issues.deleted.json"),
			giteaIssueID, "crash"},
		{"linear", fx("linear/issue.create.json"), fx("linear/issue.update.title-labels.json"), linearRemoved,
			linearID, "Export times out for workspaces over 10k issues"},
	}
	forEachDialect(t, func(t *testing.T, dialect string) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				g := startGateway(t, newDatabaseURL(t, dialect))
				opened := tc.opened(t).withKey("opened-1")
				created := g.process(t, opened)
				if created.Status != "succeeded" || created.action() != "create" || str(created.Outcome.ExternalID) != tc.externalID {
					t.Fatalf("opened: %q %q %q, want succeeded create of %s", created.Status, created.action(),
						str(created.Outcome.ExternalID), tc.externalID)
				}
				edited := tc.edited(t).withKey("edited-1")
				if d := g.process(t, edited); d.Status != "succeeded" || d.action() != "update" || d.taskID() != created.taskID() {
					t.Fatalf("edited: %q %q on %q, want succeeded update of %s", d.Status, d.action(), d.taskID(), created.taskID())
				}
				// The UI's redelivery: the same payload, a new delivery ID.
				re := g.process(t, edited.withKey("edited-2"))
				if re.ID == created.ID || re.taskID() != created.taskID() || re.result() != ingest.UnchangedSkipped {
					t.Errorf("edit resent: delivery %s task %q result %q, want unchanged on %s",
						re.ID, re.taskID(), re.result(), created.taskID())
				}
				if tk := g.onlyTask(t); tk.ID != created.taskID() || tk.Title != tc.editedTitle {
					t.Errorf("task = %s %q, want %s %q", tk.ID, tk.Title, created.taskID(), tc.editedTitle)
				}
				if d := g.process(t, tc.deleted(t)); d.Status != "succeeded" || d.action() != "delete" {
					t.Fatalf("deleted: %q %q (%s), want succeeded delete", d.Status, d.action(), d.result())
				}
				if d := g.process(t, opened.withKey("opened-2")); d.Status != "suppressed" {
					t.Errorf("opened resent after the delete: status %q (%s), want suppressed", d.Status, d.result())
				}
				if ts := g.tasks(t); len(ts) != 0 {
					t.Errorf("tasks = %v, want none", taskSummaries(ts))
				}
				if got := g.suppressions(t); len(got) != 1 || got[0].ExternalID != tc.externalID {
					t.Errorf("suppressions = %+v, want one for %s", got, tc.externalID)
				}
			})
		}
	})
}

// linearRemoved is issue.remove.json for ENG-123, the issue of the other
// fixtures.
func linearRemoved(t testing.TB) hook {
	body := mutate(t, readFixture(t, "linear/issue.remove.json"), func(m map[string]any) {
		data := obj(t, m, "data")
		data["id"], data["identifier"], data["number"] = "539068e2-ae88-4d09-bd75-22eb4a59612f", "ENG-123", 123
	})
	return hook{Conn: "linear", Body: body}
}

// changedItems is a fake provider API that lists the items it holds as
// changed: Gitea's issue search and pull request read, or Linear's GraphQL
// issues query; requests counts the calls.
type changedItems struct {
	srv      *httptest.Server
	mu       sync.Mutex
	items    []map[string]any
	pulls    map[string]map[string]any
	requests int
}

func newChangedItems(t *testing.T, linear bool) *changedItems {
	c := &changedItems{pulls: map[string]map[string]any{}}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.requests++
		if !strings.HasSuffix(r.Header.Get("Authorization"), recoverToken) {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		switch {
		case linear:
			_ = json.NewEncoder(w).Encode(map[string]any{"data": map[string]any{"issues": map[string]any{
				"nodes": c.items, "pageInfo": map[string]any{"hasNextPage": false, "endCursor": nil}}}})
		case r.URL.Path == "/api/v1/repos/issues/search":
			_ = json.NewEncoder(w).Encode(c.items)
		default:
			if pr, ok := c.pulls[strings.TrimPrefix(r.URL.Path, "/api/v1/repos/")]; ok {
				_ = json.NewEncoder(w).Encode(pr)
				return
			}
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(c.srv.Close)
	return c
}

// reconcileConfig is the test configuration with the gitea and linear
// connections reading the fake APIs.
func reconcileConfig(t *testing.T, giteaAPI, linearAPI string) string {
	t.Helper()
	cfg := testConfig
	for _, c := range []struct{ secret, api string }{{giteaSecret, giteaAPI}, {linearSecret, linearAPI}} {
		line := `    secrets: ["` + c.secret + `"]` + "\n"
		cfg = strings.Replace(cfg, line, line+fmt.Sprintf("    api_url: %s\n    api_token: %s\n", c.api, recoverToken), 1)
	}
	return writeTempFile(t, "reconcile.yaml", cfg)
}

// TestRecoverByListingChanges: while the gateway was away an issue was
// opened and another edited at Gitea, and an issue moved to Done at
// Linear, a pull request attached to it. Recovery lists them, records each missing state once as a
// delivery processed like a webhook (a task created, one updated, one
// archived); a second run, the CLI's, records nothing; the states the
// webhooks already brought are not recorded again.
func TestRecoverByListingChanges(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, dialect string) {
		gt, ln := newChangedItems(t, false), newChangedItems(t, true)
		g := startGateway(t, newDatabaseURL(t, dialect), "--config", reconcileConfig(t, gt.srv.URL, ln.srv.URL))
		recent := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)

		// Delivered by webhook: Gitea issue 2 and Linear ENG-123.
		giteaTask := g.process(t, fixtureHook(t, "gitea/issues.opened.json"))
		linearTask := g.process(t, fixtureHook(t, "linear/issue.create.json"))

		repo := map[string]any{"id": 1, "name": "repo", "owner": "test", "full_name": "test/repo"}
		// One bad item in each listing (an issue without its repository, an
		// issue whose updatedAt is no time) is skipped and reported; the
		// items around it are recorded.
		gt.items = []map[string]any{
			{"id": 9, "number": 9, "title": "no repository", "body": "", "state": "open",
				"html_url": "http://localhost:3000/test/repo/issues/9", "labels": []any{}, "updated_at": recent.Format(time.RFC3339)},
			{"id": 2, "number": 2, "title": "crash (edited while away)", "body": "issue body", "state": "open",
				"html_url": "http://localhost:3000/test/repo/issues/2", "labels": []any{}, "repository": repo,
				"updated_at": recent.Format(time.RFC3339)},
			{"id": 3, "number": 3, "title": "opened while away", "body": "", "state": "open",
				"html_url": "http://localhost:3000/test/repo/issues/3", "labels": []any{}, "repository": repo,
				"updated_at": recent.Format(time.RFC3339)},
		}
		ln.items = []map[string]any{{"id": "539068e2-ae88-4d09-bd75-22eb4a59612f", "identifier": "ENG-123", "number": 123,
			"title": "Export fails for large workspaces", "description": "Exporting a workspace with more than 10k issues times out.",
			"url":       "https://linear.app/acme/issue/ENG-123/export-fails-for-large-workspaces",
			"createdAt": "2026-03-02T09:00:00.000Z", "updatedAt": recent.Format(time.RFC3339Nano), "archivedAt": nil,
			"state": map[string]any{"id": "s", "name": "Done", "type": "completed"}, "team": map[string]any{"id": "t", "key": "ENG", "name": "Engineering"},
			"labels": map[string]any{"nodes": []any{map[string]any{"id": "l", "name": "Bug"}}},
			"attachments": map[string]any{"nodes": []any{map[string]any{"id": "att-1", "url": "https://github.com/Codertocat/Hello-World/pull/2",
				"updatedAt": recent.Format(time.RFC3339Nano)}}}}}
		ln.items = append([]map[string]any{{"id": "0badda7e-0000-4000-8000-000000000000", "identifier": "ENG-9", "number": 9,
			"title": "bad time", "url": "https://linear.app/acme/issue/ENG-9", "createdAt": "2026-03-02T09:00:00.000Z",
			"updatedAt": "not-a-date", "state": map[string]any{"id": "s", "name": "Todo", "type": "unstarted"},
			"team": map[string]any{"id": "t", "key": "ENG", "name": "Engineering"}}}, ln.items...)

		c := specClient{t: t, g: g}
		for _, conn := range []string{"gitea", "linear"} {
			c.call(http.MethodPost, "/api/v1/connections/"+conn+"/recover", map[string]any{"since": "2h", "dry_run": true}, http.StatusOK)
			c.call(http.MethodGet, "/api/v1/connections/"+conn+"/hooks", nil, http.StatusOK)
		}
		for _, tc := range []struct {
			conn             string
			checked, records int
		}{{"gitea", 2, 2}, {"linear", 1, 1}} {
			answer := c.call(http.MethodPost, "/api/v1/connections/"+tc.conn+"/recover", map[string]any{"since": "2h"}, http.StatusOK)
			var res struct {
				Method                        string
				Checked, Redelivered, Skipped int
				SkippedItems                  []struct{ Item, Reason string } `json:"skipped_items"`
			}
			if json.Unmarshal(answer.body, &res) != nil || res.Method != "reconcile" || res.Checked != tc.checked || res.Redelivered != tc.records ||
				res.Skipped != 1 || len(res.SkippedItems) != 1 {
				t.Errorf("recover %s = %s, want reconcile, %d checked, %d recorded, the bad item skipped", tc.conn, answer.body, tc.checked, tc.records)
			}
		}
		poll(t, "the recovered states applied", waitTimeout, func() bool {
			byTitle := map[string]task{}
			for _, tk := range g.tasks(t) {
				byTitle[tk.Title] = tk
			}
			edited, opened := byTitle["crash (edited while away)"], byTitle["opened while away"]
			linear, ok := byTitle["Export fails for large workspaces"]
			return edited.ID == giteaTask.taskID() && opened.ID != "" && ok && linear.ID == linearTask.taskID() && linear.ArchivedAt != nil
		})

		// The pull request attached while the gateway was away links to
		// the Linear task when it arrives.
		if d := g.process(t, fixtureHook(t, "github/pull_request.opened.json")); d.action() != "link" || d.taskID() != linearTask.taskID() {
			t.Errorf("attached pull request: %q on %q (%s), want linked to %s", d.action(), d.taskID(), d.result(), linearTask.taskID())
		}

		code, out, errOut := runCLI(t, "recover", "--url", g.URL, "--admin-token", testAdminToken, "--connection", "gitea", "--since", "2h")
		if code != 0 || !strings.HasPrefix(out, "changed items 2, states missing 0, recorded 0\n") ||
			!strings.Contains(out, "issue 9 (number 9)") || !strings.Contains(out, "has no repository") {
			t.Errorf("gateway recover = %d %q %q, want nothing missing any more and the bad item skipped", code, out, errOut)
		}
		recorded := 0
		for _, d := range g.deliveries(t) {
			if strings.HasPrefix(d.DeliveryKey, "reconcile:") {
				recorded++
			}
		}
		if recorded != 3 {
			t.Errorf("%d reconciled deliveries recorded, want 3", recorded)
		}
	})
}

// TestPullRequestNamingALinearIssueLinksToItsTask: a GitHub pull request
// whose branch names ENG-123 links to the task of Linear's ENG-123, as
// Linear's own GitHub integration links them: issue keys are looked up
// among every provider whose issues have keys (Jira's and Linear's).
func TestPullRequestNamingALinearIssueLinksToItsTask(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, dialect string) {
		g := startGateway(t, newDatabaseURL(t, dialect))
		issue := g.process(t, fixtureHook(t, "linear/issue.create.json"))
		body := mutate(t, readFixture(t, "github/pull_request.opened.json"), func(m map[string]any) {
			obj(t, obj(t, m, "pull_request"), "head")["ref"] = "ENG-123-export-timeout"
		})
		d := g.process(t, hook{Conn: "github", Event: "pull_request", Body: body})
		if d.Status != "succeeded" || d.action() != "link" || d.taskID() != issue.taskID() {
			t.Fatalf("pull request: %q %q on %q (%s), want linked to the Linear task %s",
				d.Status, d.action(), d.taskID(), d.result(), issue.taskID())
		}
		checkContributions(t, g, issue.taskID(), []contribution{{Provider: "github", Kind: "pull_request",
			Repository: "Codertocat/Hello-World", Number: 2, HeadBranch: "ENG-123-export-timeout", BaseBranch: "master", State: "open"}})
		if ts := g.tasks(t); len(ts) != 1 {
			t.Errorf("tasks = %v, want the Linear issue's only", taskSummaries(ts))
		}
	})
}
