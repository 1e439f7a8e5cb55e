// Package taskrules holds the task rules that creation (the coordinator in
// internal/idempotency) shares with the task service in internal/tasks:
// admission of a task into a workflow step — its WIP limit, and a new
// task's identifier. It sits below both packages so that each path applies
// the one rule and neither imports the other for it. (The data of the task
// events both append is internal/events'.)
package taskrules

import (
	"context"
	"time"

	"github.com/trackergateway/gateway/internal/failure"
	"github.com/trackergateway/gateway/internal/store"
)

// Step returns the workflow step id of ws, or the error every path answers
// for a step the workspace does not have.
func Step(ws store.Workspace, id string) (store.Step, error) {
	for _, s := range ws.Steps {
		if s.ID == id {
			return s, nil
		}
	}
	return store.Step{}, failure.New(failure.Invalid, "workflow_step_id %q does not exist in workspace %q", id, ws.ID)
}

// CountsTowardLimit says whether t counts toward its step's WIP limit: a
// task counts while it is not archived, whatever its creation state (a task
// being created holds its place). It is the predicate
// store.Queries.CountActiveTasksInStep counts with.
func CountsTowardLimit(t store.Task) bool { return t.ArchivedAt == nil }

// Limited reports whether the step has a WIP limit, which Admit checks
// under the workspace row.
func Limited(s store.Step) bool {
	_, limited := limit(s)
	return limited
}

// limit is the step's WIP limit; 0 means unlimited (as in the
// configuration), so a stored 0 admits everything too.
func limit(s store.Step) (int, bool) {
	if s.WIPLimit == nil || *s.WIPLimit <= 0 {
		return 0, false
	}
	return *s.WIPLimit, true
}

// Admission is a task entering, or staying in, a workflow step: a new task
// (Before nil) or the change of an existing one from Before to Task.
type Admission struct {
	// Workspace is the task's workspace with its steps. WorkspaceLocked
	// says the caller's transaction already holds the workspace row;
	// otherwise Admit locks it when the step has a WIP limit.
	Workspace       store.Workspace
	WorkspaceLocked bool
	// Before is the task as stored, nil for a task being created.
	Before *store.Task
	// Task is the task as it will be written; its WorkflowStepID is the
	// step it enters.
	Task store.Task
}

// Admit is the one admission rule of creation, step moves and unarchiving,
// run inside the transaction that writes the task. The step must exist in
// the workspace. When the task starts counting toward the step's WIP limit
// (created, moved there while active, or unarchived), the active tasks
// already in the step must be fewer than the limit: a full step is a
// Conflict with the same message on every path. It returns the task to
// write; a new one gets its identifier as it is inserted
// (store.InsertNumberedTasks), so a rejected admission allocates none.
//
// The workspace row serializes admissions into its steps: a WIP check runs
// under its lock, and a create without a limit is serialized by the
// sequence UPDATE alone, which on PostgreSQL travels with the COMMIT.
func Admit(ctx context.Context, tx store.Queries, a Admission) (store.Task, error) {
	ws, t := a.Workspace, a.Task
	step, err := Step(ws, t.WorkflowStepID)
	if err != nil {
		return store.Task{}, err
	}
	entering := CountsTowardLimit(t) &&
		(a.Before == nil || !CountsTowardLimit(*a.Before) || a.Before.WorkflowStepID != t.WorkflowStepID)
	if _, limited := limit(step); entering && limited {
		if !a.WorkspaceLocked {
			locked, err := tx.LockWorkspace(ctx, ws.ID)
			if err != nil {
				return store.Task{}, err
			}
			// The limit read before the lock may have changed since.
			ws = locked
			if step, err = Step(ws, t.WorkflowStepID); err != nil {
				return store.Task{}, err
			}
		}
		if wip, limited := limit(step); limited {
			n, err := tx.CountActiveTasksInStep(ctx, ws.ID, step.ID)
			if err != nil {
				return store.Task{}, err
			}
			if n >= wip {
				return store.Task{}, failure.New(failure.Conflict, "workflow step %q is at its WIP limit (%d)", step.ID, wip)
			}
		}
	}
	return t, nil
}

// MaxSourceAhead is how far ahead of the gateway's clock a provider's
// timestamp of an entity's state (updated_at, Jira's timestamp) may be.
// Stale updates are told by that timestamp, so one far in the future
// would make every later real update look older and be skipped for good.
// A day covers any clock skew between a provider and the gateway.
const MaxSourceAhead = 24 * time.Hour

// SourceTimeAhead reports whether a provider timestamp is more than
// MaxSourceAhead ahead of now (the gateway's clock): it is not trusted to
// order updates.
func SourceTimeAhead(at, now time.Time) bool { return at.After(now.Add(MaxSourceAhead)) }
