package ingest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/trackergateway/gateway/connectors"
	"github.com/trackergateway/gateway/internal/config"
	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/store/sqlstore"
	"github.com/trackergateway/gateway/internal/store/storetest"
	"github.com/trackergateway/gateway/internal/tasks"
)

// farFuture is a provider timestamp no real update reaches.
var farFuture = time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)

// futureNote is what an outcome says of farFuture.
const futureNote = "provider timestamp 9999-12-31T00:00:00Z is more than a day ahead of the gateway's clock; applied at the receipt time "

// A delivery dated far ahead of the clock is applied at its receipt time,
// and says so: the next real update applies, where the provider's date
// would have made it stale for good. Per provider timestamp: GitHub's
// updated_at, Jira's webhook timestamp.
func TestFutureProviderTimestampIsAppliedAtReceipt(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		conn   config.Connection
		future func(e *env) store.Delivery
		next   func(e *env, at time.Time) store.Delivery
		title  string
	}{
		{"github updated_at", githubConn(),
			func(e *env) store.Delivery {
				return e.github("issues.opened.json", set(farFuture.Format(time.RFC3339), "issue", "updated_at"))
			},
			func(e *env, at time.Time) store.Delivery {
				return e.github("issues.edited.json", set("Real edit", "issue", "title"), set(at.Format(time.RFC3339), "issue", "updated_at"))
			}, "Real edit"},
		{"jira timestamp", jiraConn(),
			func(e *env) store.Delivery {
				return e.fromFixture("jira-main", connectors.ProviderJira, "webhook-issue-created.json",
					[]func(map[string]any){set(float64(farFuture.UnixMilli()), "timestamp")})
			},
			func(e *env, at time.Time) store.Delivery {
				return e.fromFixture("jira-main", connectors.ProviderJira, "webhook-issue-updated-renamed.json",
					[]func(map[string]any){set(float64(at.UnixMilli()), "timestamp")})
			}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
				t.Parallel()
				e := newEnv(t, st, tc.conn)
				future := tc.future(e)
				out := e.process(future)
				if out.Action != "create" || !strings.Contains(out.Result, futureNote+future.ReceivedAt.UTC().Format(time.RFC3339)) {
					t.Fatalf("future-dated create: action %q result %q, want a create that says it applied at the receipt time", out.Action, out.Result)
				}
				task := e.task(out.TaskID)
				if task.SourceUpdatedAt == nil || !task.SourceUpdatedAt.Equal(future.ReceivedAt) {
					t.Errorf("source_updated_at = %v, want the receipt time %v", task.SourceUpdatedAt, future.ReceivedAt)
				}
				// The next real update, a minute later, applies.
				e.clock.Advance(time.Minute)
				next := e.process(tc.next(e, e.clock.Now()))
				if next.Action != "update" || strings.Contains(next.Result, "stale") {
					t.Fatalf("next real update: action %q result %q, want applied", next.Action, next.Result)
				}
				after := e.task(out.TaskID)
				if after.Revision <= task.Revision || (tc.title != "" && after.Title != tc.title) {
					t.Errorf("after the next update: revision %d (was %d), title %q; want a new revision titled %q",
						after.Revision, task.Revision, after.Title, tc.title)
				}
			})
		})
	}
}

// A task pinned by a far-future time stored before such times were
// refused takes the next real update too.
func TestTaskPinnedInTheFutureTakesTheNextUpdate(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		t.Parallel()
		e := newEnv(t, st, githubConn())
		taskID := e.process(e.github("issues.opened.json")).TaskID
		pinned := farFuture
		if _, err := e.svc.Update(context.Background(), taskID, tasks.Patch{SourceUpdatedAt: &pinned}, nil); err != nil {
			t.Fatalf("pin the task: %v", err)
		}
		out := e.process(e.github("issues.edited.json", set("Real edit", "issue", "title"),
			set(e.clock.Now().Format(time.RFC3339), "issue", "updated_at")))
		if out.Action != "update" || strings.Contains(out.Result, "stale") {
			t.Fatalf("update of a pinned task: action %q result %q, want applied", out.Action, out.Result)
		}
		if got := e.task(taskID).Title; got != "Real edit" {
			t.Errorf("title = %q, want Real edit", got)
		}
	})
}

// A pull request dated far ahead writes its projection at the receipt
// time; its next real update replaces it.
func TestFuturePullRequestTimestampIsAppliedAtReceipt(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		t.Parallel()
		e := newEnv(t, st, githubConn())
		future := e.github("pull_request.opened.json", set(farFuture.Format(time.RFC3339), "pull_request", "updated_at"))
		out := e.process(future)
		if !strings.Contains(out.Result, futureNote) {
			t.Fatalf("future-dated pull request: result %q, want it to say it applied at the receipt time", out.Result)
		}
		ps := e.projections(out.TaskID)
		if len(ps) != 1 || ps[0].ProviderUpdatedAt == nil || !ps[0].ProviderUpdatedAt.Equal(future.ReceivedAt) {
			t.Fatalf("projections = %+v, want one at the receipt time %v", ps, future.ReceivedAt)
		}
		e.clock.Advance(time.Minute)
		e.process(e.github("pull_request.opened.json", set("Real title", "pull_request", "title"),
			set(e.clock.Now().Format(time.RFC3339), "pull_request", "updated_at")))
		if ps := e.projections(out.TaskID); len(ps) != 1 || ps[0].Title != "Real title" {
			t.Errorf("projections after the next update = %+v, want the real title", ps)
		}
	})
}

// boundTimestamps replaces exactly the times more than a day ahead, in
// every place that orders changes, and leaves the parsed event as it was.
func TestBoundTimestamps(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 4, 12, 0, 0, 0, time.UTC)
	received := now.Add(-time.Minute)
	a := &Applier{now: func() time.Time { return now }}
	near := now.Add(23 * time.Hour) // within a day: kept
	ev := connectors.Event{UpdatedAt: near,
		Contribution: &connectors.Contribution{UpdatedAt: farFuture},
		Installation: &connectors.InstallationChange{At: now.Add(25 * time.Hour)},
		Links:        []connectors.ContributionLink{{ID: "a", UpdatedAt: farFuture}, {ID: "b", UpdatedAt: now}}}
	got, note := a.boundTimestamps(ev, received)
	checks := []struct {
		name      string
		got, want time.Time
	}{
		{"entity within a day", got.UpdatedAt, near},
		{"contribution", got.Contribution.UpdatedAt, received},
		{"installation", got.Installation.At, received},
		{"future link", got.Links[0].UpdatedAt, received},
		{"current link", got.Links[1].UpdatedAt, now},
		{"the parsed contribution", ev.Contribution.UpdatedAt, farFuture},
		{"the parsed link", ev.Links[0].UpdatedAt, farFuture},
	}
	for _, c := range checks {
		if !c.got.Equal(c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if want := futureNote + received.Format(time.RFC3339); note != want {
		t.Errorf("note = %q, want %q", note, want)
	}
	if _, note := a.boundTimestamps(connectors.Event{UpdatedAt: near}, received); note != "" {
		t.Errorf("note for a time within a day = %q, want none", note)
	}
}
