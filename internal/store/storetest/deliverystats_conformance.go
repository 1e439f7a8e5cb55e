package storetest

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/trackergateway/gateway/internal/store"
)

var deliveryStatsTests = []contractTest{
	{name: "counts per status and the oldest queued delivery", fn: testDeliveryStats},
}

func testDeliveryStats(t *testing.T, s store.Store) {
	ctx := context.Background()
	empty, err := s.DeliveryStats(ctx)
	must(t, err)
	if len(empty.ByStatus) != 0 || !empty.OldestQueuedAt.IsZero() {
		t.Fatalf("empty inbox stats = %+v", empty)
	}
	var ds []store.Delivery
	for i, key := range []string{"a", "b", "c", "d", "e", "f", "g", "h", "i"} {
		ds = append(ds, store.Delivery{ConnectionID: "gh", Provider: "github", Event: "issues", DeliveryKey: key,
			Headers: `{}`, Body: []byte(`{}`), ReceivedAt: epoch.Add(time.Duration(i) * time.Minute)})
	}
	_, err = s.InsertDeliveries(ctx, ds)
	must(t, err)
	// Oldest first, each is claimed and finished with the next status;
	// then one more stays processing, and the two newest stay queued.
	at := epoch.Add(time.Hour)
	for _, status := range []string{store.DeliverySucceeded, store.DeliverySucceeded, store.DeliveryFailed,
		store.DeliveryIgnored, store.DeliverySuppressed, store.DeliveryRetrying} {
		claimed, err := s.ClaimDeliveries(ctx, "w1", at, time.Minute, 1)
		must(t, err)
		if len(claimed) != 1 {
			t.Fatalf("claimed %d deliveries, want 1", len(claimed))
		}
		d := claimed[0]
		d.Status = status
		if store.IsFinished(status) {
			d.ProcessedAt = &at
		} else {
			d.NextAttemptAt = at.Add(time.Hour) // not due again in this test
		}
		must(t, s.FinishDelivery(ctx, d, "w1"))
	}
	processing, err := s.ClaimDeliveries(ctx, "w1", at, time.Minute, 1)
	must(t, err)
	if len(processing) != 1 {
		t.Fatalf("claimed %d deliveries, want 1", len(processing))
	}

	got, err := s.DeliveryStats(ctx)
	must(t, err)
	want := map[string]int64{store.DeliverySucceeded: 2, store.DeliveryFailed: 1, store.DeliveryIgnored: 1,
		store.DeliverySuppressed: 1, store.DeliveryRetrying: 1, store.DeliveryProcessing: 1, store.DeliveryQueued: 2}
	if !maps.Equal(got.ByStatus, want) {
		t.Errorf("ByStatus = %v, want %v", got.ByStatus, want)
	}
	if want := epoch.Add(7 * time.Minute); !got.OldestQueuedAt.Equal(want) {
		t.Errorf("OldestQueuedAt = %v, want %v", got.OldestQueuedAt, want)
	}
}
