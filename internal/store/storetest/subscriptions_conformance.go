package storetest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/trackergateway/gateway/internal/store"
)

var subscriptionTests = []contractTest{
	{name: "subscriptions are stored, listed, updated and deleted with their deliveries", fn: testSubscriptionCRUD},
	{name: "a new subscription is owed only the events committed after it", fn: testSubscriptionPosition},
	{name: "fan-out writes each owed event once, for its workspace and types", fn: testFanOut},
	{name: "a disabled subscription keeps its position and resumes from it", fn: testFanOutDisabled},
	{name: "a task's later event waits for its earlier one; other tasks flow", fn: testOutboundTaskOrder},
	{name: "claims lease deliveries, count attempts and take an abandoned one over", fn: testOutboundClaimLease},
	{name: "a fan-out leases the first deliveries it makes due to its owner, as a claim would", fn: testFanOutLeases},
	{name: "finished attempts start and end a failing run and disable a subscription", fn: testSubscriptionHealth},
	{name: "disabling parks the deliveries, enabling makes each task's first due", fn: testParkResume},
	{name: "replay sends a finished event again, skips an owed one, sends one never sent", fn: testOutboundReplay},
	{name: "lags, and deliveries whose event retention removed", fn: testOutboundLagsAndOrphans},
	{name: "retention keeps the events an enabled subscription owes", fn: testRetentionKeepsOwedEvents},
	{name: "a commit that appended an event notifies the events channel", fn: testEventsNotify},
}

// appendEvent commits one outbox event of task in workspace ws at at.
func appendEvent(t testing.TB, s store.Store, ws, task, typ string, rev int64, at time.Time) int64 {
	t.Helper()
	id, err := s.AppendTaskEvent(context.Background(), store.TaskEvent{WorkspaceID: ws, TaskID: task, Revision: rev,
		Type: typ, Payload: `{"n":1}`, CreatedAt: at})
	must(t, err)
	return id
}

func newSubscription(id, ws string, types ...string) store.Subscription {
	return store.Subscription{ID: id, WorkspaceID: ws, URL: "https://example.com/hook/" + id, Types: types,
		Enabled: true, Secret: "whsec_c2VjcmV0", CreatedAt: epoch, UpdatedAt: epoch}
}

func insertSubscription(t testing.TB, s store.Store, sub store.Subscription) store.Subscription {
	t.Helper()
	must(t, s.InsertSubscription(context.Background(), sub))
	got, err := s.GetSubscription(context.Background(), sub.ID)
	must(t, err)
	return got
}

// fanOut runs the fan-out until it reads nothing more.
func fanOut(t testing.TB, s store.Store, now time.Time) int {
	t.Helper()
	total := 0
	for range 100 {
		res, err := s.FanOutEvents(context.Background(), store.FanOut{Now: now, Limit: 2})
		must(t, err)
		total += res.Inserted
		if res.Events == 0 {
			return total
		}
	}
	t.Fatal("fan-out never ran dry")
	return 0
}

// deliveriesOf lists a subscription's deliveries, oldest event first.
func deliveriesOf(t testing.TB, s store.Store, sub string) []store.OutboundDelivery {
	t.Helper()
	ds, err := s.ListOutboundDeliveries(context.Background(), store.OutboundDeliveryPage{SubscriptionID: sub, Limit: 1000})
	must(t, err)
	slices.Reverse(ds)
	return ds
}

func eventIDs(ds []store.OutboundDelivery) []int64 {
	out := make([]int64, len(ds))
	for i, d := range ds {
		out[i] = d.EventID
	}
	return out
}

func claim(t testing.TB, s store.Store, owner string, now time.Time, limit int) []store.OutboundDelivery {
	t.Helper()
	ds, err := s.ClaimOutboundDeliveries(context.Background(), owner, now, time.Minute, limit)
	must(t, err)
	return ds
}

// finish records ds as ended with status at now.
func finish(t testing.TB, s store.Store, owner string, now time.Time, status string, ds ...store.OutboundDelivery) store.OutboundFinishResult {
	t.Helper()
	for i := range ds {
		ds[i].Status = status
		ds[i].LastAttemptAt = &now
		ds[i].NextAttemptAt = now.Add(time.Hour)
		if store.OutboundFinished(status) {
			ds[i].FinishedAt = &now
			ds[i].NextAttemptAt = now
		}
	}
	res, err := s.FinishOutboundDeliveries(context.Background(), store.OutboundFinish{Owner: owner, Deliveries: ds, Now: now})
	must(t, err)
	return res
}

func testSubscriptionCRUD(t *testing.T, s store.Store) {
	ctx := context.Background()
	a := newSubscription("sub_a", "ws", "task.created", "task.deleted")
	a.Description = "chat bot"
	got := insertSubscription(t, s, a)
	if got.URL != a.URL || !slices.Equal(got.Types, a.Types) || got.Description != "chat bot" || !got.Enabled ||
		got.Secret != a.Secret || got.PreviousSecret != "" || got.PreviousSecretExpiresAt != nil || !got.CreatedAt.Equal(epoch) {
		t.Errorf("stored subscription = %+v, want %+v", got, a)
	}
	insertSubscription(t, s, newSubscription("sub_b", "other"))
	if err := s.InsertSubscription(ctx, newSubscription("sub_a", "ws")); !errors.Is(err, store.ErrConstraint) {
		t.Errorf("insert of an existing id = %v, want ErrConstraint", err)
	}
	for _, tc := range []struct {
		ws   string
		want []string
	}{{"ws", []string{"sub_a"}}, {"", []string{"sub_a", "sub_b"}}, {"none", nil}} {
		subs, err := s.ListSubscriptions(ctx, tc.ws)
		must(t, err)
		var ids []string
		for _, sub := range subs {
			ids = append(ids, sub.ID)
		}
		if !slices.Equal(ids, tc.want) {
			t.Errorf("list %q = %v, want %v", tc.ws, ids, tc.want)
		}
	}

	later := epoch.Add(time.Hour)
	got.URL, got.Types, got.Enabled, got.DisabledReason = "https://example.org/x", nil, false, "answered 410 Gone"
	got.PreviousSecret, got.PreviousSecretExpiresAt, got.Secret = got.Secret, &later, "whsec_bmV3"
	got.FailingSince, got.UpdatedAt = &later, later
	must(t, s.UpdateSubscription(ctx, got))
	again, err := s.GetSubscription(ctx, "sub_a")
	must(t, err)
	if again.URL != got.URL || again.Types != nil || again.Enabled || again.DisabledReason != got.DisabledReason ||
		again.PreviousSecret != "whsec_c2VjcmV0" || !again.PreviousSecretExpiresAt.Equal(later) || again.Secret != "whsec_bmV3" ||
		!again.FailingSince.Equal(later) || !again.UpdatedAt.Equal(later) {
		t.Errorf("updated subscription = %+v, want %+v", again, got)
	}
	locked := store.Subscription{}
	must(t, s.InTx(ctx, func(tx store.Queries) error {
		locked, err = tx.LockSubscription(ctx, "sub_a")
		return err
	}))
	if locked.ID != "sub_a" {
		t.Errorf("locked %+v", locked)
	}

	// Deleting removes its deliveries too.
	insertSubscription(t, s, newSubscription("sub_c", "ws"))
	appendEvent(t, s, "ws", uuid.NewString(), store.EventTaskCreated, 1, epoch)
	if n := fanOut(t, s, epoch); n != 1 {
		t.Fatalf("fan-out wrote %d deliveries, want 1 (sub_c)", n)
	}
	must(t, s.DeleteSubscription(ctx, "sub_c"))
	if ds := deliveriesOf(t, s, "sub_c"); len(ds) != 0 {
		t.Errorf("deliveries of a deleted subscription: %+v", ds)
	}
	for name, err := range map[string]error{
		"get":    func() error { _, err := s.GetSubscription(ctx, "sub_c"); return err }(),
		"update": s.UpdateSubscription(ctx, newSubscription("sub_c", "ws")),
		"delete": s.DeleteSubscription(ctx, "sub_c"),
	} {
		if !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s of a deleted subscription = %v, want ErrNotFound", name, err)
		}
	}
}

func testSubscriptionPosition(t *testing.T, s store.Store) {
	task := uuid.NewString()
	before := appendEvent(t, s, "ws", task, store.EventTaskCreated, 1, epoch)
	sub := insertSubscription(t, s, newSubscription("sub_a", "ws"))
	if sub.Position != before {
		t.Errorf("position = %d, want the newest event %d", sub.Position, before)
	}
	after := appendEvent(t, s, "ws", task, store.EventTaskUpdated, 2, epoch)
	fanOut(t, s, epoch)
	if got := eventIDs(deliveriesOf(t, s, "sub_a")); !slices.Equal(got, []int64{after}) {
		t.Errorf("deliveries = %v, want only the event after the subscription (%d)", got, after)
	}
	evs, err := s.OutboundEvents(context.Background(), []int64{after, before, after + 100})
	must(t, err)
	if len(evs) != 2 || evs[0].ID != before || evs[1].ID != after || evs[1].TaskID != task || evs[1].Revision != 2 ||
		evs[1].Type != store.EventTaskUpdated || evs[1].Payload != `{"n":1}` || evs[1].WorkspaceID != "ws" || !evs[1].CreatedAt.Equal(epoch) {
		t.Errorf("events read by id = %+v, want the two that exist, in id order", evs)
	}
}

func testFanOut(t *testing.T, s store.Store) {
	ctx := context.Background()
	insertSubscription(t, s, newSubscription("sub_all", "ws"))
	insertSubscription(t, s, newSubscription("sub_created", "ws", store.EventTaskCreated))
	insertSubscription(t, s, newSubscription("sub_other", "other"))
	var created, updated []int64
	for i := range 3 {
		task := uuid.NewString()
		created = append(created, appendEvent(t, s, "ws", task, store.EventTaskCreated, 1, epoch.Add(time.Duration(i)*time.Second)))
		updated = append(updated, appendEvent(t, s, "ws", task, store.EventTaskUpdated, 2, epoch.Add(time.Duration(i)*time.Second)))
	}
	elsewhere := appendEvent(t, s, "other", uuid.NewString(), store.EventTaskCreated, 1, epoch)
	if n := fanOut(t, s, epoch); n != 6+3+1 {
		t.Errorf("fan-out wrote %d deliveries, want 10", n)
	}
	if n := fanOut(t, s, epoch); n != 0 {
		t.Errorf("a second fan-out wrote %d deliveries, want none", n)
	}
	all := append(slices.Clone(created), updated...)
	slices.Sort(all)
	for sub, want := range map[string][]int64{"sub_all": all, "sub_created": created, "sub_other": {elsewhere}} {
		ds := deliveriesOf(t, s, sub)
		if got := eventIDs(ds); !slices.Equal(got, want) {
			t.Errorf("%s deliveries = %v, want %v", sub, got, want)
		}
		for _, d := range ds {
			if d.Status != store.OutboundPending || d.Attempts != 0 || d.TaskID == "" || d.EventType == "" || d.EventAt.IsZero() {
				t.Errorf("%s delivery = %+v, want pending with its task, type and time", sub, d)
			}
		}
	}
	sub, err := s.GetSubscription(ctx, "sub_created")
	must(t, err)
	if sub.Position != elsewhere {
		t.Errorf("position = %d, want past the last event read (%d)", sub.Position, elsewhere)
	}
}

func testFanOutDisabled(t *testing.T, s store.Store) {
	ctx := context.Background()
	sub := insertSubscription(t, s, newSubscription("sub_a", "ws"))
	insertSubscription(t, s, newSubscription("sub_b", "ws"))
	first := appendEvent(t, s, "ws", uuid.NewString(), store.EventTaskCreated, 1, epoch)
	fanOut(t, s, epoch)
	sub.Position = first
	sub.Enabled = false
	must(t, s.UpdateSubscription(ctx, sub))
	var missed []int64
	for range 3 {
		missed = append(missed, appendEvent(t, s, "ws", uuid.NewString(), store.EventTaskCreated, 1, epoch))
	}
	fanOut(t, s, epoch)
	if got := eventIDs(deliveriesOf(t, s, "sub_a")); !slices.Equal(got, []int64{first}) {
		t.Errorf("a disabled subscription was owed %v, want only %d", got, first)
	}
	if got, err := s.GetSubscription(ctx, "sub_a"); err != nil || got.Position != first {
		t.Errorf("disabled subscription's position = %d, %v; want %d where it stopped", got.Position, err, first)
	}
	sub.Enabled = true
	must(t, s.UpdateSubscription(ctx, sub))
	fanOut(t, s, epoch)
	if got := eventIDs(deliveriesOf(t, s, "sub_a")); !slices.Equal(got, append([]int64{first}, missed...)) {
		t.Errorf("after enabling: deliveries %v, want %d then the missed %v", got, first, missed)
	}
	if got := eventIDs(deliveriesOf(t, s, "sub_b")); len(got) != 4 {
		t.Errorf("the enabled subscription got %v, want all four once", got)
	}
}

func testOutboundTaskOrder(t *testing.T, s store.Store) {
	insertSubscription(t, s, newSubscription("sub_a", "ws"))
	slow, fast := uuid.NewString(), uuid.NewString()
	s1 := appendEvent(t, s, "ws", slow, store.EventTaskCreated, 1, epoch)
	f1 := appendEvent(t, s, "ws", fast, store.EventTaskCreated, 1, epoch)
	s2 := appendEvent(t, s, "ws", slow, store.EventTaskUpdated, 2, epoch)
	f2 := appendEvent(t, s, "ws", fast, store.EventTaskUpdated, 2, epoch)
	fanOut(t, s, epoch)
	for _, d := range deliveriesOf(t, s, "sub_a") {
		parked := d.EventID == s2 || d.EventID == f2
		if parked != d.NextAttemptAt.Equal(store.OutboundParked) {
			t.Errorf("delivery of event %d next attempt %v; parked = %t expected", d.EventID, d.NextAttemptAt, parked)
		}
	}
	now := epoch.Add(time.Second)
	got := claim(t, s, "w1", now, 10)
	if ids := eventIDs(got); !slices.Equal(ids, []int64{s1, f1}) {
		t.Fatalf("first claim = %v, want the first event of each task %v", ids, []int64{s1, f1})
	}
	// The slow task's first event fails and will be retried; the fast
	// task's succeeds, and its next event goes while the slow one waits.
	if res := finish(t, s, "w1", now, store.OutboundRetrying, got[0]); res.Released != 0 {
		t.Errorf("a retried delivery released %d, want none", res.Released)
	}
	if res := finish(t, s, "w1", now, store.OutboundSucceeded, got[1]); res.Released != 1 {
		t.Errorf("a succeeded delivery released %d, want its task's next event", res.Released)
	}
	next := claim(t, s, "w1", now, 10)
	if ids := eventIDs(next); !slices.Equal(ids, []int64{f2}) {
		t.Fatalf("second claim = %v, want only the fast task's next event %d", ids, f2)
	}
	finish(t, s, "w1", now, store.OutboundSucceeded, next...)
	// Due again, the slow task's first event goes before its second.
	later := now.Add(2 * time.Hour)
	retry := claim(t, s, "w1", later, 10)
	if ids := eventIDs(retry); !slices.Equal(ids, []int64{s1}) {
		t.Fatalf("claim after the retry is due = %v, want %d alone", ids, s1)
	}
	if retry[0].Attempts != 2 {
		t.Errorf("attempts = %d, want 2", retry[0].Attempts)
	}
	finish(t, s, "w1", later, store.OutboundFailed, retry...) // failed for good
	last := claim(t, s, "w1", later, 10)
	if ids := eventIDs(last); !slices.Equal(ids, []int64{s2}) {
		t.Fatalf("claim after the earlier event failed for good = %v, want %d", ids, s2)
	}
	finish(t, s, "w1", later, store.OutboundRetrying, last...)

	// The slow task's first event replayed: due at once beside its later
	// one (whose retry is due too), it goes alone, the later one after it.
	res, err := s.ReplayOutboundDeliveries(context.Background(), store.OutboundReplay{SubscriptionID: "sub_a", EventID: s1, Now: later})
	if err != nil || res.Replayed != 1 {
		t.Fatalf("replay = %+v, %v", res, err)
	}
	again := later.Add(2 * time.Hour)
	replayed := claim(t, s, "w1", again, 10)
	if ids := eventIDs(replayed); !slices.Equal(ids, []int64{s1}) {
		t.Fatalf("claim after a replay = %v, want the replayed %d alone", ids, s1)
	}
	finish(t, s, "w1", again, store.OutboundSucceeded, replayed...)
	if ids := eventIDs(claim(t, s, "w1", again, 10)); !slices.Equal(ids, []int64{s2}) {
		t.Errorf("claim after the replayed event succeeded = %v, want %d", ids, s2)
	}
}

func testOutboundClaimLease(t *testing.T, s store.Store) {
	insertSubscription(t, s, newSubscription("sub_a", "ws"))
	ev := appendEvent(t, s, "ws", uuid.NewString(), store.EventTaskCreated, 1, epoch)
	fanOut(t, s, epoch)
	got := claim(t, s, "w1", epoch, 10)
	if len(got) != 1 || got[0].EventID != ev || got[0].Attempts != 1 || got[0].LeaseOwner != "w1" ||
		!got[0].LeaseExpiresAt.Equal(epoch.Add(time.Minute)) || !got[0].NextAttemptAt.Equal(epoch.Add(time.Minute)) {
		t.Fatalf("claim = %+v, want event %d leased to w1 for a minute, attempt 1", got, ev)
	}
	if again := claim(t, s, "w2", epoch.Add(30*time.Second), 10); len(again) != 0 {
		t.Errorf("a leased delivery was claimed again: %+v", again)
	}
	due, err := s.NextOutboundDue(context.Background())
	must(t, err)
	if !due.Equal(epoch.Add(time.Minute)) {
		t.Errorf("next due = %v, want the lease's expiry", due)
	}
	// w1 dies; once the lease expires w2 takes the delivery over, and w1's
	// late finish is refused.
	taken := claim(t, s, "w2", epoch.Add(2*time.Minute), 10)
	if len(taken) != 1 || taken[0].Attempts != 2 || taken[0].LeaseOwner != "w2" {
		t.Fatalf("claim after the lease expired = %+v, want it taken by w2, attempt 2", taken)
	}
	if res := finish(t, s, "w1", epoch.Add(2*time.Minute), store.OutboundSucceeded, got[0]); !res.Lost[0] {
		t.Error("a finish by the owner whose lease expired was recorded")
	}
	at := epoch.Add(3 * time.Minute)
	taken[0].LastStatusCode, taken[0].LastError = 500, "answered 500"
	if res := finish(t, s, "w2", at, store.OutboundRetrying, taken[0]); res.Lost[0] {
		t.Error("the finish of the lease holder was refused")
	}
	d := deliveriesOf(t, s, "sub_a")[0]
	if d.Status != store.OutboundRetrying || d.Attempts != 2 || d.LastStatusCode != 500 || d.LastError != "answered 500" ||
		d.LeaseOwner != "" || d.LeaseExpiresAt != nil || !d.NextAttemptAt.Equal(at.Add(time.Hour)) || !d.LastAttemptAt.Equal(at) {
		t.Errorf("delivery after a failed attempt = %+v", d)
	}
	due, err = s.NextOutboundDue(context.Background())
	must(t, err)
	if !due.Equal(at.Add(time.Hour)) {
		t.Errorf("next due = %v, want the retry %v", due, at.Add(time.Hour))
	}
}

func testFanOutLeases(t *testing.T, s store.Store) {
	ctx := context.Background()
	insertSubscription(t, s, newSubscription("sub_a", "ws"))
	busy, first, second := uuid.NewString(), uuid.NewString(), uuid.NewString()
	owing := appendEvent(t, s, "ws", busy, store.EventTaskCreated, 1, epoch)
	fanOut(t, s, epoch)
	// busy owes its first event; first and second are new, first twice.
	behind := appendEvent(t, s, "ws", busy, store.EventTaskUpdated, 2, epoch)
	a := appendEvent(t, s, "ws", first, store.EventTaskCreated, 1, epoch)
	a2 := appendEvent(t, s, "ws", first, store.EventTaskUpdated, 2, epoch)
	b := appendEvent(t, s, "ws", second, store.EventTaskCreated, 1, epoch)
	// Two may be leased: the busy task's (parked: no lease) and the
	// first task's; the second task's is left due for a claim.
	res, err := s.FanOutEvents(ctx, store.FanOut{Now: epoch, Limit: 10, Owner: "w1", Lease: time.Minute, LeaseLimit: 2})
	must(t, err)
	if res.Events != 4 || res.Inserted != 4 || res.Due != 1 || len(res.Leased) != 1 {
		t.Fatalf("fan-out = %+v, want 4 events and deliveries, one leased, one due", res)
	}
	l := res.Leased[0]
	if l.EventID != a || l.SubscriptionID != "sub_a" || l.TaskID != first || l.EventType != store.EventTaskCreated ||
		l.Attempts != 1 || l.LeaseOwner != "w1" || l.LeaseExpiresAt == nil || !l.LeaseExpiresAt.Equal(epoch.Add(time.Minute)) {
		t.Errorf("leased = %+v, want event %d of the first task, attempt 1, leased to w1 for a minute", l, a)
	}
	stored := map[int64]store.OutboundDelivery{}
	for _, d := range deliveriesOf(t, s, "sub_a") {
		stored[d.EventID] = d
	}
	if d := stored[a]; d.LeaseOwner != "w1" || d.Attempts != 1 || !d.NextAttemptAt.Equal(epoch.Add(time.Minute)) {
		t.Errorf("stored leased delivery = %+v, want leased to w1, attempt 1, due again when the lease expires", d)
	}
	for _, ev := range []int64{behind, a2} {
		if d := stored[ev]; !d.NextAttemptAt.Equal(store.OutboundParked) || d.LeaseOwner != "" || d.Attempts != 0 {
			t.Errorf("delivery of event %d = %+v, want parked behind its task's earlier event, not leased", ev, d)
		}
	}
	// Another worker claims the due one, not the leased one.
	got := claim(t, s, "w2", epoch, 10)
	if ids := eventIDs(got); !slices.Equal(ids, []int64{owing, b}) {
		t.Errorf("claim = %v, want the first task's earlier event %d and the unleased %d", ids, owing, b)
	}
	// The lease is a claim's: finishing it lets the task's next event go.
	if res := finish(t, s, "w1", epoch, store.OutboundSucceeded, l); res.Lost[0] || res.Released != 1 {
		t.Errorf("finish of the fan-out's lease = %+v, want it recorded and the task's next event released", res)
	}
	if next := claim(t, s, "w2", epoch, 10); !slices.Equal(eventIDs(next), []int64{a2}) {
		t.Errorf("claim after the finish = %v, want [%d]", eventIDs(next), a2)
	}
	// Without an owner, nothing is leased.
	appendEvent(t, s, "ws", uuid.NewString(), store.EventTaskCreated, 1, epoch)
	res, err = s.FanOutEvents(ctx, store.FanOut{Now: epoch, Limit: 10, LeaseLimit: 5})
	must(t, err)
	if res.Inserted != 1 || res.Due != 1 || len(res.Leased) != 0 {
		t.Errorf("fan-out without an owner = %+v, want one due delivery and no lease", res)
	}
}

func testSubscriptionHealth(t *testing.T, s store.Store) {
	ctx := context.Background()
	insertSubscription(t, s, newSubscription("sub_a", "ws"))
	insertSubscription(t, s, newSubscription("sub_b", "ws"))
	record := func(at, disableBefore time.Time, hs ...store.SubscriptionHealth) []string {
		t.Helper()
		res, err := s.FinishOutboundDeliveries(ctx, store.OutboundFinish{Health: hs, Now: at,
			DisableBefore: disableBefore, FailingReason: "failing for too long"})
		must(t, err)
		return res.Disabled
	}
	failingSince := func(id string) *time.Time {
		t.Helper()
		sub, err := s.GetSubscription(ctx, id)
		must(t, err)
		return sub.FailingSince
	}
	record(epoch, time.Time{}, store.SubscriptionHealth{SubscriptionID: "sub_a", Failed: true})
	record(epoch.Add(time.Hour), time.Time{}, store.SubscriptionHealth{SubscriptionID: "sub_a", Failed: true})
	if f := failingSince("sub_a"); f == nil || !f.Equal(epoch) {
		t.Errorf("failing since = %v, want the first failure %v", f, epoch)
	}
	record(epoch.Add(2*time.Hour), time.Time{}, store.SubscriptionHealth{SubscriptionID: "sub_a", Succeeded: true})
	if f := failingSince("sub_a"); f != nil {
		t.Errorf("failing since = %v after a success, want none", f)
	}
	// Failing again, for longer than allowed: disabled with the reason.
	start := epoch.Add(3 * time.Hour)
	if d := record(start, start.Add(-time.Hour), store.SubscriptionHealth{SubscriptionID: "sub_a", Failed: true}); d != nil {
		t.Errorf("disabled %v at the first failure of a run", d)
	}
	end := start.Add(5 * 24 * time.Hour)
	if d := record(end, end.Add(-5*24*time.Hour+time.Second), store.SubscriptionHealth{SubscriptionID: "sub_a", Failed: true}); !slices.Equal(d, []string{"sub_a"}) {
		t.Errorf("disabled %v, want sub_a failing since before the bound", d)
	}
	sub, err := s.GetSubscription(ctx, "sub_a")
	must(t, err)
	if sub.Enabled || sub.DisabledReason != "failing for too long" {
		t.Errorf("subscription = enabled %t reason %q, want disabled for failing", sub.Enabled, sub.DisabledReason)
	}
	// A 410 disables at once.
	if d := record(end, time.Time{}, store.SubscriptionHealth{SubscriptionID: "sub_b", Failed: true, Disable: "answered 410 Gone"}); !slices.Equal(d, []string{"sub_b"}) {
		t.Errorf("disabled %v, want sub_b", d)
	}
	if sub, _ := s.GetSubscription(ctx, "sub_b"); sub.Enabled || sub.DisabledReason != "answered 410 Gone" {
		t.Errorf("sub_b = enabled %t reason %q after a 410", sub.Enabled, sub.DisabledReason)
	}
}

func testParkResume(t *testing.T, s store.Store) {
	ctx := context.Background()
	sub := insertSubscription(t, s, newSubscription("sub_a", "ws"))
	a, b := uuid.NewString(), uuid.NewString()
	a1 := appendEvent(t, s, "ws", a, store.EventTaskCreated, 1, epoch)
	a2 := appendEvent(t, s, "ws", a, store.EventTaskUpdated, 2, epoch)
	b1 := appendEvent(t, s, "ws", b, store.EventTaskCreated, 1, epoch)
	fanOut(t, s, epoch)
	must(t, s.InTx(ctx, func(tx store.Queries) error {
		sub.Enabled = false
		if err := tx.UpdateSubscription(ctx, sub); err != nil {
			return err
		}
		return tx.ParkSubscriptionDeliveries(ctx, sub.ID)
	}))
	if got := claim(t, s, "w", epoch.Add(time.Hour), 10); len(got) != 0 {
		t.Errorf("claimed %v of a disabled subscription", eventIDs(got))
	}
	if due, err := s.NextOutboundDue(ctx); err != nil || !due.IsZero() {
		t.Errorf("next due = %v, %v; want none while every delivery is parked", due, err)
	}
	now := epoch.Add(2 * time.Hour)
	must(t, s.InTx(ctx, func(tx store.Queries) error {
		sub.Enabled = true
		if err := tx.UpdateSubscription(ctx, sub); err != nil {
			return err
		}
		return tx.ResumeSubscription(ctx, sub.ID, now)
	}))
	got := claim(t, s, "w", now, 10)
	if ids := eventIDs(got); !slices.Equal(ids, []int64{a1, b1}) {
		t.Fatalf("claim after enabling = %v, want each task's first %v", ids, []int64{a1, b1})
	}
	finish(t, s, "w", now, store.OutboundSucceeded, got...)
	if ids := eventIDs(claim(t, s, "w", now, 10)); !slices.Equal(ids, []int64{a2}) {
		t.Errorf("next claim = %v, want %d", ids, a2)
	}
}

func testOutboundReplay(t *testing.T, s store.Store) {
	ctx := context.Background()
	insertSubscription(t, s, newSubscription("sub_a", "ws", store.EventTaskCreated))
	task := uuid.NewString()
	created := appendEvent(t, s, "ws", task, store.EventTaskCreated, 1, epoch)
	updated := appendEvent(t, s, "ws", task, store.EventTaskUpdated, 2, epoch.Add(time.Minute)) // not of its types
	second := appendEvent(t, s, "ws", uuid.NewString(), store.EventTaskCreated, 1, epoch.Add(2*time.Minute))
	elsewhere := appendEvent(t, s, "other", uuid.NewString(), store.EventTaskCreated, 1, epoch)
	fanOut(t, s, epoch)
	now := epoch.Add(time.Hour)
	got := claim(t, s, "w", now, 10)
	finish(t, s, "w", now, store.OutboundSucceeded, got[0]) // created; second stays in flight

	replay := func(r store.OutboundReplay) (store.OutboundReplayResult, error) {
		r.SubscriptionID, r.Now = "sub_a", now.Add(time.Minute)
		return s.ReplayOutboundDeliveries(ctx, r)
	}
	res, err := replay(store.OutboundReplay{EventID: created})
	if err != nil || res != (store.OutboundReplayResult{Replayed: 1}) {
		t.Errorf("replay of a delivered event = %+v, %v; want replayed", res, err)
	}
	d := deliveriesOf(t, s, "sub_a")[0]
	if d.EventID != created || d.Status != store.OutboundPending || d.Attempts != 0 || d.FinishedAt != nil || !d.NextAttemptAt.Equal(now.Add(time.Minute)) {
		t.Errorf("replayed delivery = %+v, want pending again, due now", d)
	}
	if res, err := replay(store.OutboundReplay{EventID: second}); err != nil || res != (store.OutboundReplayResult{Skipped: 1}) {
		t.Errorf("replay of an event in flight = %+v, %v; want skipped", res, err)
	}
	if res, err := replay(store.OutboundReplay{EventID: updated}); err != nil || res != (store.OutboundReplayResult{Replayed: 1}) {
		t.Errorf("replay of an event never sent to it = %+v, %v; want replayed (sent now)", res, err)
	}
	for name, id := range map[string]int64{"another workspace's event": elsewhere, "an unknown event": elsewhere + 100} {
		if _, err := replay(store.OutboundReplay{EventID: id}); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("replay of %s = %v, want ErrNotFound", name, err)
		}
	}
	if _, err := s.ReplayOutboundDeliveries(ctx, store.OutboundReplay{SubscriptionID: "nope", EventID: created, Now: now}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("replay on an unknown subscription = %v, want ErrNotFound", err)
	}

	// Since: the finished deliveries of events at or after it.
	ds := claim(t, s, "w", now.Add(2*time.Hour), 10)
	finish(t, s, "w", now.Add(2*time.Hour), store.OutboundFailed, ds...)
	res, err = replay(store.OutboundReplay{Since: epoch.Add(time.Minute)})
	if err != nil || res != (store.OutboundReplayResult{Replayed: 1, Skipped: 1}) {
		t.Errorf("replay since = %+v, %v; want the failed event after it replayed, the owed one skipped", res, err)
	}
}

func testOutboundLagsAndOrphans(t *testing.T, s store.Store) {
	ctx := context.Background()
	insertSubscription(t, s, newSubscription("sub_a", "ws"))
	old := appendEvent(t, s, "ws", uuid.NewString(), store.EventTaskCreated, 1, epoch)
	appendEvent(t, s, "ws", uuid.NewString(), store.EventTaskCreated, 1, epoch.Add(time.Minute))
	lags, err := s.SubscriptionLags(ctx)
	must(t, err)
	if len(lags) != 1 || lags[0].SubscriptionID != "sub_a" || !lags[0].Enabled || !lags[0].Oldest.Equal(epoch) {
		t.Errorf("lags before the fan-out = %+v, want sub_a behind since %v", lags, epoch)
	}
	fanOut(t, s, epoch)
	got := claim(t, s, "w", epoch, 10)
	finish(t, s, "w", epoch, store.OutboundSucceeded, got[0])
	lags, err = s.SubscriptionLags(ctx)
	must(t, err)
	if len(lags) != 1 || !lags[0].Oldest.Equal(epoch.Add(time.Minute)) {
		t.Errorf("lags = %+v, want the undelivered second event's time", lags)
	}
	finish(t, s, "w", epoch, store.OutboundSucceeded, got[1])
	if lags, _ = s.SubscriptionLags(ctx); !lags[0].Oldest.IsZero() {
		t.Errorf("lag with everything delivered = %+v, want none", lags)
	}

	if n, err := s.CountOrphanedOutboundDeliveries(ctx); err != nil || n != 0 {
		t.Errorf("orphans = %d, %v; want none", n, err)
	}
	must(t, s.SaveOutboxCursor(ctx, "c", old, epoch))
	if n, err := s.DeleteReadTaskEvents(ctx, []string{"c"}, epoch.Add(time.Hour), 10); err != nil || n != 1 {
		t.Fatalf("deleted %d events, %v; want the first", n, err)
	}
	if n, err := s.CountOrphanedOutboundDeliveries(ctx); err != nil || n != 1 {
		t.Errorf("orphans = %d, %v; want the first event's delivery", n, err)
	}
	if n, err := s.DeleteOrphanedOutboundDeliveries(ctx, 10); err != nil || n != 1 {
		t.Errorf("deleted %d orphans, %v; want 1", n, err)
	}
	if ds := deliveriesOf(t, s, "sub_a"); len(ds) != 1 || ds[0].EventID == old {
		t.Errorf("deliveries left = %+v", ds)
	}
}

func testRetentionKeepsOwedEvents(t *testing.T, s store.Store) {
	ctx := context.Background()
	sub := insertSubscription(t, s, newSubscription("sub_a", "ws"))
	var ids []int64
	for i := range 3 {
		ids = append(ids, appendEvent(t, s, "ws", uuid.NewString(), store.EventTaskCreated, 1, epoch.Add(time.Duration(i)*time.Second)))
	}
	must(t, s.SaveOutboxCursor(ctx, "c", ids[2], epoch))
	late := epoch.Add(time.Hour)
	count := func(name string, want int64) {
		t.Helper()
		if n, err := s.CountReadTaskEvents(ctx, []string{"c"}, late); err != nil || n != want {
			t.Errorf("%s: %d events prunable, %v; want %d", name, n, err, want)
		}
	}
	count("none fanned out yet", 0)
	fanOut(t, s, epoch)
	count("every delivery owed", 0)
	got := claim(t, s, "w", epoch, 10)
	finish(t, s, "w", epoch, store.OutboundSucceeded, got[0])
	finish(t, s, "w", epoch, store.OutboundFailed, got[2])
	count("the first delivered, the second owed", 1)
	sub.Enabled = false
	must(t, s.UpdateSubscription(ctx, sub))
	count("a disabled subscription holds nothing", 3)
}

func testEventsNotify(t *testing.T, s store.Store) {
	ctx := context.Background()
	paths := []struct {
		name   string
		append func()
	}{
		{"a transaction", func() {
			must(t, s.InTx(ctx, func(tx store.Queries) error {
				_, err := tx.AppendTaskEvent(ctx, store.TaskEvent{WorkspaceID: "ws", TaskID: uuid.NewString(), Revision: 1,
					Type: store.EventTaskCreated, Payload: `{}`, CreatedAt: epoch})
				return err
			}))
		}},
		{"a statement of its own", func() { appendEvent(t, s, "ws", uuid.NewString(), store.EventTaskCreated, 1, epoch) }},
	}
	for _, p := range paths {
		waitCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		woken := make(chan error, 1)
		go func() { woken <- s.WaitForNotification(waitCtx, store.EventsChannel) }()
		// The waiter may subscribe after a commit: append until it wakes.
		tick := time.NewTicker(10 * time.Millisecond)
	wait:
		for {
			p.append()
			select {
			case err := <-woken:
				if err != nil {
					t.Errorf("no notification on %s after appends in %s: %v", store.EventsChannel, p.name, err)
				}
				break wait
			case <-tick.C:
			}
		}
		tick.Stop()
		cancel()
	}
}
