package main

// Processing end to end: suppression of post-deletion redeliveries,
// transfers, stale updates, poison deliveries, operator replay and
// suppressions, and the `gateway send` and operator CLI.

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestRedeliveryAfterDeleteSuppressed: opened → deleted → the opened event
// redelivered under a new delivery key ends suppressed and creates nothing.
func TestRedeliveryAfterDeleteSuppressed(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name            string
		opened, deleted hookFn
		externalID      string
	}{
		{"github", fx("github/issues.opened.json"), fx("github/issues.deleted.json"), ghIssueID},
		{"jira", jiraIDT19Created, fx("jira/webhook-issue-deleted.json"), jiraIDT19ID},
	}
	forEachDialect(t, func(t *testing.T, dialect string) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				g := startGateway(t, newDatabaseURL(t, dialect))
				opened := tc.opened(t).withKey("opened-1")
				created := g.process(t, opened)
				if created.Status != "succeeded" || created.action() != "create" {
					t.Fatalf("opened: %q %q, want succeeded create", created.Status, created.action())
				}
				if d := g.process(t, tc.deleted(t)); d.Status != "succeeded" || d.action() != "delete" {
					t.Fatalf("deleted: %q %q (%s), want succeeded delete", d.Status, d.action(), d.result())
				}
				// The provider redelivers the opened event under a new key
				// (another hook, a manual redelivery).
				re := g.process(t, opened.withKey("opened-2"))
				if re.Status != "suppressed" {
					t.Errorf("redelivered opened: status %q (%s), want suppressed", re.Status, re.result())
				}
				if re.ID == created.ID {
					t.Errorf("redelivery under a new key reused delivery %s", re.ID)
				}
				if ts := g.tasks(t); len(ts) != 0 {
					t.Errorf("tasks = %v, want none", taskSummaries(ts))
				}
				if _, ok := g.getTask(t, created.taskID()); ok {
					t.Errorf("deleted task %s is back", created.taskID())
				}
				// So does the same delivery resent: a duplicate, nothing more.
				if r := g.deliver(t, opened); r.Status != "duplicate" || r.DeliveryID != created.ID {
					t.Errorf("resent opened = %+v, want duplicate of %s", r, created.ID)
				}
				if got := g.suppressions(t); len(got) != 1 || got[0].ExternalID != tc.externalID {
					t.Errorf("suppressions = %+v, want one for %s", got, tc.externalID)
				}
			})
		}
	})
}

// TestDeleteBeforeCreateSuppressed: providers don't order deliveries; a
// delete processed before its create suppresses the create.
func TestDeleteBeforeCreateSuppressed(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name            string
		deleted, opened hookFn
		externalID      string
	}{
		{"github", fx("github/issues.deleted.json"), fx("github/issues.opened.json"), ghIssueID},
		{"jira", fx("jira/webhook-issue-deleted.json"), jiraIDT19Created, jiraIDT19ID},
	}
	forEachDialect(t, func(t *testing.T, dialect string) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				g := startGateway(t, newDatabaseURL(t, dialect))
				if d := g.process(t, tc.deleted(t)); d.Status != "succeeded" || d.action() != "delete" {
					t.Fatalf("deleted: %q %q, want succeeded delete", d.Status, d.action())
				}
				d := g.process(t, tc.opened(t))
				if d.Status != "suppressed" {
					t.Errorf("create after delete: status %q (%s), want suppressed", d.Status, d.result())
				}
				if str(d.Outcome.ExternalID) != tc.externalID {
					t.Errorf("outcome external_id = %q, want %q", str(d.Outcome.ExternalID), tc.externalID)
				}
				if ts := g.tasks(t); len(ts) != 0 {
					t.Errorf("tasks = %v, want none", taskSummaries(ts))
				}
				// A late edit of the deleted entity is suppressed too.
				if tc.name == "github" {
					if d := g.process(t, fixtureHook(t, "github/issues.edited.json")); d.Status != "suppressed" {
						t.Errorf("late edit: status %q, want suppressed", d.Status)
					}
				}
			})
		}
	})
}

// TestTransferPair: GitHub sends issues.transferred (old issue) and
// issues.opened with changes.old_issue (new issue) in either order; the task
// of the old issue follows, and no second task appears.
func TestTransferPair(t *testing.T) {
	t.Parallel()
	orders := []struct {
		name  string
		hooks []string
	}{
		{"transferred then opened", []string{"github/issues.transferred.json", "github/issues.opened.with-transfer.json"}},
		{"opened then transferred", []string{"github/issues.opened.with-transfer.json", "github/issues.transferred.json"}},
	}
	forEachDialect(t, func(t *testing.T, dialect string) {
		for _, tc := range orders {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				g := startGateway(t, newDatabaseURL(t, dialect))
				old := g.process(t, ghOldIssueOpenedBefore(t))
				if old.Status != "succeeded" {
					t.Fatalf("old issue opened: %q", old.Status)
				}
				for _, name := range tc.hooks {
					d := g.process(t, fixtureHook(t, name))
					if d.Status != "succeeded" || d.taskID() != old.taskID() {
						t.Errorf("%s: status %q task %q (%s), want succeeded on the old task %s",
							name, d.Status, d.taskID(), d.result(), old.taskID())
					}
				}
				tk := g.onlyTask(t)
				if tk.ID != old.taskID() {
					t.Errorf("task = %s, want the old issue's %s", tk.ID, old.taskID())
				}
				checkTask(t, tk, ghIssueTask.with(func(w *taskWant) { w.externalID = ghOldIssueID }))
				// Later events of either side reach the same task.
				for _, h := range []hook{fixtureHook(t, "github/issues.closed.json"), fixtureHook(t, "github/issues.opened.json")} {
					if d := g.process(t, h); d.Status != "succeeded" || d.taskID() != tk.ID {
						t.Errorf("%s after the transfer: status %q task %q, want succeeded on %s", d.Event, d.Status, d.taskID(), tk.ID)
					}
				}
				if ts := g.tasks(t); len(ts) != 1 {
					t.Errorf("tasks = %v, want 1", taskSummaries(ts))
				}
			})
		}
		// Without a task for the old issue, the pair still makes one task.
		t.Run("no task for the old issue", func(t *testing.T) {
			t.Parallel()
			g := startGateway(t, newDatabaseURL(t, dialect))
			for _, name := range []string{"github/issues.opened.with-transfer.json", "github/issues.transferred.json"} {
				if d := g.process(t, fixtureHook(t, name)); d.Status == "failed" {
					t.Fatalf("%s: failed: %s", name, str(d.LastError))
				}
			}
			checkTask(t, g.onlyTask(t), ghIssueTask)
		})
	})
}

// TestStaleEditSkipped: an edit whose provider timestamp is older than the
// last one applied to the task does not overwrite it.
func TestStaleEditSkipped(t *testing.T) {
	t.Parallel()
	ghEdit := func(title, updated string) hookFn {
		return func(t testing.TB) hook {
			h := fixtureHook(t, "github/issues.edited.json")
			h.Body = mutate(t, h.Body, func(m map[string]any) {
				issue := obj(t, m, "issue")
				issue["title"], issue["updated_at"] = title, updated
			})
			return h
		}
	}
	glEdit := func(title, updated string) hookFn {
		return func(t testing.TB) hook {
			h := fixtureHook(t, "gitlab/issue.json")
			h.Body = mutate(t, h.Body, func(m map[string]any) {
				oa := obj(t, m, "object_attributes")
				oa["action"], oa["title"], oa["updated_at"] = "update", title, updated
			})
			return h
		}
	}
	jiraEdit := func(title string, timestamp int64) hookFn {
		return func(t testing.TB) hook {
			h := fixtureHook(t, "jira/webhook-issue-updated-renamed.json")
			h.Body = mutate(t, h.Body, func(m map[string]any) {
				m["timestamp"] = timestamp
				obj(t, obj(t, m, "issue"), "fields")["summary"] = title
			})
			return h
		}
	}
	cases := []struct {
		name               string
		create, newer, old hookFn
	}{
		{"github", fx("github/issues.opened.json"),
			ghEdit("Newer title", "2019-05-16T00:00:00Z"), ghEdit("Stale title", "2019-05-15T23:59:59Z")},
		{"gitlab", fx("gitlab/issue.json"),
			glEdit("Newer title", "2013-12-04T00:00:00Z"), glEdit("Stale title", "2013-12-03 23:00:00 UTC")},
		{"jira", fx("jira/webhook-issue-created.json"),
			jiraEdit("Newer title", 1550300000000), jiraEdit("Stale title", 1550290000000)},
	}
	forEachDialect(t, func(t *testing.T, dialect string) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				g := startGateway(t, newDatabaseURL(t, dialect))
				created := g.process(t, tc.create(t))
				if created.Status != "succeeded" {
					t.Fatalf("create: %q", created.Status)
				}
				if d := g.process(t, tc.newer(t)); d.Status != "succeeded" || strings.Contains(d.result(), "stale") {
					t.Fatalf("newer edit: %q %q, want applied", d.Status, d.result())
				}
				d := g.process(t, tc.old(t))
				if d.Status != "succeeded" || d.taskID() != created.taskID() || !strings.Contains(d.result(), "stale") {
					t.Errorf("older edit: status %q task %q result %q, want succeeded with a stale update skipped on %s",
						d.Status, d.taskID(), d.result(), created.taskID())
				}
				if tk := g.onlyTask(t); tk.Title != "Newer title" {
					t.Errorf("title = %q, want %q (the stale edit must not overwrite it)", tk.Title, "Newer title")
				}
			})
		}
	})
}

// TestMalformedPayload: a poison delivery ends failed at once with a
// readable last_error, and the next delivery of the connection succeeds.
func TestMalformedPayload(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		bad  hook
		next hookFn
	}{
		{"github issue is not an object", hook{Conn: "github", Event: "issues", Body: []byte(`{"action":"opened","issue":"not an object"}`)},
			fx("github/issues.opened.json")},
		{"github not JSON", hook{Conn: "github", Event: "issues", Body: []byte("this is not JSON")},
			fx("github/issues.opened.json")},
		{"github issue without id", hook{Conn: "github", Event: "issues",
			Body: []byte(`{"action":"opened","issue":{"number":1,"title":"x"},"repository":{"full_name":"a/b"}}`)},
			fx("github/issues.opened.json")},
		{"gitlab attributes are not an object", hook{Conn: "gitlab", Event: "Issue Hook",
			Body: []byte(`{"object_kind":"issue","object_attributes":"x"}`)}, fx("gitlab/issue.json")},
		{"jira issue is a number", hook{Conn: "jira", Body: []byte(`{"webhookEvent":"jira:issue_created","issue":42}`)},
			fx("jira/webhook-issue-created.json")},
	}
	forEachDialect(t, func(t *testing.T, dialect string) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				g := startGateway(t, newDatabaseURL(t, dialect))
				d := g.process(t, tc.bad)
				if d.Status != "failed" {
					t.Fatalf("status = %q (result %q), want failed", d.Status, d.result())
				}
				if d.Attempts != 1 {
					t.Errorf("attempts = %d, want 1 (a malformed payload is not retried)", d.Attempts)
				}
				msg := str(d.LastError)
				if !strings.Contains(msg, "malformed payload") || strings.ContainsFunc(msg, func(r rune) bool { return r < ' ' }) {
					t.Errorf("last_error = %q, want a readable message naming the malformed payload", msg)
				}
				if d.Outcome != nil {
					t.Errorf("outcome = %+v, want null for a failed delivery", d.Outcome)
				}
				// Operators see the body as received (text when not JSON).
				want := tc.bad.Body
				if !json.Valid(want) {
					want, _ = json.Marshal(string(want))
				}
				if got := g.getDelivery(t, d.ID).Body; !bytes.Equal(compactJSON(t, got), compactJSON(t, want)) {
					t.Errorf("stored body = %s, want %s", got, want)
				}
				next := g.process(t, tc.next(t))
				if next.Status != "succeeded" {
					t.Errorf("next delivery: %q (%s), want succeeded", next.Status, str(next.LastError))
				}
				if ts := g.tasks(t); len(ts) != 1 {
					t.Errorf("tasks = %v, want 1", taskSummaries(ts))
				}
				failed := g.deliveriesWith(t, "status=failed")
				if len(failed) != 1 || failed[0].ID != d.ID {
					t.Errorf("failed deliveries = %+v, want only %s", failed, d.ID)
				}
			})
		}
	})
}

func compactJSON(t *testing.T, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		t.Fatalf("compact %s: %v", b, err)
	}
	return out.Bytes()
}

// deliveriesWith lists the first page of deliveries matching a query.
func (g *gateway) deliveriesWith(t *testing.T, query string) []delivery {
	t.Helper()
	var page struct {
		Deliveries []delivery `json:"deliveries"`
	}
	g.getJSON(t, "/api/v1/deliveries?"+query, &page)
	return page.Deliveries
}

// replay replays a delivery and waits for the new outcome.
func (g *gateway) replay(t *testing.T, id string) delivery {
	t.Helper()
	status, body := g.apiDo(t, http.MethodPost, "/api/v1/deliveries/"+id+"/replay", nil)
	if status != http.StatusAccepted {
		t.Fatalf("POST /api/v1/deliveries/%s/replay = %d %s, want 202", id, status, body)
	}
	var queued delivery
	if err := json.Unmarshal(body, &queued); err != nil {
		t.Fatal(err)
	}
	if queued.ID != id || finalStatus(queued.Status) {
		t.Errorf("replay answer = %s, want delivery %s queued", body, id)
	}
	return g.waitDelivery(t, id)
}

// TestReplay: an operator replay re-runs a delivery with today's state:
// after an operator edit it re-applies the event, after an operator delete
// it is suppressed, and once the suppression is cleared it creates again.
func TestReplay(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, dialect string) {
		g := startGateway(t, newDatabaseURL(t, dialect))
		d := g.process(t, fixtureHook(t, "github/issues.opened.json"))
		taskID := d.taskID()

		// An operator renames the task; replaying the delivery re-applies it.
		if status, body := g.apiDo(t, http.MethodPatch, "/api/v1/tasks/"+taskID, map[string]any{"title": "Renamed by an operator"}); status != http.StatusOK {
			t.Fatalf("PATCH = %d %s", status, body)
		}
		r := g.replay(t, d.ID)
		// A replay starts the delivery's attempts afresh.
		if r.Status != "succeeded" || r.Attempts != 1 || r.taskID() != taskID {
			t.Errorf("replay: status %q attempts %d task %q, want succeeded, 1, %s", r.Status, r.Attempts, r.taskID(), taskID)
		}
		checkTask(t, g.onlyTask(t), ghIssueTask)

		// An operator deletes the connector's task: the entity is suppressed
		// and a replay creates nothing.
		if status, body := g.apiDo(t, http.MethodDelete, "/api/v1/tasks/"+taskID, nil); status != http.StatusNoContent {
			t.Fatalf("DELETE task = %d %s", status, body)
		}
		want := suppression{WorkspaceID: testWorkspace, ExternalID: ghIssueID, TaskID: taskID, Reason: "deleted by operator"}
		if got := g.suppressions(t); !slices.Equal(got, []suppression{want}) {
			t.Errorf("suppressions = %+v, want [%+v]", got, want)
		}
		if r := g.replay(t, d.ID); r.Status != "suppressed" {
			t.Errorf("replay after the delete: status %q (%s), want suppressed", r.Status, r.result())
		}
		if ts := g.tasks(t); len(ts) != 0 {
			t.Errorf("tasks = %v, want none", taskSummaries(ts))
		}

		// Cleared: the replay creates a new task.
		g.clearSuppression(t, testWorkspace, ghIssueID)
		r = g.replay(t, d.ID)
		if r.Status != "succeeded" || r.action() != "create" {
			t.Errorf("replay after clearing: status %q action %q, want succeeded create", r.Status, r.action())
		}
		tk := g.onlyTask(t)
		checkTask(t, tk, ghIssueTask)
		if tk.ID == taskID || r.taskID() != tk.ID {
			t.Errorf("task %s (outcome %s), want a new task, not the deleted %s", tk.ID, r.taskID(), taskID)
		}

		// A failed delivery replays too, and fails again the same way.
		bad := g.process(t, hook{Conn: "github", Event: "issues", Body: []byte(`{"action":"opened","issue":7}`)})
		if r := g.replay(t, bad.ID); r.Status != "failed" || str(r.LastError) == "" {
			t.Errorf("replay of a poison delivery: status %q last_error %q, want failed with an error", r.Status, str(r.LastError))
		}
		if status, _ := g.apiDo(t, http.MethodPost, "/api/v1/deliveries/00000000-0000-0000-0000-000000000000/replay", nil); status != http.StatusNotFound {
			t.Errorf("replay of an unknown delivery = %d, want 404", status)
		}
	})
}

func (g *gateway) clearSuppression(t *testing.T, workspace, externalID string) {
	t.Helper()
	q := url.Values{"workspace_id": {workspace}, "external_id": {externalID}}
	if status, body := g.apiDo(t, http.MethodDelete, "/api/v1/suppressions?"+q.Encode(), nil); status != http.StatusNoContent {
		t.Fatalf("DELETE /api/v1/suppressions?%s = %d %s, want 204", q.Encode(), status, body)
	}
}

// TestSuppressionsAPI: operators list and clear suppressions; a cleared
// entity creates a task again.
func TestSuppressionsAPI(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, dialect string) {
		g := startGateway(t, newDatabaseURL(t, dialect))
		created := g.process(t, fixtureHook(t, "github/issues.opened.json"))
		g.process(t, fixtureHook(t, "github/issues.deleted.json"))
		g.process(t, fixtureHook(t, "jira/webhook-issue-deleted.json"))

		got := g.suppressions(t)
		want := []suppression{
			{WorkspaceID: testWorkspace, ExternalID: ghIssueID, TaskID: created.taskID(), Reason: "deleted at source"},
			{WorkspaceID: testWorkspace, ExternalID: jiraIDT19ID, Reason: "deleted at source"},
		}
		if !slices.Equal(got, want) {
			t.Errorf("suppressions = %+v, want %+v", got, want)
		}
		// Filtered by workspace, paged by cursor.
		var page struct {
			Suppressions []suppression `json:"suppressions"`
			NextCursor   string        `json:"next_cursor"`
		}
		g.getJSON(t, "/api/v1/suppressions?workspace_id=other", &page)
		if len(page.Suppressions) != 0 {
			t.Errorf("suppressions of workspace other = %+v, want none", page.Suppressions)
		}
		g.getJSON(t, "/api/v1/suppressions?limit=1", &page)
		if len(page.Suppressions) != 1 || page.NextCursor == "" {
			t.Fatalf("first page = %+v cursor %q, want 1 item and a cursor", page.Suppressions, page.NextCursor)
		}
		first := page.Suppressions[0]
		next := page.NextCursor
		page.NextCursor = ""
		g.getJSON(t, "/api/v1/suppressions?limit=1&cursor="+next, &page)
		if len(page.Suppressions) != 1 || page.Suppressions[0] == first || page.NextCursor != "" {
			t.Errorf("second page = %+v cursor %q, want the other suppression and no cursor", page.Suppressions, page.NextCursor)
		}

		for _, tc := range []struct {
			query string
			want  int
		}{
			{"workspace_id=" + testWorkspace, http.StatusBadRequest},
			{"external_id=" + url.QueryEscape(ghIssueID), http.StatusBadRequest},
			{"workspace_id=" + testWorkspace + "&external_id=github%3Agithub.com%3Aissue%3A1", http.StatusNotFound},
		} {
			if status, body := g.apiDo(t, http.MethodDelete, "/api/v1/suppressions?"+tc.query, nil); status != tc.want {
				t.Errorf("DELETE /api/v1/suppressions?%s = %d %s, want %d", tc.query, status, body, tc.want)
			}
		}
		g.clearSuppression(t, testWorkspace, ghIssueID)
		if got := g.suppressions(t); !slices.Equal(got, want[1:]) {
			t.Errorf("suppressions after clearing = %+v, want %+v", got, want[1:])
		}
		// The entity is no longer suppressed: its next delivery creates.
		d := g.process(t, fixtureHook(t, "github/issues.opened.json"))
		if d.Status != "succeeded" || d.action() != "create" {
			t.Errorf("opened after clearing: %q %q, want succeeded create", d.Status, d.action())
		}
		checkTask(t, g.onlyTask(t), ghIssueTask)
		// Operators only: no token, no access.
		resp, err := g.client.Get(g.URL + "/api/v1/suppressions")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET /api/v1/suppressions without a token = %d, want 401", resp.StatusCode)
		}
	})
}

// runCLI runs Main with args and returns its exit code, stdout and stderr.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Main(context.Background(), args, noEnv, &out, &errOut)
	return code, out.String(), errOut.String()
}

// TestSendCLI: `gateway send` signs and posts fixtures as the providers
// would, and the operator commands read and replay what happened.
func TestSendCLI(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, dialect string) {
		g := startGateway(t, newDatabaseURL(t, dialect))
		send := func(t *testing.T, extra ...string) (int, receipt, string) {
			t.Helper()
			args := append([]string{"send", "--url", g.URL, "--config", g.Config}, extra...)
			code, out, errOut := runCLI(t, args...)
			var r receipt
			if code == 0 {
				status, body, _ := strings.Cut(out, " Accepted ")
				if status != "202" {
					t.Fatalf("gateway send printed %q, want \"202 Accepted {…}\"", out)
				}
				if err := json.Unmarshal([]byte(body), &r); err != nil {
					t.Fatalf("gateway send printed %q: %v", out, err)
				}
			}
			return code, r, out + errOut
		}
		cases := []struct {
			conn, file string
			want       taskWant
		}{
			{"github", "github/issues.opened.json", ghIssueTask},
			{"gitlab", "gitlab/issue.json", glIssueTask},
			{"jira", "jira/webhook-issue-created.json", jiraTask},
		}
		ids := map[string]string{}
		for _, tc := range cases {
			code, r, out := send(t, "--connection", tc.conn, "--file", filepath.Join(fixturesDir, tc.file))
			if code != 0 || r.Status != "accepted" {
				t.Fatalf("gateway send %s: exit %d receipt %+v output %q, want 0 accepted", tc.file, code, r, out)
			}
			d := g.waitDelivery(t, r.DeliveryID)
			if d.Status != "succeeded" || d.action() != "create" {
				t.Errorf("%s: %q %q (%s), want succeeded create", tc.file, d.Status, d.action(), str(d.LastError))
			}
			tk, ok := g.getTask(t, d.taskID())
			if !ok {
				t.Fatalf("%s: task %s not found", tc.file, d.taskID())
			}
			checkTask(t, tk, tc.want)
			ids[tc.conn] = r.DeliveryID
		}
		// --delivery fixes the delivery ID: the resend is a duplicate.
		file := filepath.Join(fixturesDir, "github/issues.edited.json")
		_, first, _ := send(t, "--connection", "github", "--file", file, "--delivery", "cli-fixed")
		code, second, out := send(t, "--connection", "github", "--file", file, "--delivery", "cli-fixed")
		if code != 0 || second.Status != "duplicate" || second.DeliveryID != first.DeliveryID {
			t.Errorf("resend with --delivery: exit %d receipt %+v (%q), want a duplicate of %s", code, second, out, first.DeliveryID)
		}
		// A wrong secret: the gateway answers 401 and send exits 1.
		code, _, out = send(t, "--connection", "github", "--file", file, "--secret", "wrong")
		if code != 1 || !strings.Contains(out, "401") {
			t.Errorf("send with a wrong secret: exit %d output %q, want 1 and the 401", code, out)
		}
		g.waitIdle(t, waitTimeout)

		// Operator commands.
		// op runs `gateway <command> <sub> --url … --admin-token … [args]`
		// (flags before the positional ID, as Go's flag package requires).
		op := func(command, sub string, args ...string) (int, string) {
			t.Helper()
			full := append([]string{command, sub, "--url", g.URL, "--admin-token", testAdminToken}, args...)
			code, out, errOut := runCLI(t, full...)
			return code, out + errOut
		}
		code, out = op("deliveries", "list", "-o", "json", "--connection", "jira")
		var list struct {
			Deliveries []delivery `json:"deliveries"`
		}
		if err := json.Unmarshal([]byte(out), &list); code != 0 || err != nil || len(list.Deliveries) != 1 || list.Deliveries[0].ID != ids["jira"] {
			t.Errorf("deliveries list --connection jira: exit %d output %q, want the jira delivery", code, out)
		}
		code, out = op("deliveries", "get", "-o", "json", ids["gitlab"])
		var got delivery
		if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil || got.ID != ids["gitlab"] || len(got.Body) == 0 {
			t.Errorf("deliveries get: exit %d output %.200q, want the gitlab delivery with its body", code, out)
		}
		if _, ok := got.Headers["X-Gitlab-Token"]; ok {
			t.Errorf("deliveries get shows the X-Gitlab-Token header")
		}
		// Replay re-applies the delivery over an operator's rename.
		ghTask := g.waitDelivery(t, ids["github"]).taskID()
		if status, body := g.apiDo(t, http.MethodPatch, "/api/v1/tasks/"+ghTask, map[string]any{"title": "Renamed"}); status != http.StatusOK {
			t.Fatalf("PATCH = %d %s", status, body)
		}
		code, out = op("deliveries", "replay", ids["github"])
		if code != 0 || !strings.Contains(out, ids["github"]) {
			t.Errorf("deliveries replay: exit %d output %q", code, out)
		}
		if d := g.waitDelivery(t, ids["github"]); d.Status != "succeeded" {
			t.Errorf("replayed delivery: %q, want succeeded", d.Status)
		}
		if tk, _ := g.getTask(t, ghTask); tk.Title != ghIssueTask.title {
			t.Errorf("title after the replay = %q, want %q", tk.Title, ghIssueTask.title)
		}
		g.process(t, fixtureHook(t, "jira/webhook-issue-deleted.json"))
		code, out = op("suppressions", "list")
		if code != 0 || !strings.Contains(out, jiraIDT19ID) {
			t.Errorf("suppressions list: exit %d output %q, want %s", code, out, jiraIDT19ID)
		}
		code, out = op("suppressions", "clear", "--workspace", testWorkspace, "--external-id", jiraIDT19ID)
		if code != 0 || !strings.Contains(out, "cleared the suppression of "+jiraIDT19ID+" in workspace "+testWorkspace) {
			t.Errorf("suppressions clear: exit %d output %q, want it to say what it cleared", code, out)
		}
		if got := g.suppressions(t); len(got) != 0 {
			t.Errorf("suppressions after clear = %+v, want none", got)
		}
		if code, out, errOut := runCLI(t, "deliveries", "list", "--url", g.URL, "--admin-token", "not-a-token"); code != 1 || !strings.Contains(out+errOut, "401") {
			t.Errorf("deliveries list with a bad token: exit %d output %q, want 1 and the 401", code, out+errOut)
		}
	})
}
