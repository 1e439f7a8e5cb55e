package storetest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/trackergateway/gateway/internal/store"
)

var outboxTests = []contractTest{
	{name: "outbox appends in order", fn: testOutbox},
	{name: "a workspace's events are paged by id, type and window", fn: testWorkspaceEvents},
}

func testOutbox(t *testing.T, s store.Store) {
	ctx := context.Background()
	var ids []int64
	for i := 1; i <= 3; i++ {
		err := s.InTx(ctx, func(tx store.Queries) error {
			id, err := tx.AppendTaskEvent(ctx, store.TaskEvent{WorkspaceID: "ws", TaskID: uuid.NewString(), Revision: 1,
				Type: store.EventTaskCreated, Payload: `{}`, CreatedAt: epoch})
			ids = append(ids, id)
			return err
		})
		must(t, err)
	}
	evs, err := s.ReadTaskEvents(ctx, ids[0], 10)
	must(t, err)
	if len(evs) != 2 || evs[0].ID != ids[1] || evs[1].ID != ids[2] {
		t.Errorf("events after %d = %+v", ids[0], evs)
	}
	first, err := s.ReadTaskEvents(ctx, 0, 1)
	must(t, err)
	if len(first) != 1 || first[0].ID != ids[0] || first[0].Type != store.EventTaskCreated || first[0].Payload != `{}` ||
		first[0].Revision != 1 || first[0].WorkspaceID != "ws" || !first[0].CreatedAt.Equal(epoch) {
		t.Errorf("first event (limit 1) = %+v, want event %d as appended", first, ids[0])
	}
	if cur, err := s.GetOutboxCursor(ctx, "c"); err != nil || cur != 0 {
		t.Errorf("cursor of a new consumer = %d, %v; want 0", cur, err)
	}
	must(t, s.SaveOutboxCursor(ctx, "c", ids[2], epoch))
	must(t, s.SaveOutboxCursor(ctx, "c", ids[0], epoch)) // never moves back
	cur, err := s.GetOutboxCursor(ctx, "c")
	must(t, err)
	if cur != ids[2] {
		t.Errorf("cursor = %d, want %d", cur, ids[2])
	}
}

// testWorkspaceEvents: ListWorkspaceEvents reads one workspace's events in
// id order after a cursor, of the types asked for; a filtered page looks at
// no more than its window and says where the window ended.
func testWorkspaceEvents(t *testing.T, s store.Store) {
	ctx := context.Background()
	types := []string{"task.created", "task.updated", "task.created", "task.deleted", "task.updated", "task.created"}
	var mine []int64
	for i, typ := range types {
		for _, ws := range []string{"other", "ws"} {
			var id int64
			must(t, s.InTx(ctx, func(tx store.Queries) error {
				var err error
				id, err = tx.AppendTaskEvent(ctx, store.TaskEvent{WorkspaceID: ws, TaskID: uuid.NewString(), Revision: 1,
					Type: typ, Payload: fmt.Sprintf(`{"n":%d}`, i), CreatedAt: epoch.Add(time.Duration(i) * time.Second)})
				return err
			}))
			if ws == "ws" {
				mine = append(mine, id)
			}
		}
	}
	ids := func(evs []store.TaskEvent) []int64 {
		var out []int64
		for _, e := range evs {
			if e.WorkspaceID != "ws" {
				t.Errorf("event %d of workspace %q in the page of ws", e.ID, e.WorkspaceID)
			}
			out = append(out, e.ID)
		}
		return out
	}
	tests := []struct {
		name          string
		page          store.EventPage
		want          []int64
		wantScannedTo int64
	}{
		{"every event", store.EventPage{Limit: 10}, mine, 0},
		{"a page", store.EventPage{AfterID: mine[1], Limit: 2}, mine[2:4], 0},
		{"after the last", store.EventPage{AfterID: mine[5], Limit: 10}, nil, 0},
		{"one type", store.EventPage{Types: []string{"task.created"}, Limit: 10}, []int64{mine[0], mine[2], mine[5]}, 0},
		{"two types after a cursor", store.EventPage{AfterID: mine[0], Types: []string{"task.updated", "task.deleted"}, Limit: 10},
			[]int64{mine[1], mine[3], mine[4]}, 0},
		{"a type, limited", store.EventPage{Types: []string{"task.created"}, Limit: 2}, []int64{mine[0], mine[2]}, 0},
		{"a window", store.EventPage{Types: []string{"task.created"}, Limit: 10, Scan: 4}, []int64{mine[0], mine[2]}, mine[3]},
		{"a window with none", store.EventPage{AfterID: mine[2], Types: []string{"task.created"}, Limit: 10, Scan: 2}, nil, mine[4]},
		{"a window past the end", store.EventPage{AfterID: mine[2], Types: []string{"task.created"}, Limit: 10, Scan: 3},
			[]int64{mine[5]}, mine[5]},
		{"a window larger than the rest", store.EventPage{AfterID: mine[2], Types: []string{"task.created"}, Limit: 10, Scan: 4},
			[]int64{mine[5]}, 0},
	}
	for _, tt := range tests {
		tt.page.WorkspaceID = "ws"
		got, scannedTo, err := s.ListWorkspaceEvents(ctx, tt.page)
		must(t, err)
		if !slices.Equal(ids(got), tt.want) || scannedTo != tt.wantScannedTo {
			t.Errorf("%s: events %v, scanned to %d; want %v, %d", tt.name, ids(got), scannedTo, tt.want, tt.wantScannedTo)
		}
	}
	got, _, err := s.ListWorkspaceEvents(ctx, store.EventPage{WorkspaceID: "ws", AfterID: mine[3], Limit: 1})
	must(t, err)
	if len(got) != 1 || got[0].Type != "task.updated" || got[0].Payload != `{"n":4}` || got[0].Revision != 1 ||
		!got[0].CreatedAt.Equal(epoch.Add(4*time.Second)) {
		t.Errorf("event after %d = %+v, want the fifth as appended", mine[3], got)
	}
}
