package inbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/mux"

	"github.com/trackergateway/gateway/connectors"
	"github.com/trackergateway/gateway/connectors/github"
	"github.com/trackergateway/gateway/connectors/gitlab"
	"github.com/trackergateway/gateway/connectors/jira"
	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/store/sqlstore"
	"github.com/trackergateway/gateway/internal/store/storetest"
)

// streamingWebhook is a signed fake-provider request whose body arrives
// through the returned writer; Content-Length is declared as len(body).
func streamingWebhook(body []byte, deliveryID string) (*http.Request, *io.PipeWriter) {
	pr, pw := io.Pipe()
	req := httptest.NewRequest(http.MethodPost, "/webhooks/"+connFake, pr)
	req.ContentLength = int64(len(body))
	req.Header.Set(headerFakeEvent, "issue")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(headerFakeID, deliveryID)
	fakeAdapter{}.Sign(req.Header, body, []byte(secretCurrent))
	return req, pw
}

func TestInflightBodyBytesAreBounded(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		logs := &lineCounter{}
		rc := NewReceiverWithOptions(st, map[string]connectors.Adapter{fakeProvider: fakeAdapter{}}, lookupConnection,
			slog.New(slog.NewTextHandler(logs, nil)), nil, ReceiverOptions{MaxInflightBodyBytes: 256 << 10})
		t.Cleanup(runInBackground(t, rc.Run))
		h := http.Handler(receiverRouter(rc))
		big := bytes.Repeat([]byte("x"), 200<<10)

		// The first upload holds 200 KiB of the 256 KiB budget once
		// 150 KiB have arrived (its buffer grew 64 → 128 → 200 KiB).
		req, pw := streamingWebhook(big, "slow")
		var slow *httptest.ResponseRecorder
		var wg sync.WaitGroup
		wg.Go(func() { slow = serve(h, req) })
		if _, err := pw.Write(big[:150<<10]); err != nil {
			t.Fatal(err)
		}

		// A second upload cannot get its first 64 KiB: 503 at once.
		rec := serve(h, webhook(connFake, big[:100<<10], "refused", secretCurrent))
		if rec.Code != http.StatusServiceUnavailable {
			t.Fatalf("second upload = %d, want 503 (body %s)", rec.Code, rec.Body)
		}
		if rec.Header().Get("Retry-After") == "" {
			t.Error("503 without Retry-After")
		}
		for range 20 { // a burst of refusals is one log line, not one each
			serve(h, webhook(connFake, big[:100<<10], "refused", secretCurrent))
		}
		if got := logs.with("request failed"); len(got) != 0 {
			t.Errorf("refusals logged one line each: %q", got)
		}
		if got := logs.with("webhooks refused"); len(got) != 1 {
			t.Errorf("%d summary lines for 21 refusals within a minute, want 1", len(got))
		}

		// The first completes and is acknowledged; its budget is returned.
		if _, err := pw.Write(big[150<<10:]); err != nil {
			t.Fatal(err)
		}
		pw.Close()
		wg.Wait()
		if slow.Code != http.StatusAccepted {
			t.Fatalf("first upload = %d, want 202 (body %s)", slow.Code, slow.Body)
		}
		if rec := serve(h, webhook(connFake, big[:100<<10], "after", secretCurrent)); rec.Code != http.StatusAccepted {
			t.Errorf("upload after the budget was returned = %d, want 202 (body %s)", rec.Code, rec.Body)
		}
		if got := countDeliveries(t, st, connFake); got != 2 {
			t.Errorf("stored deliveries = %d, want 2 (the refused one is not stored)", got)
		}
	})
}

// stallingReader gives n bytes, then fails as a client that went away.
type stallingReader struct{ n int }

func (r *stallingReader) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, io.ErrUnexpectedEOF
	}
	k := min(len(p), r.n)
	r.n -= k
	return k, nil
}

func TestReadBodyAllocatesWhatArrivesNotWhatIsDeclared(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		declared      int64
		sent          int
		wantErr       bool
		wantMaxReserv int64
	}{
		{"20 MB declared, 10 bytes sent", 20 << 20, 10, true, firstChunk},
		{"20 MB declared, 100 KiB sent", 20 << 20, 100 << 10, true, 2 * firstChunk},
		{"chunked, 10 bytes", -1, 10, true, firstChunk},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			budget := newBodyBudget(1 << 30)
			req := httptest.NewRequest(http.MethodPost, "/webhooks/x", &stallingReader{n: tt.sent})
			req.ContentLength = tt.declared
			rb, err := budget.readBody(httptest.NewRecorder(), req)
			defer rb.done()
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if rb.reserved > tt.wantMaxReserv || int64(cap(rb.data)) > tt.wantMaxReserv {
				t.Errorf("reserved %d, buffer capacity %d; want at most %d", rb.reserved, cap(rb.data), tt.wantMaxReserv)
			}
		})
	}
}

func TestReadBodyReturnsItsReservation(t *testing.T) {
	t.Parallel()
	budget := newBodyBudget(1 << 20)
	for range 3 { // three times the budget in all: each must give it back
		body := bytes.Repeat([]byte("y"), 700<<10)
		req := httptest.NewRequest(http.MethodPost, "/webhooks/x", bytes.NewReader(body))
		rb, err := budget.readBody(httptest.NewRecorder(), req)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(rb.data, body) {
			t.Fatalf("read %d bytes, want the %d sent", len(rb.data), len(body))
		}
		rb.done()
	}
	if !budget.sem.TryAcquire(budget.max) {
		t.Error("budget not whole again after every request finished")
	}
}

func TestWebhookContentTypes(t *testing.T) {
	t.Parallel()
	adapters := map[string]connectors.Adapter{fakeProvider: fakeAdapter{}, connectors.ProviderGitHub: github.Adapter{}}
	tests := []struct {
		name, conn, contentType string
		want                    int
		wantMessage             string
	}{
		{"json", connFake, "application/json", http.StatusAccepted, ""},
		{"json with charset", connFake, "application/json; charset=utf-8", http.StatusAccepted, ""},
		{"json, upper case", connFake, "Application/JSON", http.StatusAccepted, ""},
		{"missing", connFake, "", http.StatusUnsupportedMediaType, "accepted as application/json"},
		{"text", connFake, "text/plain", http.StatusUnsupportedMediaType, "accepted as application/json"},
		{"form where only JSON is sent", connFake, "application/x-www-form-urlencoded", http.StatusUnsupportedMediaType, "accepted as application/json"},
		{"github json", connGitHub, "application/json", http.StatusAccepted, ""},
		{"github form", connGitHub, "application/x-www-form-urlencoded", http.StatusAccepted, ""},
		{"github multipart", connGitHub, "multipart/form-data; boundary=x", http.StatusUnsupportedMediaType,
			"github webhooks are accepted as application/json or application/x-www-form-urlencoded"},
	}
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		_, h := startReceiver(t, st, adapters, nil, ReceiverOptions{})
		for i, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				body := []byte(`{"action":"opened"}`)
				if strings.HasPrefix(tt.contentType, "application/x-www-form") {
					body = []byte("payload=" + url.QueryEscape(string(body)))
				}
				req := webhook(tt.conn, body, "ct-"+string(rune('a'+i)), "")
				if tt.conn == connGitHub {
					req.Header.Set(github.HeaderEvent, "issues")
					github.Adapter{}.Sign(req.Header, body, []byte(secretCurrent))
				} else {
					fakeAdapter{}.Sign(req.Header, body, []byte(secretCurrent))
				}
				req.Header.Set("Content-Type", tt.contentType)
				if tt.contentType == "" {
					req.Header.Del("Content-Type")
				}
				rec := serve(h, req)
				if rec.Code != tt.want {
					t.Fatalf("status = %d, want %d (body %s)", rec.Code, tt.want, rec.Body)
				}
				if tt.wantMessage != "" && !strings.Contains(errorMessage(t, rec), tt.wantMessage) {
					t.Errorf("error = %q, want it to contain %q", errorMessage(t, rec), tt.wantMessage)
				}
			})
		}
	})
}

func TestEverySecretHeaderIsStripped(t *testing.T) {
	t.Parallel()
	adapters := map[string]connectors.Adapter{fakeProvider: fakeAdapter{}, connectors.ProviderGitHub: github.Adapter{},
		connectors.ProviderGitLab: gitlab.Adapter{}, connectors.ProviderJira: jira.Adapter{}}
	secretHeaders := []string{"X-Gitlab-Token", "X-Hub-Signature-256", "X-Hub-Signature", "Authorization",
		"Proxy-Authorization", "Cookie", "X-Api-Key", "X-Forwarded-Authorization", "X-Amz-Security-Token", headerFakeSig}
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		_, h := startReceiver(t, st, adapters, nil, ReceiverOptions{})
		body := []byte(`{}`)
		req := webhook(connFake, body, "secrets", secretCurrent)
		for _, name := range secretHeaders[:len(secretHeaders)-1] {
			req.Header.Set(name, "secret-value-of-"+name)
			// Spelled otherwise too, as a handler's own code might add it.
			req.Header[strings.ToLower(name)] = []string{"secret-value-lower-" + name}
		}
		rec := serve(h, req)
		if rec.Code != http.StatusAccepted {
			t.Fatalf("status = %d (body %s)", rec.Code, rec.Body)
		}
		d, err := st.GetDelivery(context.Background(), decodeReceipt(t, rec).DeliveryID)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(d.Headers, "secret-value") || strings.Contains(d.Headers, "sha256=") {
			t.Errorf("stored headers keep a secret: %s", d.Headers)
		}
		stored, err := store.DecodeDeliveryHeaders(d.Headers)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range secretHeaders {
			if v := stored.Get(name); v != "" {
				t.Errorf("stored %s = %q, want it removed", name, v)
			}
		}
	})
}

// lineCounter counts log lines with a given message.
type lineCounter struct {
	mu    sync.Mutex
	lines []string
}

func (c *lineCounter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lines = append(c.lines, string(p))
	return len(p), nil
}

func (c *lineCounter) with(msg string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, l := range c.lines {
		if strings.Contains(l, msg) {
			out = append(out, l)
		}
	}
	return out
}

func TestBadSignaturesAreSummarisedInTheLog(t *testing.T) {
	t.Parallel()
	logs := &lineCounter{}
	clock := newTestClock()
	rc := NewReceiver(failingWriter{}, map[string]connectors.Adapter{fakeProvider: fakeAdapter{}}, lookupConnection,
		slog.New(slog.NewTextHandler(logs, nil)), clock.Now)
	for i := range 50 {
		req := webhook(connFake, []byte(`{}`), "bad", "wrong-secret")
		req = mux.SetURLVars(req, map[string]string{"connection": connFake})
		if rec := serve(rc, req); rec.Code != http.StatusUnauthorized {
			t.Fatalf("request %d: status %d, want 401", i, rec.Code)
		}
	}
	if got := logs.with("webhook signature rejected"); len(got) != 1 {
		t.Fatalf("%d log lines for 50 bad signatures within a minute, want 1", len(got))
	}
	clock.Advance(badSignatureLogInterval)
	req := mux.SetURLVars(webhook(connFake, []byte(`{}`), "bad", "wrong-secret"), map[string]string{"connection": connFake})
	serve(rc, req)
	got := logs.with("webhook signature rejected")
	if len(got) != 2 || !strings.Contains(got[1], "suppressed_since_last_line=49") {
		t.Errorf("after the interval: lines %q, want a second line reporting 49 suppressed", got)
	}
	for _, l := range got {
		if strings.Contains(l, "sha256=") {
			t.Errorf("log line carries a signature: %s", l)
		}
	}
}

// probeStore fakes the readiness store.
type probeStore struct {
	mu       sync.Mutex
	probeErr error
	probes   int
}

func (s *probeStore) Migrated(context.Context) (bool, error) { return true, nil }

func (s *probeStore) ProbeDurableWrite(context.Context, time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.probes++
	return s.probeErr
}

func (s *probeStore) set(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.probeErr = err
}

func TestReadinessFollowsDurableCommits(t *testing.T) {
	t.Parallel()
	clock := newTestClock()
	ps := &probeStore{}
	writer := &switchableWriter{}
	rc, h := startReceiver(t, writer, nil, clock.Now, ReceiverOptions{})
	ready := NewReadiness(ps, rc, clock.Now)
	ctx := context.Background()

	if err := ready.Check(ctx); err != nil {
		t.Fatalf("healthy: %v", err)
	}
	// A failed inbox commit makes it not ready at once, though the probe
	// a moment ago succeeded.
	writer.fail(true)
	if rec := serve(h, webhook(connFake, []byte(`{}`), "full-disk", secretCurrent)); rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("commit on a full disk = %d, want 503", rec.Code)
	}
	if err := ready.Check(ctx); !errors.Is(err, ErrCommitsFailing) {
		t.Fatalf("after a failed commit: %v, want ErrCommitsFailing", err)
	}
	// With no traffic, the check's own probe decides: still failing...
	ps.set(errors.New("disk full"))
	clock.Advance(probeInterval)
	if err := ready.Check(ctx); !errors.Is(err, ErrCommitsFailing) {
		t.Fatalf("probe failing: %v, want ErrCommitsFailing", err)
	}
	// ...and ready again once a durable write succeeds.
	ps.set(nil)
	clock.Advance(probeInterval)
	if err := ready.Check(ctx); err != nil {
		t.Fatalf("after a successful probe: %v", err)
	}
	// A successful inbox commit also clears a failure.
	if rec := serve(h, webhook(connFake, []byte(`{}`), "still-full", secretCurrent)); rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("second commit on a full disk = %d, want 503", rec.Code)
	}
	writer.fail(false)
	if rec := serve(h, webhook(connFake, []byte(`{}`), "room-again", secretCurrent)); rec.Code != http.StatusAccepted {
		t.Fatalf("commit with room = %d, want 202", rec.Code)
	}
	if err := ready.Check(ctx); err != nil {
		t.Fatalf("after a successful commit: %v", err)
	}
	// Probes are rate-limited: unauthenticated /readyz traffic cannot turn
	// into an fsync per request.
	before := ps.probes
	for range 100 {
		_ = ready.Check(ctx)
	}
	if ps.probes != before {
		t.Errorf("100 checks within the probe interval wrote %d probes, want 0", ps.probes-before)
	}
}

// switchableWriter accepts deliveries, or fails like a full disk.
type switchableWriter struct {
	mu      sync.Mutex
	failing bool
}

func (w *switchableWriter) fail(on bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.failing = on
}

func (w *switchableWriter) InsertDeliveries(_ context.Context, ds []store.Delivery) ([]store.InsertedDelivery, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.failing {
		return nil, errors.New("sqlite: database or disk is full")
	}
	out := make([]store.InsertedDelivery, len(ds))
	for i := range out {
		out[i].ID = "d"
	}
	return out, nil
}

func (w *switchableWriter) Notify(context.Context, string) error { return nil }

func TestBigBodiesCommitAFewAtATime(t *testing.T) {
	t.Parallel()
	w := &recordingWriter{block: make(chan struct{}), entered: make(chan struct{})}
	g := newGroupCommit(w, testLogger(t), DefaultMaxBatch, time.Now, nil)
	t.Cleanup(runInBackground(t, func(ctx context.Context) error { g.run(ctx); return nil }))

	var wg sync.WaitGroup
	submit := func(key string, size int) {
		wg.Go(func() {
			if _, err := g.submit(context.Background(), store.Delivery{DeliveryKey: key, Body: make([]byte, size)}); err != nil {
				t.Errorf("submit %s: %v", key, err)
			}
		})
	}
	submit("first", 10) // holds the committer while the big ones queue
	<-w.entered
	for i := range 5 {
		submit(fmt.Sprintf("big-%d", i), 6<<20)
	}
	waitFor(t, "five receipts queued", func() bool { return g.waiting.Load() == 6 })
	close(w.block)
	wg.Wait()

	w.mu.Lock()
	defer w.mu.Unlock()
	total := 0
	for _, b := range w.batches[1:] {
		bytes := 0
		for _, d := range b {
			bytes += len(d.Body)
		}
		if len(b) > 1 && bytes > maxBatchBodyBytes {
			t.Errorf("a batch of %d deliveries holds %d body bytes, over %d", len(b), bytes, maxBatchBodyBytes)
		}
		total += len(b)
	}
	if total != 5 || len(w.batches) < 4 {
		t.Errorf("batches %d (after the first) with %d deliveries; want the 5 big ones in at least 3 batches", len(w.batches)-1, total)
	}
}

// While storage is down every webhook is refused with 503; the log gets
// one line per interval with the count refused since, not a line each.
func TestStorageRefusalsAreSummarisedInTheLog(t *testing.T) {
	t.Parallel()
	logs := &lineCounter{}
	clock := newTestClock()
	rc := NewReceiver(failingWriter{}, map[string]connectors.Adapter{fakeProvider: fakeAdapter{}}, lookupConnection,
		slog.New(slog.NewTextHandler(logs, nil)), clock.Now)
	t.Cleanup(runInBackground(t, rc.Run))
	h := receiverRouter(rc)
	for i := range 50 {
		if rec := serve(h, webhook(connFake, []byte(`{}`), fmt.Sprintf("k%d", i), secretCurrent)); rec.Code != http.StatusServiceUnavailable {
			t.Fatalf("request %d: status %d, want 503", i, rec.Code)
		}
	}
	if got := logs.with("storage unavailable"); len(got) != 1 {
		t.Fatalf("%d log lines for 50 refusals within a minute, want 1:\n%s", len(got), strings.Join(got, ""))
	}
	clock.Advance(badSignatureLogInterval)
	serve(h, webhook(connFake, []byte(`{}`), "k-last", secretCurrent))
	got := logs.with("storage unavailable")
	if len(got) != 2 || !strings.Contains(got[1], "suppressed_since_last_line=49") {
		t.Errorf("after the interval: lines %q, want a second line reporting 49 suppressed", got)
	}
}
