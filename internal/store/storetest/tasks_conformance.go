package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/trackergateway/gateway/internal/store"
)

var taskTests = []contractTest{
	{name: "task round trip", fn: testTaskRoundTrip},
	{name: "unique violations are attributed by name", fn: testUniqueAttribution},
	{name: "release clears identity", fn: testRelease},
	{name: "list tasks pages and hides preparing", fn: testListTasks},
	{name: "a completed task is found by its source reference", fn: testFindTaskBySourceRef},
	{name: "set task created writes state, revision and time, and settles", fn: testSetTaskCreated},
}

// testSetTaskCreated: the creation's last write changes state, revision
// and time only; with an external id it is also the settlement, whose
// predicate includes external_id and an unsettled identity (a released row,
// whose external_id is NULL, is never stamped), and a row it does not match
// fails the transaction.
func testSetTaskCreated(t *testing.T, s store.Store) {
	ctx := context.Background()
	SeedWorkspace(t, s, "ws")
	at := epoch.Add(time.Hour)
	tests := []struct {
		name        string
		settle      string // external id passed to SetTaskCreated; the row holds "ext"
		settled     bool   // the stored identity is already settled
		released    bool   // the identity was released before
		wantErr     bool
		wantSettled bool
	}{
		{name: "without settlement", wantSettled: false},
		{name: "its own external id settles", settle: "ext", wantSettled: true},
		{name: "another external id fails and changes nothing", settle: "other", wantErr: true},
		{name: "a settled identity fails and is not stamped again", settle: "ext", settled: true, wantErr: true, wantSettled: true},
		{name: "a released identity fails and is not stamped", settle: "ext", released: true, wantErr: true},
	}
	for i, tc := range tests {
		// Each case has its own row: identity "ext/<case>".
		task := newTask("ws", fmt.Sprintf("ext/%d", i), i+1)
		task.CreationState = store.CreationCompleting
		task.Source = &store.Source{Provider: "github", Kind: "issue", Ref: "o/r#1", URL: "https://x"}
		if tc.settled {
			task.ExternalIDSettledAt = &epoch
		}
		settle := tc.settle
		if settle != "" {
			settle = fmt.Sprintf("%s/%d", settle, i)
		}
		must(t, s.InsertTask(ctx, task))
		wantExternalID := task.ExternalID
		if tc.released {
			_, err := s.ReleaseExternalID(ctx, "ws", task.ExternalID)
			must(t, err)
			wantExternalID = ""
		}
		err := s.InTx(ctx, func(tx store.Queries) error {
			if _, err := tx.LockTask(ctx, task.ID); err != nil {
				return err
			}
			if err := tx.SetTaskCreated(ctx, task.ID, 1, at, settle); err != nil {
				return err
			}
			_, err := tx.GetWorkspace(ctx, "ws") // the next statement carries it
			return err
		})
		if (err != nil) != tc.wantErr {
			t.Errorf("%s: err = %v, want error %v", tc.name, err, tc.wantErr)
		}
		if tc.wantErr && !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s: err = %v, want ErrNotFound", tc.name, err)
		}
		got, err := s.GetTask(ctx, task.ID)
		must(t, err)
		wantState, wantRevision, wantUpdated := store.CreationComplete, int64(1), at
		if tc.wantErr {
			wantState, wantRevision, wantUpdated = task.CreationState, task.Revision, task.UpdatedAt
		}
		if got.CreationState != wantState || got.Revision != wantRevision || !got.UpdatedAt.Equal(wantUpdated) {
			t.Errorf("%s: state %s revision %d updated %v, want %s, %d, %v",
				tc.name, got.CreationState, got.Revision, got.UpdatedAt, wantState, wantRevision, wantUpdated)
		}
		if (got.ExternalIDSettledAt != nil) != tc.wantSettled {
			t.Errorf("%s: settled_at = %v, want set %v", tc.name, got.ExternalIDSettledAt, tc.wantSettled)
		}
		if tc.settle != "" && !tc.wantErr && !got.ExternalIDSettledAt.Equal(at) {
			t.Errorf("%s: settled_at = %v, want %v", tc.name, got.ExternalIDSettledAt, at)
		}
		if got.Title != task.Title || got.Source == nil || got.Source.Ref != "o/r#1" || got.ExternalID != wantExternalID ||
			got.WorkflowStepID != task.WorkflowStepID || !got.CreatedAt.Equal(task.CreatedAt) {
			t.Errorf("%s: SetTaskCreated changed other fields: %+v", tc.name, got)
		}
	}
	if err := s.SetTaskCreated(ctx, uuid.NewString(), 1, at, ""); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("SetTaskCreated of a missing task: err = %v, want ErrNotFound", err)
	}
}

func testTaskRoundTrip(t *testing.T, s store.Store) {
	ctx := context.Background()
	SeedWorkspace(t, s, "ws")
	task := newTask("ws", "ext-1", 1)
	task.Source = &store.Source{Provider: "github", Kind: "issue", Ref: "o/r#1", URL: "https://x"}
	task.ArchivedAt = &epoch
	must(t, s.InsertTask(ctx, task))
	got, err := s.GetTask(ctx, task.ID)
	must(t, err)
	if got.ExternalID != "ext-1" || got.Source == nil || got.Source.Ref != "o/r#1" || got.ArchivedAt == nil ||
		!got.ArchivedAt.Equal(epoch) || len(got.Labels) != 1 || got.ExternalIDSettledAt != nil {
		t.Errorf("round trip = %+v", got)
	}
	if _, err := s.LookupTaskByExternalID(ctx, "ws", "EXT-1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("case-insensitive lookup err = %v, want ErrNotFound", err)
	}
	if _, err := s.GetTask(ctx, uuid.NewString()); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("missing task err = %v", err)
	}
}

func testUniqueAttribution(t *testing.T, s store.Store) {
	ctx := context.Background()
	SeedWorkspace(t, s, "ws")
	must(t, s.InsertTask(ctx, newTask("ws", "ext-1", 1)))
	err := s.InsertTask(ctx, newTask("ws", "ext-1", 2))
	if !errors.Is(err, store.ErrExternalIDTaken) {
		t.Errorf("same external id err = %v, want ErrExternalIDTaken", err)
	}
	dupIdentifier := newTask("ws", "ext-2", 1)
	err = s.InsertTask(ctx, dupIdentifier)
	if !errors.Is(err, store.ErrConstraint) || errors.Is(err, store.ErrExternalIDTaken) {
		t.Errorf("same identifier err = %v, want ErrConstraint only", err)
	}
	// Tasks without an external ID never collide.
	must(t, s.InsertTask(ctx, newTask("ws", "", 3)))
	must(t, s.InsertTask(ctx, newTask("ws", "", 4)))
}

func testRelease(t *testing.T, s store.Store) {
	ctx := context.Background()
	SeedWorkspace(t, s, "ws")
	task := newTask("ws", "ext-1", 1)
	task.ExternalIDSettledAt = &epoch
	must(t, s.InsertTask(ctx, task))
	got, err := s.ReleaseExternalID(ctx, "ws", "ext-1")
	must(t, err)
	if got.ExternalID != "" || got.ExternalIDSettledAt != nil {
		t.Errorf("released = %+v", got)
	}
	if _, err := s.ReleaseExternalID(ctx, "ws", "ext-1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("second release err = %v", err)
	}
	must(t, s.InsertTask(ctx, newTask("ws", "ext-1", 2)))
}

func testListTasks(t *testing.T, s store.Store) {
	ctx := context.Background()
	SeedWorkspace(t, s, "ws")
	for i := 1; i <= 5; i++ {
		task := newTask("ws", "", i)
		if i == 3 {
			task.CreationState = store.CreationPreparing
		}
		if i == 4 {
			task.ArchivedAt = &epoch
		}
		must(t, s.InsertTask(ctx, task))
	}
	page, err := s.ListTasks(ctx, store.TaskPage{WorkspaceID: "ws", Limit: 2})
	must(t, err)
	if len(page) != 2 || page[0].Identifier != "WS-1" || page[1].Identifier != "WS-2" {
		t.Fatalf("page 1 = %v", identifiers(page))
	}
	page, err = s.ListTasks(ctx, store.TaskPage{WorkspaceID: "ws", Limit: 2, AfterCreatedAt: page[1].CreatedAt, AfterID: page[1].ID})
	must(t, err)
	if len(page) != 1 || page[0].Identifier != "WS-5" {
		t.Fatalf("page 2 = %v", identifiers(page))
	}
	all, err := s.ListTasks(ctx, store.TaskPage{WorkspaceID: "ws", Limit: 10, IncludeArchived: true})
	must(t, err)
	if len(all) != 4 {
		t.Errorf("with archived = %v", identifiers(all))
	}
	n, err := s.CountActiveTasksInStep(ctx, "ws", "backlog")
	must(t, err)
	if n != 4 {
		t.Errorf("active in step = %d, want 4", n)
	}
}

func identifiers(ts []store.Task) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Identifier)
	}
	return out
}

func testFindTaskBySourceRef(t *testing.T, s store.Store) {
	ctx := context.Background()
	SeedWorkspace(t, s, "ws")
	SeedWorkspace(t, s, "other")
	src := func(task store.Task) store.Task {
		task.Source = &store.Source{Provider: "github", Kind: "issue", Ref: "o/r#1", URL: "https://x"}
		return task
	}
	preparing := src(newTask("ws", "ext-0", 1))
	preparing.CreationState = store.CreationPreparing
	first, second := src(newTask("ws", "ext-1", 2)), src(newTask("ws", "ext-2", 3))
	for _, task := range []store.Task{preparing, second, first, src(newTask("other", "ext-3", 1))} {
		must(t, s.InsertTask(ctx, task))
	}
	tests := []struct {
		name, ws, provider, ref string
		want                    string // task ID, "" for ErrNotFound
	}{
		{"the oldest completed task", "ws", "github", "o/r#1", first.ID},
		{"another provider", "ws", "gitlab", "o/r#1", ""},
		{"another reference", "ws", "github", "o/r#2", ""},
		{"another workspace", "nope", "github", "o/r#1", ""},
	}
	for _, tc := range tests {
		got, err := s.FindTaskBySourceRef(ctx, tc.ws, tc.provider, tc.ref)
		switch {
		case tc.want == "" && !errors.Is(err, store.ErrNotFound):
			t.Errorf("%s: task %s, err %v; want ErrNotFound", tc.name, got.ID, err)
		case tc.want != "" && (err != nil || got.ID != tc.want || got.Source == nil || got.Source.Ref != tc.ref):
			t.Errorf("%s: task %s (source %+v), err %v; want %s", tc.name, got.ID, got.Source, err, tc.want)
		}
	}
	// A task still being created is never found.
	must(t, s.DeleteTask(ctx, first.ID))
	must(t, s.DeleteTask(ctx, second.ID))
	if got, err := s.FindTaskBySourceRef(ctx, "ws", "github", "o/r#1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("with only a preparing task: task %s, err %v; want ErrNotFound", got.ID, err)
	}
}
