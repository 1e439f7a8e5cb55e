package console_test

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/store/sqlstore"
	"github.com/trackergateway/gateway/internal/store/storetest"
)

// wantIn fails unless body holds every one of want, and none of unwanted.
func wantIn(t *testing.T, what, body string, want []string, unwanted []string) {
	t.Helper()
	body = html.UnescapeString(body)
	for _, w := range want {
		if !strings.Contains(body, w) {
			t.Errorf("%s does not show %q", what, w)
		}
	}
	for _, u := range unwanted {
		if strings.Contains(body, u) {
			t.Errorf("%s shows %q", what, u)
		}
	}
}

// seedTask stores a completed task of workspace ws.
func seedTask(t *testing.T, st store.Store, ws, title string, n int) store.Task {
	t.Helper()
	task := store.Task{ID: uuid.NewString(), WorkspaceID: ws, Identifier: strings.ToUpper(ws) + "-" + string(rune('0'+n)),
		Title: title, WorkflowStepID: "backlog", ExternalID: "github:github.com:issue:" + title, CreationState: store.CreationComplete,
		CreatedAt: start.Add(time.Duration(n) * time.Second), UpdatedAt: start}
	if err := st.InsertTask(context.Background(), task); err != nil {
		t.Fatalf("insert task: %v", err)
	}
	return task
}

func TestOverview(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		e := newEnv(t, st)
		e.seedDelivery(t, "gh", "old", 3*time.Hour, store.DeliverySucceeded, "")
		e.seedDelivery(t, "gh", "ok", 10*time.Minute, store.DeliverySucceeded, "")
		e.seedDelivery(t, "gh", "bad", 5*time.Minute, store.DeliveryFailed, "parse issues: unexpected end of JSON")
		e.seedDelivery(t, "gh", "waiting", 20*time.Minute, store.DeliveryQueued, "")

		admin := e.login(t, adminToken)
		res := admin.get(t, "/ui/")
		if res.status != http.StatusOK {
			t.Fatalf("GET /ui/ = %d", res.status)
		}
		gh, gl, _ := strings.Cut(res.body, `id="conn-gl"`)
		wantIn(t, "the overview of gh", gh, []string{
			// Last hour: ok, bad and waiting; last day: old as well.
			`<h3>Last hour</h3><ul class="counts"><li><span class="status s-queued">queued</span> 1</li><li><span class="status s-succeeded">succeeded</span> 1</li><li><span class="status s-failed">failed</span> 1</li></ul>`,
			`<h3>Last 24 hours</h3><ul class="counts"><li><span class="status s-queued">queued</span> 1</li><li><span class="status s-succeeded">succeeded</span> 2</li><li><span class="status s-failed">failed</span> 1</li></ul>`,
			// Backlog and the oldest queued delivery's age.
			`<h3>Backlog</h3><p class="big">1</p>`, `<p class="big">20m</p>`,
			// The chart: one bar per minute with deliveries, its title
			// saying what it counts.
			`<title>10:10 UTC: 1 queued</title>`, `<title>10:20 UTC: 1 succeeded</title>`, `<title>10:25 UTC: 1 failed</title>`,
			`class="s-failed"`,
			// Recent failures, linked.
			"parse issues: unexpected end of JSON",
		}, nil)
		wantIn(t, "the overview of gl", gl, []string{`<h3>Last hour</h3><span class="muted">none</span>`, "No failed deliveries."}, []string{"parse issues"})
		wantIn(t, "the overview", res.body, []string{`href="/ui/workspaces/eng/tasks"`, `href="/ui/workspaces/ops/tasks"`, `href="/ui/deliveries"`}, nil)

		// A workspace token sees its workspaces only, and no operator data.
		eng := e.login(t, engToken)
		res = eng.get(t, "/ui/")
		wantIn(t, "a workspace token's overview", res.body, []string{`href="/ui/workspaces/eng/tasks"`},
			[]string{`href="/ui/workspaces/ops/tasks"`, `id="conn-gh"`, `href="/ui/deliveries"`, "parse issues"})
	})
}

// The operator pages are the admin's; for a workspace token they do not
// exist, as the operator API answers.
func TestOperatorPagesAreAdminOnly(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		e := newEnv(t, st)
		failed := e.seedDelivery(t, "gh", "failed-1", time.Minute, store.DeliveryFailed, "boom")
		eng := e.login(t, engToken)
		for _, path := range []string{"/ui/deliveries", "/ui/deliveries/" + failed.ID, "/ui/replay?status=failed", "/ui/suppressions", "/ui/recover"} {
			if res := eng.get(t, path); res.status != http.StatusNotFound {
				t.Errorf("GET %s with a workspace token = %d, want 404", path, res.status)
			}
		}
		for _, path := range []string{"/ui/deliveries/" + failed.ID + "/replay", "/ui/replay", "/ui/suppressions/clear", "/ui/recover"} {
			if res := eng.post(t, path, url.Values{"status": {"failed"}}); res.status != http.StatusNotFound {
				t.Errorf("POST %s with a workspace token = %d, want 404", path, res.status)
			}
		}
		if d, _ := st.GetDelivery(context.Background(), failed.ID); d.Status != store.DeliveryFailed {
			t.Errorf("the delivery is %s after a workspace token's replays, want failed", d.Status)
		}
	})
}

func TestDeliveriesPage(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		e := newEnv(t, st)
		for i, key := range []string{"a", "b", "c"} {
			e.seedDelivery(t, "gh", "failed-"+key, time.Duration(10-i)*time.Minute, store.DeliveryFailed, "timeout "+key)
		}
		e.seedDelivery(t, "gl", "fine", time.Minute, store.DeliveryIgnored, "")
		// GitHub's key form, "<hook id>:<GUID>".
		e.seedDelivery(t, "gh", "987:72d3162e-cc78-11e3-81ab-4c9367dc0958", 30*time.Second, store.DeliveryFailed, "timeout x")
		b := e.login(t, adminToken)

		tests := []struct {
			name, query    string
			status         int
			want, unwanted []string
		}{
			{"no filter", "", http.StatusOK, []string{"timeout a", "timeout c", `/ui/deliveries/`,
				// The outcome: the action and the result recorded.
				`<th scope="col">Outcome</th>`, `<code>ignore</code> <span class="result">event not mapped</span>`}, nil},
			{"the provider's delivery ID", "?delivery_key=72d3162e-cc78-11e3-81ab-4c9367dc0958", http.StatusOK, []string{"timeout x"},
				[]string{"timeout a", "timeout b", "timeout c"}},
			{"a stored delivery key", "?delivery_key=987%3A72d3162e-cc78-11e3-81ab-4c9367dc0958", http.StatusOK, []string{"timeout x"},
				[]string{"timeout a"}},
			{"status and connection", "?status=failed&connection=gh", http.StatusOK, []string{"timeout a", "timeout b", "timeout c"},
				[]string{`<td>gl</td>`}},
			{"error text", "?error_contains=TIMEOUT+B", http.StatusOK, []string{"timeout b"}, []string{"timeout a", "timeout c"}},
			{"received after", "?received_after=" + url.QueryEscape(start.Add(-9*time.Minute).Format(time.RFC3339)), http.StatusOK,
				[]string{"timeout b", "timeout c"}, []string{"timeout a"}},
			{"nothing matches", "?status=retrying", http.StatusOK, []string{"No deliveries."}, []string{"timeout"}},
			{"a bad status", "?status=broken", http.StatusBadRequest, []string{`invalid status "broken"`}, []string{"timeout"}},
			{"a bad time", "?received_after=yesterday", http.StatusBadRequest, []string{"received_after must be an RFC 3339 time"}, nil},
		}
		for _, tt := range tests {
			res := b.get(t, "/ui/deliveries"+tt.query)
			if res.status != tt.status {
				t.Errorf("%s: status %d, want %d", tt.name, res.status, tt.status)
			}
			wantIn(t, tt.name, res.body, tt.want, tt.unwanted)
		}
		// The filters stay in the form.
		res := b.get(t, "/ui/deliveries?status=failed&error_contains=timeout&delivery_key=k")
		wantIn(t, "the filter form", res.body, []string{`<option selected>failed</option>`, `name="error_contains" value="timeout"`,
			`name="delivery_key" value="k"`}, nil)
	})
}

// Pages are 50 deliveries long; the next page's link keeps the filters and
// the pages list every delivery once.
func TestDeliveriesPaging(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		e := newEnv(t, st)
		ctx := context.Background()
		var ds []store.Delivery
		for i := range 55 {
			ds = append(ds, store.Delivery{ConnectionID: "gh", Provider: "github", Event: "issues", DeliveryKey: uuid.NewString(),
				Headers: `{}`, Body: []byte(`{}`), ReceivedAt: start.Add(-time.Duration(i) * time.Second)})
		}
		if _, err := st.InsertDeliveries(ctx, ds); err != nil {
			t.Fatal(err)
		}
		b := e.login(t, adminToken)
		seen := map[string]bool{}
		path := "/ui/deliveries?connection=gh"
		for pages := 0; path != ""; pages++ {
			if pages > 2 {
				t.Fatal("more than 2 pages for 55 deliveries")
			}
			res := b.get(t, path)
			for _, part := range strings.Split(res.body, `<a href="/ui/deliveries/`)[1:] {
				id, _, _ := strings.Cut(part, `"`)
				if seen[id] {
					t.Errorf("delivery %s is listed twice", id)
				}
				seen[id] = true
			}
			path = ""
			if _, next, ok := strings.Cut(res.body, `<a href="/ui/deliveries?`); ok {
				q, _, _ := strings.Cut(next, `"`)
				q = html.UnescapeString(q)
				if !strings.Contains(q, "connection=gh") {
					t.Errorf("the next page's link %q drops the filter", q)
				}
				path = "/ui/deliveries?" + q
			}
		}
		if len(seen) != 55 {
			t.Errorf("the pages list %d deliveries, want 55", len(seen))
		}
	})
}

func TestDeliveryPageAndReplay(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		e := newEnv(t, st)
		task := seedTask(t, st, "eng", "Spelling", 1)
		done := e.seedDelivery(t, "gh", "done", 2*time.Minute, store.DeliveryQueued, "")
		claimed, err := st.ClaimDeliveries(context.Background(), "w", start.Add(time.Hour), time.Hour, 1)
		if err != nil || len(claimed) != 1 {
			t.Fatalf("claim: %v", err)
		}
		at := start
		claimed[0].Status, claimed[0].ProcessedAt = store.DeliverySucceeded, &at
		claimed[0].OutcomeTaskID, claimed[0].OutcomeExternalID, claimed[0].OutcomeAction, claimed[0].OutcomeResult =
			task.ID, task.ExternalID, "create", "created"
		if err := st.FinishDelivery(context.Background(), claimed[0], "w"); err != nil {
			t.Fatal(err)
		}
		failed := e.seedDelivery(t, "gh", "failed", time.Minute, store.DeliveryFailed, "parse issues: unexpected end of JSON")
		b := e.login(t, adminToken)

		res := b.get(t, "/ui/deliveries/"+done.ID)
		wantIn(t, "a succeeded delivery", res.body, []string{
			`<a href="/ui/tasks/` + task.ID + `">ENG-1 Spelling</a>`, "create", "created", task.ExternalID,
			// Headers without secrets, the body indented.
			"X-Github-Event", "Content-Type", "{\n  \"action\": \"opened\",\n  \"issue\": {\n    \"id\": 1,",
			// Received 2 minutes before the clock's now.
			"2026-03-04 10:28:15 UTC", "2m ago",
		}, []string{"X-Hub-Signature-256", "secret-signature"})

		res = b.get(t, "/ui/deliveries/"+failed.ID)
		wantIn(t, "a failed delivery", res.body, []string{"parse issues: unexpected end of JSON", "Failed: no outcome.",
			`action="/ui/deliveries/` + failed.ID + `/replay"`}, nil)

		res = b.post(t, "/ui/deliveries/"+failed.ID+"/replay", nil)
		if res.status != http.StatusSeeOther || !strings.HasPrefix(res.location, "/ui/deliveries/"+failed.ID+"?notice=") {
			t.Fatalf("replay = %d Location %q, want 303 back to the delivery", res.status, res.location)
		}
		res = b.get(t, res.location)
		wantIn(t, "the replayed delivery", res.body, []string{"Delivery queued for replay.", `<span class="status s-queued">queued</span>`,
			"A delivery can be replayed once it has finished."}, []string{`action="/ui/deliveries/` + failed.ID + `/replay"`})

		// Replaying it again before it finished is a conflict.
		res = b.post(t, "/ui/deliveries/"+failed.ID+"/replay", nil)
		if res.status != http.StatusConflict || !strings.Contains(res.body, "delivery has not finished") {
			t.Errorf("replay of a queued delivery = %d, want 409 saying why", res.status)
		}
		if res := b.get(t, "/ui/deliveries/"+uuid.NewString()); res.status != http.StatusNotFound {
			t.Errorf("an unknown delivery = %d, want 404", res.status)
		}
	})
}

func TestBulkReplay(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		e := newEnv(t, st)
		var failed []store.Delivery
		for _, key := range []string{"a", "b", "c"} {
			failed = append(failed, e.seedDelivery(t, "gh", key, time.Minute, store.DeliveryFailed, "boom"))
		}
		e.seedDelivery(t, "gl", "other", time.Minute, store.DeliveryFailed, "boom")
		b := e.login(t, adminToken)

		if res := b.get(t, "/ui/replay"); res.status != http.StatusOK || !strings.Contains(res.body, "Set at least one filter") {
			t.Errorf("the bulk replay form = %d, want 200 asking for a filter", res.status)
		}
		// The dry run changes nothing.
		res := b.get(t, "/ui/replay?status=failed&connection=gh")
		wantIn(t, "the dry run", res.body, []string{"<strong>3</strong> deliveries match; <strong>3</strong> would be replayed",
			`<input type="hidden" name="connection" value="gh">`, `<input type="hidden" name="status" value="failed">`, "Replay 3 deliveries"}, nil)
		for _, d := range failed {
			if got, _ := st.GetDelivery(context.Background(), d.ID); got.Status != store.DeliveryFailed {
				t.Fatalf("after the dry run %s is %s, want failed", d.DeliveryKey, got.Status)
			}
		}
		if res := b.get(t, "/ui/replay?max=0&status=failed"); res.status != http.StatusBadRequest || !strings.Contains(res.body, "max must be") {
			t.Errorf("a dry run with max 0 = %d, want 400", res.status)
		}

		res = b.post(t, "/ui/replay", url.Values{"status": {"failed"}, "connection": {"gh"}, "max": {"2"}})
		if res.status != http.StatusSeeOther || !strings.HasPrefix(res.location, "/ui/replay?") {
			t.Fatalf("confirm = %d Location %q, want 303 to the bulk replay page", res.status, res.location)
		}
		res = b.get(t, res.location)
		wantIn(t, "the page after the replay", res.body, []string{"Replayed 2 of 2 matched deliveries; 0 had not finished",
			"<strong>1</strong> would be replayed"}, nil)
		queued := 0
		for _, d := range failed {
			if got, _ := st.GetDelivery(context.Background(), d.ID); got.Status == store.DeliveryQueued {
				queued++
			}
		}
		if queued != 2 {
			t.Errorf("%d deliveries of gh queued, want the newest 2", queued)
		}
		if res := b.post(t, "/ui/replay", url.Values{}); res.status != http.StatusBadRequest {
			t.Errorf("confirm without a filter = %d, want 400", res.status)
		}
	})
}

func TestSuppressionsPage(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		e := newEnv(t, st)
		ctx := context.Background()
		for _, s := range []store.Suppression{
			{WorkspaceID: "eng", ExternalID: "github:github.com:issue:7", Reason: "deleted by provider", CreatedAt: start},
			{WorkspaceID: "ops", ExternalID: "jira:acme:issue:9", Reason: "deleted by operator", CreatedAt: start},
		} {
			if err := st.UpsertSuppression(ctx, s); err != nil {
				t.Fatal(err)
			}
		}
		b := e.login(t, adminToken)
		wantIn(t, "the suppressions", b.get(t, "/ui/suppressions").body,
			[]string{"github:github.com:issue:7", "jira:acme:issue:9", "deleted by provider"}, nil)
		wantIn(t, "one workspace's suppressions", b.get(t, "/ui/suppressions?workspace_id=ops").body,
			[]string{"jira:acme:issue:9"}, []string{"github:github.com:issue:7"})

		res := b.post(t, "/ui/suppressions/clear", url.Values{"workspace_id": {"eng"}, "external_id": {"github:github.com:issue:7"}})
		if res.status != http.StatusSeeOther {
			t.Fatalf("clear = %d, want 303", res.status)
		}
		wantIn(t, "the suppressions after clearing one", b.get(t, res.location).body,
			[]string{"Cleared the suppression of github:github.com:issue:7 in eng.", "jira:acme:issue:9"},
			[]string{"<code>github:github.com:issue:7</code>"})
		if _, err := st.GetSuppression(ctx, "eng", "github:github.com:issue:7"); err == nil {
			t.Error("the cleared suppression is still stored")
		}
		res = b.post(t, "/ui/suppressions/clear", url.Values{"workspace_id": {"eng"}, "external_id": {"github:github.com:issue:7"}})
		if res.status != http.StatusNotFound || !strings.Contains(res.body, "suppression not found") {
			t.Errorf("clearing it again = %d, want 404", res.status)
		}
	})
}

// A workspace's tasks, with their PRs/MRs, for whoever can see the
// workspace; any other workspace or task is a 404.
func TestTaskPages(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		e := newEnv(t, st)
		ctx := context.Background()
		engTask := seedTask(t, st, "eng", "Spelling", 1)
		opsTask := seedTask(t, st, "ops", "Outage", 2)
		merged := start
		if err := st.UpsertProjection(ctx, store.Projection{Provider: "github", TaskID: engTask.ID, ConnectionID: "gh", ProviderID: 77,
			Repository: "acme/app", Number: 12, URL: "https://github.com/acme/app/pull/12", Title: "Fix spelling", State: "closed",
			Merged: true, MergedAt: &merged, HeadBranch: "fix-spelling", ProviderUpdatedAt: &merged}); err != nil {
			t.Fatal(err)
		}
		eng := e.login(t, engToken)
		res := eng.get(t, "/ui/workspaces/eng/tasks")
		wantIn(t, "eng's tasks", res.body, []string{"ENG team", "ENG-1", "Spelling", `<a href="https://github.com/acme/app/pull/12">acme/app#12</a>`,
			"Fix spelling", "merged", "fix-spelling"}, []string{"Outage"})
		wantIn(t, "an eng task", eng.get(t, "/ui/tasks/"+engTask.ID).body, []string{"ENG-1", "acme/app#12"}, nil)
		for _, path := range []string{"/ui/workspaces/ops/tasks", "/ui/tasks/" + opsTask.ID, "/ui/workspaces/nowhere/tasks", "/ui/tasks/nothing"} {
			if res := eng.get(t, path); res.status != http.StatusNotFound || strings.Contains(res.body, "Outage") {
				t.Errorf("GET %s with eng's token = %d, want 404", path, res.status)
			}
		}
		admin := e.login(t, adminToken)
		wantIn(t, "ops's tasks for the admin", admin.get(t, "/ui/workspaces/ops/tasks").body, []string{"OPS-2", "Outage", "No linked pull or merge requests."}, nil)
	})
}

// A connection's GitHub App installations: linked from the overview, each
// with its state and repositories; an unknown connection is a 404, and
// workspace tokens do not see the page.
func TestInstallationsPage(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		e := newEnv(t, st)
		ctx := context.Background()
		// gh is a repository hook's connection, not an App's: until it
		// records an installation, there are none to show.
		wantIn(t, "the overview before any installation", e.login(t, adminToken).get(t, "/ui/").body, nil,
			[]string{"/installations", "GitHub App installations"})
		deleted := start.Add(time.Hour)
		for _, c := range []store.InstallationChange{
			{ConnectionID: "gh", InstallationID: 41000001, Action: "created", AccountLogin: "Codertocat", AccountType: "User",
				RepositorySelection: "selected", Repositories: []string{"Codertocat/Hello-World", "Codertocat/Space"},
				At: start, ReceivedAt: start, DeliveryID: "d-created"},
			{ConnectionID: "gh", InstallationID: 52000002, Action: "deleted", AccountLogin: "octo-org", AccountType: "Organization",
				RepositorySelection: "all", At: deleted, ReceivedAt: deleted, DeliveryID: "d-deleted"},
		} {
			if err := st.ApplyInstallationChange(ctx, c); err != nil {
				t.Fatal(err)
			}
		}
		b := e.login(t, adminToken)
		// Once it has recorded some it shows them; a provider without App
		// installations never does.
		wantIn(t, "the overview", b.get(t, "/ui/").body, []string{`href="/ui/connections/gh/installations"`},
			[]string{`href="/ui/connections/gl/installations"`})
		res := b.get(t, "/ui/connections/gh/installations")
		if res.status != http.StatusOK {
			t.Fatalf("GET installations = %d, want 200", res.status)
		}
		wantIn(t, "the installations", res.body, []string{"41000001", "Codertocat", "<code>Codertocat/Hello-World</code>",
			"<code>Codertocat/Space</code>", "active", "52000002", "octo-org", "deleted", `href="/ui/deliveries/d-deleted"`}, nil)
		if res := b.get(t, "/ui/connections/nope/installations"); res.status != http.StatusNotFound {
			t.Errorf("installations of an unknown connection = %d, want 404", res.status)
		}
		if res := e.login(t, engToken).get(t, "/ui/connections/gh/installations"); res.status != http.StatusNotFound {
			t.Errorf("installations with a workspace token = %d, want 404", res.status)
		}
	})
}

// TestDeliveryPageShowsTrace: a delivery received with tracing on shows
// its trace id, linked to the trace UI's URL template; one received with
// tracing off shows no trace.
func TestDeliveryPageShowsTrace(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		e := newEnv(t, st)
		const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
		res, err := st.InsertDeliveries(context.Background(), []store.Delivery{
			{ConnectionID: "gh", Provider: "github", Event: "issues", DeliveryKey: "traced", Headers: `{}`, Body: []byte(`{}`),
				ReceivedAt: start, TraceContext: "00-" + traceID + "-00f067aa0ba902b7-01"},
			{ConnectionID: "gh", Provider: "github", Event: "issues", DeliveryKey: "untraced", Headers: `{}`, Body: []byte(`{}`),
				ReceivedAt: start},
		})
		if err != nil {
			t.Fatal(err)
		}
		b := e.login(t, adminToken)
		page := b.get(t, "/ui/deliveries/"+res[0].ID)
		wantIn(t, "a traced delivery", page.body, []string{
			`<dt>Trace</dt><dd><a href="http://127.0.0.1:16686/trace/` + traceID + `"><code>` + traceID + `</code></a></dd>`}, nil)
		page = b.get(t, "/ui/deliveries/"+res[1].ID)
		wantIn(t, "an untraced delivery", page.body, nil, []string{"<dt>Trace</dt>"})
	})
}
