package storetest

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/trackergateway/gateway/internal/store"
)

var suppressionTests = []contractTest{
	{name: "suppressions and aliases", fn: testSuppressionsAliases},
	{name: "source entity lookup", fn: testLookupSourceEntity},
}

func testSuppressionsAliases(t *testing.T, s store.Store) {
	ctx := context.Background()
	SeedWorkspace(t, s, "ws")
	must(t, s.UpsertSuppression(ctx, store.Suppression{WorkspaceID: "ws", ExternalID: "x", Reason: "deleted", CreatedAt: epoch}))
	must(t, s.UpsertSuppression(ctx, store.Suppression{WorkspaceID: "ws", ExternalID: "x", Reason: "deleted", CreatedAt: epoch}))
	sup, err := s.GetSuppression(ctx, "ws", "x")
	must(t, err)
	if sup.WorkspaceID != "ws" || sup.ExternalID != "x" || sup.Reason != "deleted" || !sup.CreatedAt.Equal(epoch) {
		t.Errorf("suppression = %+v", sup)
	}
	if _, err := s.GetSuppression(ctx, "ws", "X"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("suppression lookup is not byte-exact: %v", err)
	}
	list, err := s.ListSuppressions(ctx, store.SuppressionPage{Limit: 10})
	must(t, err)
	if len(list) != 1 {
		t.Errorf("suppressions = %+v", list)
	}
	for _, want := range []bool{true, false} {
		ok, err := s.DeleteSuppression(ctx, "ws", "x")
		must(t, err)
		if ok != want {
			t.Errorf("delete suppression reported deleted = %v, want %v", ok, want)
		}
	}
	if _, err := s.GetSuppression(ctx, "ws", "x"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("deleted suppression err = %v, want ErrNotFound", err)
	}
	task := newTask("ws", "old", 1)
	must(t, s.InsertTask(ctx, task))
	must(t, s.InsertAlias(ctx, "ws", "new", task.ID, epoch))
	must(t, s.InsertAlias(ctx, "ws", "new", task.ID, epoch))
	must(t, s.InsertAlias(ctx, "ws", "moved", task.ID, epoch))
	got, err := s.ResolveAlias(ctx, "ws", "new")
	must(t, err)
	if got != task.ID {
		t.Errorf("alias = %s", got)
	}
	aliases, err := s.ListAliases(ctx, task.ID)
	must(t, err)
	if !slices.Equal(aliases, []string{"moved", "new"}) {
		t.Errorf("aliases = %q, want moved, new", aliases)
	}
	must(t, s.DeleteTask(ctx, task.ID))
	if _, err := s.ResolveAlias(ctx, "ws", "new"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("alias survived task delete: %v", err)
	}
	if aliases, err := s.ListAliases(ctx, task.ID); err != nil || len(aliases) != 0 {
		t.Errorf("aliases after task delete = %q, %v; want none", aliases, err)
	}
}

func testLookupSourceEntity(t *testing.T, s store.Store) {
	ctx := context.Background()
	SeedWorkspace(t, s, "ws")
	held := newTask("ws", "ext-held", 1)
	must(t, s.InsertTask(ctx, held))
	must(t, s.InsertAlias(ctx, "ws", "ext-moved", held.ID, epoch))
	must(t, s.UpsertSuppression(ctx, store.Suppression{WorkspaceID: "ws", ExternalID: "ext-deleted", Reason: "deleted_at_source", CreatedAt: epoch}))
	tests := []struct {
		ext                   string
		wantSuppressed        bool
		wantTask, wantAliasTo string
	}{
		{"ext-held", false, held.ID, ""},
		{"ext-moved", false, "", held.ID},
		{"ext-deleted", true, "", ""},
		{"ext-unknown", false, "", ""},
	}
	for _, tc := range tests {
		e, err := s.LookupSourceEntity(ctx, "ws", tc.ext)
		must(t, err)
		gotTask := ""
		if e.Task != nil {
			gotTask = e.Task.ID
		}
		if e.Suppressed != tc.wantSuppressed || gotTask != tc.wantTask || e.AliasTaskID != tc.wantAliasTo {
			t.Errorf("%s: suppressed %v, task %q, alias to %q; want %v, %q, %q", tc.ext,
				e.Suppressed, gotTask, e.AliasTaskID, tc.wantSuppressed, tc.wantTask, tc.wantAliasTo)
		}
	}
	if e, err := s.LookupSourceEntity(ctx, "other", "ext-held"); err != nil || e.Task != nil {
		t.Errorf("another workspace sees %+v (err %v)", e, err)
	}
}
