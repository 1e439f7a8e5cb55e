package events

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/trackergateway/gateway/internal/store"
)

// Data is an event's data object, and what the outbox row's payload holds:
// the task at the event's revision (its last state for task.deleted), the
// fields that changed, the PR/MR of a contribution event and the cause.
type Data struct {
	Task         Task          `json:"task"`
	Revision     int64         `json:"revision"`
	Changes      Changes       `json:"changes,omitempty"`
	Contribution *Contribution `json:"contribution,omitempty"`
	Cause        Cause         `json:"cause"`
}

// Task is the task JSON of every read (docs/design.md, "Tasks"), in the REST
// API (internal/tasks) and in events alike.
type Task struct {
	ID             string     `json:"id"`
	WorkspaceID    string     `json:"workspace_id"`
	Identifier     string     `json:"identifier"`
	Title          string     `json:"title"`
	Description    string     `json:"description"`
	WorkflowStepID string     `json:"workflow_step_id"`
	Labels         []string   `json:"labels"`
	ArchivedAt     *time.Time `json:"archived_at"`
	CreatedAt      time.Time  `json:"created_at"`
	UpdatedAt      time.Time  `json:"updated_at"`
	ExternalID     string     `json:"external_id,omitempty"`
	Source         *Source    `json:"source,omitempty"`
}

// Source is a task's provider entity.
type Source struct {
	Provider string `json:"provider"`
	Kind     string `json:"kind"`
	Ref      string `json:"ref"`
	URL      string `json:"url"`
}

// TaskOf is the JSON of a task row. Times are UTC and in microseconds, as
// both databases keep them, so a task reads the same whether it was just
// written (an update's answer, its event) or read back.
func TaskOf(t store.Task) Task {
	out := Task{ID: t.ID, WorkspaceID: t.WorkspaceID, Identifier: t.Identifier, Title: t.Title,
		Description: t.Description, WorkflowStepID: t.WorkflowStepID, Labels: t.Labels,
		CreatedAt: stored(t.CreatedAt), UpdatedAt: stored(t.UpdatedAt), ExternalID: t.ExternalID}
	if out.Labels == nil {
		out.Labels = []string{}
	}
	if t.ArchivedAt != nil {
		at := stored(*t.ArchivedAt)
		out.ArchivedAt = &at
	}
	if t.Source != nil {
		out.Source = &Source{Provider: t.Source.Provider, Kind: t.Source.Kind, Ref: t.Source.Ref, URL: t.Source.URL}
	}
	return out
}

// stored is t as the databases keep it: UTC, microseconds.
func stored(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// Contribution is one PR/MR linked to a task, with its projection: an item
// of the contributions JSON (docs/pull-requests.md).
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

// ContributionOf is the contributions JSON item of a projection row of
// the given kind (the caller knows its provider's): a merged PR/MR's state
// is "merged", whatever its provider calls it.
func ContributionOf(r store.Projection, kind string) Contribution {
	state := r.State
	if r.Merged {
		state = "merged"
	}
	return Contribution{Provider: r.Provider, Kind: kind, Repository: r.Repository, Number: r.Number,
		URL: r.URL, Title: r.Title, State: state, Draft: r.Draft, MergedAt: r.MergedAt, HeadBranch: r.HeadBranch,
		BaseBranch: r.BaseBranch, HeadSHA: r.HeadSHA, Author: r.Author, UpdatedAt: r.ProviderUpdatedAt,
		LastSyncedAt: r.LastSyncedAt}
}

// Change is one field's change: its JSON values before and after.
type Change struct {
	Field    string
	From, To any
}

// Changes are the fields an event changed, as the object {field: {from,
// to}} in the order of the fields in their JSON.
type Changes []Change

// MarshalJSON writes the changes as one object.
func (cs Changes) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, c := range cs {
		if i > 0 {
			b.WriteByte(',')
		}
		key, _ := json.Marshal(c.Field)
		b.Write(key)
		b.WriteString(`:`)
		v, err := json.Marshal(struct {
			From any `json:"from"`
			To   any `json:"to"`
		}{c.From, c.To})
		if err != nil {
			return nil, err
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// TaskChanges are the fields of the task JSON that differ between before
// and after: what a person or a tracker changed. updated_at, which every
// change moves, is left out, as are the fields no change touches (id,
// workspace, identifier, created_at).
func TaskChanges(before, after Task) Changes {
	var cs Changes
	add := func(field string, from, to any, same bool) {
		if !same {
			cs = append(cs, Change{Field: field, From: from, To: to})
		}
	}
	add("title", before.Title, after.Title, before.Title == after.Title)
	add("description", before.Description, after.Description, before.Description == after.Description)
	add("workflow_step_id", before.WorkflowStepID, after.WorkflowStepID, before.WorkflowStepID == after.WorkflowStepID)
	add("labels", before.Labels, after.Labels, slices.Equal(before.Labels, after.Labels))
	add("archived_at", before.ArchivedAt, after.ArchivedAt, sameTime(before.ArchivedAt, after.ArchivedAt))
	add("external_id", optional(before.ExternalID), optional(after.ExternalID), before.ExternalID == after.ExternalID)
	add("source", before.Source, after.Source, sameSource(before.Source, after.Source))
	return cs
}

// ContributionChanges are the changes of a PR/MR that make a
// task.contribution_updated: its title, state (merged included) and draft
// flag; merged_at is shown beside them when it moved too.
func ContributionChanges(before, after Contribution) Changes {
	var cs Changes
	if before.Title != after.Title {
		cs = append(cs, Change{Field: "title", From: before.Title, To: after.Title})
	}
	if before.State != after.State {
		cs = append(cs, Change{Field: "state", From: before.State, To: after.State})
	}
	if before.Draft != after.Draft {
		cs = append(cs, Change{Field: "draft", From: before.Draft, To: after.Draft})
	}
	if len(cs) > 0 && !sameTime(before.MergedAt, after.MergedAt) {
		cs = append(cs, Change{Field: "merged_at", From: before.MergedAt, To: after.MergedAt})
	}
	return cs
}

// optional is a field the task JSON omits when empty: null in a change.
func optional(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func sameTime(a, b *time.Time) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && a.Equal(*b))
}

func sameSource(a, b *Source) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && *a == *b)
}

// Append appends the event typ of task t at its revision (t.Revision, which
// the caller has just written) to the outbox in tx, with changes and
// contribution (nil when none) and cause. It is the last write of its
// transaction: the outbox is last in the lock order.
func Append(ctx context.Context, tx store.Queries, typ string, t store.Task, changes Changes, contribution *Contribution,
	cause Cause, at time.Time) error {
	payload, err := Data{Task: TaskOf(t), Revision: t.Revision, Changes: changes, Contribution: contribution, Cause: cause}.Payload()
	if err != nil {
		return fmt.Errorf("task event: %w", err)
	}
	_, err = tx.AppendTaskEvent(ctx, store.TaskEvent{WorkspaceID: t.WorkspaceID, TaskID: t.ID, Revision: t.Revision,
		Type: typ, Payload: payload, CreatedAt: at})
	return err
}

// CreatedPayload is the payload of t's task.created (revision 1) around its
// identifier, which the database assigns in the transaction that writes the
// event (store.CreatedEvent): before + identifier + after is the payload.
// It is built before that transaction, so the single SQLite writer is not
// held while it is. The identifier (PREFIX-N, upper-case letters and
// digits) needs no escaping, and the first `"identifier":"` of the JSON is
// its key: the keys before it (id, workspace_id) hold no quote that is not
// escaped.
func CreatedPayload(t store.Task, cause Cause) (before, after string, err error) {
	t.Identifier, t.Revision = "", 1
	payload, err := Data{Task: TaskOf(t), Revision: 1, Cause: cause}.Payload()
	if err != nil {
		return "", "", fmt.Errorf("task event: %w", err)
	}
	const key = `"identifier":"`
	i := strings.Index(payload, key+`"`)
	if i < 0 {
		return "", "", fmt.Errorf("task event: no identifier in %q", payload)
	}
	// Both halves share the payload's bytes.
	return payload[:i+len(key)], payload[i+len(key):], nil
}
