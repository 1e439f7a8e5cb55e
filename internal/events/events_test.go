package events

import (
	"errors"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/trackergateway/gateway/internal/store"
)

func TestIDRoundTripAndOrder(t *testing.T) {
	t.Parallel()
	ids := []int64{1, 9, 10, 15, 16, 255, 256, 1 << 32, math.MaxInt64}
	for i, id := range ids {
		s := FormatID(id)
		got, err := ParseID(s)
		if err != nil || got != id {
			t.Fatalf("ParseID(FormatID(%d)) = %d, %v", id, got, err)
		}
		if i > 0 && FormatID(ids[i-1]) >= s {
			t.Fatalf("FormatID(%d) = %q does not sort after FormatID(%d) = %q", id, s, ids[i-1], FormatID(ids[i-1]))
		}
	}
}

func TestParseIDRefusesForeignIDs(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "evt_", "42", "evt_42", "evt_000000000000002A", "msg_000000000000002a",
		"evt_8000000000000000", "evt_-00000000000001", "evt_00000000000000zz"} {
		if _, err := ParseID(s); !errors.Is(err, ErrInvalidID) {
			t.Errorf("ParseID(%q) = %v, want ErrInvalidID", s, err)
		}
	}
}

// TestCreatedPayloadAroundTheIdentifier: the payload of task.created built
// around the identifier, with any identifier put between, is the payload of
// the task holding it, however its other fields read (an external ID or
// title that spells the identifier's key among them).
func TestCreatedPayloadAroundTheIdentifier(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC)
	base := store.Task{ID: "0190c7a2-0000-7000-8000-000000000001", WorkspaceID: "w", Title: "Fix it", WorkflowStepID: "backlog",
		CreatedAt: at, UpdatedAt: at}
	with := func(f func(*store.Task)) store.Task {
		task := base
		f(&task)
		return task
	}
	tests := []struct {
		name  string
		task  store.Task
		cause Cause
	}{
		{"bare", base, Cause{Actor: ActorAPI}},
		{"every field", with(func(t *store.Task) {
			t.Title, t.Description, t.Labels = `a <b> & "c"`, "line\nline", []string{"bug", "ui"}
			t.ExternalID, t.OwnerConnection = "github:github.com:issue:1", "gh"
			t.Source = &store.Source{Provider: "github", Kind: "issue", Ref: "o/r#1", URL: "https://github.com/o/r/issues/1"}
		}), Cause{Connection: "gh", DeliveryID: "0190c7a2-0000-7000-8000-0000000000ff", ProviderEvent: "issues.opened"}},
		{"the key in an external ID", with(func(t *store.Task) { t.ExternalID = `x"identifier":"y` }), Cause{}},
		{"the key with an empty value in a title", with(func(t *store.Task) {
			t.ExternalID, t.Title = `"identifier":""`, `"identifier":""`
		}), Cause{Actor: ActorMCP}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			before, after, err := CreatedPayload(tt.task, tt.cause)
			if err != nil {
				t.Fatal(err)
			}
			for _, identifier := range []string{"TASK-1", "W-12345", "A1B2-9"} {
				task := tt.task
				task.Identifier, task.Revision = identifier, 1
				want, err := Data{Task: TaskOf(task), Revision: 1, Cause: tt.cause}.Payload()
				if err != nil {
					t.Fatal(err)
				}
				if got := before + identifier + after; got != want {
					t.Errorf("around %s =\n%s\nwant\n%s", identifier, got, want)
				}
			}
		})
	}
}

// TestDataJSON pins the data object consumers read: the task JSON, the
// revision, changes in the order of the task's fields, the contribution
// and the cause, each left out when it has nothing to say but the task,
// the revision and the cause.
func TestDataJSON(t *testing.T) {
	t.Parallel()
	created := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	archived := created.Add(time.Hour)
	task := store.Task{ID: "0190c7a2-0000-7000-8000-000000000001", WorkspaceID: "w", Identifier: "W-1", Title: "New",
		WorkflowStepID: "doing", Labels: []string{"bug"}, ArchivedAt: &archived, CreatedAt: created, UpdatedAt: archived}
	before := task
	before.Title, before.WorkflowStepID, before.ArchivedAt, before.Labels = "Old", "backlog", nil, nil
	taskJSON := `{"id":"0190c7a2-0000-7000-8000-000000000001","workspace_id":"w","identifier":"W-1","title":"New",` +
		`"description":"","workflow_step_id":"doing","labels":["bug"],"archived_at":"2026-03-01T13:00:00Z",` +
		`"created_at":"2026-03-01T12:00:00Z","updated_at":"2026-03-01T13:00:00Z"}`
	merged := archived
	pr := store.Projection{Provider: "github", TaskID: task.ID, ConnectionID: "gh", ProviderID: 9, Repository: "o/r", Number: 2,
		URL: "https://github.com/o/r/pull/2", Title: "Fix", State: "closed", Merged: true, MergedAt: &merged}
	tests := []struct {
		name string
		data Data
		want string
	}{
		{"an update", Data{Task: TaskOf(task), Revision: 4, Changes: TaskChanges(TaskOf(before), TaskOf(task)),
			Cause: Cause{Actor: ActorAPI}},
			`{"task":` + taskJSON + `,"revision":4,"changes":{"title":{"from":"Old","to":"New"},` +
				`"workflow_step_id":{"from":"backlog","to":"doing"},"labels":{"from":[],"to":["bug"]},` +
				`"archived_at":{"from":null,"to":"2026-03-01T13:00:00Z"}},"cause":{"actor":"api"}}`},
		{"no change", Data{Task: TaskOf(task), Revision: 5, Changes: TaskChanges(TaskOf(task), TaskOf(task)),
			Cause: Cause{Connection: "gh", DeliveryID: "d", ProviderEvent: "issues.edited"}},
			`{"task":` + taskJSON + `,"revision":5,"cause":{"connection":"gh","delivery_id":"d","provider_event":"issues.edited"}}`},
		{"a contribution", Data{Task: TaskOf(task), Revision: 6, Contribution: new(ContributionOf(pr, "pull_request")), Cause: Cause{Connection: "gh"}},
			`{"task":` + taskJSON + `,"revision":6,"contribution":{"provider":"github","kind":"pull_request",` +
				`"repository":"o/r","number":2,"url":"https://github.com/o/r/pull/2","title":"Fix","state":"merged",` +
				`"draft":false,"merged_at":"2026-03-01T13:00:00Z","head_branch":"","base_branch":"","head_sha":"",` +
				`"author":"","updated_at":null,"last_synced_at":null},"cause":{"connection":"gh"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := tt.data.Payload()
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("payload =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

// TestContributionChanges: a PR/MR's title, state (merged is a state) and
// draft flag make a contribution update, with merged_at beside them; the
// other fields (a new head commit, a refresh time) do not.
func TestContributionChanges(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	open := store.Projection{Provider: "github", Repository: "o/r", Number: 2, Title: "Fix", State: "open", HeadSHA: "a"}
	tests := []struct {
		name   string
		after  func(p *store.Projection)
		fields []string
	}{
		{"the same", func(*store.Projection) {}, nil},
		{"a new head and a sync", func(p *store.Projection) { p.HeadSHA, p.LastSyncedAt = "b", &at }, nil},
		{"renamed", func(p *store.Projection) { p.Title = "Fix it" }, []string{"title"}},
		{"ready for review", func(p *store.Projection) { p.Draft = true }, []string{"draft"}},
		{"closed", func(p *store.Projection) { p.State = "closed" }, []string{"state"}},
		{"merged", func(p *store.Projection) { p.State, p.Merged, p.MergedAt = "closed", true, &at }, []string{"state", "merged_at"}},
	}
	for _, tt := range tests {
		after := open
		tt.after(&after)
		var fields []string
		for _, c := range ContributionChanges(ContributionOf(open, "pull_request"), ContributionOf(after, "pull_request")) {
			fields = append(fields, c.Field)
		}
		if !slices.Equal(fields, tt.fields) {
			t.Errorf("%s: changes %v, want %v", tt.name, fields, tt.fields)
		}
	}
}

// TestFromRowMapsFlatPayloads: rows written before events carried their
// data read as events of the new shape with what the row holds; new rows
// read as stored.
func TestFromRowMapsFlatPayloads(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.FixedZone("x", 3600))
	tests := []struct {
		name string
		row  store.TaskEvent
		data string
	}{
		{"a connector's task.created", store.TaskEvent{ID: 10, WorkspaceID: "w", TaskID: "t1", Revision: 1, Type: TypeCreated, CreatedAt: at,
			Payload: `{"external_id":"github:github.com:issue:1","id":"t1","identifier":"W-1","owner_connection":"gh",` +
				`"revision":1,"source":{"kind":"issue","provider":"github","ref":"o/r#1","url":"https://github.com/o/r/issues/1"},` +
				`"title":"Fix","workspace_id":"w"}`},
			`{"task":{"id":"t1","workspace_id":"w","identifier":"W-1","title":"Fix","description":"","workflow_step_id":"",` +
				`"labels":[],"archived_at":null,"created_at":"2026-03-01T11:00:00Z","updated_at":"2026-03-01T11:00:00Z",` +
				`"external_id":"github:github.com:issue:1","source":{"provider":"github","kind":"issue","ref":"o/r#1",` +
				`"url":"https://github.com/o/r/issues/1"}},"revision":1,"cause":{"connection":"gh"}}`},
		{"a task.updated", store.TaskEvent{ID: 11, WorkspaceID: "w", TaskID: "t1", Revision: 3, Type: TypeUpdated, CreatedAt: at,
			Payload: `{"id":"t1","identifier":"W-1","owner_connection":"gh","revision":3,"title":"Fix it","workspace_id":"w"}`},
			`{"task":{"id":"t1","workspace_id":"w","identifier":"W-1","title":"Fix it","description":"","workflow_step_id":"",` +
				`"labels":[],"archived_at":null,"created_at":"2026-03-01T11:00:00Z","updated_at":"2026-03-01T11:00:00Z"},` +
				`"revision":3,"cause":{}}`},
		{"a new row", store.TaskEvent{ID: 12, WorkspaceID: "w", TaskID: "t1", Revision: 4, Type: TypeDeleted, CreatedAt: at,
			Payload: `{"task":{"id":"t1"},"revision":4,"cause":{"actor":"operator"}}`},
			`{"task":{"id":"t1"},"revision":4,"cause":{"actor":"operator"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ev, err := FromRow(tt.row)
			if err != nil {
				t.Fatal(err)
			}
			if got := string(ev.Data); got != tt.data {
				t.Errorf("data =\n%s\nwant\n%s", got, tt.data)
			}
			body, err := Body(tt.row)
			if err != nil {
				t.Fatal(err)
			}
			want := `{"id":"` + FormatID(tt.row.ID) + `","type":"` + tt.row.Type + `","timestamp":"2026-03-01T11:00:00Z",` +
				`"workspace_id":"w","data":` + tt.data + `}`
			if string(body) != want {
				t.Errorf("body =\n%s\nwant\n%s", body, want)
			}
		})
	}
	if _, err := FromRow(store.TaskEvent{ID: 13, Payload: `{"task":`}); err == nil {
		t.Errorf("FromRow of a broken payload: nil error")
	}
}
