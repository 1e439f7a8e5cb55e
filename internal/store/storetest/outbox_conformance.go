package storetest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/trackergateway/gateway/internal/store"
)

var outboxTests = []contractTest{
	{name: "outbox appends in order", fn: testOutbox},
	{name: "a workspace's events are paged by id, type and window", fn: testWorkspaceEvents},
	{name: "a reader paging after its cursor never skips an event committed later", fn: testEventsInCommitOrder},
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

// testEventsInCommitOrder: writers append concurrently, each transaction
// holding on a moment after its append, while a reader pages through the
// workspace after its cursor as a feed consumer does. Ids become visible in
// commit order (the outbox lock on PostgreSQL, the one writer on SQLite),
// so the reader never moves its cursor past an event that commits later:
// it reads every event.
func testEventsInCommitOrder(t *testing.T, s store.Store) {
	ctx := context.Background()
	const writers, each = 6, 25
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				err := s.InTx(ctx, func(tx store.Queries) error {
					if _, err := tx.AppendTaskEvent(ctx, store.TaskEvent{WorkspaceID: "ws", TaskID: uuid.NewString(), Revision: 1,
						Type: store.EventTaskCreated, Payload: `{}`, CreatedAt: epoch}); err != nil {
						return err
					}
					// Widen the window between the id's allocation and the
					// commit, where a reader could see a later id first.
					time.Sleep(time.Duration((w+i)%3) * time.Millisecond)
					return nil
				})
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	seen := map[int64]bool{}
	var cursor int64
	for finished := false; ; {
		select {
		case <-done:
			finished = true
		default:
		}
		page, _, err := s.ListWorkspaceEvents(ctx, store.EventPage{WorkspaceID: "ws", AfterID: cursor, Limit: 1000})
		must(t, err)
		for _, e := range page {
			seen[e.ID] = true
			cursor = e.ID
		}
		if finished && len(page) == 0 {
			break
		}
	}
	close(errs)
	for err := range errs {
		must(t, err)
	}
	all, _, err := s.ListWorkspaceEvents(ctx, store.EventPage{WorkspaceID: "ws", Limit: 1000})
	must(t, err)
	if len(all) != writers*each {
		t.Fatalf("%d events stored, want %d", len(all), writers*each)
	}
	for _, e := range all {
		if !seen[e.ID] {
			t.Errorf("the reader skipped event %d", e.ID)
		}
	}
}
