// Package events is the task event as consumers see it, in the feed and in
// outbound webhook bodies alike: {id, type, timestamp, workspace_id, data}
// (docs/design.md, "Task events out"). Every task action appends one to the
// task_events outbox in the transaction of its change; the row's payload is
// the event's data (Data: the task at that revision, the fields that
// changed, the PR/MR of a contribution event, the cause). This package
// names the event types, builds the data, formats the event's id, wraps a
// row into the JSON every consumer reads, and serves the feed (Feed).
package events

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/trackergateway/gateway/internal/store"
)

// Event types, as consumers subscribe to them.
const (
	TypeCreated              = "task.created"
	TypeUpdated              = "task.updated"
	TypeArchived             = "task.archived"
	TypeUnarchived           = "task.unarchived"
	TypeDeleted              = "task.deleted"
	TypeContributionLinked   = "task.contribution_linked"
	TypeContributionUpdated  = "task.contribution_updated"
	TypeContributionUnlinked = "task.contribution_unlinked"
)

// Types lists every event type in the order the documentation lists them.
var Types = []string{TypeCreated, TypeUpdated, TypeArchived, TypeUnarchived, TypeDeleted,
	TypeContributionLinked, TypeContributionUpdated, TypeContributionUnlinked}

// KnownType reports whether t is an event type.
func KnownType(t string) bool {
	for _, k := range Types {
		if k == t {
			return true
		}
	}
	return false
}

// idPrefix starts every event id; the rest is the outbox row id as 16
// lower-case hex digits, so ids sort as strings in the order they sort as
// numbers and a consumer may compare them without knowing what they hold.
const idPrefix = "evt_"

// ErrInvalidID: an event id (or a feed cursor) that this gateway did not
// make.
var ErrInvalidID = errors.New("invalid event id")

// FormatID is the public id of outbox row id.
func FormatID(id int64) string {
	s := strconv.FormatUint(uint64(id), 16)
	return idPrefix + strings.Repeat("0", 16-len(s)) + s
}

// ParseID is the outbox row id of a public event id.
func ParseID(s string) (int64, error) {
	hex, ok := strings.CutPrefix(s, idPrefix)
	if !ok || len(hex) != 16 {
		return 0, ErrInvalidID
	}
	n, err := strconv.ParseUint(hex, 16, 63)
	if err != nil || strings.ToLower(hex) != hex {
		return 0, ErrInvalidID
	}
	return int64(n), nil
}

// Event is one task event as consumers read it.
type Event struct {
	ID          string          `json:"id"`
	Type        string          `json:"type"`
	Timestamp   time.Time       `json:"timestamp"`
	WorkspaceID string          `json:"workspace_id"`
	Data        json.RawMessage `json:"data"`
}

// FromRow is the consumers' view of an outbox row. The payload of a row is
// its event's data; rows written before events carried their data (a flat
// payload of a few task fields) are mapped to it (legacyData).
func FromRow(e store.TaskEvent) (Event, error) {
	data := json.RawMessage(e.Payload)
	if !strings.HasPrefix(e.Payload, `{"task":`) {
		var err error
		if data, err = legacyData(e); err != nil {
			return Event{}, err
		}
	} else if !json.Valid(data) {
		return Event{}, fmt.Errorf("task event %d: payload is not JSON", e.ID)
	}
	return Event{ID: FormatID(e.ID), Type: e.Type, Timestamp: e.CreatedAt.UTC(), WorkspaceID: e.WorkspaceID, Data: data}, nil
}

// legacyPayload is the flat payload of the outbox rows written before
// events carried their data (task.created, task.updated, task.deleted).
type legacyPayload struct {
	ExternalID      string        `json:"external_id"`
	ID              string        `json:"id"`
	Identifier      string        `json:"identifier"`
	OwnerConnection string        `json:"owner_connection"`
	Revision        int64         `json:"revision"`
	Source          *store.Source `json:"source"`
	Title           string        `json:"title"`
	WorkspaceID     string        `json:"workspace_id"`
}

// legacyData maps a flat payload to the data of an event with what it
// holds: the task's id, workspace, identifier, title, external ID and
// source, and the revision. The task's other fields were not recorded: its
// description and step are empty, it has no labels and is not archived,
// and both its times are the event's. The cause was not recorded either:
// a task created by a connection names that connection, any other cause is
// {}.
func legacyData(e store.TaskEvent) (json.RawMessage, error) {
	var p legacyPayload
	if err := json.Unmarshal([]byte(e.Payload), &p); err != nil {
		return nil, fmt.Errorf("task event %d: payload is not JSON: %w", e.ID, err)
	}
	t := store.Task{ID: p.ID, WorkspaceID: p.WorkspaceID, Identifier: p.Identifier, Title: p.Title,
		ExternalID: p.ExternalID, Source: p.Source, CreatedAt: e.CreatedAt, UpdatedAt: e.CreatedAt}
	if t.ID == "" {
		t.ID = e.TaskID
	}
	if t.WorkspaceID == "" {
		t.WorkspaceID = e.WorkspaceID
	}
	d := Data{Task: TaskOf(t), Revision: e.Revision}
	if e.Type == TypeCreated {
		d.Cause.Connection = p.OwnerConnection
	}
	b, err := json.Marshal(d)
	if err != nil {
		return nil, fmt.Errorf("task event %d: %w", e.ID, err)
	}
	return b, nil
}

// Body is the JSON of e: the feed's item and an outbound webhook's body.
func Body(e store.TaskEvent) ([]byte, error) {
	ev, err := FromRow(e)
	if err != nil {
		return nil, err
	}
	return json.Marshal(ev)
}
