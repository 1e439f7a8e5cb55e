package retention_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/trackergateway/gateway/internal/projection"
	"github.com/trackergateway/gateway/internal/retention"
	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/store/sqlstore"
	"github.com/trackergateway/gateway/internal/store/storetest"
)

// Retention keeps the events an enabled subscription still owes, however
// old; removes the delivered ones with their delivery rows; and lets a
// disabled subscription hold nothing beyond the window.
func TestRetentionAndSubscriptions(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, s *sqlstore.Store) {
		ctx := context.Background()
		storetest.SeedWorkspace(t, s, "ws")
		sub := store.Subscription{ID: "sub_a", WorkspaceID: "ws", URL: "https://example.com", Enabled: true,
			Secret: "whsec_c2VjcmV0", CreatedAt: now, UpdatedAt: now}
		must(t, s.InsertSubscription(ctx, sub))
		var ids []int64
		for range 3 {
			id, err := s.AppendTaskEvent(ctx, store.TaskEvent{WorkspaceID: "ws", TaskID: uuid.NewString(), Revision: 1,
				Type: store.EventTaskCreated, Payload: `{}`, CreatedAt: now.Add(-10 * day)})
			must(t, err)
			ids = append(ids, id)
		}
		must(t, s.SaveOutboxCursor(ctx, projection.Consumer, ids[2], now))
		if _, err := s.FanOutEvents(ctx, store.FanOut{Now: now, Limit: 10}); err != nil {
			t.Fatal(err)
		}
		// The first event is delivered; the other two are still owed.
		claimed, err := s.ClaimOutboundDeliveries(ctx, "w", now, time.Minute, 1)
		must(t, err)
		claimed[0].Status, claimed[0].FinishedAt, claimed[0].NextAttemptAt = store.OutboundSucceeded, &now, now
		_, err = s.FinishOutboundDeliveries(ctx, store.OutboundFinish{Owner: "w", Deliveries: claimed, Now: now})
		must(t, err)

		p := retention.New(s, discard, func() time.Time { return now }, policy)
		counts, err := p.RunOnce(ctx, false)
		must(t, err)
		if counts.Events != 1 || counts.OutboundDeliveries != 1 {
			t.Errorf("pass = %+v, want the delivered event and its delivery row", counts)
		}
		left, err := s.ReadTaskEvents(ctx, 0, 10)
		must(t, err)
		if len(left) != 2 || left[0].ID != ids[1] {
			t.Errorf("events left = %+v, want the two owed", left)
		}
		ds, err := s.ListOutboundDeliveries(ctx, store.OutboundDeliveryPage{SubscriptionID: "sub_a", Limit: 10})
		must(t, err)
		if len(ds) != 2 {
			t.Errorf("delivery rows left = %d, want the two owed", len(ds))
		}

		// Disabled, the subscription holds nothing beyond the window: its
		// owed events go, and their rows with them.
		sub.Enabled = false
		must(t, s.UpdateSubscription(ctx, sub))
		counts, err = p.RunOnce(ctx, false)
		must(t, err)
		if counts.Events != 2 || counts.OutboundDeliveries != 2 {
			t.Errorf("pass with the subscription disabled = %+v, want 2 events and 2 rows", counts)
		}
	})
}
