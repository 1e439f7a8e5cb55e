package ingest

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/trackergateway/gateway/connectors"
	"github.com/trackergateway/gateway/internal/config"
	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/store/sqlstore"
	"github.com/trackergateway/gateway/internal/store/storetest"
	"github.com/trackergateway/gateway/internal/tasks"
)

// The issue side of the "Event → action" table, at the applier's level:
// suppression, delete before create, transfer aliasing, stale updates and
// the connection's filters.

func TestSuppressionAfterDelete(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		delete func(e *env, taskID string)
		reason string
	}{
		{"deleted at source", func(e *env, _ string) {
			out := e.process(e.github("issues.deleted.json"))
			if got, want := out.Action, "delete"; got != want {
				e.t.Errorf("action = %v, want %v", got, want)
			}
		}, string(tasks.DeletedAtSource)},
		{"deleted by an operator", func(e *env, taskID string) {
			if _, err := e.svc.Delete(context.Background(), taskID, tasks.DeletedByOperator, nil); err != nil {
				e.t.Fatalf("delete: %v", err)
			}
		}, string(tasks.DeletedByOperator)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
				t.Parallel()
				e := newEnv(t, st, githubConn())
				opened := e.github("issues.opened.json")
				taskID := e.process(opened).TaskID
				tc.delete(e, taskID)
				if got, want := len(e.tasks()), 0; got != want {
					t.Fatalf("tasks after delete = %d, want %d", got, want)
				}
				s, err := st.GetSuppression(context.Background(), testWorkspace, ghIssueExt)
				if err != nil {
					t.Fatalf("suppression: %v", err)
				}
				if got, want := s.Reason, tc.reason; got != want {
					t.Errorf("suppression reason = %v, want %v", got, want)
				}
				// Redelivery, replay of the stored row, a late edit and a
				// reopen: all suppressed, nothing created.
				for _, d := range []store.Delivery{opened, e.github("issues.opened.json"), e.github("issues.edited.json"),
					e.github("issues.labeled.json"), e.github("issues.reopened.json")} {
					out := e.process(d)
					if got, want := statusOf(out), store.DeliverySuppressed; got != want {
						t.Errorf("%s after delete: status = %v, want %v", d.Event, got, want)
					}
				}
				if got, want := len(e.tasks()), 0; got != want {
					t.Errorf("tasks = %d, want %d", got, want)
				}
				// Clearing the suppression re-enables the entity.
				if ok, err := st.DeleteSuppression(context.Background(), testWorkspace, ghIssueExt); err != nil || !ok {
					t.Fatalf("clear suppression: %v %v", ok, err)
				}
				out := e.process(opened)
				if got, want := out.Action, "create"; got != want {
					t.Errorf("after clearing: action = %v, want %v", got, want)
				}
				if got, want := len(e.tasks()), 1; got != want {
					t.Errorf("tasks after clearing = %d, want %d", got, want)
				}
			})
		})
	}
}

func TestDeleteBeforeCreate(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		t.Parallel()
		e := newEnv(t, st, githubConn(), jiraConn())
		out := e.process(e.github("issues.deleted.json"))
		if got, want := out.Action, "delete"; got != want {
			t.Errorf("action = %v, want %v", got, want)
		}
		if got, want := statusOf(out), store.DeliverySucceeded; got != want {
			t.Errorf("status = %v, want %v", got, want)
		}
		for _, name := range []string{"issues.opened.json", "issues.edited.json"} {
			if got, want := statusOf(e.process(e.github(name))), store.DeliverySuppressed; got != want {
				t.Errorf("%s after the delete: status = %v, want %v", name, got, want)
			}
		}
		// Jira: deleted (IDT-19) before any create of it.
		e.process(e.jira("webhook-issue-deleted.json"))
		if _, err := st.GetSuppression(context.Background(), testWorkspace, "jira:acme.atlassian.net:issue:10303"); err != nil {
			t.Errorf("jira suppression: %v", err)
		}
		if got, want := len(e.tasks()), 0; got != want {
			t.Errorf("tasks = %d, want %d", got, want)
		}
	})
}

// oldIssueOpened is the "opened" delivery of the issue that
// issues.transferred.json moves (octo-org/octo-repo#1, id 512748900),
// derived from that fixture.
func oldIssueOpened(m map[string]any) {
	m["action"] = "opened"
	delete(m, "changes")
	m["issue"].(map[string]any)["updated_at"] = "2019-05-01T10:00:00Z"
}

func TestTransferAliasing(t *testing.T) {
	t.Parallel()
	t.Run("transferred, then the new issue's events", func(t *testing.T) {
		t.Parallel()
		storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
			t.Parallel()
			e := newEnv(t, st, githubConn())
			ctx := context.Background()
			old := e.process(e.github("issues.transferred.json", oldIssueOpened))
			if got, want := old.ExternalID, ghOldIssueExt; got != want {
				t.Fatalf("old issue external ID = %v, want %v", got, want)
			}
			out := e.process(e.github("issues.transferred.json"))
			if got, want := out.Action, "alias"; got != want {
				t.Errorf("action = %v, want %v", got, want)
			}
			if got, want := out.TaskID, old.TaskID; got != want {
				t.Errorf("transfer task = %v, want %v", got, want)
			}
			id, err := st.ResolveAlias(ctx, testWorkspace, ghIssueExt)
			if err != nil || id != old.TaskID {
				t.Errorf("alias of the new issue = %v (%v), want %v", id, err, old.TaskID)
			}
			// The source follows the issue to its new repository.
			task := e.task(old.TaskID)
			if got, want := task.Source.Ref, ghIssueRef; got != want {
				t.Errorf("source ref = %v, want %v", got, want)
			}
			if got, want := task.ExternalID, ghOldIssueExt; got != want {
				t.Errorf("external_id = %v, want %v (identity kept, new ID aliased)", got, want)
			}
			// The new issue's own events reach the same task.
			for _, name := range []string{"issues.opened.with-transfer.json", "issues.edited.json", "issues.opened.json"} {
				out := e.process(e.github(name))
				if got, want := out.TaskID, old.TaskID; got != want {
					t.Errorf("%s task = %v, want %v", name, got, want)
				}
			}
			// A PR closing the new issue links to the task.
			pr := e.process(e.github("pull_request.opened.closes-issue.json"))
			if got, want := pr.TaskID, old.TaskID; got != want {
				t.Errorf("PR linked to %v, want %v", got, want)
			}
			if got, want := len(e.tasks()), 1; got != want {
				t.Fatalf("tasks = %d, want %d", got, want)
			}
			// Deleting the new issue deletes the task and suppresses both IDs.
			e.process(e.github("issues.deleted.json"))
			if got, want := len(e.tasks()), 0; got != want {
				t.Errorf("tasks after delete = %d, want %d", got, want)
			}
			for _, ext := range []string{ghIssueExt, ghOldIssueExt} {
				if _, err := st.GetSuppression(ctx, testWorkspace, ext); err != nil {
					t.Errorf("suppression of %s: %v", ext, err)
				}
			}
			if got, want := statusOf(e.process(e.github("issues.transferred.json", oldIssueOpened))), store.DeliverySuppressed; got != want {
				t.Errorf("old issue redelivered: status = %v, want %v", got, want)
			}
		})
	})
	t.Run("opened with transfer first", func(t *testing.T) {
		t.Parallel()
		storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
			t.Parallel()
			e := newEnv(t, st, githubConn())
			old := e.process(e.github("issues.transferred.json", oldIssueOpened))
			out := e.process(e.github("issues.opened.with-transfer.json"))
			if got, want := out.TaskID, old.TaskID; got != want {
				t.Errorf("opened-with-transfer task = %v, want %v", got, want)
			}
			e.process(e.github("issues.transferred.json"))
			task := e.onlyTask()
			if got, want := task.Source.Ref, ghIssueRef; got != want {
				t.Errorf("source ref = %v, want %v", got, want)
			}
		})
	})
	t.Run("transfer of an issue without a task", func(t *testing.T) {
		t.Parallel()
		storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
			t.Parallel()
			e := newEnv(t, st, githubConn())
			out := e.process(e.github("issues.transferred.json"))
			if got, want := statusOf(out), store.DeliveryIgnored; got != want {
				t.Errorf("status = %v, want %v", got, want)
			}
			if got, want := len(e.tasks()), 0; got != want {
				t.Errorf("tasks = %d, want %d", got, want)
			}
		})
	})
	t.Run("gitlab moved_to_id", func(t *testing.T) {
		t.Parallel()
		storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
			t.Parallel()
			e := newEnv(t, st, gitlabConn())
			issue := e.process(e.gitlab("issue.json"))
			moved := e.process(e.gitlab("issue.moved.json"))
			if got, want := moved.TaskID, issue.TaskID; got != want {
				t.Errorf("moved task = %v, want %v", got, want)
			}
			task := e.task(issue.TaskID)
			if task.ArchivedAt != nil {
				t.Errorf("archived_at = %v, want nil (the moved issue lives on)", task.ArchivedAt)
			}
			// The new issue (id 302) updates the same task.
			renamed := e.process(e.gitlab("issue.json", set(float64(302), "object_attributes", "id"), set(float64(24), "object_attributes", "iid"),
				set("update", "object_attributes", "action"), set("Moved and renamed", "object_attributes", "title"),
				set("2013-12-03T17:30:00Z", "object_attributes", "updated_at")))
			if got, want := renamed.TaskID, issue.TaskID; got != want {
				t.Errorf("new issue's event task = %v, want %v", got, want)
			}
			task = e.onlyTask()
			if got, want := task.Title, "Moved and renamed"; got != want {
				t.Errorf("title = %v, want %v", got, want)
			}
			if got, want := task.Source.Ref, "gitlabhq/gitlab-test#24"; got != want {
				t.Errorf("source ref = %v, want %v", got, want)
			}
		})
	})
}

func TestStaleUpdateSkipped(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		t.Parallel()
		e := newEnv(t, st, githubConn())
		taskID := e.process(e.github("issues.opened.json")).TaskID
		closed := e.process(e.github("issues.closed.json")) // updated_at 15:25:00
		if got, want := closed.Action, "archive"; got != want {
			t.Errorf("close action = %v, want %v", got, want)
		}
		before := e.task(taskID)
		// An edit made before the close (updated_at 15:20:18) arrives late.
		out := e.process(e.github("issues.edited.json", set("Late title", "issue", "title")))
		if !strings.Contains(out.Result, "stale") {
			t.Errorf("result = %q, want a stale skip", out.Result)
		}
		after := e.task(taskID)
		if got, want := after.Title, before.Title; got != want {
			t.Errorf("title = %q, want %q", got, want)
		}
		if after.ArchivedAt == nil {
			t.Errorf("archived_at = nil, want the close kept")
		}
		if got, want := after.Revision, before.Revision; got != want {
			t.Errorf("revision = %d, want %d", got, want)
		}
		// A newer edit applies (the issue is open again in it).
		e.process(e.github("issues.edited.json", set("New title", "issue", "title"), set("2019-05-15T15:30:00Z", "issue", "updated_at")))
		after = e.task(taskID)
		if got, want := after.Title, "New title"; got != want {
			t.Errorf("title = %q, want %q", got, want)
		}
		if after.ArchivedAt != nil {
			t.Errorf("archived_at = %v, want unarchived by the newer open state", after.ArchivedAt)
		}
	})
}

func TestFilters(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		repos  []string
		labels []string
		create bool
	}{
		{"no filters", nil, nil, true},
		{"owner glob", []string{"Codertocat/*"}, nil, true},
		{"glob is case-insensitive", []string{"codertocat/*"}, nil, true},
		{"exact repository", []string{"octo-org/octo-repo", "Codertocat/Hello-World"}, nil, true},
		{"every repository", []string{"*/*"}, nil, true},
		{"star does not cross a slash", []string{"*"}, nil, false},
		{"other owner", []string{"octo-org/*"}, nil, false},
		{"label", nil, []string{"bug"}, true},
		{"label in another case", nil, []string{"BUG"}, true},
		{"other label", nil, []string{"enhancement"}, false},
		{"repository and label", []string{"Codertocat/*"}, []string{"bug"}, true},
		{"repository but not label", []string{"Codertocat/*"}, []string{"enhancement"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
				t.Parallel()
				gh := githubConn()
				gh.Repositories, gh.Labels = tc.repos, tc.labels
				e := newEnv(t, st, gh)
				out := e.process(e.github("issues.opened.json"))
				wantStatus := store.DeliveryIgnored
				if tc.create {
					wantStatus = store.DeliverySucceeded
				}
				if got, want := statusOf(out), wantStatus; got != want {
					t.Errorf("status = %v, want %v (%s)", got, want, out.Result)
				}
				n := 0
				if tc.create {
					n = 1
				}
				if got, want := len(e.tasks()), n; got != want {
					t.Errorf("tasks = %d, want %d", got, want)
				}
			})
		})
	}
}

func TestLabelAddedLaterCreates(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		t.Parallel()
		gh := githubConn()
		gh.Labels = []string{"triage"}
		e := newEnv(t, st, gh)
		if got, want := statusOf(e.process(e.github("issues.opened.json"))), store.DeliveryIgnored; got != want {
			t.Errorf("opened without the label: status = %v, want %v", got, want)
		}
		labeled := e.process(e.github("issues.labeled.json", func(m map[string]any) {
			issue := m["issue"].(map[string]any)
			issue["labels"] = append(issue["labels"].([]any), map[string]any{"id": float64(1), "name": "triage", "color": "ffffff"})
		}))
		if got, want := labeled.Action, "create"; got != want {
			t.Errorf("labeled action = %v, want %v", got, want)
		}
		task := e.onlyTask()
		if got, want := strings.Join(task.Labels, ","), "bug,triage"; got != want {
			t.Errorf("labels = %v, want %v", got, want)
		}
		// Once the task exists, filters no longer matter to updates.
		e.process(e.github("issues.edited.json", set("2019-05-15T15:40:00Z", "issue", "updated_at")))
		if got, want := len(e.tasks()), 1; got != want {
			t.Errorf("tasks = %d, want %d", got, want)
		}
	})
}

func TestCloseBeforeOpenLeavesTaskArchived(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		t.Parallel()
		e := newEnv(t, st, githubConn(), gitlabConn())
		for _, pair := range [][2]store.Delivery{
			{e.github("issues.closed.json"), e.github("issues.opened.json")},
			{e.gitlab("issue.close.json"), e.gitlab("issue.json")},
		} {
			closed := e.process(pair[0])
			if got, want := statusOf(closed), store.DeliverySucceeded; got != want {
				t.Fatalf("%s: status = %v, want %v", pair[0].Event, got, want)
			}
			if e.task(closed.TaskID).ArchivedAt == nil {
				t.Errorf("%s: task created by a close is not archived", pair[0].Event)
			}
			e.process(pair[1]) // older: stale, must not reopen
			if e.task(closed.TaskID).ArchivedAt == nil {
				t.Errorf("%s: the older open reopened the task", pair[1].Event)
			}
		}
		if got, want := len(e.tasks()), 2; got != want {
			t.Errorf("tasks = %d, want %d", got, want)
		}
	})
}

func TestCloseAndReopen(t *testing.T) {
	t.Parallel()
	for _, onClose := range []string{config.OnCloseArchive, config.OnCloseNone} {
		t.Run("on_close="+onClose, func(t *testing.T) {
			t.Parallel()
			storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
				t.Parallel()
				gh := githubConn()
				gh.OnClose = onClose
				e := newEnv(t, st, gh)
				taskID := e.process(e.github("issues.opened.json")).TaskID
				e.process(e.github("issues.closed.json"))
				if got, want := e.task(taskID).ArchivedAt != nil, onClose == config.OnCloseArchive; got != want {
					t.Errorf("archived after close = %v, want %v", got, want)
				}
				e.process(e.github("issues.reopened.json", set("2019-05-15T15:30:00Z", "issue", "updated_at")))
				if at := e.task(taskID).ArchivedAt; at != nil {
					t.Errorf("archived_at after reopen = %v, want nil", at)
				}
			})
		})
	}
}

// Provider text that breaks the task limits is made to fit, on create and on
// every later update (a refusal would fail the entity's deliveries forever).
func TestProviderTextIsMadeToFit(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		t.Parallel()
		e := newEnv(t, st, githubConn())
		long := strings.Repeat("é", tasks.MaxDescriptionBytes/2+10) + "\x00end"
		var labels []any
		for i := range 60 {
			labels = append(labels, map[string]any{"id": float64(i + 1), "name": "label-" + string(rune('a'+i%26)) + strings.Repeat("x", i/26)})
		}
		labels = append(labels, map[string]any{"id": float64(99), "name": "bad\tlabel"})
		out := e.process(e.github("issues.opened.json", set("Tabbed\ttitle\n", "issue", "title"), set(long, "issue", "body"),
			set(labels, "issue", "labels")))
		task := e.task(out.TaskID)
		if got, want := task.Title, "Tabbed title"; got != want {
			t.Errorf("title = %q, want %q", got, want)
		}
		if len(task.Description) > tasks.MaxDescriptionBytes || !utf8.ValidString(task.Description) || strings.Contains(task.Description, "\x00") {
			t.Errorf("description: %d bytes, valid UTF-8 %v: want at most %d bytes of valid UTF-8 without NUL",
				len(task.Description), utf8.ValidString(task.Description), tasks.MaxDescriptionBytes)
		}
		if got, want := len(task.Labels), tasks.MaxLabels; got != want {
			t.Errorf("labels = %d, want %d", got, want)
		}
		for _, l := range task.Labels {
			if strings.ContainsAny(l, "\t") {
				t.Errorf("label %q kept, want dropped", l)
			}
		}

		title := strings.Repeat("t", tasks.MaxTitleRunes+20) + "\tx"
		upd := e.process(e.github("issues.edited.json", set(title, "issue", "title"), set(long, "issue", "body"),
			set("2019-05-15T15:40:00Z", "issue", "updated_at")))
		if got, want := statusOf(upd), store.DeliverySucceeded; got != want {
			t.Errorf("edit status = %v, want %v", got, want)
		}
		task = e.task(out.TaskID)
		if got, want := utf8.RuneCountInString(task.Title), tasks.MaxTitleRunes; got != want {
			t.Errorf("title runes = %d, want %d", got, want)
		}
	})
}

func TestCleanText(t *testing.T) {
	t.Parallel()
	titles := []struct{ in, want string }{
		{"  plain  ", "plain"},
		{"a\tb\nc", "a b c"},
		{"\t\n", ""},
		{strings.Repeat("ü", tasks.MaxTitleRunes+1), strings.Repeat("ü", tasks.MaxTitleRunes)},
	}
	for _, tc := range titles {
		if got := cleanTitle(tc.in); got != tc.want {
			t.Errorf("cleanTitle(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	// The cut falls inside a 2-byte character: it moves back to its start.
	d := strings.Repeat("a", tasks.MaxDescriptionBytes-1) + "é"
	if got, want := cleanDescription(d), strings.Repeat("a", tasks.MaxDescriptionBytes-1); got != want {
		t.Errorf("cleanDescription cut at %d bytes, want %d", len(got), len(want))
	}
	if got, want := cleanDescription("a\x00b"), "ab"; got != want {
		t.Errorf("cleanDescription = %q, want %q", got, want)
	}
	if got, want := strings.Join(cleanLabels([]string{" a ", "a", "", "b\x01", "c"}), ","), "a,c"; got != want {
		t.Errorf("cleanLabels = %q, want %q", got, want)
	}
	if got := cleanLabels(nil); got == nil || len(got) != 0 {
		t.Errorf("cleanLabels(nil) = %#v, want an empty list", got)
	}
}

func TestFiltersMatchGitLabPaths(t *testing.T) {
	t.Parallel()
	ev := connectors.Event{Repository: "group/sub/project", Labels: []string{"Backend"}}
	tests := []struct {
		repos []string
		want  bool
	}{
		{[]string{"group/*"}, false}, // "*" does not cross "/"
		{[]string{"group/*/*"}, true},
		{[]string{"group/sub/project"}, true},
		{[]string{"GROUP/SUB/PROJECT"}, true},
	}
	for _, tc := range tests {
		conn := config.Connection{Repositories: tc.repos, Labels: []string{"backend"}}
		if got := filtersMatch(conn, ev); got != tc.want {
			t.Errorf("filtersMatch(%v) = %v, want %v", tc.repos, got, tc.want)
		}
	}
}
