package storetest

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/google/uuid"

	"github.com/trackergateway/gateway/internal/store"
)

var workspaceTests = []contractTest{
	{name: "workspace upsert is idempotent", fn: testWorkspaceUpsert},
	{name: "workspaces are listed and locked with their steps", fn: testListAndLockWorkspaces},
	{name: "tokens are found by hash and by name", fn: testTokens},
	{name: "a generated secret is stored once", fn: testGeneratedSecrets},
}

func testWorkspaceUpsert(t *testing.T, s store.Store) {
	ctx := context.Background()
	SeedWorkspace(t, s, "ws")
	SeedWorkspace(t, s, "ws")
	ws, err := s.GetWorkspace(ctx, "ws")
	must(t, err)
	if len(ws.Steps) != 2 || ws.Steps[1].WIPLimit == nil || *ws.Steps[1].WIPLimit != 1 {
		t.Fatalf("steps = %+v", ws.Steps)
	}
	if !ws.CreatedAt.Equal(epoch) {
		t.Errorf("created_at = %v, want %v", ws.CreatedAt, epoch)
	}
	var identifiers []string
	must(t, s.InsertNumberedTasks(ctx, []store.Task{newTask("ws", "numbered", 1)}, func(ids []string) { identifiers = ids }))
	if len(identifiers) != 1 || identifiers[0] != "WS-1" {
		t.Errorf("first numbered task = %q, want WS-1", identifiers)
	}
	// Config applied again renames, but never changes prefix or sequence.
	renamed := ws
	renamed.Name, renamed.TaskPrefix = "Renamed", "ZZ"
	must(t, s.UpsertWorkspace(ctx, renamed))
	ws, err = s.GetWorkspace(ctx, "ws")
	must(t, err)
	if ws.Name != "Renamed" || ws.TaskPrefix != "WS" || ws.TaskSequence != 1 {
		t.Errorf("after a second upsert: name %q prefix %q sequence %d, want Renamed, WS, 1", ws.Name, ws.TaskPrefix, ws.TaskSequence)
	}
	if err := s.CreateWorkspace(ctx, store.Workspace{ID: "ws", Name: "x", TaskPrefix: "X", CreatedAt: epoch}); !errors.Is(err, store.ErrConstraint) {
		t.Errorf("duplicate workspace err = %v, want ErrConstraint", err)
	}
	if _, err := s.GetWorkspace(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("missing workspace err = %v, want ErrNotFound", err)
	}
}

func testListAndLockWorkspaces(t *testing.T, s store.Store) {
	ctx := context.Background()
	SeedWorkspace(t, s, "b")
	must(t, s.CreateWorkspace(ctx, store.Workspace{ID: "a", Name: "A", TaskPrefix: "A", CreatedAt: epoch,
		Steps: []store.Step{{ID: "todo", Name: "To do"}}}))
	list, err := s.ListWorkspaces(ctx)
	must(t, err)
	steps := map[string][]string{}
	for _, ws := range list {
		for _, st := range ws.Steps {
			steps[ws.ID] = append(steps[ws.ID], st.ID)
		}
	}
	if len(list) != 2 || !slices.Equal(steps["a"], []string{"todo"}) || !slices.Equal(steps["b"], []string{"backlog", "doing"}) {
		t.Errorf("workspaces = %+v, want a (todo) and b (backlog, doing)", list)
	}

	must(t, s.InTx(ctx, func(tx store.Queries) error {
		ws, err := tx.LockWorkspace(ctx, "b")
		if err != nil {
			return err
		}
		if ws.ID != "b" || ws.TaskPrefix != "WS" || len(ws.Steps) != 2 {
			t.Errorf("locked workspace = %+v, want b with its two steps", ws)
		}
		return nil
	}))
	err = s.InTx(ctx, func(tx store.Queries) error {
		_, err := tx.LockWorkspace(ctx, "nope")
		return err
	})
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("lock of a missing workspace err = %v, want ErrNotFound", err)
	}
}

func testTokens(t *testing.T, s store.Store) {
	ctx := context.Background()
	SeedWorkspace(t, s, "ws1")
	SeedWorkspace(t, s, "ws2")
	tok := store.Token{ID: uuid.NewString(), Name: "ci", TokenSHA256: "sha-1", Workspaces: []string{"ws2", "ws1"}, CreatedAt: epoch}
	must(t, s.UpsertToken(ctx, tok))
	byName, err := s.GetTokenByName(ctx, "ci")
	must(t, err)
	if byName.ID != tok.ID || byName.TokenSHA256 != "sha-1" || byName.Admin ||
		!slices.Equal(byName.Workspaces, []string{"ws1", "ws2"}) || !byName.CreatedAt.Equal(epoch) {
		t.Errorf("by name = %+v, want %+v with workspaces ws1, ws2", byName, tok)
	}
	byHash, err := s.GetTokenBySHA256(ctx, "sha-1")
	must(t, err)
	if byHash.ID != tok.ID || byHash.Name != "ci" {
		t.Errorf("by hash = %+v, want token %s", byHash, tok.ID)
	}

	// Upserting the name again rotates the secret and replaces the grants;
	// the token keeps its ID.
	rotated := store.Token{ID: uuid.NewString(), Name: "ci", TokenSHA256: "sha-2", Admin: true, Workspaces: []string{"ws1"}, CreatedAt: epoch}
	must(t, s.UpsertToken(ctx, rotated))
	if _, err := s.GetTokenBySHA256(ctx, "sha-1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the rotated secret still finds a token: err = %v", err)
	}
	byHash, err = s.GetTokenBySHA256(ctx, "sha-2")
	must(t, err)
	if byHash.ID != tok.ID || !byHash.Admin || !slices.Equal(byHash.Workspaces, []string{"ws1"}) {
		t.Errorf("after rotation = %+v, want token %s, admin, workspaces ws1", byHash, tok.ID)
	}
	if _, err := s.GetTokenByName(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("missing token err = %v, want ErrNotFound", err)
	}
}

func testGeneratedSecrets(t *testing.T, s store.Store) {
	ctx := context.Background()
	tests := []struct {
		value       string
		wantStored  string
		wantCreated bool
	}{
		{"first", "first", true},
		{"second", "first", false}, // another replica's value loses
	}
	for _, tc := range tests {
		stored, created, err := s.EnsureGeneratedSecret(ctx, "webhook", tc.value, epoch)
		must(t, err)
		if stored != tc.wantStored || created != tc.wantCreated {
			t.Errorf("ensure %q = %q, created %v; want %q, %v", tc.value, stored, created, tc.wantStored, tc.wantCreated)
		}
	}
	got, err := s.GetGeneratedSecret(ctx, "webhook")
	must(t, err)
	if got != "first" {
		t.Errorf("stored secret = %q, want %q", got, "first")
	}
	if _, err := s.GetGeneratedSecret(ctx, "other"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("missing secret err = %v, want ErrNotFound", err)
	}
}
