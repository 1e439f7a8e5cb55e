package tasks

import (
	"time"

	"github.com/trackergateway/gateway/internal/idempotency"
	"github.com/trackergateway/gateway/internal/store"
)

// SourceJSON is a task's provider entity.
type SourceJSON struct {
	Provider string `json:"provider"`
	Kind     string `json:"kind"`
	Ref      string `json:"ref"`
	URL      string `json:"url"`
}

// TaskJSON is the task DTO of every read (docs/design.md, "Tasks"). It never
// carries creation_complete: that is a create/lookup-only field.
type TaskJSON struct {
	ID             string      `json:"id"`
	WorkspaceID    string      `json:"workspace_id"`
	Identifier     string      `json:"identifier"`
	Title          string      `json:"title"`
	Description    string      `json:"description"`
	WorkflowStepID string      `json:"workflow_step_id"`
	Labels         []string    `json:"labels"`
	ArchivedAt     *time.Time  `json:"archived_at"`
	CreatedAt      time.Time   `json:"created_at"`
	UpdatedAt      time.Time   `json:"updated_at"`
	ExternalID     string      `json:"external_id,omitempty"`
	Source         *SourceJSON `json:"source,omitempty"`
}

// ToJSON converts a task row.
func ToJSON(t store.Task) TaskJSON {
	out := TaskJSON{ID: t.ID, WorkspaceID: t.WorkspaceID, Identifier: t.Identifier, Title: t.Title,
		Description: t.Description, WorkflowStepID: t.WorkflowStepID, Labels: t.Labels, ArchivedAt: t.ArchivedAt,
		CreatedAt: t.CreatedAt.UTC(), UpdatedAt: t.UpdatedAt.UTC(), ExternalID: t.ExternalID}
	if out.Labels == nil {
		out.Labels = []string{}
	}
	if t.Source != nil {
		out.Source = &SourceJSON{Provider: t.Source.Provider, Kind: t.Source.Kind, Ref: t.Source.Ref, URL: t.Source.URL}
	}
	return out
}

// CreateJSON is the create response: the task plus the two required
// booleans of the spec's outcome tuples.
type CreateJSON struct {
	TaskJSON
	Deduplicated     bool `json:"deduplicated"`
	CreationComplete bool `json:"creation_complete"`
}

// CreateResponse maps an outcome to its exact tuple. For
// CreatedIdentityLost the task holds no external ID, so none is shown.
func CreateResponse(t store.Task, o idempotency.Outcome) CreateJSON {
	return CreateJSON{TaskJSON: ToJSON(t), Deduplicated: o.Deduplicated(), CreationComplete: o.CreationComplete()}
}

// LookupJSON is the lookup response: the task with creation_complete.
type LookupJSON struct {
	TaskJSON
	CreationComplete bool `json:"creation_complete"`
}

// LookupResponse builds the lookup body.
func LookupResponse(t store.Task, o idempotency.Outcome) LookupJSON {
	return LookupJSON{TaskJSON: ToJSON(t), CreationComplete: o.CreationComplete()}
}

// Contribution is one linked PR/MR with its projection (docs/design.md
// "Tasks").
type Contribution struct {
	Provider     string     `json:"provider"`
	Kind         string     `json:"kind"`
	Repository   string     `json:"repository"`
	Number       int64      `json:"number"`
	URL          string     `json:"url"`
	Title        string     `json:"title"`
	State        string     `json:"state"`
	Draft        bool       `json:"draft"`
	MergedAt     *time.Time `json:"merged_at"`
	HeadBranch   string     `json:"head_branch"`
	BaseBranch   string     `json:"base_branch"`
	HeadSHA      string     `json:"head_sha"`
	Author       string     `json:"author"`
	UpdatedAt    *time.Time `json:"updated_at"`
	LastSyncedAt *time.Time `json:"last_synced_at"`
}
