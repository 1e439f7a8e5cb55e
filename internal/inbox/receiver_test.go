package inbox

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/trackergateway/gateway/connectors"
	"github.com/trackergateway/gateway/connectors/github"
	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/store/sqlstore"
	"github.com/trackergateway/gateway/internal/store/storetest"
)

func TestReceiveCommitsBeforeAnswering(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		clock := newTestClock()
		_, h := startReceiver(t, st, nil, clock.Now, ReceiverOptions{})
		body := []byte(`{"action":"opened","issue":{"id":1}}`)

		req := webhook(connFake, body, "delivery-1", secretCurrent)
		req.Header.Set("Authorization", "Basic c2VjcmV0")
		req.Header.Set("Cookie", "session=secret")
		req.Header.Add("X-Custom", "a")
		req.Header.Add("X-Custom", "b")
		rec := serve(h, req)
		if rec.Code != http.StatusAccepted {
			t.Fatalf("status = %d, want %d (body %s)", rec.Code, http.StatusAccepted, rec.Body)
		}
		receipt := decodeReceipt(t, rec)
		if receipt.Status != ReceiptAccepted {
			t.Errorf("receipt status = %q, want %q", receipt.Status, ReceiptAccepted)
		}

		// Committed before the answer: readable right away.
		d, err := st.GetDelivery(context.Background(), receipt.DeliveryID)
		if err != nil {
			t.Fatalf("get delivery right after 202: %v", err)
		}
		checks := []struct {
			name      string
			got, want any
		}{
			{"connection", d.ConnectionID, connFake},
			{"provider", d.Provider, fakeProvider},
			{"event", d.Event, "issue"},
			{"delivery key", d.DeliveryKey, "delivery-1"},
			{"body", string(d.Body), string(body)},
			{"status", d.Status, store.DeliveryQueued},
			{"attempts", d.Attempts, 0},
			{"received_at", d.ReceivedAt.Equal(clock.Now()), true},
		}
		for _, c := range checks {
			if c.got != c.want {
				t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
			}
		}
		headers, err := store.DecodeDeliveryHeaders(d.Headers)
		if err != nil {
			t.Fatalf("stored headers: %v", err)
		}
		for _, name := range []string{headerFakeSig, "Authorization", "Cookie"} {
			if v := headers.Get(name); v != "" {
				t.Errorf("stored header %s = %q, want it removed", name, v)
			}
		}
		if got, want := strings.Join(headers.Values("X-Custom"), ","), "a,b"; got != want {
			t.Errorf("stored X-Custom = %q, want %q", got, want)
		}
		if got, want := headers.Get(headerFakeEvent), "issue"; got != want {
			t.Errorf("stored %s = %q, want %q", headerFakeEvent, got, want)
		}

		// A redelivery (signed with the previous secret) is a duplicate.
		rec = serve(h, webhook(connFake, body, "delivery-1", secretPrevious))
		if rec.Code != http.StatusAccepted {
			t.Fatalf("redelivery status = %d, want %d (body %s)", rec.Code, http.StatusAccepted, rec.Body)
		}
		dup := decodeReceipt(t, rec)
		if dup.Status != ReceiptDuplicate || dup.DeliveryID != receipt.DeliveryID {
			t.Errorf("redelivery = %+v, want duplicate of %s", dup, receipt.DeliveryID)
		}
		if got := countDeliveries(t, st, connFake); got != 1 {
			t.Errorf("rows = %d, want 1", got)
		}

		// The same key on another connection is another delivery.
		rec = serve(h, webhook(connFakeOther, body, "delivery-1", secretCurrent))
		if got := decodeReceipt(t, rec); got.Status != ReceiptAccepted || got.DeliveryID == receipt.DeliveryID {
			t.Errorf("other connection receipt = %+v, want a new accepted delivery", got)
		}
	})
}

func TestReceiveRefusals(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		_, h := startReceiver(t, st, nil, nil, ReceiverOptions{})
		small := []byte(`{"ok":true}`)
		oversize := bytes.Repeat([]byte("a"), MaxBodyBytes+1)
		tests := []struct {
			name      string
			req       func() *http.Request
			wantCode  int
			wantError string
		}{
			{
				name:      "missing signature",
				req:       func() *http.Request { return webhook(connFake, small, "k-missing", "") },
				wantCode:  http.StatusUnauthorized,
				wantError: "missing signature",
			},
			{
				name:      "wrong secret",
				req:       func() *http.Request { return webhook(connFake, small, "k-wrong", "not-the-secret") },
				wantCode:  http.StatusUnauthorized,
				wantError: "signature mismatch",
			},
			{
				name: "body altered after signing",
				req: func() *http.Request {
					req := webhook(connFake, small, "k-altered", secretCurrent)
					req.Body = io.NopCloser(strings.NewReader(`{"ok":false}`))
					return req
				},
				wantCode:  http.StatusUnauthorized,
				wantError: "signature mismatch",
			},
			{
				name:      "connection without secret",
				req:       func() *http.Request { return webhook(connNoSecret, small, "k-unsigned", "") },
				wantCode:  http.StatusUnauthorized,
				wantError: "invalid signature",
			},
			{
				name:      "unknown connection",
				req:       func() *http.Request { return webhook("nope", small, "k-unknown", secretCurrent) },
				wantCode:  http.StatusNotFound,
				wantError: "connection not found",
			},
			{
				name:      "oversize with content length",
				req:       func() *http.Request { return webhook(connFake, oversize, "k-big", secretCurrent) },
				wantCode:  http.StatusRequestEntityTooLarge,
				wantError: "request body exceeds 26214400 bytes",
			},
			{
				name: "oversize streamed",
				req: func() *http.Request {
					req := webhook(connFake, oversize, "k-big-streamed", secretCurrent)
					req.ContentLength = -1
					req.Body = io.NopCloser(io.MultiReader(bytes.NewReader(oversize)))
					return req
				},
				wantCode:  http.StatusRequestEntityTooLarge,
				wantError: "request body exceeds 26214400 bytes",
			},
			{
				name: "delivery key too long",
				req: func() *http.Request {
					return webhook(connFake, small, strings.Repeat("k", maxDeliveryKeyBytes+1), secretCurrent)
				},
				wantCode:  http.StatusBadRequest,
				wantError: "delivery key exceeds 512 bytes",
			},
			{
				name:      "delivery key not UTF-8",
				req:       func() *http.Request { return webhook(connFake, small, "key-\xff", secretCurrent) },
				wantCode:  http.StatusBadRequest,
				wantError: "delivery key is not valid UTF-8 text",
			},
			{
				name:      "provider without adapter",
				req:       func() *http.Request { return webhook(connNoAdapter, small, "k-svn", secretCurrent) },
				wantCode:  http.StatusInternalServerError,
				wantError: "internal error",
			},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				rec := serve(h, tt.req())
				if rec.Code != tt.wantCode {
					t.Errorf("status = %d, want %d (body %s)", rec.Code, tt.wantCode, rec.Body)
				}
				if got := errorMessage(t, rec); got != tt.wantError {
					t.Errorf("error = %q, want %q", got, tt.wantError)
				}
			})
		}
		for _, conn := range []string{connFake, connNoSecret, connNoAdapter} {
			if got := countDeliveries(t, st, conn); got != 0 {
				t.Errorf("rows of %s = %d, want 0: refused requests must write nothing", conn, got)
			}
		}
	})
}

func TestReceiveConcurrentRedeliveries(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		_, h := startReceiver(t, st, nil, nil, ReceiverOptions{})
		body := []byte(`{"action":"opened"}`)
		const n = 200
		receipts := make([]ReceiptResponse, n)
		codes := make([]int, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				rec := serve(h, webhook(connFake, body, "same-delivery", secretCurrent))
				codes[i] = rec.Code
				_ = json.Unmarshal(rec.Body.Bytes(), &receipts[i])
			})
		}
		wg.Wait()
		accepted := 0
		for i := range n {
			if codes[i] != http.StatusAccepted {
				t.Fatalf("request %d status = %d, want %d", i, codes[i], http.StatusAccepted)
			}
			if receipts[i].DeliveryID != receipts[0].DeliveryID {
				t.Errorf("request %d delivery_id = %s, want %s", i, receipts[i].DeliveryID, receipts[0].DeliveryID)
			}
			if receipts[i].Status == ReceiptAccepted {
				accepted++
			}
		}
		if accepted != 1 {
			t.Errorf("accepted receipts = %d, want 1 (the rest duplicates)", accepted)
		}
		if got := countDeliveries(t, st, connFake); got != 1 {
			t.Errorf("rows = %d, want 1", got)
		}
	})
}

func TestReceiveConcurrentDistinctDeliveries(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		_, h := startReceiver(t, st, nil, nil, ReceiverOptions{MaxBatch: 16})
		const n = 100
		ids := make([]string, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				body := []byte(`{"n":` + strings.Repeat("1", i+1) + `}`)
				rec := serve(h, webhook(connFake, body, "", secretCurrent))
				if rec.Code == http.StatusAccepted {
					var r ReceiptResponse
					if json.Unmarshal(rec.Body.Bytes(), &r) == nil && r.Status == ReceiptAccepted {
						ids[i] = r.DeliveryID
					}
				}
			})
		}
		wg.Wait()
		seen := map[string]bool{}
		for i, id := range ids {
			if id == "" {
				t.Fatalf("request %d was not accepted", i)
			}
			seen[id] = true
		}
		if len(seen) != n {
			t.Errorf("distinct delivery ids = %d, want %d", len(seen), n)
		}
		if got := countDeliveries(t, st, connFake); got != n {
			t.Errorf("rows = %d, want %d", got, n)
		}
	})
}

// TestReceiveStoresBodiesAsReceived: whatever its size, compressibility or
// framing, a body reads back byte for byte, including under concurrency,
// where request buffers are recycled as soon as a body is compressed.
func TestReceiveStoresBodiesAsReceived(t *testing.T) {
	t.Parallel()
	noise := make([]byte, 64<<10)
	_, _ = rand.NewChaCha8([32]byte{7}).Read(noise) // never fails
	webhookJSON := func(n, size int) []byte {
		return []byte(`{"n":` + strconv.Itoa(n) + `,"text":"` + strings.Repeat("issue text ", size/11) + `"}`)
	}
	tests := []struct {
		name    string
		body    []byte
		chunked bool // no Content-Length
	}{
		{"empty", []byte{}, false},
		{"small", []byte(`{"zen":"Mind your words, they are important."}`), false},
		{"compressible", webhookJSON(0, 13_000), false},
		{"compressible, chunked", webhookJSON(1, 13_000), true},
		{"incompressible", noise, false},
		{"incompressible, chunked", noise[:40_000], true},
		{"larger than the pooled buffers", webhookJSON(2, 2<<20), false},
	}
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		_, h := startReceiver(t, st, nil, nil, ReceiverOptions{})
		for i, tc := range tests {
			req := webhook(connFake, tc.body, "body-"+strconv.Itoa(i), secretCurrent)
			if tc.chunked {
				req.Body = io.NopCloser(bytes.NewReader(tc.body))
				req.ContentLength = -1
			}
			rec := serve(h, req)
			if rec.Code != http.StatusAccepted {
				t.Fatalf("%s: status = %d (%s)", tc.name, rec.Code, rec.Body)
			}
			d, err := st.GetDelivery(context.Background(), decodeReceipt(t, rec).DeliveryID)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			if !bytes.Equal(d.Body, tc.body) {
				t.Errorf("%s: stored body of %d bytes differs from the %d sent", tc.name, len(d.Body), len(tc.body))
			}
		}

		// Compressible and incompressible bodies of distinct sizes at once.
		concurrentBody := func(i int) []byte {
			if i%2 == 0 {
				return webhookJSON(100+i, 4_000+i*97)
			}
			return append([]byte(strconv.Itoa(i)), noise[:4_000+i*97]...)
		}
		const n = 64
		ids := make([]string, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				rec := serve(h, webhook(connFake, concurrentBody(i), "", secretCurrent))
				if rec.Code == http.StatusAccepted {
					var r ReceiptResponse
					if json.Unmarshal(rec.Body.Bytes(), &r) == nil {
						ids[i] = r.DeliveryID
					}
				}
			})
		}
		wg.Wait()
		for i, id := range ids {
			d, err := st.GetDelivery(context.Background(), id)
			if err != nil {
				t.Fatalf("concurrent delivery %d: %v", i, err)
			}
			if want := concurrentBody(i); !bytes.Equal(d.Body, want) {
				t.Errorf("concurrent delivery %d: stored body differs from the one sent", i)
			}
		}
	})
}

func TestReceiveStorageUnavailable(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		_, h := startReceiver(t, failingWriter{st}, nil, nil, ReceiverOptions{})
		rec := serve(h, webhook(connFake, []byte(`{}`), "k1", secretCurrent))
		if rec.Code != http.StatusServiceUnavailable {
			t.Errorf("status = %d, want %d", rec.Code, http.StatusServiceUnavailable)
		}
		if got, want := errorMessage(t, rec), "storage unavailable"; got != want {
			t.Errorf("error = %q, want %q", got, want)
		}
		if got := countDeliveries(t, st, connFake); got != 0 {
			t.Errorf("rows = %d, want 0", got)
		}
	})
}

// A commit refused by a constraint the inbox should never violate is a
// bug: a 500, never the error table's 409 for a constraint.
func TestReceiveConstraintIsInternal(t *testing.T) {
	t.Parallel()
	_, h := startReceiver(t, constraintWriter{}, nil, nil, ReceiverOptions{})
	rec := serve(h, webhook(connFake, []byte(`{}`), "k1", secretCurrent))
	if rec.Code != http.StatusInternalServerError {
		t.Errorf("status = %d, want %d", rec.Code, http.StatusInternalServerError)
	}
	if got, want := errorMessage(t, rec), "internal error"; got != want {
		t.Errorf("error = %q, want %q", got, want)
	}
}

type constraintWriter struct{}

func (constraintWriter) InsertDeliveries(context.Context, []store.Delivery) ([]store.InsertedDelivery, error) {
	return nil, &wrappedErr{msg: "insert deliveries: check constraint", err: store.ErrConstraint}
}

func (constraintWriter) Notify(context.Context, string) error { return nil }

func TestReceiveAfterStop(t *testing.T) {
	t.Parallel()
	w := &recordingWriter{}
	rc := NewReceiver(w, map[string]connectors.Adapter{fakeProvider: fakeAdapter{}}, lookupConnection, testLogger(t), nil)
	stop := runInBackground(t, rc.Run)
	stop()
	req := webhook(connFake, []byte(`{}`), "k1", secretCurrent)
	req = withConnection(req, connFake)
	rec := serve(rc, req)
	if rec.Code != http.StatusServiceUnavailable {
		t.Errorf("status after stop = %d, want %d", rec.Code, http.StatusServiceUnavailable)
	}
	if got := w.inserted(); got != 0 {
		t.Errorf("inserted after stop = %d, want 0", got)
	}
	if err := rc.Run(context.Background()); err == nil {
		t.Errorf("second Run = nil, want an error")
	}
}

func TestReceiveGitHubAdapter(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		adapters := map[string]connectors.Adapter{connectors.ProviderGitHub: github.Adapter{}}
		_, h := startReceiver(t, st, adapters, nil, ReceiverOptions{})
		body := []byte(`{"zen":"Keep it logically awesome.","hook_id":42}`)
		newReq := func(secret string) *http.Request {
			req := httptest.NewRequest(http.MethodPost, "/webhooks/"+connGitHub, bytes.NewReader(body))
			req.Header.Set(github.HeaderEvent, "ping")
			req.Header.Set(github.HeaderDelivery, "72d3162e-cc78-11e3-81ab-4c9367dc0958")
			req.Header.Set(github.HeaderHookID, "42")
			github.Adapter{}.Sign(req.Header, body, []byte(secret))
			return req
		}
		rec := serve(h, newReq(secretCurrent))
		if rec.Code != http.StatusAccepted {
			t.Fatalf("status = %d, want %d (body %s)", rec.Code, http.StatusAccepted, rec.Body)
		}
		d, err := st.GetDelivery(context.Background(), decodeReceipt(t, rec).DeliveryID)
		if err != nil {
			t.Fatalf("get delivery: %v", err)
		}
		if got, want := d.DeliveryKey, "42:72d3162e-cc78-11e3-81ab-4c9367dc0958"; got != want {
			t.Errorf("delivery key = %q, want %q", got, want)
		}
		if got, want := d.Event, "ping"; got != want {
			t.Errorf("event = %q, want %q", got, want)
		}
		if strings.Contains(d.Headers, "sha256=") || strings.Contains(d.Headers, github.HeaderSignature256) {
			t.Errorf("stored headers %s contain the signature", d.Headers)
		}

		rec = serve(h, newReq("wrong"))
		if rec.Code != http.StatusUnauthorized {
			t.Errorf("wrong secret status = %d, want %d", rec.Code, http.StatusUnauthorized)
		}
		sha1Only := newReq(secretCurrent)
		sha1Only.Header.Del(github.HeaderSignature256)
		sha1Only.Header.Set(github.HeaderSignature, "sha1=0000000000000000000000000000000000000000")
		rec = serve(h, sha1Only)
		if rec.Code != http.StatusUnauthorized {
			t.Errorf("SHA-1 only status = %d, want %d", rec.Code, http.StatusUnauthorized)
		}
	})
}

func TestEncodeHeaders(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      http.Header
		secrets []string
		want    string
	}{
		{
			name: "secrets removed",
			in: http.Header{
				"X-Fake-Signature": {"sha256=abc"},
				"Authorization":    {"Bearer t"},
				"Cookie":           {"c=1"},
				"X-Fake-Event":     {"issue"},
			},
			secrets: []string{"x-fake-signature"},
			want:    `{"X-Fake-Event":["issue"]}`,
		},
		{
			name:    "non-canonical names canonicalized",
			in:      http.Header{"x-gitlab-token": {"s"}, "x-gitlab-event": {"Issue Hook"}},
			secrets: []string{"X-Gitlab-Token"},
			want:    `{"X-Gitlab-Event":["Issue Hook"]}`,
		},
		{
			name: "empty",
			in:   http.Header{},
			want: `{}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := EncodeHeaders(tt.in, tt.secrets)
			if err != nil {
				t.Fatalf("EncodeHeaders: %v", err)
			}
			if got != tt.want {
				t.Errorf("EncodeHeaders = %s, want %s", got, tt.want)
			}
			back, err := store.DecodeDeliveryHeaders(got)
			if err != nil {
				t.Fatalf("DecodeDeliveryHeaders: %v", err)
			}
			if len(back) != strings.Count(tt.want, ":[") {
				t.Errorf("DecodeDeliveryHeaders(%s) = %v", got, back)
			}
		})
	}
}

// recordingWriter is an in-memory DeliveryWriter.
type recordingWriter struct {
	mu      sync.Mutex
	batches [][]store.Delivery
	notifs  int
	// block, when set, holds the first InsertDeliveries call until closed;
	// entered is closed once that call started.
	block   chan struct{}
	entered chan struct{}
	// deferredSync counts inserts whose context asked for deferred sync.
	deferredSync int
}

func (w *recordingWriter) InsertDeliveries(ctx context.Context, ds []store.Delivery) ([]store.InsertedDelivery, error) {
	w.mu.Lock()
	if store.DeferredSync(ctx) {
		w.deferredSync++
	}
	first := len(w.batches) == 0
	w.batches = append(w.batches, append([]store.Delivery(nil), ds...))
	w.mu.Unlock()
	if first && w.block != nil {
		close(w.entered)
		<-w.block
	}
	out := make([]store.InsertedDelivery, len(ds))
	for i, d := range ds {
		out[i] = store.InsertedDelivery{ID: d.DeliveryKey}
	}
	return out, nil
}

func (w *recordingWriter) Notify(context.Context, string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.notifs++
	return nil
}

func (w *recordingWriter) inserted() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, b := range w.batches {
		n += len(b)
	}
	return n
}

func (w *recordingWriter) snapshot() (batchSizes []int, notifs int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, b := range w.batches {
		batchSizes = append(batchSizes, len(b))
	}
	return batchSizes, w.notifs
}
