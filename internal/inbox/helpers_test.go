package inbox

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/mux"

	"github.com/trackergateway/gateway/connectors"
	"github.com/trackergateway/gateway/internal/config"
	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/store/storetest"
)

// Fake provider: HMAC-SHA256 of the body in X-Fake-Signature.
const (
	fakeProvider     = "fake"
	headerFakeSig    = "X-Fake-Signature"
	headerFakeID     = "X-Fake-Delivery"
	headerFakeEvent  = "X-Fake-Event"
	secretCurrent    = "current-secret"
	secretPrevious   = "previous-secret"
	connFake         = "fake-main"
	connFakeOther    = "fake-other"
	connNoSecret     = "fake-unsigned"
	connGitHub       = "gh-main"
	connNoAdapter    = "svn-main"
	connGitLab       = "gl-main"
	connJira         = "jira-main"
	connGitea        = "gitea-main"
	connLinear       = "linear-main"
	testPollDeadline = 20 * time.Second
)

type fakeAdapter struct{}

var _ connectors.Adapter = fakeAdapter{}

func (fakeAdapter) Provider() string { return fakeProvider }

func (fakeAdapter) Verify(h http.Header, body []byte, secrets [][]byte) error {
	sig := h.Get(headerFakeSig)
	if sig == "" {
		return connectors.ErrMissingSignature
	}
	hexSig, ok := bytes.CutPrefix([]byte(sig), []byte("sha256="))
	if !ok {
		return connectors.ErrBadSignature
	}
	return connectors.VerifyHMACSHA256(string(hexSig), body, secrets)
}

func (fakeAdapter) DeliveryKey(h http.Header, body []byte) string {
	if id := h.Get(headerFakeID); id != "" {
		return id
	}
	return connectors.BodyDeliveryKey(body)
}

func (fakeAdapter) EventName(h http.Header) string { return h.Get(headerFakeEvent) }
func (fakeAdapter) SecretHeaders() []string        { return []string{headerFakeSig} }

func (fakeAdapter) Parse(string, http.Header, []byte) (connectors.Event, error) {
	return connectors.Event{}, nil
}

func (fakeAdapter) Sign(h http.Header, body, secret []byte) {
	h.Set(headerFakeSig, "sha256="+connectors.HMACSHA256Hex(secret, body))
}

var testConnections = map[string]config.Connection{
	connFake:      {ID: connFake, Provider: fakeProvider, Host: "fake.example", Secrets: []string{secretCurrent, "", secretPrevious}},
	connFakeOther: {ID: connFakeOther, Provider: fakeProvider, Host: "fake.example", Secrets: []string{secretCurrent}},
	connNoSecret:  {ID: connNoSecret, Provider: fakeProvider, Host: "fake.example"},
	connGitHub:    {ID: connGitHub, Provider: connectors.ProviderGitHub, Host: "github.com", Secrets: []string{secretCurrent}},
	connNoAdapter: {ID: connNoAdapter, Provider: "svn", Secrets: []string{secretCurrent}},
	connGitLab:    {ID: connGitLab, Provider: connectors.ProviderGitLab, Host: "gitlab.com", Secrets: []string{secretCurrent}},
	connJira:      {ID: connJira, Provider: connectors.ProviderJira, Host: "acme.atlassian.net", Secrets: []string{secretCurrent}},
	connGitea:     {ID: connGitea, Provider: connectors.ProviderGitea, Host: "gitea.example.com", Secrets: []string{secretCurrent}},
	connLinear:    {ID: connLinear, Provider: connectors.ProviderLinear, Host: "acme", Secrets: []string{secretCurrent}},
}

func lookupConnection(id string) (config.Connection, bool) {
	c, ok := testConnections[id]
	return c, ok
}

func testLogger(t testing.TB) *slog.Logger {
	t.Helper()
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(string(bytes.TrimRight(p, "\n")))
	return len(p), nil
}

// startReceiver returns the router serving a running receiver; it stops at
// cleanup, before the store closes.
func startReceiver(t *testing.T, st DeliveryWriter, adapters map[string]connectors.Adapter, now func() time.Time, opts ReceiverOptions) (*Receiver, http.Handler) {
	t.Helper()
	if adapters == nil {
		adapters = map[string]connectors.Adapter{fakeProvider: fakeAdapter{}}
	}
	rc := NewReceiverWithOptions(st, adapters, lookupConnection, testLogger(t), now, opts)
	stop := runInBackground(t, rc.Run)
	t.Cleanup(stop)
	return rc, receiverRouter(rc)
}

// receiverRouter mounts rc where internal/server does, for the tests of
// this package (which internal/server imports).
func receiverRouter(rc *Receiver) *mux.Router {
	r := mux.NewRouter()
	r.Handle("/webhooks/{connection}", rc).Methods(http.MethodPost)
	return r
}

// operatorRouter mounts the operator delivery handlers where
// internal/server does.
func operatorRouter(o *Operators) *mux.Router {
	r := mux.NewRouter()
	r.HandleFunc("/api/v1/deliveries", o.ListDeliveries).Methods(http.MethodGet)
	r.HandleFunc("/api/v1/deliveries/{id}", o.GetDelivery).Methods(http.MethodGet)
	r.HandleFunc("/api/v1/deliveries/{id}/replay", o.ReplayDelivery).Methods(http.MethodPost)
	return r
}

// runInBackground runs fn until the returned stop is called (or the test
// ends), and returns once fn has returned.
func runInBackground(t *testing.T, fn func(context.Context) error) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- fn(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("run returned %v", err)
				}
			case <-time.After(testPollDeadline):
				t.Errorf("run did not stop after cancel")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// webhook builds a signed request for the fake provider.
func webhook(conn string, body []byte, deliveryID, secret string) *http.Request {
	req := httptest.NewRequest(http.MethodPost, "/webhooks/"+conn, bytes.NewReader(body))
	req.Header.Set(headerFakeEvent, "issue")
	req.Header.Set("Content-Type", "application/json")
	if deliveryID != "" {
		req.Header.Set(headerFakeID, deliveryID)
	}
	if secret != "" {
		fakeAdapter{}.Sign(req.Header, body, []byte(secret))
	}
	return req
}

func serve(h http.Handler, req *http.Request) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func decodeReceipt(t *testing.T, rec *httptest.ResponseRecorder) ReceiptResponse {
	t.Helper()
	var got ReceiptResponse
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatalf("decode receipt %q: %v", rec.Body.String(), err)
	}
	return got
}

func errorMessage(t *testing.T, rec *httptest.ResponseRecorder) string {
	t.Helper()
	var body struct {
		Error string `json:"error"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatalf("decode error body %q: %v", rec.Body.String(), err)
	}
	return body.Error
}

// countDeliveries counts the stored deliveries of a connection.
func countDeliveries(t *testing.T, st store.Store, conn string) int {
	t.Helper()
	ds, err := st.ListDeliveries(context.Background(), store.DeliveryFilter{ConnectionID: conn, Limit: 10000})
	if err != nil {
		t.Fatalf("list deliveries: %v", err)
	}
	return len(ds.Deliveries)
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testPollDeadline)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func newTestClock() *storetest.Clock {
	return storetest.NewClock(time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC), 0)
}

// failingWriter is a store whose inbox insert reports the database down.
type failingWriter struct {
	store.Store
}

func (failingWriter) InsertDeliveries(context.Context, []store.Delivery) ([]store.InsertedDelivery, error) {
	return nil, errUnavailableForTest
}

var errUnavailableForTest = &wrappedErr{msg: "insert deliveries: dial tcp 10.0.0.1:5432: connection refused", err: store.ErrUnavailable}

type wrappedErr struct {
	msg string
	err error
}

func (e *wrappedErr) Error() string { return e.msg }
func (e *wrappedErr) Unwrap() error { return e.err }
