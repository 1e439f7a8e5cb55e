package tasks_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	evs "github.com/trackergateway/gateway/internal/events"
	"github.com/trackergateway/gateway/internal/idempotency"
	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/store/sqlstore"
)

// TestContributionEvents: a PR/MR appearing on a task, changing its title,
// state or draft flag, and leaving it are one event each, at a revision of
// the task's own, with the PR/MR as the task now shows it and the cause;
// a row written again unchanged, a newer head commit, an older payload or
// a removal of what the task does not show append none.
func TestContributionEvents(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		e := newEnv(t, st)
		ctx := evs.WithCause(context.Background(), evs.Cause{Connection: "gh", DeliveryID: "d1", ProviderEvent: "pull_request.opened"})
		res, err := e.coord.Create(context.Background(), idempotency.CreateRequest{WorkspaceID: "ws", Title: "Issue",
			WorkflowStepID: "backlog", Actor: idempotency.Actor{Kind: "api_token", ID: "t", AuthMode: "bearer"}})
		if err != nil {
			t.Fatal(err)
		}
		task := res.Task
		at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		pr := store.Projection{Provider: "github", TaskID: task.ID, ConnectionID: "gh", ProviderID: 9, Repository: "o/r",
			Number: 2, URL: "https://github.com/o/r/pull/2", Title: "Fix", State: "open", HeadSHA: "a", ProviderUpdatedAt: &at}
		later := func(p store.Projection, d time.Duration, f func(*store.Projection)) store.Projection {
			u := at.Add(d)
			p.ProviderUpdatedAt = &u
			f(&p)
			return p
		}
		steps := []struct {
			name    string
			do      func() error
			typ     string // "" when no event is appended
			changes []string
		}{
			{"shown", func() error { return e.svc.ShowContribution(ctx, pr) }, evs.TypeContributionLinked, nil},
			{"shown again", func() error { return e.svc.ShowContribution(ctx, pr) }, "", nil},
			{"a new head commit", func() error {
				return e.svc.ShowContribution(ctx, later(pr, time.Minute, func(p *store.Projection) { p.HeadSHA = "b" }))
			}, "", nil},
			{"ready and renamed", func() error {
				return e.svc.ShowContribution(ctx, later(pr, 2*time.Minute, func(p *store.Projection) { p.Title, p.Draft = "Fix it", true }))
			}, evs.TypeContributionUpdated, []string{"title", "draft"}},
			{"an older payload", func() error {
				return e.svc.ShowContribution(ctx, later(pr, -time.Hour, func(p *store.Projection) { p.State = "closed" }))
			}, "", nil},
			{"merged", func() error {
				return e.svc.ShowContribution(ctx, later(pr, 3*time.Minute, func(p *store.Projection) {
					p.Title, p.Draft, p.State, p.Merged, p.MergedAt = "Fix it", true, "closed", true, p.ProviderUpdatedAt
				}))
			}, evs.TypeContributionUpdated, []string{"state", "merged_at"}},
			{"hidden", func() error { _, err := e.svc.HideContribution(ctx, pr); return err }, evs.TypeContributionUnlinked, nil},
			{"hidden again", func() error { _, err := e.svc.HideContribution(ctx, pr); return err }, "", nil},
		}
		revision := task.Revision
		seen := len(events(t, st, task.ID, ""))
		for _, s := range steps {
			if err := s.do(); err != nil {
				t.Fatalf("%s: %v", s.name, err)
			}
			all := events(t, st, task.ID, "")
			if s.typ == "" {
				if len(all) != seen {
					t.Errorf("%s: appended %s, want no event", s.name, all[len(all)-1].Type)
				}
				continue
			}
			if len(all) != seen+1 {
				t.Fatalf("%s: %d events appended, want 1", s.name, len(all)-seen)
			}
			seen++
			revision++
			ev := all[len(all)-1]
			var data struct {
				Task         evs.Task                   `json:"task"`
				Revision     int64                      `json:"revision"`
				Changes      map[string]json.RawMessage `json:"changes"`
				Contribution evs.Contribution           `json:"contribution"`
				Cause        evs.Cause                  `json:"cause"`
			}
			if err := json.Unmarshal([]byte(ev.Payload), &data); err != nil {
				t.Fatal(err)
			}
			var changes []string
			for f := range data.Changes {
				changes = append(changes, f)
			}
			slices.Sort(changes)
			wantChanges := slices.Sorted(slices.Values(s.changes))
			if ev.Type != s.typ || ev.Revision != revision || data.Revision != revision || !slices.Equal(changes, wantChanges) ||
				data.Task.ID != task.ID || data.Task.Title != "Issue" || data.Contribution.Number != 2 ||
				data.Cause != evs.CauseFrom(ctx) {
				t.Errorf("%s: event %s revision %d/%d changes %v task %+v contribution %+v cause %+v; want %s revision %d changes %v",
					s.name, ev.Type, ev.Revision, data.Revision, changes, data.Task, data.Contribution, data.Cause, s.typ, revision, wantChanges)
			}
			stored, err := st.GetTask(context.Background(), task.ID)
			if err != nil {
				t.Fatal(err)
			}
			if stored.Revision != revision || !stored.UpdatedAt.Equal(task.UpdatedAt) || stored.Title != task.Title {
				t.Errorf("%s: task revision %d, updated %v, title %q; want revision %d, the rest unchanged", s.name,
					stored.Revision, stored.UpdatedAt, stored.Title, revision)
			}
		}
	})
}
