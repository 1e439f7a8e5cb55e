// Package tasks owns the task domain: validation rules, the task JSON, reads,
// updates, archive and delete (with the outbox events they emit, and the
// suppressions a delete leaves), and the REST API. Creation goes through
// internal/idempotency's coordinator; the rules it shares with this package
// (step admission, the event payload) are in internal/tasks/taskrules.
package tasks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/trackergateway/gateway/internal/events"
	"github.com/trackergateway/gateway/internal/failure"
	"github.com/trackergateway/gateway/internal/httpapi"
	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/tasks/taskrules"
)

// Limits of task fields (documented in docs/http-api.md, "API limits").
const (
	MaxTitleRunes       = 500
	MaxDescriptionBytes = 64 << 10
	MaxLabels           = 50
	MaxLabelRunes       = 100
)

// ValidateTitle trims and checks a title.
func ValidateTitle(title string) (string, error) {
	if err := httpapi.CheckText("title", title); err != nil {
		return "", err
	}
	t := strings.TrimSpace(title)
	switch {
	case t == "":
		return "", failure.New(failure.Invalid, "title is required")
	case utf8.RuneCountInString(t) > MaxTitleRunes:
		return "", failure.New(failure.Invalid, "title is longer than %d characters", MaxTitleRunes)
	case strings.ContainsFunc(t, unicode.IsControl):
		return "", failure.New(failure.Invalid, "title contains a control character")
	}
	return t, nil
}

// ValidateStepID checks a workflow step ID given by a caller: text a
// database can compare (the step itself is looked up later).
func ValidateStepID(id string) error { return httpapi.CheckText("workflow_step_id", id) }

// ValidateDescription checks a description's text and size.
func ValidateDescription(d string) (string, error) {
	if err := httpapi.CheckText("description", d); err != nil {
		return "", err
	}
	if len(d) > MaxDescriptionBytes {
		return "", failure.New(failure.Invalid, "description is longer than %d bytes", MaxDescriptionBytes)
	}
	return d, nil
}

// ValidateLabels trims, dedupes and bounds labels.
func ValidateLabels(labels []string) ([]string, error) {
	if len(labels) > MaxLabels {
		return nil, failure.New(failure.Invalid, "at most %d labels are allowed", MaxLabels)
	}
	out := make([]string, 0, len(labels))
	seen := map[string]bool{}
	for _, l := range labels {
		if err := httpapi.CheckText("labels", l); err != nil {
			return nil, err
		}
		l = strings.TrimSpace(l)
		switch {
		case l == "":
			return nil, failure.New(failure.Invalid, "labels must not be empty")
		case utf8.RuneCountInString(l) > MaxLabelRunes:
			return nil, failure.New(failure.Invalid, "label %q is longer than %d characters", l[:20], MaxLabelRunes)
		case strings.ContainsFunc(l, unicode.IsControl):
			return nil, failure.New(failure.Invalid, "labels must not contain control characters")
		}
		if !seen[l] {
			seen[l] = true
			out = append(out, l)
		}
	}
	return out, nil
}

// Service reads and changes tasks outside creation.
type Service struct {
	st     store.Store
	logger *slog.Logger
	now    func() time.Time
}

// NewService returns a task service.
func NewService(st store.Store, logger *slog.Logger, now func() time.Time) *Service {
	return &Service{st: st, logger: logger, now: func() time.Time { return now().UTC() }}
}

var errTaskNotFound = failure.New(failure.NotFound, "task not found")

// Get returns a completed task. A task still being created is not found:
// only the exact external-ID lookup exposes it.
func (s *Service) Get(ctx context.Context, id string) (store.Task, error) {
	if !httpapi.ValidText(id) {
		return store.Task{}, errTaskNotFound
	}
	t, err := s.st.GetTask(ctx, id)
	if err != nil {
		return t, httpapi.Reword(err, errTaskNotFound)
	}
	if t.CreationState != store.CreationComplete {
		return store.Task{}, errTaskNotFound
	}
	return t, nil
}

// Patch is a partial update; nil fields are unchanged.
type Patch struct {
	Title          *string
	Description    *string
	WorkflowStepID *string
	Labels         *[]string
	Archived       *bool
	// Source and SourceUpdatedAt are set by connectors only.
	Source          *store.Source
	SourceUpdatedAt *time.Time
}

// ErrStale is returned by Update when a connector update is older than the
// last one applied.
var ErrStale = errors.New("stale update")

// ErrUnchanged is returned by Update when a connector update carries the
// state the task already has (the same content and provider timestamp): a
// provider's resend under a new delivery ID, a recovered state a webhook
// brought meanwhile. Nothing is written: no revision, no event.
var ErrUnchanged = errors.New("unchanged")

// Update applies p under the task's row lock, bumps the revision and emits
// one event: task.archived or task.unarchived when p archives or unarchives
// the task, task.updated otherwise, with the fields that changed and the
// cause ctx carries (events.WithCause). A task still being created is
// refused (409).
func (s *Service) Update(ctx context.Context, id string, p Patch, visible func(workspaceID string) bool) (store.Task, error) {
	if !httpapi.ValidText(id) {
		return store.Task{}, errTaskNotFound
	}
	if p.Title != nil {
		t, err := ValidateTitle(*p.Title)
		if err != nil {
			return store.Task{}, err
		}
		p.Title = &t
	}
	if p.Description != nil {
		if _, err := ValidateDescription(*p.Description); err != nil {
			return store.Task{}, err
		}
	}
	if p.Labels != nil {
		l, err := ValidateLabels(*p.Labels)
		if err != nil {
			return store.Task{}, err
		}
		p.Labels = &l
	}
	if p.WorkflowStepID != nil {
		if err := ValidateStepID(*p.WorkflowStepID); err != nil {
			return store.Task{}, err
		}
	}
	var out store.Task
	err := s.st.InTx(ctx, func(tx store.Queries) error {
		before, err := tx.GetTask(ctx, id)
		if err != nil {
			return notFound(err)
		}
		if visible != nil && !visible(before.WorkspaceID) {
			return errTaskNotFound
		}
		// Lock order: workspace before task (moves and unarchives are
		// admitted into their step under the workspace row).
		ws, err := tx.LockWorkspace(ctx, before.WorkspaceID)
		if err != nil {
			return err
		}
		t, err := tx.LockTask(ctx, id)
		if err != nil {
			return notFound(err)
		}
		if t.CreationState != store.CreationComplete {
			return failure.New(failure.Conflict, "task is still being created")
		}
		now := s.now()
		// A stored provider time far ahead of the clock (recorded before
		// such times were refused) orders nothing: the update applies.
		if p.SourceUpdatedAt != nil && t.SourceUpdatedAt != nil && p.SourceUpdatedAt.Before(*t.SourceUpdatedAt) &&
			!taskrules.SourceTimeAhead(*t.SourceUpdatedAt, now) {
			out = t
			return ErrStale
		}
		stored := t
		if p.Title != nil {
			t.Title = *p.Title
		}
		if p.Description != nil {
			t.Description = *p.Description
		}
		if p.Labels != nil {
			t.Labels = *p.Labels
		}
		if p.Source != nil {
			t.Source = p.Source
		}
		if p.SourceUpdatedAt != nil {
			t.SourceUpdatedAt = p.SourceUpdatedAt
		}
		if p.Archived != nil {
			switch {
			case *p.Archived && t.ArchivedAt == nil:
				t.ArchivedAt = &now
			case !*p.Archived:
				t.ArchivedAt = nil
			}
		}
		if p.WorkflowStepID != nil {
			t.WorkflowStepID = *p.WorkflowStepID
		}
		if p.Source != nil && sameState(stored, t) {
			out = stored
			return ErrUnchanged
		}
		// A move or an unarchive is admitted into the step like a create.
		if t, err = taskrules.Admit(ctx, tx, taskrules.Admission{Workspace: ws, WorkspaceLocked: true, Before: &stored, Task: t}); err != nil {
			return err
		}
		t.Revision++
		t.UpdatedAt = now
		if err := tx.UpdateTask(ctx, t); err != nil {
			return err
		}
		if err := events.Append(ctx, tx, updateType(stored, t), t, events.TaskChanges(events.TaskOf(stored), events.TaskOf(t)),
			nil, events.CauseFrom(ctx), now); err != nil {
			return err
		}
		out = t
		return nil
	})
	if err != nil {
		if errors.Is(err, ErrStale) || errors.Is(err, ErrUnchanged) {
			return out, err
		}
		return store.Task{}, fmt.Errorf("update task: %w", err)
	}
	return out, nil
}

// updateType is the event of an update from before to after: archiving
// and unarchiving are events of their own (with whatever else the same
// update changed), any other change is task.updated.
func updateType(before, after store.Task) string {
	switch {
	case before.ArchivedAt == nil && after.ArchivedAt != nil:
		return events.TypeArchived
	case before.ArchivedAt != nil && after.ArchivedAt == nil:
		return events.TypeUnarchived
	}
	return events.TypeUpdated
}

// sameState says whether a and b hold the same task state: what a patch
// writes (content, source, step, archived or not).
func sameState(a, b store.Task) bool {
	return a.Title == b.Title && a.Description == b.Description && slices.Equal(a.Labels, b.Labels) &&
		a.WorkflowStepID == b.WorkflowStepID && (a.ArchivedAt == nil) == (b.ArchivedAt == nil) &&
		sameTime(a.SourceUpdatedAt, b.SourceUpdatedAt) && sameSource(a.Source, b.Source)
}

func sameTime(a, b *time.Time) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && a.Equal(*b))
}

func sameSource(a, b *store.Source) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && *a == *b)
}

func notFound(err error) error { return httpapi.Reword(err, errTaskNotFound) }

// DeleteReason says who deleted a task; it is stored on suppressions.
type DeleteReason string

const (
	DeletedByOperator DeleteReason = "deleted by operator"
	DeletedAtSource   DeleteReason = "deleted at source"
)

// SuppressionWriter records suppressions: a transaction or the store.
type SuppressionWriter interface {
	UpsertSuppression(ctx context.Context, s store.Suppression) error
}

// Suppress records, for each non-empty external ID, that later deliveries
// for it in the workspace create nothing: the entity's task was deleted for
// reason. taskID is the deleted task, "" when the entity has none (a
// delete delivered before its create). Every suppression a delete leaves
// is written here.
func Suppress(ctx context.Context, w SuppressionWriter, workspaceID, taskID string, reason DeleteReason, at time.Time, externalIDs ...string) error {
	for i, ext := range externalIDs {
		if ext == "" || slices.Contains(externalIDs[:i], ext) {
			continue
		}
		if err := w.UpsertSuppression(ctx, store.Suppression{WorkspaceID: workspaceID, ExternalID: ext,
			TaskID: taskID, Reason: string(reason), CreatedAt: at}); err != nil {
			return fmt.Errorf("record suppression: %w", err)
		}
	}
	return nil
}

// Delete removes a task, its associations and projections, and emits
// task.deleted. When the task is connector-owned (it mirrors a provider
// entity), the gateway records suppressions for its external ID and aliases,
// so later deliveries for the entity create nothing (docs/design.md, "Suppressions").
func (s *Service) Delete(ctx context.Context, id string, reason DeleteReason, visible func(workspaceID string) bool) (store.Task, error) {
	if !httpapi.ValidText(id) {
		return store.Task{}, errTaskNotFound
	}
	var out store.Task
	err := s.st.InTx(ctx, func(tx store.Queries) error {
		t, err := s.deleteTask(ctx, tx, id, reason, visible, s.now())
		out = t
		return err
	})
	if err != nil {
		return store.Task{}, fmt.Errorf("delete task: %w", err)
	}
	return out, nil
}

// DeleteAtSource applies a provider's delete of the entity externalID
// names in workspaceID: one transaction records the suppression of
// externalID (the ID the delivery named, which may be an alias of the
// task) and, when taskID names a task of the workspace, deletes it as
// Delete does, with the suppressions of its own external ID and aliases.
// The suppression and the delete are never written apart: a crash or an
// error between two transactions would leave the task alive behind a
// suppression that turns every later delivery for the entity away. A
// taskID of "" or of a task already gone records the suppression alone;
// deleted reports whether a task was deleted.
func (s *Service) DeleteAtSource(ctx context.Context, workspaceID, externalID, taskID string) (t store.Task, deleted bool, err error) {
	if taskID != "" && !httpapi.ValidText(taskID) {
		taskID = ""
	}
	inWorkspace := func(ws string) bool { return ws == workspaceID }
	err = s.st.InTx(ctx, func(tx store.Queries) error {
		// Set, not accumulated: a shared commit may run this again.
		t, deleted = store.Task{}, false
		now := s.now()
		if taskID != "" {
			gone, err := s.deleteTask(ctx, tx, taskID, DeletedAtSource, inWorkspace, now, externalID)
			switch {
			case err == nil:
				t, deleted = gone, true
				return nil
			case failure.CodeOf(err) != failure.NotFound:
				return err
			}
		}
		return Suppress(ctx, tx, workspaceID, taskID, DeletedAtSource, now, externalID)
	})
	if err != nil {
		return store.Task{}, false, fmt.Errorf("delete task at source: %w", err)
	}
	return t, deleted, nil
}

// deleteTask deletes the task id in tx: it records the suppressions of
// also and, for a connector-owned task, of its external ID and aliases,
// removes its associations, deletes it and appends task.deleted. A task
// not found (or not visible) is errTaskNotFound, and nothing is written.
func (s *Service) deleteTask(ctx context.Context, tx store.Queries, id string, reason DeleteReason, visible func(workspaceID string) bool,
	now time.Time, also ...string) (store.Task, error) {
	t, err := tx.LockTask(ctx, id)
	if err != nil {
		return store.Task{}, notFound(err)
	}
	if visible != nil && !visible(t.WorkspaceID) {
		return store.Task{}, errTaskNotFound
	}
	if t.CreationState != store.CreationComplete {
		return store.Task{}, failure.New(failure.Conflict, "task is still being created")
	}
	suppress := also
	if t.OwnerConnection != "" {
		aliases, err := tx.ListAliases(ctx, t.ID)
		if err != nil {
			return store.Task{}, err
		}
		suppress = append(append(append([]string(nil), also...), t.ExternalID), aliases...)
	}
	if err := Suppress(ctx, tx, t.WorkspaceID, t.ID, reason, now, suppress...); err != nil {
		return store.Task{}, err
	}
	if err := tx.DeleteAssociationsForTask(ctx, t.ID); err != nil {
		return store.Task{}, err
	}
	if err := tx.DeleteTask(ctx, t.ID); err != nil {
		return store.Task{}, err
	}
	// The event shows the task as it was last; its revision is the one
	// the delete would have written.
	t.Revision++
	if err := events.Append(ctx, tx, events.TypeDeleted, t, nil, nil, events.CauseFrom(ctx), now); err != nil {
		return store.Task{}, err
	}
	return t, nil
}

// ListPage lists completed tasks of a workspace.
func (s *Service) List(ctx context.Context, p store.TaskPage) ([]store.Task, error) {
	return s.st.ListTasks(ctx, p)
}
