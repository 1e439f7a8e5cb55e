package ingest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/trackergateway/gateway/internal/idempotency"
	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/store/sqlstore"
	"github.com/trackergateway/gateway/internal/store/storetest"
	"github.com/trackergateway/gateway/internal/tasks"
)

// A provider delete: the suppression of the delivered external ID and the
// task's delete, written together or not at all.

// oldIssueDeleted is the "deleted" delivery of the issue that
// issues.transferred.json moves (octo-org/octo-repo#1), before its transfer.
func oldIssueDeleted(m map[string]any) {
	m["action"] = "deleted"
	delete(m, "changes")
}

// transferred opens the old issue and transfers it (ghOldIssueExt →
// ghIssueExt); it returns the task that follows the issue.
func (e *env) transferred() string {
	e.t.Helper()
	old := e.process(e.github("issues.transferred.json", oldIssueOpened))
	if out := e.process(e.github("issues.transferred.json")); out.TaskID != old.TaskID || out.Action != "alias" {
		e.t.Fatalf("transfer: task %s action %s, want %s alias", out.TaskID, out.Action, old.TaskID)
	}
	return old.TaskID
}

// suppressed says whether ext is suppressed in the test workspace.
func (e *env) suppressed(ext string) bool {
	e.t.Helper()
	_, err := e.st.GetSuppression(context.Background(), testWorkspace, ext)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		e.t.Fatalf("get suppression: %v", err)
	}
	return err == nil
}

// TestDeleteAndItsSuppressionAreOneStep stops a delete delivery right after
// its first write (as a crash, a shutdown timeout or a database error
// there would): the suppression is never there without the delete, and the
// retry ends with the task deleted and the entity suppressed.
func TestDeleteAndItsSuppressionAreOneStep(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// setup creates what the delete finds; it returns the task that
		// must be deleted ("" for none).
		setup  func(e *env) string
		delete func(e *env) store.Delivery
		// suppressed are the external IDs suppressed afterwards.
		suppressed []string
	}{
		{"the task's own external ID", func(e *env) string { return e.process(e.github("issues.opened.json")).TaskID },
			func(e *env) store.Delivery { return e.github("issues.deleted.json") }, []string{ghIssueExt}},
		{"an alias after a transfer", (*env).transferred,
			func(e *env) store.Delivery { return e.github("issues.deleted.json") }, []string{ghIssueExt, ghOldIssueExt}},
		{"no task: the delete before its create", func(*env) string { return "" },
			func(e *env) store.Delivery { return e.github("issues.deleted.json") }, []string{ghIssueExt}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
				t.Parallel()
				e := newEnv(t, st, githubConn())
				taskID := tc.setup(e)
				crash := errors.New("stopped after the delete's first write")
				e.app.Failpoint = func(name string) error {
					if name == FailAfterDelete {
						return crash
					}
					return nil
				}
				d := tc.delete(e)
				if _, err := e.processErr(d); !errors.Is(err, crash) {
					t.Fatalf("delete: err = %v, want the failpoint's", err)
				}
				// What the stop left: the suppression and the delete, both.
				for _, ext := range tc.suppressed {
					if !e.suppressed(ext) {
						t.Errorf("after the stop: %s not suppressed", ext)
					}
				}
				if got, want := len(e.tasks()), 0; got != want {
					t.Fatalf("after the stop: tasks = %d, want %d: the suppression was committed without the delete", got, want)
				}

				// The retry (the same delivery) finds it done.
				e.app.Failpoint = nil
				out := e.process(d)
				if got, want := statusOf(out), store.DeliverySuppressed; got != want {
					t.Errorf("retry: status = %v (%s), want %v", got, out.Result, want)
				}
				for _, name := range []string{"issues.opened.json", "issues.edited.json"} {
					if got, want := statusOf(e.process(e.github(name))), store.DeliverySuppressed; got != want {
						t.Errorf("%s after the delete: status = %v, want %v", name, got, want)
					}
				}
				if got, want := len(e.tasks()), 0; got != want {
					t.Errorf("tasks = %d, want %d", got, want)
				}
				if taskID != "" {
					if got, want := e.events(taskID)[store.EventTaskDeleted], 1; got != want {
						t.Errorf("task.deleted events = %d, want %d", got, want)
					}
				}
			})
		})
	}
}

// A delete that cannot delete its task (still being created: a creation
// a crash left to recovery) writes nothing, not even the suppression, and
// is tried again; once the creation is finished the delete goes through.
func TestDeleteThatFailsWritesNoSuppression(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		t.Parallel()
		e := newEnv(t, st, githubConn())
		ctx := context.Background()
		crash := errors.New("crash after Begin")
		e.coord.Failpoint = func(name string) error {
			if name == idempotency.FailAfterBegin {
				return crash
			}
			return nil
		}
		if _, err := e.processErr(e.github("issues.opened.json")); !errors.Is(err, crash) {
			t.Fatalf("create: err = %v, want the failpoint's", err)
		}
		e.coord.Failpoint = nil
		preparing, ok := e.byExternalID(ghIssueExt)
		if !ok || preparing.CreationState == store.CreationComplete {
			t.Fatalf("task of %s: found %v, state %q; want one still being created", ghIssueExt, ok, preparing.CreationState)
		}

		deleted := e.github("issues.deleted.json")
		if _, err := e.processErr(deleted); err == nil {
			t.Fatal("delete of a task still being created: no error, want one (retried)")
		}
		if e.suppressed(ghIssueExt) {
			t.Fatalf("the failed delete left a suppression of %s: its retry would find the entity suppressed and keep the task", ghIssueExt)
		}

		// Recovery finishes the creation once its caller's lease is over;
		// the delete's retry deletes it.
		e.clock.Advance(time.Minute)
		if _, err := e.coord.RecoverTaskCreation(ctx, preparing.CreationOperationID, "test-recoverer"); err != nil {
			t.Fatalf("recover: %v", err)
		}
		out := e.process(deleted)
		if got, want := out.Result, "task deleted; suppression recorded"; got != want {
			t.Errorf("retry: result = %q, want %q", got, want)
		}
		if got, want := len(e.tasks()), 0; got != want {
			t.Errorf("tasks = %d, want %d", got, want)
		}
		if !e.suppressed(ghIssueExt) {
			t.Errorf("%s not suppressed after the delete", ghIssueExt)
		}
	})
}

// TestDeleteFinishesAnEarlierBuildsDelete: a database where an earlier
// build recorded a delete's suppression and then stopped before deleting
// the task (two transactions then) heals on the delete's redelivery or
// replay; other deliveries for the entity stay suppressed.
func TestDeleteFinishesAnEarlierBuildsDelete(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		setup      func(e *env) string
		suppressed []string
	}{
		{"the task's own external ID", func(e *env) string { return e.process(e.github("issues.opened.json")).TaskID }, []string{ghIssueExt}},
		{"an alias after a transfer", (*env).transferred, []string{ghIssueExt, ghOldIssueExt}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
				t.Parallel()
				e := newEnv(t, st, githubConn())
				taskID := tc.setup(e)
				// The earlier build's first transaction, alone.
				if err := tasks.Suppress(context.Background(), st, testWorkspace, taskID, tasks.DeletedAtSource, e.clock.Now(), ghIssueExt); err != nil {
					t.Fatal(err)
				}
				if got, want := statusOf(e.process(e.github("issues.edited.json"))), store.DeliverySuppressed; got != want {
					t.Errorf("an edit: status = %v, want %v", got, want)
				}
				out := e.process(e.github("issues.deleted.json"))
				if got, want := out.Result, "task deleted; suppression recorded"; got != want {
					t.Errorf("redelivered delete: result = %q, want %q", got, want)
				}
				if got, want := out.TaskID, taskID; got != want {
					t.Errorf("redelivered delete: task = %v, want %v", got, want)
				}
				if got, want := len(e.tasks()), 0; got != want {
					t.Fatalf("tasks = %d, want %d", got, want)
				}
				for _, ext := range tc.suppressed {
					if !e.suppressed(ext) {
						t.Errorf("%s not suppressed", ext)
					}
				}
				// Once done, the delete's next redelivery is suppressed.
				if got, want := statusOf(e.process(e.github("issues.deleted.json"))), store.DeliverySuppressed; got != want {
					t.Errorf("delete again: status = %v, want %v", got, want)
				}
			})
		})
	}
}

// TestTransferThenDeleteSuppressesBoth: after a transfer A → B and the
// task's delete (by either issue's delete, or an operator), deliveries for
// A and for B are all suppressed and no task comes back.
func TestTransferThenDeleteSuppressesBoth(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		delete func(e *env, taskID string)
	}{
		{"the new issue deleted", func(e *env, _ string) { e.process(e.github("issues.deleted.json")) }},
		{"the old issue's delete, late", func(e *env, _ string) { e.process(e.github("issues.transferred.json", oldIssueDeleted)) }},
		{"deleted by an operator", func(e *env, taskID string) {
			if _, err := e.svc.Delete(context.Background(), taskID, tasks.DeletedByOperator, nil); err != nil {
				e.t.Fatalf("delete: %v", err)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
				t.Parallel()
				e := newEnv(t, st, githubConn())
				taskID := e.transferred()
				tc.delete(e, taskID)
				if got, want := len(e.tasks()), 0; got != want {
					t.Fatalf("tasks after the delete = %d, want %d", got, want)
				}
				redeliveries := []struct {
					name string
					d    store.Delivery
				}{
					{"A opened", e.github("issues.transferred.json", oldIssueOpened)},
					{"A transferred to B", e.github("issues.transferred.json")},
					{"B opened with the transfer", e.github("issues.opened.with-transfer.json")},
					{"B opened", e.github("issues.opened.json")},
					{"B edited", e.github("issues.edited.json")},
					{"B reopened", e.github("issues.reopened.json")},
				}
				for _, r := range redeliveries {
					out := e.process(r.d)
					if got, want := statusOf(out), store.DeliverySuppressed; got != want {
						t.Errorf("%s: status = %v (%s), want %v", r.name, got, out.Result, want)
					}
				}
				if got, want := len(e.tasks()), 0; got != want {
					t.Errorf("tasks after the redeliveries = %d, want %d", got, want)
				}
				for _, ext := range []string{ghOldIssueExt, ghIssueExt} {
					if !e.suppressed(ext) {
						t.Errorf("%s not suppressed", ext)
					}
				}
			})
		})
	}
}
