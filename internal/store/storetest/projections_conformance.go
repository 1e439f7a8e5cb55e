package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/trackergateway/gateway/internal/store"
)

var projectionTests = []contractTest{
	{name: "projection ignores stale payloads", fn: testProjectionStale},
	{name: "refresh bookkeeping is recorded and read back", fn: testProjectionSync},
	{name: "the projections of several tasks are read at once", fn: testProjectionsForTasks},
	{name: "a projection row is read by its key", fn: testGetProjection},
}

// testGetProjection: GetProjection reads the one row of a provider, task,
// connection and PR/MR id, inside a transaction too; any other key is
// ErrNotFound.
func testGetProjection(t *testing.T, s store.Store) {
	ctx := context.Background()
	SeedWorkspace(t, s, "ws")
	task := newTask("ws", "", 1)
	must(t, s.InsertTask(ctx, task))
	merged := epoch.Add(time.Hour)
	p := store.Projection{Provider: "gitlab", TaskID: task.ID, ConnectionID: "gl", ProviderID: 7, Repository: "g/p", Number: 2,
		URL: "https://gitlab.example/g/p/-/merge_requests/2", Title: "Fix", State: "merged", Merged: true, MergedAt: &merged,
		Draft: true, HeadBranch: "fix", BaseBranch: "main", HeadSHA: "abc", Author: "ann", ProviderUpdatedAt: &merged}
	must(t, s.UpsertProjection(ctx, p))
	must(t, s.InTx(ctx, func(tx store.Queries) error {
		got, err := tx.GetProjection(ctx, store.Projection{Provider: "gitlab", TaskID: task.ID, ConnectionID: "gl", ProviderID: 7})
		if err != nil {
			return err
		}
		if got.Title != p.Title || got.State != p.State || !got.Merged || !got.Draft || got.MergedAt == nil ||
			!got.MergedAt.Equal(merged) || got.HeadSHA != "abc" || got.Author != "ann" || got.Provider != "gitlab" {
			t.Errorf("projection = %+v, want %+v", got, p)
		}
		return nil
	}))
	for _, key := range []store.Projection{
		{Provider: "github", TaskID: task.ID, ConnectionID: "gl", ProviderID: 7},
		{Provider: "gitlab", TaskID: task.ID, ConnectionID: "gh", ProviderID: 7},
		{Provider: "gitlab", TaskID: task.ID, ConnectionID: "gl", ProviderID: 8},
		{Provider: "gitlab", TaskID: "not-a-uuid", ConnectionID: "gl", ProviderID: 7},
	} {
		if _, err := s.GetProjection(ctx, key); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("GetProjection(%+v) = %v, want ErrNotFound", key, err)
		}
	}
}

// testProjectionsForTasks: one read returns the rows of exactly the tasks
// named, from every provider's table; naming none reads nothing.
func testProjectionsForTasks(t *testing.T, s store.Store) {
	ctx := context.Background()
	SeedWorkspace(t, s, "ws")
	var ids []string
	for i := range 3 {
		task := newTask("ws", "", i+1)
		must(t, s.InsertTask(ctx, task))
		ids = append(ids, task.ID)
	}
	for i, p := range []store.Projection{
		{Provider: "github", TaskID: ids[0], ConnectionID: "gh", Repository: "o/r", Number: 1},
		{Provider: "gitlab", TaskID: ids[0], ConnectionID: "gl", Repository: "g/p", Number: 2},
		{Provider: "github", TaskID: ids[1], ConnectionID: "gh", Repository: "o/r", Number: 3},
		{Provider: "github", TaskID: ids[2], ConnectionID: "gh", Repository: "o/r", Number: 4},
	} {
		p.ProviderID, p.Title, p.State = int64(i+1), "t", "open"
		must(t, s.UpsertProjection(ctx, p))
	}
	got, err := s.ListProjectionsForTasks(ctx, ids[0], ids[1])
	must(t, err)
	var names []string
	for _, p := range got {
		names = append(names, fmt.Sprintf("%s/%d", p.Provider, p.Number))
	}
	slices.Sort(names)
	if want := []string{"github/1", "github/3", "gitlab/2"}; !slices.Equal(names, want) {
		t.Errorf("projections of two tasks = %v, want %v", names, want)
	}
	none, err := s.ListProjectionsForTasks(ctx)
	must(t, err)
	if len(none) != 0 {
		t.Errorf("projections of no task = %+v, want none", none)
	}
}

func testProjectionStale(t *testing.T, s store.Store) {
	ctx := context.Background()
	SeedWorkspace(t, s, "ws")
	task := newTask("ws", "", 1)
	must(t, s.InsertTask(ctx, task))
	newer, older := epoch.Add(time.Hour), epoch
	p := store.Projection{Provider: "github", TaskID: task.ID, ConnectionID: "gh", ProviderID: 9, Repository: "o/r",
		Number: 1, Title: "new", State: "open", ProviderUpdatedAt: &newer}
	must(t, s.UpsertProjection(ctx, p))
	p.Title, p.ProviderUpdatedAt = "old", &older
	must(t, s.UpsertProjection(ctx, p))
	got, err := s.ListProjectionsForTasks(ctx, task.ID)
	must(t, err)
	if len(got) != 1 || got[0].Title != "new" {
		t.Errorf("projection = %+v", got)
	}
}

// testProjectionSync: the rows due for a refresh are those whose next sync
// has come, and a refresh attempt's bookkeeping reads back.
func testProjectionSync(t *testing.T, s store.Store) {
	ctx := context.Background()
	SeedWorkspace(t, s, "ws")
	task := newTask("ws", "", 1)
	must(t, s.InsertTask(ctx, task))
	soon, later := epoch.Add(time.Minute), epoch.Add(2*time.Minute)
	pr := store.Projection{Provider: "github", TaskID: task.ID, ConnectionID: "gh", ProviderID: 1, Repository: "o/r",
		Number: 1, Title: "pr", State: "open", NextSyncAt: &soon}
	mr := store.Projection{Provider: "gitlab", TaskID: task.ID, ConnectionID: "gl", ProviderID: 2, Repository: "g/p",
		Number: 2, Title: "mr", State: "open", NextSyncAt: &later}
	never := store.Projection{Provider: "github", TaskID: task.ID, ConnectionID: "gh", ProviderID: 3, Repository: "o/r",
		Number: 3, Title: "synced", State: "merged", Merged: true}
	for _, p := range []store.Projection{pr, mr, never} {
		must(t, s.UpsertProjection(ctx, p))
	}
	due := func(now time.Time) []string {
		t.Helper()
		ps, err := s.ListProjectionsDue(ctx, now, 10)
		must(t, err)
		var out []string
		for _, p := range ps {
			out = append(out, p.Provider+"/"+p.Repository)
		}
		slices.Sort(out)
		return out
	}
	tests := []struct {
		now  time.Time
		want []string
	}{
		{epoch, nil},
		{soon, []string{"github/o/r"}},
		{later, []string{"github/o/r", "gitlab/g/p"}},
	}
	for _, tc := range tests {
		if got := due(tc.now); !slices.Equal(got, tc.want) {
			t.Errorf("due at %v = %q, want %q", tc.now, got, tc.want)
		}
	}

	next, synced := epoch.Add(time.Hour), epoch.Add(90*time.Second)
	pr.SyncAttempts, pr.NextSyncAt, pr.SyncError, pr.LastSyncedAt = 2, &next, "rate limited", &synced
	must(t, s.UpdateProjectionSync(ctx, pr))
	if got := due(later); !slices.Equal(got, []string{"gitlab/g/p"}) {
		t.Errorf("due after the refresh was rescheduled = %q, want only the merge request", got)
	}
	ps, err := s.ListProjectionsForTasks(ctx, task.ID)
	must(t, err)
	var got *store.Projection
	for i := range ps {
		if ps[i].Provider == "github" && ps[i].ProviderID == 1 {
			got = &ps[i]
		}
	}
	if len(ps) != 3 || got == nil || got.SyncAttempts != 2 || got.NextSyncAt == nil || !got.NextSyncAt.Equal(next) ||
		got.SyncError != "rate limited" || got.LastSyncedAt == nil || !got.LastSyncedAt.Equal(synced) || got.Title != "pr" {
		t.Errorf("projections after the refresh = %+v, want the pull request's bookkeeping updated", ps)
	}
}
