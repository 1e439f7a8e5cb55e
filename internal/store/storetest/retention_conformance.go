package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/trackergateway/gateway/internal/store"
)

var retentionTests = []contractTest{
	{name: "expired finished deliveries are counted and deleted, pending ones never", fn: testExpiredDeliveries},
	{name: "a delivery requeued since it finished is not deleted", fn: testExpiredDeliveryRequeued},
	{name: "events every consumer has read are counted and deleted", fn: testReadTaskEvents},
	{name: "job leases exclude, renew and expire", fn: testJobLeases},
}

// finishedAt stores a delivery and finishes it with status at the given
// time (the time retention measures from).
func finishedAt(t testing.TB, s store.Store, key, status string, at time.Time) string {
	t.Helper()
	ctx := context.Background()
	d := newDelivery(key)
	d.ReceivedAt = at.Add(-time.Second)
	id := insertDelivery(t, s, d)
	claimed, err := s.ClaimDeliveries(ctx, "w-"+key, at, time.Minute, 1)
	must(t, err)
	if len(claimed) != 1 || claimed[0].ID != id {
		t.Fatalf("claimed %+v, want delivery %s", claimed, id)
	}
	c := claimed[0]
	c.Status, c.ProcessedAt, c.NextAttemptAt = status, &at, at
	must(t, s.FinishDelivery(ctx, c, "w-"+key))
	return id
}

func testExpiredDeliveries(t *testing.T, s store.Store) {
	ctx := context.Background()
	old, recent := epoch, epoch.Add(time.Hour)
	ids := map[string]string{}
	for _, st := range store.FinishedStatuses {
		ids["old-"+st] = finishedAt(t, s, "old-"+st, st, old)
		ids["recent-"+st] = finishedAt(t, s, "recent-"+st, st, recent)
	}
	// Pending deliveries, however old: made after the finished ones, so
	// the claims above did not take them.
	for _, st := range []string{store.DeliveryRetrying, store.DeliveryProcessing, store.DeliveryQueued} {
		ids[st] = deliveryIn(t, s, "pending-"+st, st)
	}
	cutoff := epoch.Add(time.Minute)
	tests := []struct {
		name     string
		statuses []string
		before   time.Time
		want     int64
	}{
		{"processed before the cutoff", store.ProcessedStatuses, cutoff, 3},
		{"failed before the cutoff", store.FailedStatuses, cutoff, 1},
		{"processed before all of them", store.ProcessedStatuses, recent.Add(time.Second), 6},
		{"nothing finished before the oldest", store.ProcessedStatuses, old, 0},
	}
	for _, tc := range tests {
		n, err := s.CountExpiredDeliveries(ctx, tc.statuses, tc.before)
		if err != nil || n != tc.want {
			t.Errorf("%s: count = %d, %v; want %d", tc.name, n, err, tc.want)
		}
	}
	for _, st := range []string{store.DeliveryQueued, store.DeliveryProcessing, store.DeliveryRetrying} {
		if _, err := s.CountExpiredDeliveries(ctx, []string{st}, recent.Add(24*time.Hour)); err == nil {
			t.Errorf("count of expired %s deliveries: no error, want a refusal", st)
		}
		if _, err := s.DeleteExpiredDeliveries(ctx, []string{st}, recent.Add(24*time.Hour), 10); err == nil {
			t.Errorf("delete of expired %s deliveries: no error, want a refusal", st)
		}
	}

	// In batches: at most limit rows a call.
	n, err := s.DeleteExpiredDeliveries(ctx, store.ProcessedStatuses, cutoff, 2)
	must(t, err)
	if n != 2 {
		t.Errorf("first batch deleted %d, want 2", n)
	}
	n, err = s.DeleteExpiredDeliveries(ctx, store.ProcessedStatuses, cutoff, 2)
	must(t, err)
	if n != 1 {
		t.Errorf("second batch deleted %d, want 1", n)
	}
	n, err = s.DeleteExpiredDeliveries(ctx, store.FailedStatuses, cutoff, 10)
	must(t, err)
	if n != 1 {
		t.Errorf("failed batch deleted %d, want 1", n)
	}
	for key, id := range ids {
		_, err := s.GetDelivery(ctx, id)
		gone := errors.Is(err, store.ErrNotFound)
		if wantGone := key[:4] == "old-"; gone != wantGone {
			t.Errorf("delivery %s: deleted = %v (err %v), want %v", key, gone, err, wantGone)
		}
	}
}

func testExpiredDeliveryRequeued(t *testing.T, s store.Store) {
	ctx := context.Background()
	id := finishedAt(t, s, "replayed", store.DeliverySucceeded, epoch)
	_, requeued, err := s.RequeueDelivery(ctx, id, epoch.Add(time.Hour))
	must(t, err)
	if !requeued {
		t.Fatal("succeeded delivery not requeued")
	}
	n, err := s.DeleteExpiredDeliveries(ctx, store.ProcessedStatuses, epoch.Add(24*time.Hour), 10)
	must(t, err)
	if n != 0 {
		t.Errorf("deleted %d deliveries, want the requeued one kept", n)
	}
	if d, err := s.GetDelivery(ctx, id); err != nil || d.Status != store.DeliveryQueued {
		t.Errorf("requeued delivery = %+v, %v; want it queued", d, err)
	}
}

func testReadTaskEvents(t *testing.T, s store.Store) {
	ctx := context.Background()
	var ids []int64
	for i := range 4 {
		err := s.InTx(ctx, func(tx store.Queries) error {
			id, err := tx.AppendTaskEvent(ctx, store.TaskEvent{WorkspaceID: "ws", TaskID: uuid.NewString(), Revision: 1,
				Type: store.EventTaskCreated, Payload: `{}`, CreatedAt: epoch.Add(time.Duration(i) * time.Minute)})
			ids = append(ids, id)
			return err
		})
		must(t, err)
	}
	consumers := []string{"a", "b"}
	late := epoch.Add(time.Hour)
	count := func(name string, consumers []string, before time.Time, want int64) {
		t.Helper()
		if n, err := s.CountReadTaskEvents(ctx, consumers, before); err != nil || n != want {
			t.Errorf("%s: count = %d, %v; want %d", name, n, err, want)
		}
	}
	count("no cursor at all", consumers, late, 0)
	count("no consumer known", nil, late, 0)
	must(t, s.SaveOutboxCursor(ctx, "a", ids[3], epoch))
	count("b has not read anything", consumers, late, 0)
	must(t, s.SaveOutboxCursor(ctx, "b", ids[2], epoch))
	count("below both cursors", consumers, late, 3)
	count("below both cursors and older than the second", consumers, epoch.Add(time.Minute), 1)
	must(t, s.SaveOutboxCursor(ctx, "other", ids[1], epoch))
	count("below a consumer not named too", consumers, late, 2)
	count("a consumer without a cursor named", append(consumers, "new"), late, 0)

	n, err := s.DeleteReadTaskEvents(ctx, append(consumers, "new"), late, 10)
	must(t, err)
	if n != 0 {
		t.Errorf("deleted %d events a consumer has not read", n)
	}
	n, err = s.DeleteReadTaskEvents(ctx, consumers, late, 1)
	must(t, err)
	if n != 1 {
		t.Errorf("first batch deleted %d, want 1", n)
	}
	n, err = s.DeleteReadTaskEvents(ctx, consumers, late, 10)
	must(t, err)
	if n != 1 {
		t.Errorf("second batch deleted %d, want 1", n)
	}
	left, err := s.ReadTaskEvents(ctx, 0, 10)
	must(t, err)
	if len(left) != 2 || left[0].ID != ids[2] || left[1].ID != ids[3] {
		t.Errorf("events left = %+v, want the two above the lowest cursor (%d, %d)", left, ids[2], ids[3])
	}
}

func testJobLeases(t *testing.T, s store.Store) {
	ctx := context.Background()
	steps := []struct {
		name    string
		owner   string
		now     time.Duration // after epoch
		release bool
		want    bool
	}{
		{"first taker", "o1", 0, false, true},
		{"held by another", "o2", time.Second, false, false},
		{"renewed by its holder", "o1", 50 * time.Second, false, true},
		{"still held after the first expiry, as renewed", "o2", 70 * time.Second, false, false},
		{"taken over once expired", "o2", 200 * time.Second, false, true},
		{"a former holder's release does nothing", "o1", 201 * time.Second, true, false},
		{"so its holder still has it", "o1", 201 * time.Second, false, false},
		{"released by its holder", "o2", 202 * time.Second, true, false},
		{"free again", "o1", 203 * time.Second, false, true},
	}
	for _, st := range steps {
		now := epoch.Add(st.now)
		if st.release {
			must(t, s.ReleaseJobLease(ctx, "prune", st.owner))
			continue
		}
		ok, err := s.AcquireJobLease(ctx, "prune", st.owner, now, now.Add(time.Minute))
		must(t, err)
		if ok != st.want {
			t.Errorf("%s: acquired = %v, want %v", st.name, ok, st.want)
		}
	}
	ok, err := s.AcquireJobLease(ctx, "other", "o2", epoch, epoch.Add(time.Minute))
	must(t, err)
	if !ok {
		t.Error("a lease of another name is independent")
	}
}
