package storetest

import (
	"context"
	"testing"

	"github.com/google/uuid"

	"github.com/trackergateway/gateway/internal/store"
)

var outboxTests = []contractTest{
	{name: "outbox appends in order", fn: testOutbox},
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
