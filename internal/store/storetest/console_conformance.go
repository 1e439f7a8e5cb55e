package storetest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/trackergateway/gateway/internal/store"
)

var consoleTests = []contractTest{
	{name: "a session is read until it expires, and deleted", fn: testConsoleSessions},
	{name: "expired sessions are deleted, live ones kept", fn: testDeleteExpiredConsoleSessions},
	{name: "deliveries received are counted per connection, status and minute", fn: testCountDeliveriesReceived},
	{name: "backlogs count pending deliveries and the oldest queued", fn: testDeliveryBacklogs},
}

func newConsoleSession(id string, expires time.Time) store.ConsoleSession {
	return store.ConsoleSession{IDSHA256: id, TokenSHA256: "token-" + id, CSRFSecret: "csrf-" + id,
		CreatedAt: epoch, ExpiresAt: expires}
}

func testConsoleSessions(t *testing.T, s store.Store) {
	ctx := context.Background()
	want := newConsoleSession("s1", epoch.Add(time.Hour))
	must(t, s.InsertConsoleSession(ctx, want))
	if err := s.InsertConsoleSession(ctx, want); !errors.Is(err, store.ErrConstraint) {
		t.Errorf("inserting the same session again: err = %v, want ErrConstraint", err)
	}
	got, err := s.GetConsoleSession(ctx, "s1", epoch.Add(time.Hour-time.Microsecond))
	must(t, err)
	if got != want {
		t.Errorf("GetConsoleSession = %+v, want %+v", got, want)
	}
	for name, tc := range map[string]struct {
		id  string
		now time.Time
	}{
		"at expiry":  {"s1", epoch.Add(time.Hour)},
		"unknown id": {"s2", epoch},
	} {
		if _, err := s.GetConsoleSession(ctx, tc.id, tc.now); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s: err = %v, want ErrNotFound", name, err)
		}
	}
	must(t, s.DeleteConsoleSession(ctx, "s1"))
	if _, err := s.GetConsoleSession(ctx, "s1", epoch); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("after delete: err = %v, want ErrNotFound", err)
	}
	must(t, s.DeleteConsoleSession(ctx, "s1"))
}

func testDeleteExpiredConsoleSessions(t *testing.T, s store.Store) {
	ctx := context.Background()
	must(t, s.InsertConsoleSession(ctx, newConsoleSession("old", epoch.Add(time.Minute))))
	must(t, s.InsertConsoleSession(ctx, newConsoleSession("due", epoch.Add(time.Hour))))
	must(t, s.InsertConsoleSession(ctx, newConsoleSession("live", epoch.Add(2*time.Hour))))
	n, err := s.DeleteExpiredConsoleSessions(ctx, epoch.Add(time.Hour))
	must(t, err)
	if n != 2 {
		t.Errorf("deleted %d sessions, want 2", n)
	}
	if _, err := s.GetConsoleSession(ctx, "live", epoch); err != nil {
		t.Errorf("the live session: %v", err)
	}
}

func testCountDeliveriesReceived(t *testing.T, s store.Store) {
	ctx := context.Background()
	at := func(conn, key string, d time.Duration) store.Delivery {
		dl := newDelivery(key)
		dl.ConnectionID, dl.ReceivedAt = conn, epoch.Add(d)
		return dl
	}
	// epoch is 03:04:05.123456; its minute starts at 03:04:00.
	minute := epoch.Truncate(time.Minute)
	_, err := s.InsertDeliveries(ctx, []store.Delivery{
		at("gh", "before", -time.Second), // before since: not counted
		at("gh", "a", 0),
		at("gh", "b", 54*time.Second), // 03:04:59.12: the same minute
		at("gh", "c", 55*time.Second), // 03:05:00.12: the next
		at("gl", "d", 10*time.Second),
	})
	must(t, err)
	failed := insertDelivery(t, s, at("gh", "e", 56*time.Second))
	claimed, err := s.ClaimDeliveries(ctx, "w1", epoch.Add(time.Hour), time.Minute, 10)
	must(t, err)
	for _, d := range claimed {
		if d.ID != failed {
			continue
		}
		d.Status, d.LastError = store.DeliveryFailed, "boom"
		done := epoch.Add(time.Hour)
		d.ProcessedAt = &done
		must(t, s.FinishDelivery(ctx, d, "w1"))
	}

	totals, err := s.CountDeliveriesReceived(ctx, epoch)
	must(t, err)
	wantTotals := []store.DeliveryCount{
		{ConnectionID: "gh", Status: store.DeliveryFailed, Count: 1},
		{ConnectionID: "gh", Status: store.DeliveryProcessing, Count: 3},
		{ConnectionID: "gl", Status: store.DeliveryProcessing, Count: 1},
	}
	if !slices.Equal(totals, wantTotals) {
		t.Errorf("CountDeliveriesReceived = %+v, want %+v", totals, wantTotals)
	}

	perMinute, err := s.CountDeliveriesPerMinute(ctx, epoch)
	must(t, err)
	wantPerMinute := []store.DeliveryCount{
		{ConnectionID: "gh", Status: store.DeliveryFailed, Minute: minute.Add(time.Minute), Count: 1},
		{ConnectionID: "gh", Status: store.DeliveryProcessing, Minute: minute, Count: 2},
		{ConnectionID: "gh", Status: store.DeliveryProcessing, Minute: minute.Add(time.Minute), Count: 1},
		{ConnectionID: "gl", Status: store.DeliveryProcessing, Minute: minute, Count: 1},
	}
	if len(perMinute) != len(wantPerMinute) {
		t.Fatalf("CountDeliveriesPerMinute = %+v, want %+v", perMinute, wantPerMinute)
	}
	for i := range perMinute {
		got, want := perMinute[i], wantPerMinute[i]
		if got.ConnectionID != want.ConnectionID || got.Status != want.Status || !got.Minute.Equal(want.Minute) || got.Count != want.Count {
			t.Errorf("CountDeliveriesPerMinute[%d] = %+v, want %+v", i, got, want)
		}
	}
}

func testDeliveryBacklogs(t *testing.T, s store.Store) {
	ctx := context.Background()
	none, err := s.DeliveryBacklogs(ctx)
	must(t, err)
	if len(none) != 0 {
		t.Fatalf("empty inbox backlogs = %+v", none)
	}
	var ds []store.Delivery
	for i, conn := range []string{"gh", "gh", "gh", "gl"} {
		d := newDelivery(string(rune('a' + i)))
		d.ConnectionID, d.ReceivedAt = conn, epoch.Add(time.Duration(i)*time.Minute)
		ds = append(ds, d)
	}
	_, err = s.InsertDeliveries(ctx, ds)
	must(t, err)
	// Every delivery is claimed (processing); then c and d finish and c
	// is replayed: gh holds a and b processing and c queued, gl nothing
	// pending.
	claimed, err := s.ClaimDeliveries(ctx, "w1", epoch.Add(time.Hour), time.Minute, 10)
	must(t, err)
	if len(claimed) != 4 {
		t.Fatalf("claimed %d deliveries, want 4", len(claimed))
	}
	for _, d := range claimed[2:] {
		d.Status = store.DeliverySucceeded
		done := epoch.Add(time.Hour)
		d.ProcessedAt = &done
		must(t, s.FinishDelivery(ctx, d, "w1"))
	}
	if _, requeued, err := s.RequeueDelivery(ctx, claimed[2].ID, epoch.Add(time.Hour)); err != nil || !requeued {
		t.Fatalf("requeue c: requeued %v, err %v", requeued, err)
	}

	got, err := s.DeliveryBacklogs(ctx)
	must(t, err)
	want := []store.ConnectionBacklog{{ConnectionID: "gh", Pending: 3, OldestQueuedAt: epoch.Add(2 * time.Minute)}}
	if len(got) != 1 || got[0].ConnectionID != want[0].ConnectionID || got[0].Pending != want[0].Pending ||
		!got[0].OldestQueuedAt.Equal(want[0].OldestQueuedAt) {
		t.Errorf("DeliveryBacklogs = %+v, want %+v", got, want)
	}
}
