package ingest

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trackergateway/gateway/internal/config"
	"github.com/trackergateway/gateway/internal/idempotency"
	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/store/sqlstore"
	"github.com/trackergateway/gateway/internal/store/storetest"
	"github.com/trackergateway/gateway/internal/tasks"
)

// Pull/merge request linking: association through
// remote_contribution_associate, the projection row from the payload,
// on_merge and the pull_requests setting, over a real store, coordinator and
// task service, on both dialects.

func TestPullRequestCreatesTaskWithOneAssociation(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		t.Parallel()
		e := newEnv(t, st, githubConn())
		out := e.process(e.github("pull_request.opened.json"))
		if got, want := statusOf(out), store.DeliverySucceeded; got != want {
			t.Errorf("status = %v, want %v", got, want)
		}
		if got, want := out.Action, "create"; got != want {
			t.Errorf("action = %v, want %v", got, want)
		}
		task := e.onlyTask()
		if got, want := out.TaskID, task.ID; got != want {
			t.Errorf("outcome task = %v, want %v", got, want)
		}
		if got, want := task.ExternalID, ghPRExt; got != want {
			t.Errorf("external_id = %v, want %v", got, want)
		}
		if got, want := task.Title, "Update the README with new information."; got != want {
			t.Errorf("title = %v, want %v", got, want)
		}
		if task.Source == nil {
			t.Fatalf("source = nil")
		}
		if got, want := *task.Source, (store.Source{Provider: "github", Kind: "pull_request", Ref: "Codertocat/Hello-World#2",
			URL: "https://github.com/Codertocat/Hello-World/pull/2"}); got != want {
			t.Errorf("source = %+v, want %+v", got, want)
		}
		if got, want := task.CreationState, store.CreationComplete; got != want {
			t.Errorf("creation_state = %v, want %v", got, want)
		}
		if task.ExternalIDSettledAt == nil {
			t.Errorf("external_id_settled_at = nil, want set")
		}

		as := e.associations(task.ID)
		if got, want := len(as), 1; got != want {
			t.Fatalf("associations = %d, want %d", got, want)
		}
		a := as[0]
		want := store.Association{Provider: "github", ConnectionID: "gh-main", ContributionID: ghPRID,
			ContributionKind: "pull_request", TaskID: task.ID, WorkspaceID: testWorkspace, RepositoryID: "Codertocat/Hello-World",
			OperationID: task.CreationOperationID}
		a.IdempotencyKey, a.OwnershipMarker, a.ClaimedAt = "", "", time.Time{}
		if a != want {
			t.Errorf("association = %+v, want %+v", a, want)
		}
		// The association is the creation step's effect: the step succeeded
		// with the same idempotency key and ownership marker.
		steps, err := st.ListCreationSteps(context.Background(), task.CreationOperationID)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := len(steps), 1; got != want {
			t.Fatalf("creation steps = %d, want %d", got, want)
		}
		stored := as[0]
		if got, want := steps[0].Kind, idempotency.StepRemoteContributionAssociate; got != want {
			t.Errorf("step kind = %v, want %v", got, want)
		}
		if got, want := steps[0].State, store.StepSucceeded; got != want {
			t.Errorf("step state = %v, want %v", got, want)
		}
		if got, want := stored.IdempotencyKey, steps[0].IdempotencyKey; got != want {
			t.Errorf("association idempotency key = %v, want the step's %v", got, want)
		}
		if got, want := stored.OwnershipMarker, steps[0].OwnershipMarker; got != want {
			t.Errorf("association marker = %v, want the step's %v", got, want)
		}

		ps := e.projections(task.ID)
		if got, want := len(ps), 1; got != want {
			t.Fatalf("projection rows = %d, want %d", got, want)
		}
		p := ps[0]
		if got, want := p.Provider, "github"; got != want {
			t.Errorf("projection provider = %v, want %v", got, want)
		}
		if got, want := p.ProviderID, int64(279147437); got != want {
			t.Errorf("provider_id = %v, want %v", got, want)
		}
		if got, want := p.Number, int64(2); got != want {
			t.Errorf("number = %v, want %v", got, want)
		}
		if got, want := p.Repository, "Codertocat/Hello-World"; got != want {
			t.Errorf("repository = %v, want %v", got, want)
		}
		if got, want := p.State, "open"; got != want {
			t.Errorf("state = %v, want %v", got, want)
		}
		if got, want := p.HeadBranch, "changes"; got != want {
			t.Errorf("head_branch = %v, want %v", got, want)
		}
		if got, want := p.BaseBranch, "master"; got != want {
			t.Errorf("base_branch = %v, want %v", got, want)
		}
		if got, want := p.HeadSHA, "ec26c3e57ca3a959ca5aad62de7213c562f8c821"; got != want {
			t.Errorf("head_sha = %v, want %v", got, want)
		}
		if got, want := p.Author, "Codertocat"; got != want {
			t.Errorf("author = %v, want %v", got, want)
		}
		if p.ProviderUpdatedAt == nil || !p.ProviderUpdatedAt.Equal(time.Date(2019, 5, 15, 15, 20, 33, 0, time.UTC)) {
			t.Errorf("provider_updated_at = %v, want 2019-05-15T15:20:33Z", p.ProviderUpdatedAt)
		}
		// No api_token: payload only, never scheduled for an API refresh.
		if p.NextSyncAt != nil {
			t.Errorf("next_sync_at = %v, want nil without an api_token", p.NextSyncAt)
		}
		if got, want := e.events(task.ID)[store.EventTaskCreated], 1; got != want {
			t.Errorf("task.created events = %d, want %d", got, want)
		}
	})
}

func TestPullRequestLinksToReferencedIssueTask(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		t.Parallel()
		e := newEnv(t, st, githubConn())
		issue := e.process(e.github("issues.opened.json"))
		before := e.task(issue.TaskID)

		out := e.process(e.github("pull_request.opened.closes-issue.json"))
		if got, want := out.Action, "link"; got != want {
			t.Errorf("action = %v, want %v", got, want)
		}
		if got, want := out.TaskID, issue.TaskID; got != want {
			t.Errorf("linked task = %v, want the issue's %v", got, want)
		}
		if got, want := len(e.tasks()), 1; got != want {
			t.Errorf("tasks = %d, want %d (the PR links, it does not create)", got, want)
		}
		if _, ok := e.byExternalID(ghPRExt); ok {
			t.Errorf("a task holds the PR's external ID, want none")
		}
		as := e.associations(issue.TaskID)
		if got, want := len(as), 1; got != want {
			t.Fatalf("associations = %d, want %d", got, want)
		}
		if got, want := as[0].ContributionID, ghPRID; got != want {
			t.Errorf("contribution_id = %v, want %v", got, want)
		}
		if as[0].OperationID == "" || as[0].IdempotencyKey == "" || as[0].OwnershipMarker == "" {
			t.Errorf("association = %+v, want operation, idempotency key and ownership marker", as[0])
		}
		ps := e.projections(issue.TaskID)
		if got, want := len(ps), 1; got != want {
			t.Fatalf("projection rows = %d, want %d", got, want)
		}
		if got, want := ps[0].Number, int64(2); got != want {
			t.Errorf("projected number = %v, want %v", got, want)
		}
		after := e.task(issue.TaskID)
		if got, want := after.Title, before.Title; got != want {
			t.Errorf("issue task title = %q, want it unchanged %q", got, want)
		}
		// The link is an event of the task (task.contribution_linked), at
		// a revision of its own; the task's fields stay.
		if got, want := after.Revision, before.Revision+1; got != want {
			t.Errorf("issue task revision = %d, want %d", got, want)
		}
	})
}

func TestPullRequestLinksByJiraKeyInBranch(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		t.Parallel()
		gh := githubConn()
		gh.OnMerge = config.OnCloseArchive
		e := newEnv(t, st, gh, jiraConn())
		jiraTask := e.process(e.jira("webhook-issue-created.json"))
		// "Fixes #1" names no task here; the branch TES-41-readme names the
		// Jira issue's.
		out := e.process(e.github("pull_request.closed.merged.json"))
		if got, want := out.TaskID, jiraTask.TaskID; got != want {
			t.Errorf("linked task = %v, want the Jira task %v", got, want)
		}
		if got, want := len(e.associations(jiraTask.TaskID)), 1; got != want {
			t.Errorf("associations = %d, want %d", got, want)
		}
		task := e.task(jiraTask.TaskID)
		if task.ArchivedAt == nil {
			t.Errorf("archived_at = nil, want the Jira task archived on merge")
		}
		if got, want := task.Source.Ref, "TES-41"; got != want {
			t.Errorf("source ref = %v, want %v (archiving on merge changes nothing else)", got, want)
		}
		if got, want := len(e.tasks()), 1; got != want {
			t.Errorf("tasks = %d, want %d", got, want)
		}
	})
}

func TestPullRequestRepeatedAndOutOfOrder(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		files []string
		// archived: the PR's task ends archived (closed, on_close: archive).
		archived bool
		state    string
	}{
		{"same delivery twice", []string{"pull_request.opened.json", "pull_request.opened.json"}, false, "open"},
		{"redelivered after an update", []string{"pull_request.opened.json", "pull_request.synchronize.json", "pull_request.opened.json"}, false, "open"},
		{"closed before opened", []string{"pull_request.closed.json", "pull_request.opened.json"}, true, "closed"},
		{"merged before opened", []string{"pull_request.closed.merged.json", "pull_request.opened.json", "pull_request.closed.merged.json"}, true, "merged"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
				t.Parallel()
				e := newEnv(t, st, githubConn())
				first := e.github(tc.files[0])
				e.process(first)
				for _, f := range tc.files[1:] {
					e.process(e.github(f))
				}
				// The very same inbox row processed again (a replay).
				e.process(first)

				task := e.onlyTask()
				if got, want := task.ExternalID, ghPRExt; got != want {
					t.Errorf("external_id = %v, want %v", got, want)
				}
				as := e.associations(task.ID)
				if got, want := len(as), 1; got != want {
					t.Fatalf("associations = %d, want %d", got, want)
				}
				if a, ok := e.association("github", "gh-main", ghPRID); !ok || a.TaskID != task.ID {
					t.Errorf("association of the PR = %+v (found %v), want task %s", a, ok, task.ID)
				}
				if got, want := task.ArchivedAt != nil, tc.archived; got != want {
					t.Errorf("archived = %v, want %v", got, want)
				}
				ps := e.projections(task.ID)
				if got, want := len(ps), 1; got != want {
					t.Fatalf("projection rows = %d, want %d", got, want)
				}
				if got, want := ps[0].State, tc.state; got != want {
					t.Errorf("projection state = %v, want %v (older payloads never overwrite)", got, want)
				}
				if got, want := e.events(task.ID)[store.EventTaskCreated], 1; got != want {
					t.Errorf("task.created events = %d, want %d", got, want)
				}
			})
		})
	}
}

func TestLinkedPullRequestRepeatedAndOutOfOrder(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		t.Parallel()
		gh := githubConn()
		gh.OnMerge = config.OnCloseArchive
		e := newEnv(t, st, gh)
		issue := e.process(e.github("issues.opened.json"))
		merged := e.process(e.github("pull_request.closed.merged.json"))
		if got, want := merged.TaskID, issue.TaskID; got != want {
			t.Errorf("merged PR linked to %v, want %v", got, want)
		}
		again := e.process(e.github("pull_request.opened.closes-issue.json"))
		if got, want := again.TaskID, issue.TaskID; got != want {
			t.Errorf("older opened event linked to %v, want %v", got, want)
		}
		e.process(e.github("pull_request.closed.merged.json"))
		if got, want := len(e.tasks()), 1; got != want {
			t.Errorf("tasks = %d, want %d", got, want)
		}
		if got, want := len(e.associations(issue.TaskID)), 1; got != want {
			t.Errorf("associations = %d, want %d", got, want)
		}
		ps := e.projections(issue.TaskID)
		if got, want := len(ps), 1; got != want {
			t.Fatalf("projection rows = %d, want %d", got, want)
		}
		if got, want := ps[0].State, "merged"; got != want {
			t.Errorf("projection state = %v, want %v", got, want)
		}
	})
}

func TestMergedPullRequestArchivesLinkedTask(t *testing.T) {
	t.Parallel()
	for _, onMerge := range []string{config.OnCloseArchive, config.OnCloseNone} {
		t.Run("on_merge="+onMerge, func(t *testing.T) {
			t.Parallel()
			storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
				t.Parallel()
				gh := githubConn()
				gh.OnMerge = onMerge
				e := newEnv(t, st, gh)
				issue := e.process(e.github("issues.opened.json"))
				before := e.task(issue.TaskID)
				e.process(e.github("pull_request.opened.closes-issue.json"))
				out := e.process(e.github("pull_request.closed.merged.json"))
				if got, want := out.TaskID, issue.TaskID; got != want {
					t.Errorf("outcome task = %v, want %v", got, want)
				}
				after := e.task(issue.TaskID)
				if got, want := after.ArchivedAt != nil, onMerge == config.OnCloseArchive; got != want {
					t.Errorf("archived = %v, want %v", got, want)
				}
				// Archiving on merge never copies the PR onto the issue's task.
				if got, want := after.Title, before.Title; got != want {
					t.Errorf("title = %q, want %q", got, want)
				}
				if got, want := after.Description, before.Description; got != want {
					t.Errorf("description = %q, want %q", got, want)
				}
				if got, want := strings.Join(after.Labels, ","), strings.Join(before.Labels, ","); got != want {
					t.Errorf("labels = %v, want %v", got, want)
				}
				if after.Source == nil || *after.Source != *before.Source {
					t.Errorf("source = %+v, want %+v", after.Source, before.Source)
				}
				if got, want := len(e.tasks()), 1; got != want {
					t.Errorf("tasks = %d, want %d", got, want)
				}
				// A later PR referencing the same issue still finds the task by
				// its source.
				if _, err := st.FindTaskBySourceRef(context.Background(), testWorkspace, "github", ghIssueRef); err != nil {
					t.Errorf("find task by source ref after merge: %v", err)
				}
			})
		})
	}
}

func TestMergedPullRequestArchivesItsOwnTask(t *testing.T) {
	t.Parallel()
	tests := []struct {
		onClose, onMerge string
		archived         bool
	}{
		{config.OnCloseNone, config.OnCloseArchive, true},
		{config.OnCloseNone, config.OnCloseNone, false},
		{config.OnCloseArchive, config.OnCloseNone, true}, // merged is closed
	}
	for _, tc := range tests {
		t.Run("on_close="+tc.onClose+",on_merge="+tc.onMerge, func(t *testing.T) {
			t.Parallel()
			storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
				t.Parallel()
				gh := githubConn()
				gh.OnClose, gh.OnMerge = tc.onClose, tc.onMerge
				e := newEnv(t, st, gh)
				e.process(e.github("pull_request.opened.json"))
				e.process(e.github("pull_request.closed.merged.json", set("no issue reference", "pull_request", "body")))
				task := e.onlyTask()
				if got, want := task.ArchivedAt != nil, tc.archived; got != want {
					t.Errorf("archived = %v, want %v", got, want)
				}
				if got, want := len(e.associations(task.ID)), 1; got != want {
					t.Errorf("associations = %d, want %d", got, want)
				}
			})
		})
	}
}

func TestPullRequestsSetting(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		setting      string
		withIssue    bool
		file         string
		wantStatus   string
		wantLinked   bool
		wantPRTasks  int
		wantAssocs   int
		wantProjRows int
	}{
		{"link without a referenced task is ignored", config.PullRequestsLink, false, "pull_request.opened.json", store.DeliveryIgnored, false, 0, 0, 0},
		{"link with a reference to a missing task is ignored", config.PullRequestsLink, false, "pull_request.opened.closes-issue.json", store.DeliveryIgnored, false, 0, 0, 0},
		{"link with a referenced task links", config.PullRequestsLink, true, "pull_request.opened.closes-issue.json", store.DeliverySucceeded, true, 0, 1, 1},
		{"ignore never links", config.PullRequestsIgnore, true, "pull_request.opened.closes-issue.json", store.DeliveryIgnored, false, 0, 0, 0},
		{"ignore never creates", config.PullRequestsIgnore, false, "pull_request.opened.json", store.DeliveryIgnored, false, 0, 0, 0},
		{"link_or_create creates", config.PullRequestsLinkOrCreate, false, "pull_request.opened.json", store.DeliverySucceeded, false, 1, 1, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
				t.Parallel()
				gh := githubConn()
				gh.PullRequests = tc.setting
				e := newEnv(t, st, gh)
				issueTask := ""
				if tc.withIssue {
					issueTask = e.process(e.github("issues.opened.json")).TaskID
				}
				out := e.process(e.github(tc.file))
				if got, want := statusOf(out), tc.wantStatus; got != want {
					t.Errorf("status = %v, want %v (%s)", got, want, out.Result)
				}
				prTasks := 0
				if _, ok := e.byExternalID(ghPRExt); ok {
					prTasks = 1
				}
				if got, want := prTasks, tc.wantPRTasks; got != want {
					t.Errorf("tasks of the PR = %d, want %d", got, want)
				}
				a, ok := e.association("github", "gh-main", ghPRID)
				if got, want := ok, tc.wantAssocs == 1; got != want {
					t.Errorf("association exists = %v, want %v", got, want)
				}
				if got, want := ok && a.TaskID == issueTask, tc.wantLinked; got != want {
					t.Errorf("linked to the issue's task = %v, want %v", got, want)
				}
				rows := 0
				for _, task := range e.tasks() {
					rows += len(e.projections(task.ID))
				}
				if got, want := rows, tc.wantProjRows; got != want {
					t.Errorf("projection rows = %d, want %d", got, want)
				}
			})
		})
	}
}

func TestPullRequestFiltersApplyToCreateOnly(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		t.Parallel()
		gh := githubConn()
		e := newEnv(t, st, gh)
		issue := e.process(e.github("issues.opened.json"))
		// Narrow the filters afterwards: a PR in another repository creates
		// nothing, but a link to an existing task is not a create.
		gh.Repositories = []string{"octo-org/*"}
		e.conns[gh.ID] = gh
		if out := e.process(e.github("pull_request.opened.json")); statusOf(out) != store.DeliveryIgnored {
			t.Errorf("unreferencing PR outside the filter: status = %v, want %v", statusOf(out), store.DeliveryIgnored)
		}
		out := e.process(e.github("pull_request.opened.closes-issue.json"))
		if got, want := out.TaskID, issue.TaskID; got != want {
			t.Errorf("linked task = %v, want %v", got, want)
		}
		if got, want := len(e.tasks()), 1; got != want {
			t.Errorf("tasks = %d, want %d", got, want)
		}
	})
}

func TestMergeRequestCreatesTaskWithOneAssociation(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		t.Parallel()
		e := newEnv(t, st, gitlabConn())
		first := e.gitlab("merge_request.json")
		out := e.process(first)
		if got, want := out.Action, "create"; got != want {
			t.Errorf("action = %v, want %v", got, want)
		}
		e.process(first)
		e.process(e.gitlab("merge_request.json")) // a resend with a new key
		task := e.onlyTask()
		if got, want := task.ExternalID, glMRExt; got != want {
			t.Errorf("external_id = %v, want %v", got, want)
		}
		if got, want := task.Source.Ref, "gitlabhq/gitlab-test!1"; got != want {
			t.Errorf("source ref = %v, want %v", got, want)
		}
		as := e.associations(task.ID)
		if got, want := len(as), 1; got != want {
			t.Fatalf("associations = %d, want %d", got, want)
		}
		if got, want := as[0].Provider+"/"+as[0].ContributionKind+"/"+as[0].ContributionID, "gitlab/merge_request/"+glMRID; got != want {
			t.Errorf("association = %v, want %v", got, want)
		}
		ps := e.projections(task.ID)
		if got, want := len(ps), 1; got != want {
			t.Fatalf("projection rows = %d, want %d", got, want)
		}
		p := ps[0]
		if got, want := p.Provider, "gitlab"; got != want {
			t.Errorf("projection provider (table) = %v, want %v", got, want)
		}
		if got, want := p.Number, int64(1); got != want {
			t.Errorf("iid = %v, want %v", got, want)
		}
		if got, want := p.HeadBranch+"→"+p.BaseBranch, "ms-viewport→master"; got != want {
			t.Errorf("branches = %v, want %v", got, want)
		}
		if got, want := p.State, "open"; got != want {
			t.Errorf("state = %v, want %v", got, want)
		}
		// The hook's user is not the MR's author: the payload leaves the
		// author empty (an API refresh fills it).
		if got, want := p.Author, ""; got != want {
			t.Errorf("author = %v, want %v", got, want)
		}
	})
}

func TestMergeRequestLinksAndArchivesOnMerge(t *testing.T) {
	t.Parallel()
	for _, onMerge := range []string{config.OnCloseArchive, config.OnCloseNone} {
		t.Run("on_merge="+onMerge, func(t *testing.T) {
			t.Parallel()
			storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
				t.Parallel()
				gl := gitlabConn()
				gl.OnMerge = onMerge
				e := newEnv(t, st, gl)
				issue := e.process(e.gitlab("issue.json"))
				before := e.task(issue.TaskID)
				// Merged ("Closes #23") before the older open event.
				out := e.process(e.gitlab("merge_request.merged.json"))
				if got, want := out.TaskID, issue.TaskID; got != want {
					t.Errorf("linked task = %v, want the issue's %v", got, want)
				}
				e.process(e.gitlab("merge_request.json"))
				e.process(e.gitlab("merge_request.merged.json"))
				if got, want := len(e.tasks()), 1; got != want {
					t.Errorf("tasks = %d, want %d", got, want)
				}
				if _, ok := e.byExternalID(glMRExt); ok {
					t.Errorf("a task holds the MR's external ID, want none")
				}
				if got, want := len(e.associations(issue.TaskID)), 1; got != want {
					t.Errorf("associations = %d, want %d", got, want)
				}
				after := e.task(issue.TaskID)
				if got, want := after.ArchivedAt != nil, onMerge == config.OnCloseArchive; got != want {
					t.Errorf("archived = %v, want %v", got, want)
				}
				if got, want := after.Title, before.Title; got != want {
					t.Errorf("title = %q, want %q", got, want)
				}
				ps := e.projections(issue.TaskID)
				if got, want := len(ps), 1; got != want {
					t.Fatalf("projection rows = %d, want %d", got, want)
				}
				if got, want := ps[0].State, "merged"; got != want {
					t.Errorf("projection state = %v, want %v", got, want)
				}
				if ps[0].MergedAt == nil {
					t.Errorf("merged_at = nil, want the merge time")
				}
			})
		})
	}
}

func TestDeletingTaskRemovesAssociationsAndProjections(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		t.Parallel()
		e := newEnv(t, st, githubConn(), gitlabConn())
		ctx := context.Background()

		// A task created by its PR, and an issue task with a linked MR.
		prTask := e.process(e.github("pull_request.opened.json")).TaskID
		issueTask := e.process(e.gitlab("issue.json")).TaskID
		e.process(e.gitlab("merge_request.merged.json"))
		if got, want := len(e.associations(issueTask)), 1; got != want {
			t.Fatalf("issue task associations = %d, want %d", got, want)
		}

		for _, id := range []string{prTask, issueTask} {
			if _, err := e.svc.Delete(ctx, id, tasks.DeletedByOperator, nil); err != nil {
				t.Fatalf("delete %s: %v", id, err)
			}
			if got, want := len(e.associations(id)), 0; got != want {
				t.Errorf("associations after delete = %d, want %d", got, want)
			}
			if got, want := len(e.projections(id)), 0; got != want {
				t.Errorf("projection rows after delete = %d, want %d", got, want)
			}
		}
		if _, ok := e.association("github", "gh-main", ghPRID); ok {
			t.Errorf("PR association survives its task")
		}
		if _, ok := e.association("gitlab", "gl-main", glMRID); ok {
			t.Errorf("MR association survives its task")
		}
		// The PR's own task was connector-owned: its redeliveries are
		// suppressed and create nothing.
		out := e.process(e.github("pull_request.opened.json"))
		if got, want := statusOf(out), store.DeliverySuppressed; got != want {
			t.Errorf("redelivered PR status = %v, want %v", got, want)
		}
		if got, want := len(e.tasks()), 0; got != want {
			t.Errorf("tasks = %d, want %d", got, want)
		}
	})
}

// failFirstProjection is the applier's task service whose first
// projection write fails, as if the process died between the association
// and the projection.
type failFirstProjection struct {
	TaskService
	failed atomic.Bool
}

var errInjected = errors.New("injected failure")

func (f *failFirstProjection) ShowContribution(ctx context.Context, p store.Projection) error {
	if f.failed.CompareAndSwap(false, true) {
		return errInjected
	}
	return f.TaskService.ShowContribution(ctx, p)
}

func TestCrashBetweenAssociationAndProjection(t *testing.T) {
	t.Parallel()
	t.Run("after Complete", func(t *testing.T) {
		t.Parallel()
		storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
			t.Parallel()
			e := newEnv(t, st, githubConn())
			e.app.tasks = &failFirstProjection{TaskService: e.app.tasks}
			d := e.github("pull_request.opened.json")
			if _, err := e.processErr(d); !errors.Is(err, errInjected) {
				t.Fatalf("first attempt error = %v, want the injected failure", err)
			}
			task := e.onlyTask()
			if got, want := len(e.associations(task.ID)), 1; got != want {
				t.Fatalf("associations after the crash = %d, want %d", got, want)
			}
			if got, want := len(e.projections(task.ID)), 0; got != want {
				t.Fatalf("projection rows after the crash = %d, want %d", got, want)
			}
			// The worker retries the delivery: the projection is completed.
			e.process(d)
			e.process(d)
			task = e.onlyTask()
			if got, want := len(e.associations(task.ID)), 1; got != want {
				t.Errorf("associations = %d, want %d", got, want)
			}
			if got, want := len(e.projections(task.ID)), 1; got != want {
				t.Errorf("projection rows = %d, want %d", got, want)
			}
		})
	})
	t.Run("inside the creation step", func(t *testing.T) {
		t.Parallel()
		storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
			t.Parallel()
			e := newEnv(t, st, githubConn())
			var crashed atomic.Bool
			e.coord.Failpoint = func(name string) error {
				if name == idempotency.FailAfterEffectWrite && crashed.CompareAndSwap(false, true) {
					return errInjected
				}
				return nil
			}
			d := e.github("pull_request.opened.json")
			if _, err := e.processErr(d); !errors.Is(err, errInjected) {
				t.Fatalf("first attempt error = %v, want the injected crash", err)
			}
			// The association is committed; the task is still preparing.
			a, ok := e.association("github", "gh-main", ghPRID)
			if !ok {
				t.Fatalf("association after the crash: none, want the committed effect")
			}
			pending, ok := e.byExternalID(ghPRExt)
			if !ok || pending.CreationState != store.CreationPreparing {
				t.Fatalf("task after the crash = %+v (found %v), want preparing", pending, ok)
			}
			if got, want := a.TaskID, pending.ID; got != want {
				t.Errorf("association task = %v, want %v", got, want)
			}
			// A retry before recovery neither duplicates nor completes.
			if _, err := e.processErr(d); err == nil {
				t.Errorf("retry while the task is being created: nil error, want a retryable one")
			}
			if got, want := len(e.projections(pending.ID)), 0; got != want {
				t.Errorf("projection rows while preparing = %d, want %d", got, want)
			}
			// The lease expires; recovery completes the creation.
			e.clock.Advance(5 * time.Minute)
			rec := idempotency.NewRecoverer(e.coord, st, testLogger(t))
			if n, err := rec.RunOnce(context.Background()); err != nil || n != 1 {
				t.Fatalf("recovery settled %d (err %v), want 1", n, err)
			}
			e.process(d)
			e.process(d)
			task := e.onlyTask()
			if got, want := task.ID, pending.ID; got != want {
				t.Errorf("task = %v, want the recovered %v", got, want)
			}
			if got, want := len(e.associations(task.ID)), 1; got != want {
				t.Errorf("associations = %d, want %d", got, want)
			}
			if got, want := len(e.projections(task.ID)), 1; got != want {
				t.Errorf("projection rows = %d, want %d", got, want)
			}
			if got, want := e.events(task.ID)[store.EventTaskCreated], 1; got != want {
				t.Errorf("task.created events = %d, want %d", got, want)
			}
		})
	})
}

func TestWebhookKeepsProviderImposedRefreshDelay(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		t.Parallel()
		gh := githubConn()
		gh.APIToken = "ghp_test_token"
		e := newEnv(t, st, gh)
		ctx := context.Background()
		taskID := e.process(e.github("pull_request.opened.json")).TaskID
		rows := e.projections(taskID)
		if len(rows) != 1 || rows[0].NextSyncAt == nil || !rows[0].NextSyncAt.Equal(e.clock.Now()) {
			t.Fatalf("row after the first payload = %+v, want due now (api_token set)", rows)
		}
		// The projector was told to wait (429, Retry-After: 300).
		row := rows[0]
		wait := e.clock.Now().Add(300 * time.Second)
		row.SyncAttempts, row.NextSyncAt, row.SyncError = 1, &wait, "429 Too Many Requests"
		if err := st.UpdateProjectionSync(ctx, row); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(10 * time.Second)
		const newSHA = "0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c"
		e.process(e.github("pull_request.synchronize.json", set(newSHA, "pull_request", "head", "sha"),
			set("2019-05-15T15:20:50Z", "pull_request", "updated_at")))
		rows = e.projections(taskID)
		if len(rows) != 1 {
			t.Fatalf("projection rows = %d, want 1", len(rows))
		}
		if rows[0].NextSyncAt == nil || !rows[0].NextSyncAt.Equal(wait) {
			t.Errorf("next_sync_at = %v, want the provider's %v kept", rows[0].NextSyncAt, wait)
		}
		if got, want := rows[0].SyncAttempts, 1; got != want {
			t.Errorf("sync_attempts = %d, want %d", got, want)
		}
		// The payload itself is applied.
		if got, want := rows[0].HeadSHA, newSHA; got != want {
			t.Errorf("head_sha = %v, want %v", got, want)
		}
		// Once the wait is over, a webhook schedules an immediate refresh again.
		e.clock.Advance(time.Hour)
		e.process(e.github("pull_request.closed.json"))
		rows = e.projections(taskID)
		if rows[0].NextSyncAt == nil || !rows[0].NextSyncAt.Equal(e.clock.Now()) {
			t.Errorf("next_sync_at = %v, want now %v", rows[0].NextSyncAt, e.clock.Now())
		}
	})
}

// A PR/MR that creates its own task is linked to an issue's task while that
// creation is unfinished: the link is a recorded ledger operation, so the
// creation's step — whether the live executor or recovery observes the row —
// proves its own effect absent, the creation aborts (no task, no
// task.created), and the PR stays linked to exactly the issue's task.
func TestLinkDuringPullRequestCreationConverges(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// crash: the PR's creation dies after its step claim, the link
		// happens, then recovery runs; otherwise the link lands between the
		// claim and the effect write of a live creation.
		crash bool
	}{
		{"crash after the step claim, linked before recovery", true},
		{"linked while the step runs", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
				t.Parallel()
				ctx := context.Background()
				e := newEnv(t, st, githubConn())
				var issueTask string
				link := func() {
					issueTask = e.process(e.github("issues.opened.json")).TaskID
					out := e.process(e.github("pull_request.opened.closes-issue.json"))
					if got, want := out.TaskID, issueTask; got != want {
						t.Errorf("link delivery task = %v, want the issue's %v", got, want)
					}
				}
				var fired atomic.Bool
				e.coord.Failpoint = func(name string) error {
					if name != idempotency.FailAfterStepClaim || !fired.CompareAndSwap(false, true) {
						return nil
					}
					if tc.crash {
						return errInjected
					}
					link()
					return nil
				}
				out, err := e.processErr(e.github("pull_request.opened.json"))
				if tc.crash {
					if !errors.Is(err, errInjected) {
						t.Fatalf("PR delivery = %v, want the injected crash", err)
					}
					pending, ok := e.byExternalID(ghPRExt)
					if !ok || pending.CreationState != store.CreationPreparing {
						t.Fatalf("PR task after the crash = %+v (found %v), want preparing", pending, ok)
					}
					link()
					e.clock.Advance(5 * time.Minute)
					rec := idempotency.NewRecoverer(e.coord, st, testLogger(t))
					if n, err := rec.RunOnce(ctx); err != nil || n != 1 {
						t.Fatalf("recovery settled %d (err %v), want 1", n, err)
					}
				} else {
					if err != nil {
						t.Fatalf("PR delivery = %v, want it to follow the link", err)
					}
					if got, want := out.TaskID, issueTask; got != want {
						t.Errorf("PR delivery task = %v, want the issue's %v", got, want)
					}
					if got, want := statusOf(out), store.DeliverySucceeded; got != want {
						t.Errorf("PR delivery status = %v, want %v", got, want)
					}
				}

				// Converged: no operation left open, the PR's creation aborted.
				if n := countRows(t, st, `SELECT COUNT(*) FROM task_creation_operations
					WHERE state IN ('preparing', 'preparing-release', 'completing')`); n != 0 {
					t.Errorf("open operations = %d, want 0", n)
				}
				if n := countRows(t, st, `SELECT COUNT(*) FROM task_creation_operations WHERE state = 'aborted'`); n != 1 {
					t.Errorf("aborted operations = %d, want 1 (the PR's own creation)", n)
				}
				if _, ok := e.byExternalID(ghPRExt); ok {
					t.Errorf("a task still holds the PR's external ID, want the creation aborted")
				}
				if got := e.tasks(); len(got) != 1 || got[0].ID != issueTask {
					t.Errorf("tasks = %v, want only the issue's", taskIDs(got))
				}
				if n := countRows(t, st, `SELECT COUNT(*) FROM tasks`); n != 1 {
					t.Errorf("task rows = %d, want 1 (no partial PR task)", n)
				}
				if n := countRows(t, st, `SELECT COUNT(*) FROM task_events WHERE type = 'task.created'`); n != 1 {
					t.Errorf("task.created events = %d, want 1 (the issue's)", n)
				}
				a, ok := e.association("github", "gh-main", ghPRID)
				if !ok || a.TaskID != issueTask {
					t.Fatalf("PR association = %+v (found %v), want the issue's task %s", a, ok, issueTask)
				}
				if n := countRows(t, st, `SELECT COUNT(*) FROM task_remote_contribution_associations`); n != 1 {
					t.Errorf("association rows = %d, want 1", n)
				}
				// The row belongs to a recorded link operation.
				owner, err := st.GetOperation(ctx, a.OperationID)
				if err != nil {
					t.Fatalf("association operation %s: %v, want a recorded operation", a.OperationID, err)
				}
				if owner.State != store.OpCompleted || owner.Outcome != idempotency.OutcomeLinked || owner.TaskID != issueTask {
					t.Errorf("link operation = %s/%s task %s, want completed/%s task %s", owner.State, owner.Outcome,
						owner.TaskID, idempotency.OutcomeLinked, issueTask)
				}

				// Later deliveries for the PR succeed and follow the link.
				e.coord.Failpoint = nil
				for _, f := range []string{"pull_request.synchronize.json", "pull_request.opened.json"} {
					out := e.process(e.github(f))
					if got, want := out.TaskID, issueTask; got != want {
						t.Errorf("%s: task = %v, want %v", f, got, want)
					}
				}
				if got, want := len(e.tasks()), 1; got != want {
					t.Errorf("tasks after more deliveries = %d, want %d", got, want)
				}
			})
		})
	}
}

func countRows(t *testing.T, st *sqlstore.Store, query string) int {
	t.Helper()
	var n int
	if err := st.Driver().QueryRow(context.Background(), query).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}
