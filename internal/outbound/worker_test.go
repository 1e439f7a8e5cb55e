package outbound

import (
	"bytes"
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/trackergateway/gateway/internal/events"
	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/store/storetest"
)

func TestDeliversSignedEvents(t *testing.T) {
	t.Parallel()
	storetest.ForDialects(t, func(t *testing.T, dialect string) {
		t.Parallel()
		e := newEnv(t, dialect)
		rc := newReceiver(t)
		sub := e.subscribe(t, rc.srv.URL+"/hook")
		rc.setSecret(sub.Secret)
		onlyCreated := newReceiver(t)
		e.subscribe(t, onlyCreated.srv.URL, events.TypeCreated)
		e.run(t, allowLoopback())

		a, b := uuid.NewString(), uuid.NewString()
		ids := []int64{e.emit(t, a, events.TypeCreated, 1), e.emit(t, b, events.TypeCreated, 1), e.emit(t, a, events.TypeUpdated, 2)}
		poll(t, "three deliveries recorded", func() bool {
			ds := e.deliveries(t, sub.ID)
			return len(ds) == 3 && !slices.ContainsFunc(ds, func(d store.OutboundDelivery) bool { return d.Status != store.OutboundSucceeded })
		})
		poll(t, "two task.created deliveries", func() bool { return len(onlyCreated.requests()) >= 2 })

		rows, err := e.st.OutboundEvents(context.Background(), ids)
		if err != nil {
			t.Fatal(err)
		}
		got := rc.requests()
		for i, row := range rows {
			want, _ := events.Body(row)
			r := got[slices.IndexFunc(got, func(r received) bool { return r.ID == events.FormatID(row.ID) })]
			if r.VerifyErr != nil {
				t.Errorf("event %d: the signature does not verify with the subscription's secret: %v", i, r.VerifyErr)
			}
			if !bytes.Equal(r.Body, want) || r.ContentType != "application/json" || r.Event.Type != row.Type {
				t.Errorf("event %d: body %s content type %q, want %s as application/json", i, r.Body, r.ContentType, want)
			}
		}
		if n := len(rc.requests()); n != 3 {
			t.Errorf("received %d requests, want each event once", n)
		}
		for _, d := range e.deliveries(t, sub.ID) {
			if d.Status != store.OutboundSucceeded || d.Attempts != 1 || d.LastStatusCode != 200 || d.FinishedAt == nil {
				t.Errorf("delivery %+v, want succeeded at the first attempt", d)
			}
		}
		if types := func() []string {
			var out []string
			for _, r := range onlyCreated.requests() {
				out = append(out, r.Event.Type)
			}
			return out
		}(); !slices.Equal(types, []string{events.TypeCreated, events.TypeCreated}) {
			t.Errorf("the task.created subscription got %v", types)
		}
	})
}

func TestRetriesCarryTheSameWebhookID(t *testing.T) {
	t.Parallel()
	storetest.ForDialects(t, func(t *testing.T, dialect string) {
		t.Parallel()
		e := newEnv(t, dialect)
		flaky, broken := newReceiver(t), newReceiver(t)
		var mu sync.Mutex
		failures := 2
		flaky.setAnswer(func(w http.ResponseWriter, r received) {
			mu.Lock()
			defer mu.Unlock()
			if failures > 0 {
				failures--
				http.Error(w, "try later", http.StatusInternalServerError)
			}
		})
		broken.setAnswer(func(w http.ResponseWriter, r received) { http.Error(w, "broken", http.StatusBadGateway) })
		flakySub, brokenSub := e.subscribe(t, flaky.srv.URL), e.subscribe(t, broken.srv.URL)
		e.run(t, allowLoopback())
		ev := e.emit(t, uuid.NewString(), events.TypeCreated, 1)
		id := events.FormatID(ev)

		poll(t, "the flaky receiver's success", func() bool { return e.delivery(t, flakySub.ID, ev).Status == store.OutboundSucceeded })
		if ids := flaky.ids(); !slices.Equal(ids, []string{id, id, id}) {
			t.Errorf("flaky receiver got %v, want %s three times", ids, id)
		}
		if d := e.delivery(t, flakySub.ID, ev); d.Attempts != 3 || d.LastError != "" {
			t.Errorf("delivery = %+v, want succeeded at attempt 3", d)
		}
		// Out of retries: failed for good, after 1 + len(schedule) attempts.
		poll(t, "the broken receiver's delivery to fail", func() bool { return e.delivery(t, brokenSub.ID, ev).Status == store.OutboundFailed })
		d := e.delivery(t, brokenSub.ID, ev)
		if d.Attempts != 4 || d.LastStatusCode != 502 || !strings.HasPrefix(d.LastError, "gave up after 4 attempts: answered 502 Bad Gateway: broken") {
			t.Errorf("failed delivery = attempts %d code %d error %q", d.Attempts, d.LastStatusCode, d.LastError)
		}
		if n := broken.count(id); n != 4 {
			t.Errorf("broken receiver got %d attempts, want 4", n)
		}
	})
}

// A receiver failing one task's events holds back that task's later
// events only; the other task's flow meanwhile.
func TestOrderPerTaskUnderAFailingReceiver(t *testing.T) {
	t.Parallel()
	storetest.ForDialects(t, func(t *testing.T, dialect string) {
		t.Parallel()
		e := newEnv(t, dialect)
		rc := newReceiver(t)
		slow, fast := uuid.NewString(), uuid.NewString()
		var mu sync.Mutex
		failSlow := true
		rc.setAnswer(func(w http.ResponseWriter, r received) {
			mu.Lock()
			defer mu.Unlock()
			if failSlow && bytes.Contains(r.Body, []byte(slow)) {
				http.Error(w, "not now", http.StatusServiceUnavailable)
			}
		})
		sub := e.subscribe(t, rc.srv.URL)
		// Retries keep coming (a long schedule of short waits), so the slow
		// task's first event is tried again and again meanwhile.
		opts := allowLoopback()
		opts.RetrySchedule = slices.Repeat([]time.Duration{20 * time.Millisecond}, 1000)
		e.run(t, opts)

		s1 := e.emit(t, slow, events.TypeCreated, 1)
		s2 := e.emit(t, slow, events.TypeUpdated, 2)
		var fastIDs []string
		for rev := range int64(5) {
			fastIDs = append(fastIDs, events.FormatID(e.emit(t, fast, events.TypeUpdated, rev+1)))
		}
		poll(t, "the fast task's events", func() bool {
			ids := rc.ids()
			return !slices.ContainsFunc(fastIDs, func(id string) bool { return !slices.Contains(ids, id) }) && rc.count(events.FormatID(s1)) >= 3
		})
		if n := rc.count(events.FormatID(s2)); n != 0 {
			t.Fatalf("the slow task's second event was sent %d times before its first succeeded", n)
		}
		// The fast task's events arrived in their order.
		var order []string
		for _, id := range rc.ids() {
			if slices.Contains(fastIDs, id) {
				order = append(order, id)
			}
		}
		if !slices.Equal(order, fastIDs) {
			t.Errorf("fast task's events arrived as %v, want %v", order, fastIDs)
		}
		mu.Lock()
		failSlow = false
		mu.Unlock()
		poll(t, "the slow task's second event", func() bool { return e.delivery(t, sub.ID, s2).Status == store.OutboundSucceeded })
		ids := rc.ids()
		firstSecond := slices.Index(ids, events.FormatID(s2))
		if firstSecond < slices.Index(ids, events.FormatID(s1)) || e.delivery(t, sub.ID, s1).Status != store.OutboundSucceeded {
			t.Errorf("slow task: requests %v; its second event before the first succeeded", ids)
		}
		// Every attempt of the first event came before the second's.
		for i, id := range ids {
			if id == events.FormatID(s1) && i > firstSecond {
				t.Errorf("the first event was tried again after the second was sent: %v", ids)
			}
		}
	})
}

// While the intake has work waiting (Yield), the worker sends nothing, a
// pause at a time, for at most MaxYield between its fan-outs and claims;
// once the intake is idle, what it held back goes out.
func TestYieldsToTheIntake(t *testing.T) {
	t.Parallel()
	storetest.ForDialects(t, func(t *testing.T, dialect string) {
		t.Parallel()
		e := newEnv(t, dialect)
		rc := newReceiver(t)
		sub := e.subscribe(t, rc.srv.URL)
		var mu sync.Mutex
		busy, asked := true, 0
		opts := allowLoopback()
		opts.MaxYield = time.Hour
		opts.Yield = func() bool {
			mu.Lock()
			defer mu.Unlock()
			asked++
			return busy
		}
		e.run(t, opts)
		ev := e.emit(t, uuid.NewString(), events.TypeCreated, 1)
		poll(t, "the worker asking the intake again and again", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return asked >= 20
		})
		if n := len(rc.requests()); n != 0 {
			t.Fatalf("%d requests sent while the intake was busy, want none", n)
		}
		mu.Lock()
		busy = false
		mu.Unlock()
		poll(t, "the event delivered once the intake is idle", func() bool {
			return e.delivery(t, sub.ID, ev).Status == store.OutboundSucceeded
		})
	})
}

// However long the intake stays busy, events keep flowing: a fan-out and a
// claim run at least once every MaxYield.
func TestYieldIsBounded(t *testing.T) {
	t.Parallel()
	storetest.ForDialects(t, func(t *testing.T, dialect string) {
		t.Parallel()
		e := newEnv(t, dialect)
		rc := newReceiver(t)
		sub := e.subscribe(t, rc.srv.URL)
		opts := allowLoopback()
		opts.MaxYield = 20 * time.Millisecond
		opts.Yield = func() bool { return true }
		e.run(t, opts)
		ev := e.emit(t, uuid.NewString(), events.TypeCreated, 1)
		poll(t, "the event delivered while the intake stays busy", func() bool {
			return e.delivery(t, sub.ID, ev).Status == store.OutboundSucceeded
		})
	})
}
