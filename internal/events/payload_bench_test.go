package events

import (
	"testing"
	"time"

	"github.com/trackergateway/gateway/internal/store"
)

// BenchmarkCreatedPayload: building task.created's payload, as every
// creation does before its transaction (a GitHub issue's task: a title, a
// short description, a label, a source).
func BenchmarkCreatedPayload(b *testing.B) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	task := store.Task{ID: "0190c7a2-0000-7000-8000-000000000001", WorkspaceID: "default", Title: "Spelling error in the README file",
		Description: "It looks like you accidentally spelled 'commit' with two 't's.", WorkflowStepID: "backlog",
		Labels: []string{"bug"}, ExternalID: "github:github.com:issue:444500041", OwnerConnection: "github", CreatedAt: at, UpdatedAt: at,
		Source: &store.Source{Provider: "github", Kind: "issue", Ref: "Codertocat/Hello-World#1",
			URL: "https://github.com/Codertocat/Hello-World/issues/1"}}
	cause := Cause{Connection: "github", DeliveryID: "0190c7a2-0000-7000-8000-0000000000ff", ProviderEvent: "issues.opened"}
	for b.Loop() {
		if _, _, err := CreatedPayload(task, cause); err != nil {
			b.Fatal(err)
		}
	}
}
