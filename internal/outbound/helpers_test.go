package outbound

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/trackergateway/gateway/internal/events"
	"github.com/trackergateway/gateway/internal/httpapi"
	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/store/sqlstore"
	"github.com/trackergateway/gateway/internal/store/storetest"
)

const (
	testWorkspace = "ws"
	pollDeadline  = 30 * time.Second
)

var admin = httpapi.Principal{Name: "admin", Admin: true}

// fastSchedule retries at once, so tests see every attempt without waiting.
var fastSchedule = []time.Duration{10 * time.Millisecond, 10 * time.Millisecond, 10 * time.Millisecond}

// env is a store with a workspace, the subscription API on it, and a
// running worker.
type env struct {
	st  *sqlstore.Store
	api *API
}

func newEnv(t *testing.T, dialect string) *env {
	t.Helper()
	st := storetest.Open(t, dialect)
	storetest.SeedWorkspace(t, st, testWorkspace)
	storetest.SeedWorkspace(t, st, "other")
	return &env{st: st, api: NewAPI(st, nil, nil, true)}
}

// run starts a worker with opts (receivers are loopback: http and private
// addresses allowed unless opts says otherwise) until the test ends.
func (e *env) run(t *testing.T, opts Options) *Worker {
	t.Helper()
	if opts.RetrySchedule == nil {
		opts.RetrySchedule = fastSchedule
	}
	if opts.MaxIdle == 0 {
		opts.MaxIdle = 50 * time.Millisecond
	}
	w := New(e.st, nil, nil, opts)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = w.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return w
}

// allowLoopback is the worker configuration of tests whose receivers are
// httptest servers.
func allowLoopback() Options {
	return Options{AllowHTTP: true, Guard: Guard{AllowPrivate: true}}
}

// subscribe creates a subscription of the test workspace to url.
func (e *env) subscribe(t *testing.T, url string, types ...string) SubscriptionJSON {
	t.Helper()
	s, err := e.api.Create(context.Background(), admin, testWorkspace, url, types, "")
	if err != nil {
		t.Fatalf("create subscription: %v", err)
	}
	return s
}

// emit commits one event of task.
func (e *env) emit(t *testing.T, task, typ string, rev int64) int64 {
	t.Helper()
	payload := fmt.Sprintf(`{"task":{"id":%q},"revision":%d}`, task, rev)
	id, err := e.st.AppendTaskEvent(context.Background(), store.TaskEvent{WorkspaceID: testWorkspace, TaskID: task, Revision: rev,
		Type: typ, Payload: payload, CreatedAt: time.Now().UTC()})
	if err != nil {
		t.Fatalf("append event: %v", err)
	}
	return id
}

// deliveries reads a subscription's deliveries, newest first.
func (e *env) deliveries(t *testing.T, sub string) []store.OutboundDelivery {
	t.Helper()
	ds, err := e.st.ListOutboundDeliveries(context.Background(), store.OutboundDeliveryPage{SubscriptionID: sub, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// delivery reads the delivery of event ev to sub.
func (e *env) delivery(t *testing.T, sub string, ev int64) store.OutboundDelivery {
	t.Helper()
	for _, d := range e.deliveries(t, sub) {
		if d.EventID == ev {
			return d
		}
	}
	return store.OutboundDelivery{}
}

func (e *env) subscription(t *testing.T, id string) store.Subscription {
	t.Helper()
	s, err := e.st.GetSubscription(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// poll calls fn until it reports true, failing the test after pollDeadline.
func poll(t *testing.T, what string, fn func() bool) {
	t.Helper()
	deadline := time.Now().Add(pollDeadline)
	for !fn() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// received is one request a receiver got.
type received struct {
	ID, Timestamp, Signature, ContentType string
	Body                                  []byte
	Event                                 events.Event
	// VerifyErr is what the Standard Webhooks library said of it, with
	// the receiver's secret.
	VerifyErr error
	At        time.Time
}

// receiver is an httptest server recording what it receives; answer
// decides each response (200 when nil).
type receiver struct {
	t      *testing.T
	srv    *httptest.Server
	mu     sync.Mutex
	secret string
	got    []received
	answer func(w http.ResponseWriter, r received)
}

func newReceiver(t *testing.T) *receiver {
	t.Helper()
	rc := &receiver{t: t}
	rc.srv = httptest.NewServer(http.HandlerFunc(rc.serve))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	got := received{ID: r.Header.Get("webhook-id"), Timestamp: r.Header.Get("webhook-timestamp"),
		Signature: r.Header.Get("webhook-signature"), ContentType: r.Header.Get("Content-Type"), Body: body, At: time.Now()}
	_ = json.Unmarshal(body, &got.Event)
	rc.mu.Lock()
	secret, answer := rc.secret, rc.answer
	rc.mu.Unlock()
	if secret != "" {
		wh, err := standardwebhooks.NewWebhook(secret)
		if err == nil {
			err = wh.Verify(body, r.Header)
		}
		got.VerifyErr = err
	}
	rc.mu.Lock()
	rc.got = append(rc.got, got)
	rc.mu.Unlock()
	if answer != nil {
		answer(w, got)
	}
}

func (rc *receiver) setAnswer(fn func(w http.ResponseWriter, r received)) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.answer = fn
}

func (rc *receiver) setSecret(s string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.secret = s
}

func (rc *receiver) requests() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received(nil), rc.got...)
}

// ids is the webhook-ids received, in order.
func (rc *receiver) ids() []string {
	var out []string
	for _, r := range rc.requests() {
		out = append(out, r.ID)
	}
	return out
}

// count is how many requests carried webhook-id id.
func (rc *receiver) count(id string) int {
	n := 0
	for _, r := range rc.requests() {
		if r.ID == id {
			n++
		}
	}
	return n
}
