package main

// End-to-end tests of webhook ingestion: the real server, started
// through Main on a free port, on SQLite and on PostgreSQL.

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// What the fixtures describe (fixtures/README.md) under the test config.
const (
	ghIssueID    = "github:github.com:issue:444500041"
	ghOldIssueID = "github:github.com:issue:512748900"
	ghPRID       = "github:github.com:pull_request:279147437"
	glIssueID    = "gitlab:" + gitlabHost + ":issue:301"
	glMovedID    = "gitlab:" + gitlabHost + ":issue:302"
	glMRID       = "gitlab:" + gitlabHost + ":merge_request:99"
	jiraIssueID  = "jira:" + jiraSite + ":issue:10040"
	jiraIDT19ID  = "jira:" + jiraSite + ":issue:10303"
	giteaIssueID = "gitea:" + giteaHost + ":issue:2"
	giteaPRID    = "gitea:" + giteaHost + ":pull_request:12"
	linearID     = "linear:" + linearOrg + ":issue:539068e2-ae88-4d09-bd75-22eb4a59612f"
	linearENG124 = "linear:" + linearOrg + ":issue:8d7c6b5a-4f3e-4d2c-9b1a-0f9e8d7c6b5a"
)

// taskWant is the expected content of a task.
type taskWant struct {
	externalID  string
	title       string
	description string
	labels      []string
	source      source
	archived    bool
}

var (
	ghIssueTask = taskWant{externalID: ghIssueID, title: "Spelling error in the README file",
		description: "It looks like you accidently spelled 'commit' with two 't's.", labels: []string{"bug"},
		source: source{"github", "issue", "Codertocat/Hello-World#1", "https://github.com/Codertocat/Hello-World/issues/1"}}
	ghPRTask = taskWant{externalID: ghPRID, title: "Update the README with new information.",
		description: "This is a pretty simple change that we need to pull into master.", labels: []string{"bug"},
		source: source{"github", "pull_request", "Codertocat/Hello-World#2", "https://github.com/Codertocat/Hello-World/pull/2"}}
	glIssueTask = taskWant{externalID: glIssueID, title: "New API: create/update/delete file",
		description: "Create new API for manipulations with repository", labels: []string{"API"},
		source: source{"gitlab", "issue", "gitlabhq/gitlab-test#23", "http://example.com/diaspora/issues/23"}}
	glMRTask = taskWant{externalID: glMRID, title: "MS-Viewport", labels: []string{"API"},
		source: source{"gitlab", "merge_request", "gitlabhq/gitlab-test!1", "http://example.com/diaspora/merge_requests/1"}}
	giteaIssueTask = taskWant{externalID: giteaIssueID, title: "crash", description: "issue body",
		source: source{"gitea", "issue", "test/repo#2", "http://localhost:3000/test/repo/issues/2"}}
	giteaPRTask = taskWant{externalID: giteaPRID, title: "Fix bug", description: "fixes bug #2",
		source: source{"gitea", "pull_request", "test/repo#12", "http://localhost:3000/test/repo/pulls/12"}}
	linearTask = taskWant{externalID: linearID, title: "Export fails for large workspaces",
		description: "Exporting a workspace with more than 10k issues times out.", labels: []string{"Bug"},
		source: source{"linear", "issue", "ENG-123", "https://linear.app/acme/issue/ENG-123/export-fails-for-large-workspaces"}}
	linearRenamed = linearTask.with(func(w *taskWant) {
		w.title, w.labels = "Export times out for workspaces over 10k issues", []string{"Bug", "Performance"}
	})
	jiraTask = taskWant{externalID: jiraIssueID, title: "Unit test summary",
		description: "Unit test description, not that long", labels: []string{"test-label"},
		source: source{"jira", "issue", "TES-41", "https://" + jiraSite + "/browse/TES-41"}}
)

func (w taskWant) with(f func(*taskWant)) taskWant {
	w.labels = slices.Clone(w.labels)
	f(&w)
	return w
}

// checkTask compares a task read over the API with want.
func checkTask(t *testing.T, got task, want taskWant) {
	t.Helper()
	if got.ExternalID != want.externalID {
		t.Errorf("task external_id = %q, want %q", got.ExternalID, want.externalID)
	}
	if got.Title != want.title {
		t.Errorf("task title = %q, want %q", got.Title, want.title)
	}
	if got.Description != want.description {
		t.Errorf("task description = %q, want %q", got.Description, want.description)
	}
	if !slices.Equal(got.Labels, want.labels) {
		t.Errorf("task labels = %q, want %q", got.Labels, want.labels)
	}
	if got.Source == nil {
		t.Errorf("task source = nil, want %+v", want.source)
	} else if *got.Source != want.source {
		t.Errorf("task source = %+v, want %+v", *got.Source, want.source)
	}
	if archived := got.ArchivedAt != nil; archived != want.archived {
		t.Errorf("task archived = %t (archived_at %v), want %t", archived, got.ArchivedAt, want.archived)
	}
	if got.WorkspaceID != testWorkspace {
		t.Errorf("task workspace_id = %q, want %q", got.WorkspaceID, testWorkspace)
	}
	if got.WorkflowStepID != "backlog" {
		t.Errorf("task workflow_step_id = %q, want %q (the connection's step)", got.WorkflowStepID, "backlog")
	}
}

// checkActiveList checks whether the task is in the default (unarchived)
// list.
func checkActiveList(t *testing.T, g *gateway, taskID string, want bool) {
	t.Helper()
	got := slices.ContainsFunc(g.listTasks(t, false), func(tk task) bool { return tk.ID == taskID })
	if got != want {
		t.Errorf("task %s in the default task list = %t, want %t", taskID, got, want)
	}
}

func checkContributions(t *testing.T, g *gateway, taskID string, want []contribution) {
	t.Helper()
	got := g.contributions(t, taskID)
	if len(got) != len(want) {
		t.Fatalf("task %s has %d contributions (%+v), want %d", taskID, len(got), got, len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Provider != w.Provider || g.Kind != w.Kind || g.Repository != w.Repository || g.Number != w.Number ||
			g.State != w.State || g.HeadBranch != w.HeadBranch || g.BaseBranch != w.BaseBranch {
			t.Errorf("contribution %d = %+v, want provider/kind/repository/number/state/branches of %+v", i, g, w)
		}
		if (g.MergedAt != nil) != (w.State == "merged") {
			t.Errorf("contribution %d merged_at = %v with state %q", i, g.MergedAt, g.State)
		}
	}
}

var (
	ghPR = contribution{Provider: "github", Kind: "pull_request", Repository: "Codertocat/Hello-World", Number: 2,
		HeadBranch: "changes", BaseBranch: "master"}
	// pull_request.closed.merged.json's head branch names the Jira issue.
	ghPRMerged = contribution{Provider: "github", Kind: "pull_request", Repository: "Codertocat/Hello-World", Number: 2,
		HeadBranch: "TES-41-readme", BaseBranch: "master", State: "merged"}
	giteaPR = contribution{Provider: "gitea", Kind: "pull_request", Repository: "test/repo", Number: 12,
		HeadBranch: "test", BaseBranch: "master"}
	glMR = contribution{Provider: "gitlab", Kind: "merge_request", Repository: "gitlabhq/gitlab-test", Number: 1,
		HeadBranch: "ms-viewport", BaseBranch: "master"}
)

func (c contribution) state(s string) contribution { c.State = s; return c }

// hookFn builds a delivery; a fixture name or a derived payload.
type hookFn func(t testing.TB) hook

func fx(name string) hookFn { return func(t testing.TB) hook { return fixtureHook(t, name) } }

// ghOldIssueOpened opens the issue that issues.transferred.json moves away
// (octo-org/octo-repo, id 512748900): issues.transferred.json with action
// "opened" and no changes.
func ghOldIssueOpened(t testing.TB) hook {
	body := mutate(t, readFixture(t, "github/issues.transferred.json"), func(m map[string]any) {
		m["action"] = "opened"
		delete(m, "changes")
	})
	return hook{Conn: "github", Event: "issues", Body: body}
}

// ghOldIssueOpenedBefore is ghOldIssueOpened with the old issue last updated
// before the new issue's updated_at (2019-05-15T15:20:18Z): the two octokit
// examples come from different years, and the gateway skips an update older
// than the last one applied to the task the new issue continues.
func ghOldIssueOpenedBefore(t testing.TB) hook {
	h := ghOldIssueOpened(t)
	h.Body = mutate(t, h.Body, func(m map[string]any) {
		obj(t, m, "issue")["updated_at"] = "2019-05-01T00:00:00Z"
	})
	return h
}

// ghPRClosedBeforeReopen is pull_request.closed.json updated before
// pull_request.reopened.json (15:20:33Z); the real examples have the close
// at 15:21:18Z, after the reopen.
func ghPRClosedBeforeReopen(t testing.TB) hook {
	h := fixtureHook(t, "github/pull_request.closed.json")
	h.Body = mutate(t, h.Body, func(m map[string]any) {
		obj(t, m, "pull_request")["updated_at"] = "2019-05-15T15:20:30Z"
	})
	return h
}

// glMovedIssueUpdated is an update of GitLab issue 302 (where issue.moved.json
// moved issue 301), newer than the move.
func glMovedIssueUpdated(t testing.TB) hook {
	body := mutate(t, readFixture(t, "gitlab/issue.json"), func(m map[string]any) {
		oa := obj(t, m, "object_attributes")
		oa["id"], oa["iid"], oa["action"] = 302, 24, "update"
		oa["title"] = "New API: create/update/delete file (moved)"
		oa["updated_at"] = "2013-12-03T17:30:00Z"
	})
	return hook{Conn: "gitlab", Event: "Issue Hook", Body: body}
}

// jiraIDT19Created creates the issue of webhook-issue-deleted.json (IDT-19,
// id 10303): webhook-issue-created.json with its id and key rewritten.
func jiraIDT19Created(t testing.TB) hook {
	body := mutate(t, readFixture(t, "jira/webhook-issue-created.json"), func(m map[string]any) {
		issue := obj(t, m, "issue")
		issue["id"], issue["key"] = "10303", "IDT-19"
		issue["self"] = "https://" + jiraSite + "/rest/api/2/issue/10303"
	})
	return hook{Conn: "jira", Body: body}
}

type fixtureCase struct {
	name    string   // subtest name; defaults to the fixture
	fixture string   // the fixture under test, relative to fixtures/
	before  []hookFn // posted and processed first, in order
	status  string   // final status of the fixture's delivery
	action  string   // its outcome action
	// check reads the effect back over the API; prior holds the deliveries
	// of before.
	check func(t *testing.T, g *gateway, d delivery, prior []delivery)
}

var fixtureCases = []fixtureCase{
	// GitHub.
	// A GitHub App's installation deliveries, each on its own, at the
	// repository-hook connection: ignored, and recorded nowhere, since only
	// an App connection records its own App's installations
	// (installations_test.go runs them through one).
	{fixture: "github/installation.created.json", status: "ignored", action: "installation", check: installationNotRecorded},
	{fixture: "github/installation.suspend.json", status: "ignored", action: "installation", check: installationNotRecorded},
	{fixture: "github/installation.unsuspend.json", status: "ignored", action: "installation", check: installationNotRecorded},
	{fixture: "github/installation.new_permissions_accepted.json", status: "ignored", action: "installation",
		check: installationNotRecorded},
	{fixture: "github/installation.deleted.json", status: "ignored", action: "installation", check: installationNotRecorded},
	{fixture: "github/installation_repositories.added.json", status: "ignored", action: "installation", check: installationNotRecorded},
	{fixture: "github/installation_repositories.removed.json", status: "ignored", action: "installation", check: installationNotRecorded},
	// An issue delivered through the App: the task of the repository
	// hook's delivery.
	{fixture: "github/issues.opened.app.json", status: "succeeded", action: "create", check: onlyTaskIs(ghIssueTask)},
	{fixture: "github/ping.json", status: "ignored", action: "ignore",
		check: func(t *testing.T, g *gateway, d delivery, _ []delivery) {
			if ts := g.tasks(t); len(ts) != 0 {
				t.Errorf("tasks after a ping = %v, want none", taskSummaries(ts))
			}
		}},
	{fixture: "github/issues.opened.json", status: "succeeded", action: "create",
		check: func(t *testing.T, g *gateway, d delivery, _ []delivery) {
			tk := g.onlyTask(t)
			checkTask(t, tk, ghIssueTask)
			if tk.Identifier != "ENG-1" {
				t.Errorf("identifier = %q, want ENG-1", tk.Identifier)
			}
			if d.taskID() != tk.ID {
				t.Errorf("outcome task_id = %q, want %q", d.taskID(), tk.ID)
			}
			if got := str(d.Outcome.ExternalID); got != ghIssueID {
				t.Errorf("outcome external_id = %q, want %q", got, ghIssueID)
			}
			if d.Event != "issues.opened" {
				t.Errorf("delivery event = %q, want issues.opened", d.Event)
			}
		}},
	{fixture: "github/issues.edited.json", before: []hookFn{fx("github/issues.opened.json")},
		status: "succeeded", action: "update", check: sameTask(ghIssueTask)},
	{fixture: "github/issues.labeled.json", before: []hookFn{fx("github/issues.opened.json")},
		status: "succeeded", action: "update", check: sameTask(ghIssueTask)},
	// An update for an entity without a task creates it when the filters match.
	{name: "github/issues.labeled.json without a task", fixture: "github/issues.labeled.json",
		status: "succeeded", action: "create", check: onlyTaskIs(ghIssueTask)},
	{fixture: "github/issues.closed.json", before: []hookFn{fx("github/issues.opened.json")},
		status: "succeeded", action: "archive", check: sameTask(ghIssueTask.with(func(w *taskWant) { w.archived = true }))},
	{fixture: "github/issues.reopened.json", before: []hookFn{fx("github/issues.opened.json"), fx("github/issues.closed.json")},
		// The reopened example's issue has an empty body: the task mirrors it.
		status: "succeeded", action: "unarchive", check: sameTask(ghIssueTask.with(func(w *taskWant) { w.description = "" }))},
	{fixture: "github/issues.deleted.json", before: []hookFn{fx("github/issues.opened.json")},
		status: "succeeded", action: "delete", check: deletedAndSuppressed(ghIssueID, "deleted at source")},
	{fixture: "github/issues.transferred.json", before: []hookFn{ghOldIssueOpenedBefore},
		status: "succeeded", action: "alias",
		check: func(t *testing.T, g *gateway, d delivery, prior []delivery) {
			old := prior[0].taskID()
			if d.taskID() != old {
				t.Errorf("outcome task_id = %q, want the old issue's task %q", d.taskID(), old)
			}
			if tk := g.onlyTask(t); tk.ID != old || tk.ExternalID != ghOldIssueID {
				t.Errorf("task = %s %s, want %s %s", tk.ID, tk.ExternalID, old, ghOldIssueID)
			}
			// The task follows the issue: an edit of the new issue updates it.
			e := g.process(t, fixtureHook(t, "github/issues.edited.json"))
			if e.Status != "succeeded" || e.action() != "update" || e.taskID() != old {
				t.Errorf("edit of the transferred issue: status %q action %q task %q, want succeeded update %q",
					e.Status, e.action(), e.taskID(), old)
			}
			tk := g.onlyTask(t)
			checkTask(t, tk, ghIssueTask.with(func(w *taskWant) { w.externalID = ghOldIssueID }))
		}},
	// The outcome's action is the delivery's (an opened issue asks for a
	// create); its result says the existing task was updated.
	{fixture: "github/issues.opened.with-transfer.json", before: []hookFn{ghOldIssueOpenedBefore},
		status: "succeeded", action: "create",
		check: func(t *testing.T, g *gateway, d delivery, prior []delivery) {
			if !strings.HasPrefix(d.result(), "updated") {
				t.Errorf("outcome result = %q, want the old issue's task updated", d.result())
			}
			tk := g.onlyTask(t)
			if tk.ID != prior[0].taskID() || d.taskID() != tk.ID {
				t.Errorf("task %s, outcome task %s, want the old issue's task %s", tk.ID, d.taskID(), prior[0].taskID())
			}
			checkTask(t, tk, ghIssueTask.with(func(w *taskWant) { w.externalID = ghOldIssueID }))
		}},
	{fixture: "github/pull_request.opened.json", status: "succeeded", action: "create",
		check: func(t *testing.T, g *gateway, d delivery, _ []delivery) {
			tk := g.onlyTask(t)
			checkTask(t, tk, ghPRTask)
			checkContributions(t, g, tk.ID, []contribution{ghPR.state("open")})
		}},
	{fixture: "github/pull_request.opened.closes-issue.json", before: []hookFn{fx("github/issues.opened.json")},
		status: "succeeded", action: "link",
		check: func(t *testing.T, g *gateway, d delivery, prior []delivery) {
			sameTask(ghIssueTask)(t, g, d, prior)
			checkContributions(t, g, prior[0].taskID(), []contribution{ghPR.state("open")})
		}},
	{fixture: "github/pull_request.synchronize.json", before: []hookFn{fx("github/pull_request.opened.json")},
		status: "succeeded", action: "update",
		check: func(t *testing.T, g *gateway, d delivery, prior []delivery) {
			sameTask(ghPRTask)(t, g, d, prior)
			checkContributions(t, g, d.taskID(), []contribution{ghPR.state("open")})
		}},
	{fixture: "github/pull_request.closed.json", before: []hookFn{fx("github/pull_request.opened.json")},
		status: "succeeded", action: "archive",
		check: func(t *testing.T, g *gateway, d delivery, prior []delivery) {
			sameTask(ghPRTask.with(func(w *taskWant) { w.archived = true }))(t, g, d, prior)
			checkContributions(t, g, d.taskID(), []contribution{ghPR.state("closed")})
		}},
	// Linked to the issue it fixes; on_merge: archive archives the issue's
	// task without overwriting it with the pull request's content.
	{fixture: "github/pull_request.closed.merged.json",
		before: []hookFn{fx("github/issues.opened.json"), fx("github/pull_request.opened.closes-issue.json")},
		status: "succeeded", action: "archive",
		check: func(t *testing.T, g *gateway, d delivery, prior []delivery) {
			sameTask(ghIssueTask.with(func(w *taskWant) { w.archived = true }))(t, g, d, prior)
			checkContributions(t, g, prior[0].taskID(), []contribution{ghPRMerged})
		}},
	{name: "github/pull_request.closed.merged.json without a prior link", fixture: "github/pull_request.closed.merged.json",
		before: []hookFn{fx("github/issues.opened.json")},
		status: "succeeded", action: "link",
		check: func(t *testing.T, g *gateway, d delivery, prior []delivery) {
			sameTask(ghIssueTask.with(func(w *taskWant) { w.archived = true }))(t, g, d, prior)
			checkContributions(t, g, prior[0].taskID(), []contribution{ghPRMerged})
		}},
	{fixture: "github/pull_request.reopened.json",
		before: []hookFn{fx("github/pull_request.opened.json"), ghPRClosedBeforeReopen},
		status: "succeeded", action: "unarchive",
		check: func(t *testing.T, g *gateway, d delivery, prior []delivery) {
			sameTask(ghPRTask)(t, g, d, prior)
			checkContributions(t, g, d.taskID(), []contribution{ghPR.state("open")})
		}},
	// As the examples are dated, the reopen (15:20:33Z) is older than the
	// close (15:21:18Z): a stale update, skipped.
	{name: "github/pull_request.reopened.json older than the close", fixture: "github/pull_request.reopened.json",
		before: []hookFn{fx("github/pull_request.opened.json"), fx("github/pull_request.closed.json")},
		status: "succeeded", action: "unarchive",
		check: func(t *testing.T, g *gateway, d delivery, prior []delivery) {
			if !strings.Contains(d.result(), "stale") {
				t.Errorf("outcome result = %q, want a stale update skipped", d.result())
			}
			sameTask(ghPRTask.with(func(w *taskWant) { w.archived = true }))(t, g, d, prior)
		}},

	// GitLab.
	{fixture: "gitlab/issue.json", status: "succeeded", action: "create", check: onlyTaskIs(glIssueTask)},
	{fixture: "gitlab/issue.close.json", before: []hookFn{fx("gitlab/issue.json")},
		status: "succeeded", action: "archive", check: sameTask(glIssueTask.with(func(w *taskWant) { w.archived = true }))},
	{fixture: "gitlab/issue.moved.json", before: []hookFn{fx("gitlab/issue.json")},
		status: "succeeded", action: "alias",
		check: func(t *testing.T, g *gateway, d delivery, prior []delivery) {
			sameTask(glIssueTask)(t, g, d, prior)
			// The task follows the issue to its new ID.
			e := g.process(t, glMovedIssueUpdated(t))
			if e.Status != "succeeded" || e.taskID() != prior[0].taskID() {
				t.Errorf("update of the moved issue: status %q task %q, want succeeded on %q", e.Status, e.taskID(), prior[0].taskID())
			}
			sameTask(glIssueTask.with(func(w *taskWant) {
				w.title = "New API: create/update/delete file (moved)"
				w.source.Ref = "gitlabhq/gitlab-test#24"
			}))(t, g, d, prior)
		}},
	{fixture: "gitlab/merge_request.json", status: "succeeded", action: "create",
		check: func(t *testing.T, g *gateway, d delivery, prior []delivery) {
			onlyTaskIs(glMRTask)(t, g, d, prior)
			checkContributions(t, g, d.taskID(), []contribution{glMR.state("open")})
		}},
	// "Closes #23" links it to the issue's task; GitLab's on_merge is none.
	{fixture: "gitlab/merge_request.merged.json", before: []hookFn{fx("gitlab/issue.json")},
		status: "succeeded", action: "link",
		check: func(t *testing.T, g *gateway, d delivery, prior []delivery) {
			sameTask(glIssueTask)(t, g, d, prior)
			checkContributions(t, g, prior[0].taskID(), []contribution{glMR.state("merged")})
		}},

	// Jira.
	{fixture: "jira/webhook-issue-created.json", status: "succeeded", action: "create", check: onlyTaskIs(jiraTask)},
	{fixture: "jira/webhook-issue-updated-renamed.json", before: []hookFn{fx("jira/webhook-issue-created.json")},
		status: "succeeded", action: "update", check: sameTask(jiraTask.with(func(w *taskWant) { w.title = "Unit test summary 1" }))},
	{fixture: "jira/webhook-issue-updated-labels.json", before: []hookFn{fx("jira/webhook-issue-created.json")},
		status: "succeeded", action: "update", check: sameTask(jiraTask.with(func(w *taskWant) {
			w.title = "Unit test summary 1"
			w.description = "Unit test description, not that long, a little longer now"
			w.labels = []string{"sad", "test-label"}
		}))},
	{fixture: "jira/webhook-issue-updated-resolved.json", before: []hookFn{fx("jira/webhook-issue-created.json")},
		status: "succeeded", action: "archive", check: sameTask(jiraTask.with(func(w *taskWant) {
			w.title = "Unit test summary 1"
			w.description = "Unit test description, not that long, a little longer now"
			w.archived = true
		}))},
	{fixture: "jira/webhook-issue-updated-reopened.json",
		before: []hookFn{fx("jira/webhook-issue-created.json"), fx("jira/webhook-issue-updated-resolved.json")},
		status: "succeeded", action: "unarchive", check: sameTask(jiraTask.with(func(w *taskWant) {
			w.title = "Unit test summary 1"
			w.description = "Unit test description, not that long, a little longer now"
		}))},
	// Gitea.
	{fixture: "gitea/issues.opened.json", status: "succeeded", action: "create", check: onlyTaskIs(giteaIssueTask)},
	{fixture: "gitea/issues.edited.json", before: []hookFn{fx("gitea/issues.opened.json")}, status: "succeeded", action: "update",
		check: sameTask(giteaIssueTask.with(func(w *taskWant) { w.description = "issue body, with steps to reproduce" }))},
	{fixture: "gitea/issues.label_updated.json", before: []hookFn{fx("gitea/issues.opened.json")}, status: "succeeded", action: "update",
		check: sameTask(giteaIssueTask.with(func(w *taskWant) {
			w.description, w.labels = "issue body, with steps to reproduce", []string{"bug"}
		}))},
	{fixture: "gitea/issues.closed.json", before: []hookFn{fx("gitea/issues.opened.json")}, status: "succeeded", action: "archive",
		check: sameTask(giteaIssueTask.with(func(w *taskWant) {
			w.description, w.labels, w.archived = "issue body, with steps to reproduce", []string{"bug"}, true
		}))},
	{fixture: "gitea/issues.reopened.json", before: []hookFn{fx("gitea/issues.opened.json"), fx("gitea/issues.closed.json")},
		status: "succeeded", action: "unarchive", check: sameTask(giteaIssueTask.with(func(w *taskWant) {
			w.description, w.labels = "issue body, with steps to reproduce", []string{"bug"}
		}))},
	{fixture: "gitea/issues.deleted.json", before: []hookFn{fx("gitea/issues.opened.json")}, status: "succeeded", action: "delete",
		check: deletedAndSuppressed(giteaIssueID, "deleted at source")},
	{fixture: "gitea/pull_request.opened.json", status: "succeeded", action: "create",
		check: func(t *testing.T, g *gateway, d delivery, prior []delivery) {
			onlyTaskIs(giteaPRTask)(t, g, d, prior)
			checkContributions(t, g, d.taskID(), []contribution{giteaPR.state("open")})
		}},
	{fixture: "gitea/pull_request.opened.wip-title.json", status: "succeeded", action: "create",
		check: func(t *testing.T, g *gateway, d delivery, prior []delivery) {
			onlyTaskIs(giteaPRTask.with(func(w *taskWant) { w.title = "WIP: Fix bug" }))(t, g, d, prior)
			checkContributions(t, g, d.taskID(), []contribution{giteaPR.state("open")})
		}},
	{fixture: "gitea/pull_request.closed.json", before: []hookFn{fx("gitea/pull_request.opened.json")},
		status: "succeeded", action: "archive",
		check: func(t *testing.T, g *gateway, d delivery, prior []delivery) {
			sameTask(giteaPRTask.with(func(w *taskWant) { w.archived = true }))(t, g, d, prior)
			checkContributions(t, g, d.taskID(), []contribution{giteaPR.state("closed")})
		}},
	// "Fixes #2" links it to the issue's task.
	{fixture: "gitea/pull_request.closed.merged.json", before: []hookFn{fx("gitea/issues.opened.json")},
		status: "succeeded", action: "link",
		check: func(t *testing.T, g *gateway, d delivery, prior []delivery) {
			sameTask(giteaIssueTask)(t, g, d, prior)
			checkContributions(t, g, prior[0].taskID(), []contribution{giteaPR.state("merged")})
		}},
	{fixture: "gitea/push.json", status: "ignored", action: "ignore",
		check: func(t *testing.T, g *gateway, d delivery, _ []delivery) {
			if ts := g.tasks(t); len(ts) != 0 {
				t.Errorf("tasks after a push = %v, want none", taskSummaries(ts))
			}
		}},

	// Linear.
	{fixture: "linear/issue.create.json", status: "succeeded", action: "create", check: onlyTaskIs(linearTask)},
	{fixture: "linear/issue.update.title-labels.json", before: []hookFn{fx("linear/issue.create.json")},
		status: "succeeded", action: "update", check: sameTask(linearRenamed)},
	{fixture: "linear/issue.update.completed.json", before: []hookFn{fx("linear/issue.create.json")},
		status: "succeeded", action: "archive", check: sameTask(linearRenamed.with(func(w *taskWant) { w.archived = true }))},
	// A move to another team changes the identifier, not the task.
	{fixture: "linear/issue.update.team-moved.json", before: []hookFn{fx("linear/issue.create.json")},
		status: "succeeded", action: "update", check: sameTask(linearRenamed.with(func(w *taskWant) {
			w.source.Ref = "OPS-7"
			w.source.URL = "https://linear.app/acme/issue/OPS-7/export-times-out-for-workspaces-over-10k-issues"
		}))},
	{fixture: "linear/issue.remove.json", status: "succeeded", action: "delete",
		check: deletedAndSuppressed(linearENG124, "deleted at source")},
	// The attachment of a pull request the gateway has: the PR shows on
	// the issue's task, and goes when the attachment is removed.
	{fixture: "linear/attachment.create.json",
		before: []hookFn{fx("github/pull_request.opened.json"), fx("linear/issue.create.json")},
		status: "succeeded", action: "link",
		check: func(t *testing.T, g *gateway, d delivery, prior []delivery) {
			if d.taskID() != prior[1].taskID() || d.result() != "pull request codertocat/hello-world#2 linked" {
				t.Errorf("attachment: task %q result %q, want %s linked", d.taskID(), d.result(), prior[1].taskID())
			}
			checkContributions(t, g, prior[1].taskID(), []contribution{ghPR.state("open")})
			checkContributions(t, g, prior[0].taskID(), []contribution{ghPR.state("open")})
		}},
	{fixture: "linear/attachment.remove.json",
		before: []hookFn{fx("github/pull_request.opened.json"), fx("linear/issue.create.json"), fx("linear/attachment.create.json")},
		status: "succeeded", action: "unlink",
		check: func(t *testing.T, g *gateway, d delivery, prior []delivery) {
			checkContributions(t, g, prior[1].taskID(), nil)
			checkContributions(t, g, prior[0].taskID(), []contribution{ghPR.state("open")})
		}},
	{fixture: "linear/comment.create.json", status: "ignored", action: "ignore",
		check: func(t *testing.T, g *gateway, d delivery, _ []delivery) {
			if ts := g.tasks(t); len(ts) != 0 {
				t.Errorf("tasks after a comment = %v, want none", taskSummaries(ts))
			}
		}},

	// IDT-19 has no task: the delete still records the suppression.
	{fixture: "jira/webhook-issue-deleted.json", status: "succeeded", action: "delete",
		check: deletedAndSuppressed(jiraIDT19ID, "deleted at source")},
	{name: "jira/webhook-issue-deleted.json with a task", fixture: "jira/webhook-issue-deleted.json",
		before: []hookFn{jiraIDT19Created}, status: "succeeded", action: "delete",
		check: deletedAndSuppressed(jiraIDT19ID, "deleted at source")},
}

// onlyTaskIs: the workspace holds exactly one task, the delivery's, as want.
func onlyTaskIs(want taskWant) func(t *testing.T, g *gateway, d delivery, prior []delivery) {
	return func(t *testing.T, g *gateway, d delivery, prior []delivery) {
		t.Helper()
		tk := g.onlyTask(t)
		checkTask(t, tk, want)
		if d.taskID() != tk.ID {
			t.Errorf("outcome task_id = %q, want %q", d.taskID(), tk.ID)
		}
		checkActiveList(t, g, tk.ID, !want.archived)
	}
}

// sameTask: the delivery acted on the task the first prior delivery created,
// which is still the only one, now as want.
func sameTask(want taskWant) func(t *testing.T, g *gateway, d delivery, prior []delivery) {
	return func(t *testing.T, g *gateway, d delivery, prior []delivery) {
		t.Helper()
		onlyTaskIs(want)(t, g, d, prior)
		if len(prior) > 0 && d.taskID() != prior[0].taskID() {
			t.Errorf("outcome task_id = %q, want the task of the first delivery %q", d.taskID(), prior[0].taskID())
		}
	}
}

// deletedAndSuppressed: no task is left and the entity is suppressed.
func deletedAndSuppressed(externalID, reason string) func(t *testing.T, g *gateway, d delivery, prior []delivery) {
	return func(t *testing.T, g *gateway, d delivery, prior []delivery) {
		t.Helper()
		if ts := g.tasks(t); len(ts) != 0 {
			t.Errorf("tasks after the delete = %v, want none", taskSummaries(ts))
		}
		var taskID string
		if len(prior) > 0 {
			taskID = prior[0].taskID()
			if _, ok := g.getTask(t, taskID); ok {
				t.Errorf("GET /api/v1/tasks/%s = 200, want 404 after the delete", taskID)
			}
			if d.taskID() != taskID {
				t.Errorf("outcome task_id = %q, want %q", d.taskID(), taskID)
			}
		}
		want := suppression{WorkspaceID: testWorkspace, ExternalID: externalID, TaskID: taskID, Reason: reason}
		if got := g.suppressions(t); !slices.Equal(got, []suppression{want}) {
			t.Errorf("suppressions = %+v, want [%+v]", got, want)
		}
	}
}

// installationNotRecorded checks an installation delivery at the
// repository-hook connection recorded nothing and said why; no task.
func installationNotRecorded(t *testing.T, g *gateway, d delivery, _ []delivery) {
	t.Helper()
	if got := g.installationsOf(t, "github"); len(got) != 0 {
		t.Errorf("installations = %+v, want none", got)
	}
	if !strings.HasPrefix(d.result(), "not recorded: ") || !strings.Contains(d.result(), "not a GitHub App connection") {
		t.Errorf("result = %q, want not recorded: not a GitHub App connection", d.result())
	}
	if ts := g.tasks(t); len(ts) != 0 {
		t.Errorf("tasks = %v, want none", taskSummaries(ts))
	}
}

// TestFixtures posts every fixture end to end and reads its effect back.
func TestFixtures(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, dialect string) {
		for _, tc := range fixtureCases {
			name := tc.name
			if name == "" {
				name = tc.fixture
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				g := startGateway(t, newDatabaseURL(t, dialect))
				var prior []delivery
				for i, fn := range tc.before {
					d := g.process(t, fn(t))
					if d.Status != "succeeded" {
						t.Fatalf("before[%d]: status %q (last_error %q, result %q), want succeeded", i, d.Status, str(d.LastError), d.result())
					}
					prior = append(prior, d)
				}
				d := g.process(t, fixtureHook(t, tc.fixture))
				if d.Status != tc.status || d.action() != tc.action {
					t.Fatalf("delivery status %q action %q (result %q, last_error %q), want %q %q",
						d.Status, d.action(), d.result(), str(d.LastError), tc.status, tc.action)
				}
				if d.Attempts != 1 {
					t.Errorf("attempts = %d, want 1", d.Attempts)
				}
				tc.check(t, g, d, prior)
			})
		}
	})
}

// TestFixturesAllCovered fails when a fixture has no end-to-end case.
func TestFixturesAllCovered(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join(fixturesDir, "*", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no fixtures under %s", fixturesDir)
	}
	for _, f := range files {
		rel := strings.TrimPrefix(filepath.ToSlash(f), fixturesDir+"/")
		if !slices.ContainsFunc(fixtureCases, func(c fixtureCase) bool { return c.fixture == rel }) {
			t.Errorf("fixture %s has no case in fixtureCases", rel)
		}
	}
}
