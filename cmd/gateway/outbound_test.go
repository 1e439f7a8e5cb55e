package main

// Task events out, end to end: a signed tracker webhook in, a verified
// Standard Webhooks delivery out, through the real server; the same across
// a kill -9 and across two replicas.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/trackergateway/gateway/internal/events"
)

// outboundConfig is the test configuration with outbound webhooks allowed
// to reach the test's loopback receivers, and retries that come quickly.
func outboundConfig(t *testing.T) string {
	t.Helper()
	return writeTempFile(t, "gateway.yaml", testConfig+`outbound:
  allow_http: true
  allow_private: true
  retry_schedule: [50ms, 50ms, 50ms, 50ms]
`)
}

// hookReceiver is a subscriber's endpoint: it verifies every request with
// the Standard Webhooks library, records it, and notices when one event
// is in flight twice at once.
type hookReceiver struct {
	srv *httptest.Server

	mu       sync.Mutex
	secret   string
	got      []hookRequest
	inFlight map[string]int
	overlaps []string
	// fail answers the first fail requests with a 500.
	fail int
	// hold is how long each request takes to answer: a receiver that does
	// some work, which widens the window two senders would overlap in.
	hold time.Duration
	// during, when set, runs while the n-th request (from 1) is being
	// answered.
	during func(n int, id string)
	seen   int
}

type hookRequest struct {
	ID          string
	Traceparent string
	Body        []byte
	Event       events.Event
	VerifyErr   error
}

func newHookReceiver(t *testing.T) *hookReceiver {
	t.Helper()
	rc := &hookReceiver{inFlight: map[string]int{}}
	rc.srv = httptest.NewServer(http.HandlerFunc(rc.serve))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *hookReceiver) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	id := r.Header.Get("webhook-id")
	rc.mu.Lock()
	rc.inFlight[id]++
	if rc.inFlight[id] > 1 {
		rc.overlaps = append(rc.overlaps, id)
	}
	secret, hold, during := rc.secret, rc.hold, rc.during
	fail := rc.fail > 0
	if fail {
		rc.fail--
	}
	rc.seen++
	seen := rc.seen
	rc.mu.Unlock()
	if during != nil {
		during(seen, id)
	}
	req := hookRequest{ID: id, Body: body, Traceparent: r.Header.Get("traceparent")}
	_ = json.Unmarshal(body, &req.Event)
	wh, err := standardwebhooks.NewWebhook(secret)
	if err == nil {
		err = wh.Verify(body, r.Header)
	}
	req.VerifyErr = err
	if hold > 0 {
		time.Sleep(hold) // the receiver's own work
	}
	rc.mu.Lock()
	rc.inFlight[id]--
	rc.got = append(rc.got, req)
	rc.mu.Unlock()
	if fail {
		http.Error(w, "not yet", http.StatusInternalServerError)
	}
}

func (rc *hookReceiver) requests() []hookRequest {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]hookRequest(nil), rc.got...)
}

// byID counts the requests of each webhook-id.
func (rc *hookReceiver) byID() map[string]int {
	out := map[string]int{}
	for _, r := range rc.requests() {
		out[r.ID]++
	}
	return out
}

type subscriptionJSON struct {
	ID      string   `json:"id"`
	URL     string   `json:"url"`
	Types   []string `json:"types"`
	Enabled bool     `json:"enabled"`
	Secret  string   `json:"secret"`
}

// subscribe creates a subscription of workspace eng through the API.
func (g *gateway) subscribe(t *testing.T, rc *hookReceiver, types ...string) subscriptionJSON {
	t.Helper()
	body := map[string]any{"url": rc.srv.URL + "/hook", "description": "test receiver"}
	if len(types) > 0 {
		body["types"] = types
	}
	status, out := g.apiDo(t, http.MethodPost, "/api/v1/workspaces/"+testWorkspace+"/subscriptions", body)
	if status != http.StatusCreated {
		t.Fatalf("create subscription = %d %s", status, out)
	}
	var s subscriptionJSON
	if err := json.Unmarshal(out, &s); err != nil || s.Secret == "" {
		t.Fatalf("subscription %s: %v", out, err)
	}
	rc.mu.Lock()
	rc.secret = s.Secret
	rc.mu.Unlock()
	return s
}

// TestOutboundEndToEnd: a GitHub issue opened through POST /webhooks/github
// reaches a subscriber as a task.created event, signed so the Standard
// Webhooks library verifies it, carrying the task; the receiver's first
// answer is a 500, and the retry carries the same webhook-id.
func TestOutboundEndToEnd(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, dialect string) {
		g := startGateway(t, newDatabaseURL(t, dialect), "--config", outboundConfig(t))
		rc := newHookReceiver(t)
		rc.fail = 1
		sub := g.subscribe(t, rc)

		d := g.process(t, fixtureHook(t, "github/issues.opened.json"))
		if d.Status != "succeeded" || d.action() != "create" {
			t.Fatalf("delivery = %s %s, want a create", d.Status, d.action())
		}
		poll(t, "the event at the receiver", waitTimeout, func() bool { return len(rc.requests()) >= 2 })
		got := rc.requests()
		if got[0].ID != got[1].ID {
			t.Errorf("the retry's webhook-id %s differs from the first attempt's %s", got[1].ID, got[0].ID)
		}
		r := got[1]
		if r.VerifyErr != nil {
			t.Fatalf("the signature does not verify with the subscription's secret: %v", r.VerifyErr)
		}
		type taskData struct {
			ID         string `json:"id"`
			ExternalID string `json:"external_id"`
		}
		var data struct {
			Task *taskData `json:"task"`
			taskData
		}
		if err := json.Unmarshal(r.Event.Data, &data); err != nil {
			t.Fatalf("event data %s: %v", r.Event.Data, err)
		}
		// The task is data.task; an event the outbox holds in the older
		// form has the task's fields at data's top level.
		tk := data.taskData
		if data.Task != nil {
			tk = *data.Task
		}
		if r.Event.ID != r.ID || r.Event.Type != "task.created" || r.Event.WorkspaceID != testWorkspace ||
			tk.ID != d.taskID() || !strings.HasPrefix(tk.ExternalID, "github:github.com:issue:") {
			t.Errorf("event = %s, want task.created of task %s in %s, its id the webhook-id", r.Body, d.taskID(), testWorkspace)
		}
		if _, err := events.ParseID(r.ID); err != nil {
			t.Errorf("webhook-id %q is not an event id", r.ID)
		}

		// The API shows the delivery; the metrics count it.
		var page struct {
			Deliveries []struct {
				EventID          string `json:"event_id"`
				Status           string `json:"status"`
				Attempts         int    `json:"attempts"`
				LastResponseCode int    `json:"last_response_code"`
			} `json:"deliveries"`
		}
		poll(t, "the delivery recorded", waitTimeout, func() bool {
			g.getJSON(t, "/api/v1/workspaces/"+testWorkspace+"/subscriptions/"+sub.ID+"/deliveries", &page)
			return len(page.Deliveries) == 1 && page.Deliveries[0].Status == "succeeded"
		})
		if p := page.Deliveries[0]; p.EventID != r.ID || p.Attempts != 2 || p.LastResponseCode != 200 {
			t.Errorf("delivery = %+v, want %s succeeded at attempt 2", p, r.ID)
		}
		// The worker counts an attempt once its outcome is committed, so
		// the scrape may come first: wait for the counted success.
		var families map[string]*dto.MetricFamily
		poll(t, "the success counted", waitTimeout, func() bool {
			families = g.scrape(t)
			m := findMetric(families, "gateway_outbound_deliveries_total", map[string]string{"subscription": sub.ID, "outcome": "succeeded"})
			return m != nil && counterAtLeast(1)(m) && histogramCountAtLeast(2)(findMetric(families, "gateway_outbound_attempt_seconds", nil))
		})
		if m := findMetric(families, "gateway_outbound_deliveries_total", map[string]string{"subscription": sub.ID, "outcome": "succeeded"}); m == nil || !counterAtLeast(1)(m) {
			t.Errorf("gateway_outbound_deliveries_total{outcome=succeeded} = %v", m)
		}
		if m := findMetric(families, "gateway_outbound_deliveries_total", map[string]string{"subscription": sub.ID, "outcome": "retrying"}); m == nil || !counterAtLeast(1)(m) {
			t.Errorf("gateway_outbound_deliveries_total{outcome=retrying} = %v", m)
		}
		if m := findMetric(families, "gateway_outbound_lag_seconds", map[string]string{"subscription": sub.ID}); m == nil {
			t.Error("gateway_outbound_lag_seconds is not exported for the subscription")
		}
		if m := findMetric(families, "gateway_outbound_attempt_seconds", nil); m == nil || !histogramCountAtLeast(2)(m) {
			t.Errorf("gateway_outbound_attempt_seconds = %v", m)
		}
	})
}

// outboxEventIDs reads every event id of the outbox, as webhook-ids.
func outboxEventIDs(t *testing.T, dbURL string) []string {
	t.Helper()
	ctx := context.Background()
	st, err := openStore(ctx, dbURL, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var out []string
	for after := int64(0); ; {
		evs, err := st.ReadTaskEvents(ctx, after, 500)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) == 0 {
			return out
		}
		for _, e := range evs {
			out = append(out, events.FormatID(e.ID))
			after = e.ID
		}
	}
}

// TestOutboundCrash: a gateway subprocess is killed (SIGKILL) while it
// sends events to a subscriber; restarted on the same database, every
// event of the outbox reaches the subscriber at least once.
func TestOutboundCrash(t *testing.T) {
	t.Parallel()
	const n = 150
	forEachDialect(t, func(t *testing.T, dialect string) {
		dbURL := newDatabaseURL(t, dialect)
		cfg := outboundConfig(t)
		rc := newHookReceiver(t)
		rc.hold = 2 * time.Millisecond

		first := startProcess(t, dbURL, cfg, "gateway-1")
		// The kill lands while the receiver holds a request: that delivery
		// is in flight, never recorded.
		var kill sync.Once
		inFlight := make(chan string, 1)
		rc.during = func(seen int, id string) {
			if seen == n/4 {
				kill.Do(func() {
					_ = first.cmd.Process.Signal(syscall.SIGKILL)
					<-first.exited
					inFlight <- id
				})
			}
		}
		first.subscribe(t, rc)
		var wg sync.WaitGroup
		next := make(chan int)
		go func() {
			for i := range n {
				next <- i
			}
			close(next)
		}()
		unacked := make(chan hook, n)
		for range 4 {
			wg.Go(func() {
				for i := range next {
					h, _ := crashIssue(t, i)
					h.Key = fmt.Sprintf("outbound-crash-%04d", i)
					status, _, err := first.postWebhook(h.Conn, h.header(githubSecret), h.Body)
					if err != nil || status != http.StatusAccepted {
						unacked <- h
					}
				}
			})
		}
		wg.Wait()
		close(unacked)
		<-first.exited
		before := len(rc.requests())
		t.Logf("%d requests received before the kill", before)

		second := startProcess(t, dbURL, cfg, "gateway-2")
		for h := range unacked {
			second.deliver(t, h)
		}
		second.waitIdle(t, drainTimeout)
		ids := outboxEventIDs(t, dbURL)
		if len(ids) < n {
			t.Fatalf("the outbox holds %d events, want at least %d", len(ids), n)
		}
		// The event in flight at the kill is sent again once its lease
		// expires, with the same webhook-id.
		cut := <-inFlight
		poll(t, "every event at the receiver", drainTimeout, func() bool {
			got := rc.byID()
			for _, id := range ids {
				if got[id] == 0 {
					return false
				}
			}
			return got[cut] >= 2
		})
		for _, r := range rc.requests() {
			if r.VerifyErr != nil {
				t.Errorf("request %s: signature: %v", r.ID, r.VerifyErr)
				break
			}
		}
		again := 0
		for _, c := range rc.byID() {
			again += c - 1
		}
		t.Logf("%d events, %d requests, %d sent again after the restart", len(ids), len(rc.requests()), again)

	})
}

// TestOutboundReplicas: two replicas on one PostgreSQL schema share the
// sending, and no event is ever in flight twice at the receiver.
func TestOutboundReplicas(t *testing.T) {
	t.Parallel()
	const n = 300
	dbURL := newDatabaseURL(t, "postgres") // skips visibly without a server
	cfg := outboundConfig(t)
	var procs []*process
	for i := range 2 {
		procs = append(procs, spawnProcess(t, dbURL, cfg, "replica-"+strconv.Itoa(i), "--workers", "2"))
	}
	for _, p := range procs {
		p.waitListening(t)
	}
	rc := newHookReceiver(t)
	rc.hold = 3 * time.Millisecond
	procs[0].subscribe(t, rc)
	// A second subscription: two deliveries per event, claimed anywhere.
	other := newHookReceiver(t)
	other.hold = 3 * time.Millisecond
	procs[1].subscribe(t, other)

	var wg sync.WaitGroup
	next := make(chan int)
	go func() {
		for i := range n {
			next <- i
		}
		close(next)
	}()
	for range 8 {
		wg.Go(func() {
			for i := range next {
				h, _ := crashIssue(t, i)
				h.Key = fmt.Sprintf("outbound-replica-%04d", i)
				status, body, err := procs[i%2].postWebhook(h.Conn, h.header(githubSecret), h.Body)
				if err != nil || status != http.StatusAccepted {
					t.Errorf("POST %s = %d %s %v, want 202", h.Key, status, body, err)
				}
			}
		})
	}
	wg.Wait()
	procs[0].waitIdle(t, drainTimeout)
	ids := outboxEventIDs(t, dbURL)
	if len(ids) != n {
		t.Fatalf("the outbox holds %d events, want %d", len(ids), n)
	}
	for _, r := range []*hookReceiver{rc, other} {
		poll(t, "every event at the receiver", drainTimeout, func() bool {
			got := r.byID()
			for _, id := range ids {
				if got[id] == 0 {
					return false
				}
			}
			return true
		})
		r.mu.Lock()
		overlaps := r.overlaps
		r.mu.Unlock()
		if len(overlaps) > 0 {
			t.Errorf("events in flight twice at once: %v", overlaps)
		}
		for id, c := range r.byID() {
			if c != 1 {
				t.Errorf("event %s received %d times", id, c)
			}
		}
	}
	// Neither replica met an error on the way.
	for _, p := range procs {
		b, err := os.ReadFile(p.logs)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), `"level":"ERROR"`) {
			t.Errorf("%s logged errors", p.name)
		}
	}
}
