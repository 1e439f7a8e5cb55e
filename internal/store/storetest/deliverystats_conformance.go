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
	for i, key := range []string{"a", "b", "c"} {
		ds = append(ds, store.Delivery{ConnectionID: "gh", Provider: "github", Event: "issues", DeliveryKey: key,
			Headers: `{}`, Body: []byte(`{}`), ReceivedAt: epoch.Add(time.Duration(i) * time.Minute)})
	}
	_, err = s.InsertDeliveries(ctx, ds)
	must(t, err)
	// The oldest (received first) is claimed and finished: the oldest
	// queued one is then the second.
	claimed, err := s.ClaimDeliveries(ctx, "w1", epoch.Add(time.Hour), time.Minute, 1)
	must(t, err)
	if len(claimed) != 1 {
		t.Fatalf("claimed %d deliveries, want 1", len(claimed))
	}
	done := claimed[0]
	done.Status = store.DeliverySucceeded
	at := epoch.Add(time.Hour)
	done.ProcessedAt = &at
	must(t, s.FinishDelivery(ctx, done, "w1"))

	got, err := s.DeliveryStats(ctx)
	must(t, err)
	want := map[string]int64{store.DeliveryQueued: 2, store.DeliverySucceeded: 1}
	if !maps.Equal(got.ByStatus, want) {
		t.Errorf("ByStatus = %v, want %v", got.ByStatus, want)
	}
	if !got.OldestQueuedAt.Equal(epoch.Add(time.Minute)) {
		t.Errorf("OldestQueuedAt = %v, want %v", got.OldestQueuedAt, epoch.Add(time.Minute))
	}
}
