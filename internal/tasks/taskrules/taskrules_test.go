package taskrules_test

import (
	"testing"

	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/tasks/taskrules"
)

// TestEventPayload pins the bytes of the task event payload that
// subscribers read: sorted keys, the optional ones left out when empty, and
// encoding/json's escaping.
func TestEventPayload(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		task store.Task
		want string
	}{
		{"bare", store.Task{ID: "t1", WorkspaceID: "default", Identifier: "TASK-1", Title: "Fix it", Revision: 1},
			`{"id":"t1","identifier":"TASK-1","revision":1,"title":"Fix it","workspace_id":"default"}`},
		{"every field", store.Task{ID: "t2", WorkspaceID: "w", Identifier: "W-2", Title: `a <b> & "c"`, Revision: 7,
			ExternalID: "github:github.com:issue:1", OwnerConnection: "github",
			Source: &store.Source{Provider: "github", Kind: "issue", Ref: "o/r#1", URL: "https://github.com/o/r/issues/1"}},
			`{"external_id":"github:github.com:issue:1","id":"t2","identifier":"W-2","owner_connection":"github","revision":7,` +
				`"source":{"kind":"issue","provider":"github","ref":"o/r#1","url":"https://github.com/o/r/issues/1"},` +
				`"title":"a \u003cb\u003e \u0026 \"c\"","workspace_id":"w"}`},
		{"empty source fields are kept", store.Task{ID: "t3", WorkspaceID: "w", Identifier: "W-3", Source: &store.Source{}},
			`{"id":"t3","identifier":"W-3","revision":0,"source":{"kind":"","provider":"","ref":"","url":""},"title":"","workspace_id":"w"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := taskrules.EventPayload(tt.task); got != tt.want {
				t.Errorf("EventPayload =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

// TestCreatedEventPayload: the payload around the identifier, with any
// identifier put between, is EventPayload of the task holding it, however
// its other fields read (an external ID or title that spells the
// identifier's key among them).
func TestCreatedEventPayload(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		task store.Task
	}{
		{"bare", store.Task{ID: "t1", WorkspaceID: "default", Title: "Fix it", Revision: 1}},
		{"every field", store.Task{ID: "t2", WorkspaceID: "w", Title: `a <b> & "c"`, Revision: 1,
			ExternalID: "github:github.com:issue:1", OwnerConnection: "github",
			Source: &store.Source{Provider: "github", Kind: "issue", Ref: "o/r#1", URL: "https://github.com/o/r/issues/1"}}},
		{"the key in an external ID", store.Task{ID: "t3", WorkspaceID: "w", Revision: 1,
			ExternalID: `x"identifier":"y`}},
		{"the key with an empty value in a title", store.Task{ID: "t4", WorkspaceID: "w", Revision: 1,
			ExternalID: `"identifier":""`, Title: `"identifier":""`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			before, after := taskrules.CreatedEventPayload(tt.task)
			for _, identifier := range []string{"TASK-1", "W-12345", "A1B2-9"} {
				tt.task.Identifier = identifier
				if got, want := before+identifier+after, taskrules.EventPayload(tt.task); got != want {
					t.Errorf("around %s =\n%s\nwant\n%s", identifier, got, want)
				}
			}
		})
	}
}
