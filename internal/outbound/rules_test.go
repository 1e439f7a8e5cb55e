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

// 410 disables at once; the events committed meanwhile are not sent; once
// enabled, exactly the owed events arrive, each once, and none delivered
// before comes again.
func TestGoneDisablesAndEnablingResumes(t *testing.T) {
	t.Parallel()
	storetest.ForDialects(t, func(t *testing.T, dialect string) {
		t.Parallel()
		e := newEnv(t, dialect)
		rc, control := newReceiver(t), newReceiver(t)
		var mu sync.Mutex
		gone := false
		rc.setAnswer(func(w http.ResponseWriter, r received) {
			mu.Lock()
			defer mu.Unlock()
			if gone {
				http.Error(w, "gone", http.StatusGone)
			}
		})
		sub := e.subscribe(t, rc.srv.URL)
		e.subscribe(t, control.srv.URL)
		e.run(t, allowLoopback())

		task := uuid.NewString()
		first := e.emit(t, task, events.TypeCreated, 1)
		poll(t, "the first event", func() bool { return e.delivery(t, sub.ID, first).Status == store.OutboundSucceeded })
		mu.Lock()
		gone = true
		mu.Unlock()
		second := e.emit(t, task, events.TypeUpdated, 2)
		poll(t, "the subscription disabled", func() bool { return !e.subscription(t, sub.ID).Enabled })
		if s := e.subscription(t, sub.ID); s.DisabledReason != "the receiver answered 410 Gone" {
			t.Errorf("disabled_reason = %q", s.DisabledReason)
		}
		// Committed while it is disabled: the control subscription gets
		// them, which shows the worker has passed them.
		missed := []int64{e.emit(t, task, events.TypeUpdated, 3), e.emit(t, uuid.NewString(), events.TypeCreated, 1)}
		poll(t, "the control subscription", func() bool { return control.count(events.FormatID(missed[1])) == 1 })
		for _, id := range missed {
			if n := rc.count(events.FormatID(id)); n != 0 {
				t.Errorf("event %d was sent %d times to a disabled subscription", id, n)
			}
		}
		if n := rc.count(events.FormatID(second)); n != 1 {
			t.Errorf("the event answered 410 was sent %d times, want once", n)
		}

		mu.Lock()
		gone = false
		mu.Unlock()
		enabled := true
		got, err := e.api.Update(context.Background(), admin, testWorkspace, sub.ID, Patch{Enabled: &enabled})
		if err != nil || !got.Enabled || got.DisabledReason != "" {
			t.Fatalf("enable = %+v, %v", got, err)
		}
		owed := append([]int64{second}, missed...)
		poll(t, "the owed events", func() bool {
			for _, id := range owed {
				if e.delivery(t, sub.ID, id).Status != store.OutboundSucceeded {
					return false
				}
			}
			return true
		})
		want := map[string]int{events.FormatID(first): 1, events.FormatID(second): 2, events.FormatID(missed[0]): 1, events.FormatID(missed[1]): 1}
		for _, id := range rc.ids() {
			want[id]--
		}
		for id, n := range want {
			if n != 0 {
				t.Errorf("event %s: %d requests more than expected (410 once for the second, then each owed event once)", id, -n)
			}
		}
		// The task's order held across the disabling.
		var order []string
		for _, r := range rc.requests() {
			if r.Event.Data != nil && bytes.Contains(r.Body, []byte(task)) {
				order = append(order, r.ID)
			}
		}
		if !slices.IsSorted(order) {
			t.Errorf("the task's events arrived as %v", order)
		}
	})
}

// Without allow_private, a loopback receiver is refused when connecting:
// the delivery records why and the receiver gets nothing.
func TestPrivateDestinationRefused(t *testing.T) {
	t.Parallel()
	storetest.ForDialects(t, func(t *testing.T, dialect string) {
		t.Parallel()
		e := newEnv(t, dialect)
		rc := newReceiver(t)
		sub := e.subscribe(t, rc.srv.URL)
		e.run(t, Options{AllowHTTP: true})
		ev := e.emit(t, uuid.NewString(), events.TypeCreated, 1)
		poll(t, "the refused attempt", func() bool {
			return e.delivery(t, sub.ID, ev).Attempts >= 1 && e.delivery(t, sub.ID, ev).LastError != ""
		})
		d := e.delivery(t, sub.ID, ev)
		if !strings.Contains(d.LastError, "127.0.0.1 is a loopback address (outbound.allow_private is off)") || d.LastStatusCode != 0 {
			t.Errorf("delivery = code %d error %q, want the loopback refusal", d.LastStatusCode, d.LastError)
		}
		if n := len(rc.requests()); n != 0 {
			t.Errorf("the receiver got %d requests", n)
		}
	})
}

// A subscription saved while http was allowed is refused once it is not.
func TestHTTPRefusedAtSend(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "sqlite")
	rc := newReceiver(t)
	sub := e.subscribe(t, rc.srv.URL) // the API allows http here
	e.run(t, Options{Guard: Guard{AllowPrivate: true}})
	ev := e.emit(t, uuid.NewString(), events.TypeCreated, 1)
	poll(t, "the refused attempt", func() bool { return e.delivery(t, sub.ID, ev).LastError != "" })
	if d := e.delivery(t, sub.ID, ev); !strings.Contains(d.LastError, "url must be https (outbound.allow_http is off)") {
		t.Errorf("last error = %q", d.LastError)
	}
	if n := len(rc.requests()); n != 0 {
		t.Errorf("the receiver got %d requests", n)
	}
}

// Receivers that answer garbage, megabytes, slowly, never, with a
// redirect or with Retry-After change their own delivery's state and
// nothing else: a well-behaved subscription's events flow meanwhile.
func TestHostileReceivers(t *testing.T) {
	t.Parallel()
	storetest.ForDialects(t, func(t *testing.T, dialect string) {
		t.Parallel()
		e := newEnv(t, dialect)
		release := make(chan struct{})
		t.Cleanup(func() { close(release) })
		big := bytes.Repeat([]byte("x"), 10<<20)
		target := newReceiver(t)
		receivers := map[string]func(w http.ResponseWriter, r received){
			"garbage": func(w http.ResponseWriter, r received) { _, _ = w.Write([]byte("\x00\xff not json at all")) },
			"10MB":    func(w http.ResponseWriter, r received) { _, _ = w.Write(big) },
			"10MB error": func(w http.ResponseWriter, r received) {
				w.WriteHeader(http.StatusInternalServerError)
				_, _ = w.Write(big)
			},
			"slow": func(w http.ResponseWriter, r received) {
				select {
				case <-release:
				case <-time.After(5 * time.Second):
				}
			},
			"redirect": func(w http.ResponseWriter, r received) {
				http.Redirect(w, &http.Request{Method: http.MethodPost}, target.srv.URL, http.StatusTemporaryRedirect)
			},
			"rate limited": func(w http.ResponseWriter, r received) {
				w.Header().Set("Retry-After", "120")
				http.Error(w, "slow down", http.StatusTooManyRequests)
			},
		}
		subs := map[string]string{}
		for name, answer := range receivers {
			rc := newReceiver(t)
			rc.setAnswer(answer)
			subs[name] = e.subscribe(t, rc.srv.URL).ID
		}
		good := newReceiver(t)
		goodSub := e.subscribe(t, good.srv.URL)
		opts := allowLoopback()
		opts.Timeout = 300 * time.Millisecond
		opts.RetrySchedule = []time.Duration{time.Hour}
		e.run(t, opts)

		ev := e.emit(t, uuid.NewString(), events.TypeCreated, 1)
		var more []int64
		for range 5 {
			more = append(more, e.emit(t, uuid.NewString(), events.TypeCreated, 1))
		}
		poll(t, "every first attempt", func() bool {
			for _, sub := range subs {
				if d := e.delivery(t, sub, ev); d.LastAttemptAt == nil || d.LeaseOwner != "" {
					return false
				}
			}
			return true
		})
		poll(t, "the well-behaved subscription's events", func() bool {
			for _, id := range append([]int64{ev}, more...) {
				if e.delivery(t, goodSub.ID, id).Status != store.OutboundSucceeded {
					return false
				}
			}
			return true
		})
		tests := []struct {
			name   string
			status string
			code   int
			err    string
		}{
			{"garbage", store.OutboundSucceeded, 200, ""},
			{"10MB", store.OutboundSucceeded, 200, ""},
			{"10MB error", store.OutboundRetrying, 500, "answered 500 Internal Server Error: xxxxxxxx"},
			{"slow", store.OutboundRetrying, 0, "no answer within 300ms"},
			{"redirect", store.OutboundRetrying, 307, "answered 307 Temporary Redirect: redirects are not followed"},
			{"rate limited", store.OutboundRetrying, 429, "answered 429 Too Many Requests: slow down"},
		}
		for _, tc := range tests {
			d := e.delivery(t, subs[tc.name], ev)
			if d.Status != tc.status || d.LastStatusCode != tc.code || !strings.HasPrefix(d.LastError, tc.err) || len(d.LastError) > maxLastError+3 {
				t.Errorf("%s: status %s code %d error %.80q, want %s %d %q", tc.name, d.Status, d.LastStatusCode, d.LastError, tc.status, tc.code, tc.err)
			}
			if d.Attempts != 1 {
				t.Errorf("%s: %d attempts, want 1", tc.name, d.Attempts)
			}
			if tc.status == store.OutboundRetrying {
				wait := d.NextAttemptAt.Sub(*d.LastAttemptAt)
				want := time.Hour // the schedule's
				if tc.name == "rate limited" {
					want = 2 * time.Minute // its Retry-After
				}
				if wait < want*9/10 || wait > want*11/10 {
					t.Errorf("%s: next attempt in %v, want about %v", tc.name, wait, want)
				}
			}
		}
		if n := len(target.requests()); n != 0 {
			t.Errorf("the redirect was followed %d times", n)
		}
		for name, sub := range subs {
			if !e.subscription(t, sub).Enabled {
				t.Errorf("%s: subscription disabled", name)
			}
		}
	})
}

func TestDisabledAfterFailingTooLong(t *testing.T) {
	t.Parallel()
	storetest.ForDialects(t, func(t *testing.T, dialect string) {
		t.Parallel()
		e := newEnv(t, dialect)
		rc := newReceiver(t)
		rc.setAnswer(func(w http.ResponseWriter, r received) { http.Error(w, "down", http.StatusInternalServerError) })
		sub := e.subscribe(t, rc.srv.URL)
		opts := allowLoopback()
		opts.DisableAfter = time.Millisecond
		opts.RetrySchedule = slices.Repeat([]time.Duration{20 * time.Millisecond}, 100)
		e.run(t, opts)
		ev := e.emit(t, uuid.NewString(), events.TypeCreated, 1)
		poll(t, "the subscription disabled", func() bool { return !e.subscription(t, sub.ID).Enabled })
		s := e.subscription(t, sub.ID)
		if s.DisabledReason != "every attempt failed for 1ms" || s.FailingSince == nil {
			t.Errorf("subscription = reason %q failing since %v", s.DisabledReason, s.FailingSince)
		}
		d := e.delivery(t, sub.ID, ev)
		if d.Status != store.OutboundRetrying || !d.NextAttemptAt.Equal(store.OutboundParked) {
			t.Errorf("delivery = %s next %v, want still owed, parked", d.Status, d.NextAttemptAt)
		}
	})
}

// endless is an answer body that never ends, counting what is read of it.
type endless struct{ read int64 }

func (e *endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	e.read += int64(len(p))
	return len(p), nil
}

func (e *endless) Close() error { return nil }

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Of an answer, however long, 64 KiB is read and no more.
func TestAnswerReadUpTo64KiB(t *testing.T) {
	t.Parallel()
	for _, code := range []int{http.StatusOK, http.StatusInternalServerError} {
		body := &endless{}
		client := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: code, Status: http.StatusText(code), Header: http.Header{}, Body: body, Request: r}, nil
		})}
		w := New(nil, nil, nil, Options{Client: client})
		sub := store.Subscription{ID: "sub_1", URL: "https://example.com/hook", Secret: NewSecret()}
		ev := store.TaskEvent{ID: 1, Type: events.TypeCreated, Payload: `{}`}
		event, err := events.Body(ev)
		a := w.post(context.Background(), sub, outgoing{ev: ev, body: event, err: err}, time.Now())
		if body.read != DefaultMaxResponseBytes {
			t.Errorf("answered %d: read %d bytes of the answer, want %d", code, body.read, DefaultMaxResponseBytes)
		}
		if (a.err == nil) != (code == http.StatusOK) || a.code != code {
			t.Errorf("answered %d: code %d, err %v", code, a.code, a.err)
		}
	}
}
