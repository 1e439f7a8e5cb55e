package main

// End-to-end tests of event → action rows that no fixture exercises alone,
// on SQLite and PostgreSQL, and of GitLab's object_kind/X-Gitlab-Event
// agreement. The payloads are real fixtures; where a row needs another
// action or title, the test derives it from a copy of the fixture (each
// helper below says what it changes), so fixtures/ holds real payloads only.

import (
	"strings"
	"testing"
)

// glIssueUpdated is gitlab/issue.json as the update its own "changes"
// describe: action update, title "New title", description "New
// description", label API replaced by Platform, updated after the open.
func glIssueUpdated(t testing.TB) hook {
	body := mutate(t, readFixture(t, "gitlab/issue.json"), func(m map[string]any) {
		oa := obj(t, m, "object_attributes")
		oa["action"] = "update"
		oa["title"], oa["description"] = "New title", "New description"
		oa["updated_at"] = "2013-12-03T17:30:00Z"
		platform := map[string]any{"id": 205, "title": "Platform", "color": "#123123", "project_id": 14,
			"type": "ProjectLabel", "group_id": 41}
		m["labels"] = []any{platform}
		oa["labels"] = []any{platform}
	})
	return hook{Conn: "gitlab", Event: "Issue Hook", Body: body}
}

// glIssueReopened is gitlab/issue.json reopened after gitlab/issue.close.json
// (17:20:15): action reopen, state opened, updated 17:25.
func glIssueReopened(t testing.TB) hook {
	body := mutate(t, readFixture(t, "gitlab/issue.json"), func(m map[string]any) {
		oa := obj(t, m, "object_attributes")
		oa["action"], oa["state"], oa["state_id"] = "reopen", "opened", 1
		oa["updated_at"] = "2013-12-03T17:25:00Z"
		delete(oa, "closed_at")
	})
	return hook{Conn: "gitlab", Event: "Issue Hook", Body: body}
}

// ghPROpenedJiraTitle is github/pull_request.opened.json whose title starts
// with the Jira key of jira/webhook-issue-created.json (TES-41); its branch
// and body name no issue.
func ghPROpenedJiraTitle(t testing.TB) hook {
	h := fixtureHook(t, "github/pull_request.opened.json")
	h.Body = mutate(t, h.Body, func(m map[string]any) {
		obj(t, m, "pull_request")["title"] = "TES-41 Update the README with new information."
	})
	return h
}

// glMROpenedJiraTitle is gitlab/merge_request.json with TES-41 in its title.
func glMROpenedJiraTitle(t testing.TB) hook {
	h := fixtureHook(t, "gitlab/merge_request.json")
	h.Body = mutate(t, h.Body, func(m map[string]any) {
		obj(t, m, "object_attributes")["title"] = "TES-41: MS-Viewport"
	})
	return h
}

// eventRow is one event → action row: the deliveries before, the delivery
// under test, its final status and action, and its effect read back.
type eventRow struct {
	name   string
	before []hookFn
	hook   hookFn
	status string
	action string
	check  func(t *testing.T, g *gateway, d delivery, prior []delivery)
}

var eventRows = []eventRow{
	// GitLab issue update: title, description and labels follow the issue.
	{name: "gitlab issue update", before: []hookFn{fx("gitlab/issue.json")}, hook: glIssueUpdated,
		status: "succeeded", action: "update",
		check: sameTask(glIssueTask.with(func(w *taskWant) {
			w.title, w.description, w.labels = "New title", "New description", []string{"Platform"}
		}))},
	// GitLab issue reopen: the task archived by the close is active again.
	{name: "gitlab issue reopen", before: []hookFn{fx("gitlab/issue.json"), fx("gitlab/issue.close.json")},
		hook: glIssueReopened, status: "succeeded", action: "unarchive", check: sameTask(glIssueTask)},
	// GitHub issues reopened for an issue without a task creates one.
	{name: "github issues reopened without a task", hook: fx("github/issues.reopened.json"),
		status: "succeeded", action: "create",
		// The reopened example's issue has an empty body: the task mirrors it.
		check: onlyTaskIs(ghIssueTask.with(func(w *taskWant) { w.description = "" }))},
	// A Jira key in a PR/MR title links it to the Jira issue's task instead
	// of creating a task for it.
	{name: "github pull request with a jira key in its title", before: []hookFn{fx("jira/webhook-issue-created.json")},
		hook: ghPROpenedJiraTitle, status: "succeeded", action: "link",
		check: func(t *testing.T, g *gateway, d delivery, prior []delivery) {
			sameTask(jiraTask)(t, g, d, prior)
			checkContributions(t, g, prior[0].taskID(), []contribution{ghPR.state("open")})
		}},
	{name: "gitlab merge request with a jira key in its title", before: []hookFn{fx("jira/webhook-issue-created.json")},
		hook: glMROpenedJiraTitle, status: "succeeded", action: "link",
		check: func(t *testing.T, g *gateway, d delivery, prior []delivery) {
			sameTask(jiraTask)(t, g, d, prior)
			checkContributions(t, g, prior[0].taskID(), []contribution{glMR.state("open")})
		}},
}

// TestEventTableRows posts each row's deliveries end to end and reads the
// effect back over the API.
func TestEventTableRows(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, dialect string) {
		for _, row := range eventRows {
			t.Run(row.name, func(t *testing.T) {
				t.Parallel()
				g := startGateway(t, newDatabaseURL(t, dialect))
				var prior []delivery
				for i, fn := range row.before {
					d := g.process(t, fn(t))
					if d.Status != "succeeded" {
						t.Fatalf("before[%d]: status %q (last_error %q, result %q), want succeeded", i, d.Status, str(d.LastError), d.result())
					}
					prior = append(prior, d)
				}
				d := g.process(t, row.hook(t))
				if d.Status != row.status || d.action() != row.action {
					t.Fatalf("delivery status %q action %q (result %q, last_error %q), want %q %q",
						d.Status, d.action(), d.result(), str(d.LastError), row.status, row.action)
				}
				row.check(t, g, d, prior)
			})
		}
	})
}

// TestGitLabKindMismatch: a body whose object_kind disagrees with
// X-Gitlab-Event ends failed at once with an error naming both, and creates
// no task of either kind.
func TestGitLabKindMismatch(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, file, event, want string
	}{
		{"merge request as an issue hook", "gitlab/merge_request.json", "Issue Hook",
			`object_kind "merge_request" does not match X-Gitlab-Event "Issue Hook"`},
		{"issue as a merge request hook", "gitlab/issue.json", "Merge Request Hook",
			`object_kind "issue" does not match X-Gitlab-Event "Merge Request Hook"`},
	}
	forEachDialect(t, func(t *testing.T, dialect string) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				g := startGateway(t, newDatabaseURL(t, dialect))
				d := g.process(t, hook{Conn: "gitlab", Event: tc.event, Body: readFixture(t, tc.file)})
				if d.Status != "failed" || d.Attempts != 1 {
					t.Fatalf("status %q after %d attempts (action %q), want failed after 1", d.Status, d.Attempts, d.action())
				}
				if msg := str(d.LastError); !strings.Contains(msg, tc.want) {
					t.Errorf("last_error = %q, want it to contain %q", msg, tc.want)
				}
				if ts := g.tasks(t); len(ts) != 0 {
					t.Errorf("tasks = %v, want none", taskSummaries(ts))
				}
				// The same body under its own hook is accepted as usual.
				ok := g.process(t, fixtureHook(t, tc.file))
				if ok.Status != "succeeded" || ok.action() != "create" {
					t.Errorf("the body under its own hook: status %q action %q, want succeeded create", ok.Status, ok.action())
				}
			})
		}
	})
}
