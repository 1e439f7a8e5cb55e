package main

// Task events end to end, on both dialects: real deliveries, API calls and
// agent tools make every event type; the feed lists them with their
// causes, in order, and every page and event matches the API document.

import (
	"encoding/json"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/trackergateway/gateway/internal/events"
	"github.com/trackergateway/gateway/internal/mcpserver/mcptest"
	"github.com/trackergateway/gateway/internal/openapitest"
	"github.com/trackergateway/gateway/internal/tasks"
)

// feedEvent is an event as the feed lists it.
type feedEvent struct {
	ID          string `json:"id"`
	Type        string `json:"type"`
	Timestamp   string `json:"timestamp"`
	WorkspaceID string `json:"workspace_id"`
	Data        struct {
		Task         task                              `json:"task"`
		Revision     int64                             `json:"revision"`
		Changes      map[string]struct{ From, To any } `json:"changes"`
		Contribution *contribution                     `json:"contribution"`
		Cause        map[string]string                 `json:"cause"`
	} `json:"data"`
	raw json.RawMessage
}

// readFeed reads the workspace's whole feed after cursor, limit events a
// page, validating every page against the API document and every event
// against its webhook; it returns the events and the last next_cursor.
func readFeed(t *testing.T, c specClient, after string, limit int) ([]feedEvent, string) {
	t.Helper()
	var out []feedEvent
	for {
		q := url.Values{"limit": {strconv.Itoa(limit)}}
		if after != "" {
			q.Set("after", after)
		}
		got := c.call(http.MethodGet, "/api/v1/workspaces/"+testWorkspace+"/events?"+q.Encode(), nil, http.StatusOK)
		var page struct {
			Events     []json.RawMessage `json:"events"`
			NextCursor string            `json:"next_cursor"`
		}
		decode(t, got.body, &page)
		for _, raw := range page.Events {
			var e feedEvent
			decode(t, raw, &e)
			e.raw = raw
			openapitest.ValidateWebhook(t, e.Type, raw)
			out = append(out, e)
		}
		if page.NextCursor == "" {
			t.Fatalf("page %s has no next_cursor", got.body)
		}
		after = page.NextCursor
		if len(page.Events) < limit {
			return out, after
		}
	}
}

// TestTaskEventsEndToEnd: every kind of task action appends exactly one
// event, whose data is the task at its revision, the changes, the PR/MR of
// a contribution event and the cause: a delivery (connection, delivery id,
// provider event), the API or the agent tools. A resent delivery that
// changes nothing appends none. A waiting feed request answers when an
// event commits.
func TestTaskEventsEndToEnd(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, dialect string) {
		g := startGateway(t, newDatabaseURL(t, dialect))
		c := specClient{t: t, g: g}
		deliveryCause := func(d delivery) map[string]string {
			return map[string]string{"connection": d.Connection, "delivery_id": d.ID, "provider_event": d.Event}
		}
		type want struct {
			typ     string
			task    string
			cause   map[string]string
			changes []string
		}
		var wants []want
		expect := func(typ, taskID string, cause map[string]string, changes ...string) {
			wants = append(wants, want{typ, taskID, cause, changes})
		}

		// A pull request creates its own task, which shows it.
		own := g.process(t, fixtureHook(t, "github/pull_request.opened.json"))
		expect(events.TypeCreated, own.taskID(), deliveryCause(own))
		expect(events.TypeContributionLinked, own.taskID(), deliveryCause(own))
		// A Linear issue, whose attachment shows the pull request too.
		issue := g.process(t, fixtureHook(t, "linear/issue.create.json"))
		expect(events.TypeCreated, issue.taskID(), deliveryCause(issue))
		attached := g.process(t, fixtureHook(t, "linear/attachment.create.json"))
		expect(events.TypeContributionLinked, issue.taskID(), deliveryCause(attached))
		// The pull request closes: its own task is archived, and both
		// tasks show it closed.
		closed := g.process(t, fixtureHook(t, "github/pull_request.closed.json"))
		expect(events.TypeArchived, own.taskID(), deliveryCause(closed), "archived_at")
		expect(events.TypeContributionUpdated, own.taskID(), deliveryCause(closed), "state")
		expect(events.TypeContributionUpdated, issue.taskID(), deliveryCause(closed), "state")
		// Resent under a new delivery ID: nothing changes, no event.
		if d := g.process(t, fixtureHook(t, "github/pull_request.closed.json")); d.Status != "succeeded" {
			t.Fatalf("resent close: %s (%s)", d.Status, d.result())
		}
		unlinked := g.process(t, fixtureHook(t, "linear/attachment.remove.json"))
		expect(events.TypeContributionUnlinked, issue.taskID(), deliveryCause(unlinked))

		// A GitHub issue: opened, retitled, closed, reopened.
		opened := g.process(t, fixtureHook(t, "github/issues.opened.json"))
		expect(events.TypeCreated, opened.taskID(), deliveryCause(opened))
		edited := g.process(t, bodyHook(t, "github", "issues.edited.json", mutate(t, readFixture(t, "github/issues.edited.json"),
			func(m map[string]any) {
				issue := obj(t, m, "issue")
				issue["title"], issue["updated_at"] = "Spelling errors in the README file", "2019-05-15T15:22:00Z"
			})))
		expect(events.TypeUpdated, opened.taskID(), deliveryCause(edited), "title")
		// The fixtures' close carries the title before the edit, and the
		// reopen another description: both are changes too.
		issueClosed := g.process(t, fixtureHook(t, "github/issues.closed.json"))
		expect(events.TypeArchived, opened.taskID(), deliveryCause(issueClosed), "archived_at", "title")
		reopened := g.process(t, fixtureHook(t, "github/issues.reopened.json"))
		expect(events.TypeUnarchived, opened.taskID(), deliveryCause(reopened), "archived_at", "description")

		// The API: create, update, delete.
		api := map[string]string{"actor": "api"}
		created := c.create(map[string]any{"workspace_id": testWorkspace, "title": "From the API"}, false, true, "")
		expect(events.TypeCreated, created.ID, api)
		c.call(http.MethodPatch, "/api/v1/tasks/"+created.ID, map[string]any{"title": "Renamed", "labels": []string{"x"}}, http.StatusOK)
		expect(events.TypeUpdated, created.ID, api, "title", "labels")
		c.call(http.MethodDelete, "/api/v1/tasks/"+created.ID, nil, http.StatusNoContent)
		expect(events.TypeDeleted, created.ID, api)

		// The agent tools.
		cs := g.mcpHTTP(t, testAdminToken)
		agent := mcptest.Decode[tasks.CreateJSON](t, "create_task", mcptest.Call(t, cs, "create_task",
			map[string]any{"workspace_id": testWorkspace, "title": "Filed by an agent"}))
		expect(events.TypeCreated, agent.ID, map[string]string{"actor": "mcp"})
		mcptest.Call(t, cs, "update_task", map[string]any{"task_id": agent.ID, "archived": true})
		expect(events.TypeArchived, agent.ID, map[string]string{"actor": "mcp"}, "archived_at")

		got, cursor := readFeed(t, c, "", 3)
		if len(got) != len(wants) {
			for _, e := range got {
				t.Logf("event %s %s task %s cause %v changes %v", e.ID, e.Type, e.Data.Task.ID, e.Data.Cause, e.Data.Changes)
			}
			t.Fatalf("feed holds %d events, want %d", len(got), len(wants))
		}
		revisions := map[string]int64{}
		seen := map[string]bool{}
		for i, e := range got {
			w := wants[i]
			var changes []string
			for f := range e.Data.Changes {
				changes = append(changes, f)
			}
			slices.Sort(changes)
			slices.Sort(w.changes)
			if e.Type != w.typ || e.Data.Task.ID != w.task || !maps.Equal(e.Data.Cause, w.cause) || !slices.Equal(changes, w.changes) {
				t.Errorf("event %d = %s task %s cause %v changes %v; want %s task %s cause %v changes %v",
					i, e.Type, e.Data.Task.ID, e.Data.Cause, changes, w.typ, w.task, w.cause, w.changes)
			}
			if i > 0 && e.ID <= got[i-1].ID {
				t.Errorf("event %d id %s after %s: ids do not ascend", i, e.ID, got[i-1].ID)
			}
			// A task's events have consecutive revisions from 1.
			revisions[w.task]++
			if e.Data.Revision != revisions[w.task] {
				t.Errorf("event %d (%s) revision %d, want %d", i, e.Type, e.Data.Revision, revisions[w.task])
			}
			if strings.HasPrefix(e.Type, "task.contribution_") != (e.Data.Contribution != nil) {
				t.Errorf("event %d (%s) contribution %+v", i, e.Type, e.Data.Contribution)
			}
			if e.WorkspaceID != testWorkspace || e.Data.Task.WorkspaceID != testWorkspace {
				t.Errorf("event %d workspace %s, task's %s", i, e.WorkspaceID, e.Data.Task.WorkspaceID)
			}
			seen[e.Type] = true
		}
		for _, typ := range events.Types {
			if !seen[typ] {
				t.Errorf("no %s event in the feed", typ)
			}
		}
		// The changes hold the values before and after.
		for _, e := range got {
			if e.Type == events.TypeUpdated && e.Data.Task.ID == created.ID {
				if ch := e.Data.Changes["title"]; ch.From != "From the API" || ch.To != "Renamed" || e.Data.Task.Title != "Renamed" {
					t.Errorf("API update's title change %+v, task title %q", ch, e.Data.Task.Title)
				}
			}
			if e.Type == events.TypeContributionUpdated {
				if ch := e.Data.Changes["state"]; ch.From != "open" || ch.To != "closed" || e.Data.Contribution.State != "closed" {
					t.Errorf("pull request's state change %+v, contribution %+v", ch, e.Data.Contribution)
				}
			}
		}

		// Filtered by type, a page lists those only.
		var page struct {
			Events []feedEvent `json:"events"`
		}
		decode(t, c.call(http.MethodGet, "/api/v1/workspaces/"+testWorkspace+"/events?type=task.deleted,task.unarchived",
			nil, http.StatusOK).body, &page)
		if len(page.Events) != 2 || page.Events[0].Type != events.TypeUnarchived || page.Events[1].Type != events.TypeDeleted {
			t.Errorf("filtered page = %+v, want the unarchive and the delete", page.Events)
		}
		c.call(http.MethodGet, "/api/v1/workspaces/"+testWorkspace+"/events?type=task.closed", nil, http.StatusBadRequest)
		c.call(http.MethodGet, "/api/v1/workspaces/"+testWorkspace+"/events?wait=1m", nil, http.StatusBadRequest)
		c.call(http.MethodGet, "/api/v1/workspaces/nope/events", nil, http.StatusNotFound)

		// A request waiting at the end of the feed answers with the next
		// event when it commits.
		answered := make(chan specAnswer, 1)
		go func() {
			answered <- c.send(http.MethodGet, "/api/v1/workspaces/"+testWorkspace+"/events?wait=30s&after="+cursor,
				http.Header{"Authorization": {"Bearer " + testAdminToken}}, nil)
		}()
		mcptest.Call(t, cs, "update_task", map[string]any{"task_id": agent.ID, "title": "Renamed by the agent"})
		var later []feedEvent
		select {
		case a := <-answered:
			openapitest.ValidateResponse(t, http.MethodGet, "/api/v1/workspaces/"+testWorkspace+"/events", a.status, a.header, a.body)
			var p struct {
				Events []feedEvent `json:"events"`
			}
			decode(t, a.body, &p)
			if later = p.Events; len(later) == 0 {
				t.Fatalf("the waiting request answered %d %s, without the event", a.status, a.body)
			}
		case <-time.After(waitTimeout):
			t.Fatal("the waiting request did not answer")
		}
		if later[0].Type != events.TypeUpdated || later[0].Data.Task.ID != agent.ID || later[0].Data.Cause["actor"] != "mcp" {
			t.Errorf("the waiting request answered %+v", later[0])
		}
	})
}
