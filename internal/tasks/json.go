package tasks

import (
	"github.com/trackergateway/gateway/internal/events"
	"github.com/trackergateway/gateway/internal/idempotency"
	"github.com/trackergateway/gateway/internal/store"
)

// SourceJSON is a task's provider entity.
type SourceJSON = events.Source

// TaskJSON is the task DTO of every read (docs/design.md, "Tasks"). It never
// carries creation_complete: that is a create/lookup-only field. Task events
// carry the same JSON (internal/events), so it is defined there.
type TaskJSON = events.Task

// ToJSON converts a task row.
func ToJSON(t store.Task) TaskJSON { return events.TaskOf(t) }

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
// "Tasks"), as the task's contributions and its contribution events show it.
type Contribution = events.Contribution
