package inbox

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/store/sqlstore"
	"github.com/trackergateway/gateway/internal/store/storetest"
)

// notifyCounter counts Notify calls.
type notifyCounter struct {
	store.Store
	n atomic.Int32
}

func (s *notifyCounter) Notify(ctx context.Context, ch string) error {
	s.n.Add(1)
	return s.Store.Notify(ctx, ch)
}

type operatorFixture struct {
	st    *notifyCounter
	h     http.Handler
	clock *storetest.Clock
	all   []store.Delivery // newest first
	// named deliveries
	succeeded, failed, processing store.Delivery
}

func newOperatorFixture(t *testing.T, st *sqlstore.Store) *operatorFixture {
	t.Helper()
	ctx := context.Background()
	clock := newTestClock()
	t0 := clock.Now()
	type in struct {
		conn, key, body, headers string
		at                       time.Duration
	}
	inputs := []in{
		{connFake, "k0", `{"action":"opened","issue":{"id":7}}`, `{"X-Fake-Event":["issue"],"X-Hub-Signature-256":["sha256=abc"]}`, 0},
		{connFake, "k1", `plain text`, `{"X-Fake-Event":["issue"]}`, time.Second},
		{connFake, "k2", `{}`, `{}`, 2 * time.Second},
		{connFakeOther, "k3", `{}`, `{}`, 2 * time.Second},
		{connFakeOther, "k4", `{}`, `{}`, 2 * time.Second},
		{connFake, "k5", `[1,2]`, `{}`, 3 * time.Second},
	}
	var ds []store.Delivery
	for _, x := range inputs {
		ds = append(ds, store.Delivery{ConnectionID: x.conn, Provider: fakeProvider, Event: "issue", DeliveryKey: x.key,
			Headers: x.headers, Body: []byte(x.body), ReceivedAt: t0.Add(x.at)})
	}
	res, err := st.InsertDeliveries(ctx, ds)
	if err != nil {
		t.Fatalf("insert: %v", err)
	}
	for i := range ds {
		ds[i].ID = res[i].ID
	}
	f := &operatorFixture{st: &notifyCounter{Store: st}, clock: clock}

	// Oldest first: k0 succeeds, k1 fails, the next one stays processing.
	claim := func() store.Delivery {
		t.Helper()
		got, err := st.ClaimDeliveries(ctx, "op-worker", clock.Now(), time.Minute, 1)
		if err != nil || len(got) != 1 {
			t.Fatalf("claim = %v, %v", got, err)
		}
		return got[0]
	}
	clock.Advance(10 * time.Second)
	now := clock.Now()
	d := claim()
	d.Status, d.ProcessedAt, d.NextAttemptAt = store.DeliverySucceeded, &now, now
	d.Event = "issue.opened"
	d.OutcomeTaskID, d.OutcomeExternalID, d.OutcomeAction, d.OutcomeResult = "task-1", "fake:7", "create", "created"
	if err := st.FinishDelivery(ctx, d, "op-worker"); err != nil {
		t.Fatalf("finish: %v", err)
	}
	f.succeeded = d
	d = claim()
	d.Status, d.ProcessedAt, d.NextAttemptAt, d.LastError = store.DeliveryFailed, &now, now, "parse: malformed payload"
	if err := st.FinishDelivery(ctx, d, "op-worker"); err != nil {
		t.Fatalf("finish: %v", err)
	}
	f.failed = d
	f.processing = claim()

	f.all = ds
	sort.Slice(f.all, func(i, j int) bool {
		a, b := f.all[i], f.all[j]
		if !a.ReceivedAt.Equal(b.ReceivedAt) {
			return a.ReceivedAt.After(b.ReceivedAt)
		}
		return a.ID > b.ID
	})
	f.h = operatorRouter(NewOperators(f.st, testLogger(t), clock.Now))
	return f
}

func (f *operatorFixture) do(t *testing.T, method, target string) (int, []byte) {
	t.Helper()
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, httptest.NewRequest(method, target, nil))
	return rec.Code, rec.Body.Bytes()
}

func ids(ds []store.Delivery) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.ID
	}
	return out
}

func listIDs(t *testing.T, raw []byte) ([]string, string, bool) {
	t.Helper()
	var page struct {
		Deliveries []struct {
			ID string `json:"id"`
		} `json:"deliveries"`
		NextCursor *string `json:"next_cursor"`
	}
	if err := json.Unmarshal(raw, &page); err != nil {
		t.Fatalf("decode list %s: %v", raw, err)
	}
	out := make([]string, len(page.Deliveries))
	for i, d := range page.Deliveries {
		out[i] = d.ID
	}
	if page.NextCursor == nil {
		return out, "", false
	}
	return out, *page.NextCursor, true
}

func TestOperatorList(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		f := newOperatorFixture(t, st)
		filter := func(pred func(store.Delivery) bool) []string {
			var out []string
			for _, d := range f.all {
				if pred(d) {
					out = append(out, d.ID)
				}
			}
			return out
		}
		tests := []struct {
			name  string
			query string
			want  []string
		}{
			{"all newest first", "", ids(f.all)},
			{"succeeded", "status=succeeded", []string{f.succeeded.ID}},
			{"failed", "status=failed", []string{f.failed.ID}},
			{"connection", "connection=" + connFakeOther, filter(func(d store.Delivery) bool { return d.ConnectionID == connFakeOther })},
			{"status and connection", "status=queued&connection=" + connFake, filter(func(d store.Delivery) bool {
				return d.ConnectionID == connFake && d.ID != f.succeeded.ID && d.ID != f.failed.ID && d.ID != f.processing.ID
			})},
			{"no match", "connection=nope", []string{}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				code, raw := f.do(t, http.MethodGet, "/api/v1/deliveries?"+tt.query)
				if code != http.StatusOK {
					t.Fatalf("status = %d, want %d (%s)", code, http.StatusOK, raw)
				}
				got, _, more := listIDs(t, raw)
				if !slices.Equal(got, tt.want) {
					t.Errorf("ids = %v, want %v", got, tt.want)
				}
				if more {
					t.Errorf("next_cursor present on the last page")
				}
				if !strings.Contains(string(raw), `"deliveries":[`) {
					t.Errorf("deliveries is not an array: %s", raw)
				}
			})
		}
	})
}

func TestOperatorListPages(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		f := newOperatorFixture(t, st)
		for _, limit := range []int{1, 2, 4, 6, 7} {
			var got []string
			cursor, pages := "", 0
			for {
				q := url.Values{"limit": {strconv.Itoa(limit)}}
				if cursor != "" {
					q.Set("cursor", cursor)
				}
				code, raw := f.do(t, http.MethodGet, "/api/v1/deliveries?"+q.Encode())
				if code != http.StatusOK {
					t.Fatalf("limit %d: status = %d (%s)", limit, code, raw)
				}
				page, next, more := listIDs(t, raw)
				pages++
				if len(page) > limit {
					t.Fatalf("limit %d: page of %d", limit, len(page))
				}
				got = append(got, page...)
				if !more {
					break
				}
				if pages > len(f.all) {
					t.Fatalf("limit %d: paging does not end", limit)
				}
				cursor = next
			}
			if want := ids(f.all); !slices.Equal(got, want) {
				t.Errorf("limit %d: paged ids = %v, want %v", limit, got, want)
			}
			if want := (len(f.all) + limit - 1) / limit; pages != want {
				t.Errorf("limit %d: pages = %d, want %d", limit, pages, want)
			}
		}
	})
}

func TestOperatorListInvalid(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, store.DialectSQLite)
	r := operatorRouter(NewOperators(st, testLogger(t), nil))
	badCursor := base64.RawURLEncoding.EncodeToString([]byte("1700000000:not-a-uuid"))
	tests := []struct {
		query     string
		wantError string
	}{
		{"status=bogus", `invalid status "bogus": want one of queued, processing, succeeded, ignored, suppressed, retrying, failed`},
		{"limit=0", "limit must be an integer between 1 and 1000"},
		{"limit=1001", "limit must be an integer between 1 and 1000"},
		{"limit=-1", "limit must be an integer between 1 and 1000"},
		{"limit=ten", "limit must be an integer between 1 and 1000"},
		{"cursor=%21%21%21", "invalid cursor"},
		{"cursor=" + badCursor, "invalid cursor"},
		{"cursor=" + base64.RawURLEncoding.EncodeToString([]byte("no-separator")), "invalid cursor"},
		{"bogus=1", `unknown query parameter "bogus": want status, connection, event, received_after, received_before, error_contains, external_id, delivery_key, limit, cursor`},
		{"Status=failed", `unknown query parameter "Status": want status, connection, event, received_after, received_before, error_contains, external_id, delivery_key, limit, cursor`},
		{"status=failed&status=queued", `query parameter "status" is given more than once`},
		{"received_after=yesterday", "received_after must be an RFC 3339 time such as 2026-01-02T15:04:05Z"},
		{"received_before=2026-01-02", "received_before must be an RFC 3339 time such as 2026-01-02T15:04:05Z"},
		{"error_contains=a%00b", "error_contains contains a NUL character"},
		{"external_id=%FF", "external_id is not valid UTF-8 text"},
		{"delivery_key=%FF", "delivery_key is not valid UTF-8 text"},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			rec := httptest.NewRecorder()
			r.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/deliveries?"+tt.query, nil))
			if rec.Code != http.StatusBadRequest {
				t.Errorf("status = %d, want %d", rec.Code, http.StatusBadRequest)
			}
			if got := errorMessage(t, rec); got != tt.wantError {
				t.Errorf("error = %q, want %q", got, tt.wantError)
			}
		})
	}
	// The largest page is allowed.
	rec := httptest.NewRecorder()
	r.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/deliveries?limit=1000", nil))
	if rec.Code != http.StatusOK {
		t.Errorf("limit=1000 status = %d, want %d", rec.Code, http.StatusOK)
	}
}

var summaryKeys = []string{"attempts", "connection", "delivery_key", "event", "id", "last_error",
	"next_attempt_at", "outcome", "provider", "received_at", "status"}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func decodeObject(t *testing.T, raw []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
	return m
}

func checkTimestamp(t *testing.T, name string, v any) {
	t.Helper()
	s, ok := v.(string)
	if !ok {
		t.Errorf("%s = %v, want an RFC 3339 string", name, v)
		return
	}
	if _, err := time.Parse(time.RFC3339Nano, s); err != nil || !strings.HasSuffix(s, "Z") {
		t.Errorf("%s = %q, want an RFC 3339 UTC timestamp", name, s)
	}
}

func TestOperatorGet(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		f := newOperatorFixture(t, st)

		code, raw := f.do(t, http.MethodGet, "/api/v1/deliveries/"+f.succeeded.ID)
		if code != http.StatusOK {
			t.Fatalf("status = %d, want %d (%s)", code, http.StatusOK, raw)
		}
		m := decodeObject(t, raw)
		if got, want := keys(m), append(slices.Clone(summaryKeys), "body", "headers"); !slices.Equal(got, sortedCopy(want)) {
			t.Errorf("keys = %v, want %v", got, sortedCopy(want))
		}
		checks := []struct {
			name      string
			got, want any
		}{
			{"id", m["id"], f.succeeded.ID},
			{"connection", m["connection"], connFake},
			{"provider", m["provider"], fakeProvider},
			{"event", m["event"], "issue.opened"},
			{"delivery_key", m["delivery_key"], "k0"},
			{"status", m["status"], store.DeliverySucceeded},
			{"attempts", m["attempts"], float64(1)},
			{"last_error", m["last_error"], nil},
			{"next_attempt_at", m["next_attempt_at"], nil},
		}
		for _, c := range checks {
			if c.got != c.want {
				t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
			}
		}
		checkTimestamp(t, "received_at", m["received_at"])
		outcome, _ := m["outcome"].(map[string]any)
		wantOutcome := map[string]any{"task_id": "task-1", "external_id": "fake:7", "action": "create", "result": "created"}
		if len(outcome) != len(wantOutcome) {
			t.Errorf("outcome = %v, want %v", m["outcome"], wantOutcome)
		}
		for k, v := range wantOutcome {
			if outcome[k] != v {
				t.Errorf("outcome.%s = %v, want %v", k, outcome[k], v)
			}
		}
		body, _ := m["body"].(map[string]any)
		if body["action"] != "opened" {
			t.Errorf("body = %v, want the stored JSON object", m["body"])
		}
		headers, _ := m["headers"].(map[string]any)
		if _, ok := headers["X-Fake-Event"]; !ok {
			t.Errorf("headers = %v, want X-Fake-Event", m["headers"])
		}
		if _, ok := headers["X-Hub-Signature-256"]; ok {
			t.Errorf("headers = %v, shows a signature", m["headers"])
		}

		// Not JSON: the body is a string; failed: last_error, no outcome.
		code, raw = f.do(t, http.MethodGet, "/api/v1/deliveries/"+f.failed.ID)
		if code != http.StatusOK {
			t.Fatalf("status = %d (%s)", code, raw)
		}
		m = decodeObject(t, raw)
		if m["body"] != "plain text" {
			t.Errorf("body = %v, want the string %q", m["body"], "plain text")
		}
		if m["last_error"] != "parse: malformed payload" || m["outcome"] != nil || m["status"] != store.DeliveryFailed {
			t.Errorf("failed delivery = %s", raw)
		}

		// Pending: next_attempt_at is set.
		code, raw = f.do(t, http.MethodGet, "/api/v1/deliveries/"+f.all[0].ID)
		if code != http.StatusOK {
			t.Fatalf("status = %d (%s)", code, raw)
		}
		m = decodeObject(t, raw)
		checkTimestamp(t, "next_attempt_at", m["next_attempt_at"])
		if m["outcome"] != nil {
			t.Errorf("queued outcome = %v, want null", m["outcome"])
		}

		for _, id := range []string{"00000000-0000-4000-8000-000000000000", "not-a-uuid"} {
			code, raw = f.do(t, http.MethodGet, "/api/v1/deliveries/"+id)
			if code != http.StatusNotFound || !strings.Contains(string(raw), `"error":"delivery not found"`) {
				t.Errorf("get %s = %d %s, want 404 delivery not found", id, code, raw)
			}
		}
	})
}

func sortedCopy(s []string) []string {
	out := slices.Clone(s)
	sort.Strings(out)
	return out
}

func TestOperatorReplay(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		f := newOperatorFixture(t, st)

		code, raw := f.do(t, http.MethodPost, "/api/v1/deliveries/"+f.failed.ID+"/replay")
		if code != http.StatusAccepted {
			t.Fatalf("replay status = %d, want %d (%s)", code, http.StatusAccepted, raw)
		}
		m := decodeObject(t, raw)
		if got := keys(m); !slices.Equal(got, summaryKeys) {
			t.Errorf("keys = %v, want %v", got, summaryKeys)
		}
		if m["status"] != store.DeliveryQueued || m["attempts"] != float64(0) || m["last_error"] != nil || m["outcome"] != nil {
			t.Errorf("replayed = %s, want queued with 0 attempts and no error", raw)
		}
		d := getDelivery(t, st, f.failed.ID)
		if d.Status != store.DeliveryQueued || !d.NextAttemptAt.Equal(f.clock.Now()) {
			t.Errorf("stored after replay: status %s next %v, want queued due now %v", d.Status, d.NextAttemptAt, f.clock.Now())
		}
		if n := f.st.n.Load(); n != 1 {
			t.Errorf("notifications = %d, want 1", n)
		}

		// A succeeded delivery can be replayed too.
		if code, raw := f.do(t, http.MethodPost, "/api/v1/deliveries/"+f.succeeded.ID+"/replay"); code != http.StatusAccepted {
			t.Errorf("replay succeeded = %d, want %d (%s)", code, http.StatusAccepted, raw)
		}

		var queued store.Delivery
		for _, d := range f.all {
			if d.DeliveryKey == "k5" {
				queued = d
			}
		}
		const notFinished = "delivery has not finished; replay it once it has"
		tests := []struct {
			name      string
			id        string
			wantCode  int
			wantError string
		}{
			{"being processed", f.processing.ID, http.StatusConflict, notFinished},
			{"queued", queued.ID, http.StatusConflict, notFinished},
			{"unknown", "00000000-0000-4000-8000-000000000000", http.StatusNotFound, "delivery not found"},
			{"not an id", "nope", http.StatusNotFound, "delivery not found"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				rec := httptest.NewRecorder()
				f.h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/api/v1/deliveries/"+tt.id+"/replay", nil))
				if rec.Code != tt.wantCode {
					t.Errorf("status = %d, want %d", rec.Code, tt.wantCode)
				}
				if got := errorMessage(t, rec); got != tt.wantError {
					t.Errorf("error = %q, want %q", got, tt.wantError)
				}
			})
		}
		if d := getDelivery(t, st, f.processing.ID); d.Status != store.DeliveryProcessing || d.LeaseOwner != "op-worker" || d.Attempts != 1 {
			t.Errorf("after a refused replay: status %s owner %q attempts %d, want still processing by op-worker", d.Status, d.LeaseOwner, d.Attempts)
		}

		// Once its lease has expired (the worker died) it is still not
		// finished: a worker reclaims it, a replay does not reset it.
		f.clock.Advance(2 * time.Minute)
		if code, raw := f.do(t, http.MethodPost, "/api/v1/deliveries/"+f.processing.ID+"/replay"); code != http.StatusConflict {
			t.Errorf("replay after lease expiry = %d, want %d (%s)", code, http.StatusConflict, raw)
		}
		if n := f.st.n.Load(); n != 2 {
			t.Errorf("notifications = %d, want 2 (refused replays send none)", n)
		}
	})
}

// TestOperatorReplayRacesWorkerClaim: a replay racing a worker that claims
// a fresh delivery, finishes it and claims again never resets the delivery
// under the worker nor has it processed twice at once. The replay starts with
// the worker, after its first claim or after its finish (in turn), and runs
// concurrently with the rest: before the finish it is 409 and the worker's
// outcome stands; after it, it is 202 and a claim (the worker's second, or
// the next) takes the requeued delivery afresh.
func TestOperatorReplayRacesWorkerClaim(t *testing.T) {
	t.Parallel()
	const races = 150
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		clock := newTestClock()
		r := operatorRouter(NewOperators(st, testLogger(t), clock.Now))
		claim := func() ([]store.Delivery, error) {
			return st.ClaimDeliveries(ctx, "worker", clock.Now(), time.Minute, 10)
		}
		finish := func(d store.Delivery) error {
			now := clock.Now()
			d.Status, d.ProcessedAt, d.NextAttemptAt, d.LastError = store.DeliveryFailed, &now, now, "parse: malformed payload"
			return st.FinishDelivery(ctx, d, "worker")
		}
		type answer struct{ phase, code int }
		answers := map[answer]int{}
		for i := range races {
			res, err := st.InsertDeliveries(ctx, []store.Delivery{{ConnectionID: connFake, Provider: fakeProvider, Event: "issue",
				DeliveryKey: "race-" + strconv.Itoa(i), Headers: `{}`, Body: []byte(`{}`), ReceivedAt: clock.Now()}})
			if err != nil {
				t.Fatalf("insert: %v", err)
			}
			id := res[0].ID
			// phases[0] starts the replay with the worker, phases[1] after its
			// first claim, phases[2] after its finish.
			phases := [3]chan struct{}{make(chan struct{}), make(chan struct{}), make(chan struct{})}
			phase := i % 3
			var (
				wg                  sync.WaitGroup
				first, second       []store.Delivery
				claimErr, finishErr error
				code                int
			)
			wg.Go(func() {
				defer func() {
					for _, ch := range phases[1:] {
						select {
						case <-ch:
						default:
							close(ch)
						}
					}
				}()
				<-phases[0]
				if first, claimErr = claim(); claimErr != nil || len(first) != 1 {
					return
				}
				close(phases[1])
				if finishErr = finish(first[0]); finishErr != nil {
					return
				}
				close(phases[2])
				if second, claimErr = claim(); claimErr == nil && len(second) == 1 {
					finishErr = finish(second[0])
				}
			})
			wg.Go(func() {
				<-phases[phase]
				rec := httptest.NewRecorder()
				r.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/api/v1/deliveries/"+id+"/replay", nil))
				code = rec.Code
			})
			close(phases[0])
			wg.Wait()

			if claimErr != nil || len(first) != 1 || first[0].ID != id || first[0].Attempts != 1 {
				t.Fatalf("race %d: the worker's first claim = %+v (err %v), want delivery %s at attempt 1", i, first, claimErr, id)
			}
			if finishErr != nil {
				t.Fatalf("race %d: the worker lost its claim to the replay (answered %d): %v", i, code, finishErr)
			}
			switch {
			case code == http.StatusConflict && phase < 2:
				if len(second) != 0 {
					t.Fatalf("race %d: replay refused, yet the worker claimed %+v again", i, second)
				}
			case code == http.StatusAccepted:
				if len(second) == 0 { // the replay came after the second claim
					if second, err = claim(); err != nil || len(second) != 1 {
						t.Fatalf("race %d: replay accepted, yet a claim after it = %+v (err %v), want the requeued delivery", i, second, err)
					}
					if err := finish(second[0]); err != nil {
						t.Fatalf("race %d: finish after the replay: %v", i, err)
					}
				}
				if len(second) != 1 || second[0].ID != id || second[0].Attempts != 1 {
					t.Fatalf("race %d: claim of the replayed delivery = %+v, want delivery %s afresh at attempt 1", i, second, id)
				}
			default:
				t.Fatalf("race %d: replay started in phase %d answered %d", i, phase, code)
			}
			// Processed once per accepted replay, plus once: never twice at once.
			if d := getDelivery(t, st, id); d.Status != store.DeliveryFailed || d.Attempts != 1 {
				t.Fatalf("race %d: stored %s with %d attempts, want the last worker's outcome, failed at attempt 1", i, d.Status, d.Attempts)
			}
			answers[answer{phase, code}]++
		}
		t.Logf("replay answers by phase over %d races: %v", races, answers)
	})
}

// bulkRouter is operatorRouter with the bulk replay mounted where
// internal/server mounts it.
func bulkRouter(o *Operators) http.Handler {
	r := operatorRouter(o)
	r.HandleFunc("/api/v1/deliveries/replay", o.ReplayDeliveries).Methods(http.MethodPost)
	return r
}

func TestOperatorListFilters(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		f := newOperatorFixture(t, st)
		t0 := f.all[len(f.all)-1].ReceivedAt
		at := func(d time.Duration) string { return url.QueryEscape(t0.Add(d).Format(time.RFC3339Nano)) }
		filter := func(pred func(store.Delivery) bool) []string {
			var out []string
			for _, d := range f.all {
				if pred(d) {
					out = append(out, d.ID)
				}
			}
			return out
		}
		tests := []struct {
			name  string
			query string
			want  []string
		}{
			{"event", "event=issue.opened", []string{f.succeeded.ID}},
			{"event and its actions", "event=issue", ids(f.all)},
			{"an empty filter does not filter", "event=&status=", ids(f.all)},
			{"received after", "received_after=" + at(2*time.Second), filter(func(d store.Delivery) bool { return !d.ReceivedAt.Before(t0.Add(2 * time.Second)) })},
			{"received before", "received_before=" + at(time.Second), filter(func(d store.Delivery) bool { return !d.ReceivedAt.After(t0.Add(time.Second)) })},
			{"received after, another zone", "received_after=" + url.QueryEscape(t0.Add(3*time.Second).In(time.FixedZone("x", 3600)).Format(time.RFC3339)),
				filter(func(d store.Delivery) bool { return !d.ReceivedAt.Before(t0.Add(3 * time.Second)) })},
			{"error contains", "error_contains=MALFORMED", []string{f.failed.ID}},
			{"error contains nothing stored", "error_contains=timeout", []string{}},
			{"external id", "external_id=fake:7", []string{f.succeeded.ID}},
			{"delivery key", "delivery_key=k1", []string{f.failed.ID}},
			{"delivery key, another connection's", "delivery_key=k3&connection=" + connFake, []string{}},
			{"combined", "connection=" + connFake + "&received_after=" + at(time.Second) + "&received_before=" + at(2*time.Second),
				filter(func(d store.Delivery) bool {
					return d.ConnectionID == connFake && d.ReceivedAt.After(t0) && !d.ReceivedAt.After(t0.Add(2*time.Second))
				})},
			{"combined without a match", "status=failed&event=issue.opened", []string{}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				// Page by one: the cursor holds under the filter.
				var got []string
				cursor := ""
				for range len(f.all) + 1 {
					q := tt.query + "&limit=1"
					if cursor != "" {
						q += "&cursor=" + url.QueryEscape(cursor)
					}
					code, raw := f.do(t, http.MethodGet, "/api/v1/deliveries?"+q)
					if code != http.StatusOK {
						t.Fatalf("status = %d, want %d (%s)", code, http.StatusOK, raw)
					}
					page, next, more := listIDs(t, raw)
					got = append(got, page...)
					if !more {
						break
					}
					cursor = next
				}
				if !slices.Equal(got, tt.want) && !(len(got) == 0 && len(tt.want) == 0) {
					t.Errorf("ids = %v, want %v", got, tt.want)
				}
			})
		}
	})
}

func (f *operatorFixture) post(t *testing.T, target, body string) (int, []byte) {
	t.Helper()
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, target, strings.NewReader(body)))
	return rec.Code, rec.Body.Bytes()
}

type bulkAnswer struct {
	Matched, Replayed, Skipped int
	// WouldReplay is a dry run's count, which never answers replayed.
	WouldReplay *int `json:"would_replay"`
	HasReplayed bool `json:"-"`
	Deliveries  []DeliveryJSON
}

func decodeBulk(t *testing.T, raw []byte) bulkAnswer {
	t.Helper()
	var a bulkAnswer
	if err := json.Unmarshal(raw, &a); err != nil || a.Deliveries == nil {
		t.Fatalf("decode bulk replay answer %s: %v", raw, err)
	}
	a.HasReplayed = bytes.Contains(raw, []byte(`"replayed":`))
	if a.HasReplayed == (a.WouldReplay != nil) {
		t.Fatalf("bulk replay answer %s: want replayed or would_replay, never both or neither", raw)
	}
	return a
}

func jsonIDs(ds []DeliveryJSON) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.ID
	}
	return out
}

func TestOperatorBulkReplay(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		f := newOperatorFixture(t, st)
		f.h = bulkRouter(NewOperators(f.st, testLogger(t), f.clock.Now))
		f.clock.Advance(time.Minute)
		var main []store.Delivery // fake-main: succeeded, failed, processing or queued ones
		for _, d := range f.all {
			if d.ConnectionID == connFake {
				main = append(main, d)
			}
		}
		snapshot := func() []store.Delivery {
			t.Helper()
			ds, err := st.ListDeliveries(ctx, store.DeliveryFilter{Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			return ds.Deliveries
		}
		before := snapshot()

		code, raw := f.post(t, "/api/v1/deliveries/replay", `{"connection":"`+connFake+`","dry_run":true}`)
		if code != http.StatusOK {
			t.Fatalf("dry run = %d, want 200 (%s)", code, raw)
		}
		if got := decodeBulk(t, raw); got.Matched != len(main) || got.HasReplayed || got.WouldReplay == nil || *got.WouldReplay != 2 ||
			got.Skipped != len(main)-2 || !slices.Equal(jsonIDs(got.Deliveries), ids(main)) {
			t.Errorf("dry run = %s, want %d matched (%v), would_replay 2 and no replayed", raw, len(main), ids(main))
		}
		if after := snapshot(); !slices.EqualFunc(after, before, func(a, b store.Delivery) bool {
			return a.ID == b.ID && a.Status == b.Status && a.Attempts == b.Attempts && a.NextAttemptAt.Equal(b.NextAttemptAt)
		}) {
			t.Errorf("a dry run changed the inbox")
		}
		if n := f.st.n.Load(); n != 0 {
			t.Errorf("notifications after a dry run = %d, want 0", n)
		}

		// A delivery found by its provider's delivery ID.
		code, raw = f.post(t, "/api/v1/deliveries/replay", `{"delivery_key":"k1","dry_run":true}`)
		if got := decodeBulk(t, raw); code != http.StatusOK || got.Matched != 1 || got.WouldReplay == nil || *got.WouldReplay != 1 ||
			!slices.Equal(jsonIDs(got.Deliveries), []string{f.failed.ID}) {
			t.Errorf("dry run by delivery_key = %d %s, want the failed delivery k1 alone", code, raw)
		}

		// max: the newest one matched only, a queued one: skipped.
		code, raw = f.post(t, "/api/v1/deliveries/replay", `{"connection":"`+connFake+`","max":1}`)
		if got := decodeBulk(t, raw); code != http.StatusOK || got.Matched != 1 || got.Replayed != 0 || got.Skipped != 1 ||
			!slices.Equal(jsonIDs(got.Deliveries), ids(main[:1])) {
			t.Errorf("max 1 = %d %s, want the newest (queued) one matched and skipped", code, raw)
		}

		code, raw = f.post(t, "/api/v1/deliveries/replay", `{"connection":"`+connFake+`"}`)
		if code != http.StatusOK {
			t.Fatalf("replay = %d, want 200 (%s)", code, raw)
		}
		got := decodeBulk(t, raw)
		if got.Matched != len(main) || got.Replayed != 2 || got.Skipped != len(main)-2 {
			t.Errorf("replay = %s, want %d matched, 2 replayed", raw, len(main))
		}
		for _, d := range got.Deliveries {
			if (d.ID == f.succeeded.ID || d.ID == f.failed.ID) && (d.Status != store.DeliveryQueued || d.Attempts != 0 || d.Outcome != nil) {
				t.Errorf("answered %+v, want it queued afresh", d)
			}
		}
		if n := f.st.n.Load(); n != 1 {
			t.Errorf("notifications = %d, want 1", n)
		}
		for _, d := range snapshot() {
			var was store.Delivery
			for _, b := range before {
				if b.ID == d.ID {
					was = b
				}
			}
			switch {
			case d.ID == f.succeeded.ID || d.ID == f.failed.ID:
				if d.Status != store.DeliveryQueued || d.Attempts != 0 || !d.NextAttemptAt.Equal(f.clock.Now()) || d.LastError != "" {
					t.Errorf("%s after the replay: %+v, want queued afresh, due now", d.DeliveryKey, d)
				}
			default:
				if d.Status != was.Status || d.Attempts != was.Attempts || d.LeaseOwner != was.LeaseOwner || !d.NextAttemptAt.Equal(was.NextAttemptAt) {
					t.Errorf("%s after the replay: %+v, want it untouched (%+v)", d.DeliveryKey, d, was)
				}
			}
		}
	})
}

func TestOperatorBulkReplayInvalid(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, store.DialectSQLite)
	h := bulkRouter(NewOperators(st, testLogger(t), nil))
	tests := []struct {
		body, wantError string
	}{
		{`{}`, "at least one filter is required: status, connection, event, received_after, received_before, error_contains, external_id, delivery_key"},
		{`{"dry_run":true,"max":5}`, "at least one filter is required: status, connection, event, received_after, received_before, error_contains, external_id, delivery_key"},
		{`{"status":""}`, "at least one filter is required: status, connection, event, received_after, received_before, error_contains, external_id, delivery_key"},
		{`{"status":"failed","max":0}`, "max must be an integer between 1 and 100000"},
		{`{"status":"failed","max":100001}`, "max must be an integer between 1 and 100000"},
		{`{"status":"bogus"}`, `invalid status "bogus": want one of queued, processing, succeeded, ignored, suppressed, retrying, failed`},
		{`{"received_after":"2h"}`, "received_after must be an RFC 3339 time such as 2026-01-02T15:04:05Z"},
		{`{"status":"failed","since":"2h"}`, `malformed JSON: json: unknown field "since"`},
		{`{"status":"failed","dry_run":"yes"}`, `field "dry_run" must be bool`},
		{`{"connection":"a\u0000b"}`, "connection contains a NUL character"},
	}
	for _, tt := range tests {
		t.Run(tt.body, func(t *testing.T) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/api/v1/deliveries/replay", strings.NewReader(tt.body)))
			if rec.Code != http.StatusBadRequest {
				t.Errorf("status = %d, want %d", rec.Code, http.StatusBadRequest)
			}
			if got := errorMessage(t, rec); got != tt.wantError {
				t.Errorf("error = %q, want %q", got, tt.wantError)
			}
		})
	}
}

// TestOperatorBulkReplayRacesWorkerClaims: a bulk replay racing a worker
// that claims a batch, finishes it and claims again never resets a
// delivery under the worker nor has one processed twice at once. The
// replay starts with the worker, after its first claim or after its finish
// (in turn): each delivery it finds unfinished is skipped, each finished
// one is requeued and then claimed afresh exactly once.
func TestOperatorBulkReplayRacesWorkerClaims(t *testing.T) {
	t.Parallel()
	const races, batch = 60, 4
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		clock := newTestClock()
		h := bulkRouter(NewOperators(st, testLogger(t), clock.Now))
		claim := func() ([]store.Delivery, error) {
			return st.ClaimDeliveries(ctx, "worker", clock.Now(), time.Minute, 2*batch)
		}
		finish := func(ds []store.Delivery) error {
			for _, d := range ds {
				now := clock.Now()
				d.Status, d.ProcessedAt, d.NextAttemptAt, d.LastError = store.DeliveryFailed, &now, now, "parse: malformed payload"
				if err := st.FinishDelivery(ctx, d, "worker"); err != nil {
					return err
				}
			}
			return nil
		}
		answers := map[[2]int]int{}
		for i := range races {
			event := "race-" + strconv.Itoa(i)
			var in []store.Delivery
			for j := range batch {
				in = append(in, store.Delivery{ConnectionID: connFake, Provider: fakeProvider, Event: event,
					DeliveryKey: event + "-" + strconv.Itoa(j), Headers: `{}`, Body: []byte(`{}`), ReceivedAt: clock.Now()})
			}
			if _, err := st.InsertDeliveries(ctx, in); err != nil {
				t.Fatalf("insert: %v", err)
			}
			phases := [3]chan struct{}{make(chan struct{}), make(chan struct{}), make(chan struct{})}
			phase := i % 3
			var (
				wg                  sync.WaitGroup
				first, second       []store.Delivery
				claimErr, finishErr error
				code                int
				raw                 []byte
			)
			wg.Go(func() {
				defer func() {
					for _, ch := range phases[1:] {
						select {
						case <-ch:
						default:
							close(ch)
						}
					}
				}()
				<-phases[0]
				if first, claimErr = claim(); claimErr != nil || len(first) != batch {
					return
				}
				close(phases[1])
				if finishErr = finish(first); finishErr != nil {
					return
				}
				close(phases[2])
				if second, claimErr = claim(); claimErr == nil {
					finishErr = finish(second)
				}
			})
			wg.Go(func() {
				<-phases[phase]
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/api/v1/deliveries/replay", strings.NewReader(`{"event":"`+event+`"}`)))
				code, raw = rec.Code, rec.Body.Bytes()
			})
			close(phases[0])
			wg.Wait()

			if claimErr != nil || len(first) != batch {
				t.Fatalf("race %d: the worker's first claim = %d deliveries (err %v), want %d", i, len(first), claimErr, batch)
			}
			for _, d := range first {
				if d.Event != event || d.Attempts != 1 {
					t.Fatalf("race %d: first claim took %+v, want this race's deliveries at attempt 1", i, d)
				}
			}
			if finishErr != nil {
				t.Fatalf("race %d: the worker lost a claim to the replay: %v", i, finishErr)
			}
			if code != http.StatusOK {
				t.Fatalf("race %d: bulk replay = %d %s", i, code, raw)
			}
			got := decodeBulk(t, raw)
			if got.Matched != batch || got.Replayed+got.Skipped != batch {
				t.Fatalf("race %d: bulk replay = %s, want %d matched", i, raw, batch)
			}
			// Every requeued delivery is claimed afresh exactly once: by the
			// worker's second claim or by one after the race.
			later, err := claim()
			if err != nil {
				t.Fatal(err)
			}
			if err := finish(later); err != nil {
				t.Fatalf("race %d: finish after the replay: %v", i, err)
			}
			again := append(slices.Clone(second), later...)
			if len(again) != got.Replayed {
				t.Fatalf("race %d: %d deliveries claimed again, want the %d replayed (%s)", i, len(again), got.Replayed, raw)
			}
			for _, d := range again {
				if d.Event != event || d.Attempts != 1 {
					t.Fatalf("race %d: claim after the replay = %+v, want this race's delivery afresh at attempt 1", i, d)
				}
			}
			for _, d := range first {
				if s := getDelivery(t, st, d.ID); s.Status != store.DeliveryFailed || s.Attempts != 1 {
					t.Fatalf("race %d: stored %s with %d attempts, want failed at attempt 1", i, s.Status, s.Attempts)
				}
			}
			answers[[2]int{phase, got.Replayed}]++
		}
		t.Logf("(phase, replayed) over %d races: %v", races, answers)
	})
}

// TestOperatorBulkReplaysRaceEachOtherAndClaims: two bulk replays of the
// same failed deliveries race each other and a worker claiming in a loop.
// A replay that read a delivery as failed may reach its UPDATE after the
// other requeued it and the worker claimed it: the guard in the UPDATE
// skips it then, so the worker never loses a claim and each requeue is
// claimed exactly once.
func TestOperatorBulkReplaysRaceEachOtherAndClaims(t *testing.T) {
	t.Parallel()
	const races, batch = 40, 8
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		clock := newTestClock()
		h := bulkRouter(NewOperators(st, testLogger(t), clock.Now))
		claimAndFail := func() (int, error) {
			ds, err := st.ClaimDeliveries(ctx, "worker", clock.Now(), time.Minute, batch)
			if err != nil {
				return 0, err
			}
			for _, d := range ds {
				if d.Attempts != 1 {
					return 0, fmt.Errorf("delivery %s claimed at attempt %d, want a fresh 1", d.ID, d.Attempts)
				}
				now := clock.Now()
				d.Status, d.ProcessedAt, d.NextAttemptAt, d.LastError = store.DeliveryFailed, &now, now, "parse: malformed payload"
				if err := st.FinishDelivery(ctx, d, "worker"); err != nil {
					return 0, fmt.Errorf("finish %s: %w", d.ID, err)
				}
			}
			return len(ds), nil
		}
		for i := range races {
			event := "both-" + strconv.Itoa(i)
			var in []store.Delivery
			for j := range batch {
				in = append(in, store.Delivery{ConnectionID: connFake, Provider: fakeProvider, Event: event,
					DeliveryKey: event + "-" + strconv.Itoa(j), Headers: `{}`, Body: []byte(`{}`), ReceivedAt: clock.Now()})
			}
			if _, err := st.InsertDeliveries(ctx, in); err != nil {
				t.Fatalf("insert: %v", err)
			}
			if n, err := claimAndFail(); err != nil || n != batch {
				t.Fatalf("race %d: first processing = %d, %v", i, n, err)
			}
			var (
				wg        sync.WaitGroup
				replays   [2]bulkAnswer
				codes     [2]int
				reclaimed int
				workerErr error
			)
			replaysDone := make(chan struct{})
			start := make(chan struct{})
			var rg sync.WaitGroup
			for k := range replays {
				rg.Go(func() {
					<-start
					rec := httptest.NewRecorder()
					h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/api/v1/deliveries/replay", strings.NewReader(`{"event":"`+event+`"}`)))
					codes[k] = rec.Code
					if rec.Code == http.StatusOK {
						replays[k] = decodeBulk(t, rec.Body.Bytes())
					}
				})
			}
			wg.Go(func() {
				rg.Wait()
				close(replaysDone)
			})
			wg.Go(func() {
				<-start
				for {
					finished := false
					select {
					case <-replaysDone:
						finished = true
					default:
					}
					n, err := claimAndFail()
					if err != nil {
						workerErr = err
						return
					}
					reclaimed += n
					if finished && n == 0 {
						return
					}
				}
			})
			close(start)
			wg.Wait()
			if workerErr != nil {
				t.Fatalf("race %d: the worker: %v", i, workerErr)
			}
			if codes != [2]int{http.StatusOK, http.StatusOK} {
				t.Fatalf("race %d: replays answered %v", i, codes)
			}
			if want := replays[0].Replayed + replays[1].Replayed; reclaimed != want {
				t.Fatalf("race %d: %d claims after the replays, want one per requeue: %d (%+v)", i, reclaimed, want, replays)
			}
			ds, err := st.ListDeliveries(ctx, store.DeliveryFilter{Event: event, Limit: batch + 1})
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range ds.Deliveries {
				if d.Status != store.DeliveryFailed || d.Attempts != 1 {
					t.Fatalf("race %d: stored %s with %d attempts, want failed at attempt 1", i, d.Status, d.Attempts)
				}
			}
		}
	})
}

// TestOperatorBulkReplayDefaultMax: without max, a bulk replay considers
// the newest 10,000 matches. (The store's handling of max is in the
// conformance suite, on both dialects.)
func TestOperatorBulkReplayDefaultMax(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, store.DialectSQLite)
	clock := newTestClock()
	var ds []store.Delivery
	for i := range DefaultReplayMax + 1 {
		ds = append(ds, store.Delivery{ConnectionID: connFake, Provider: fakeProvider, Event: "issue", DeliveryKey: "m" + strconv.Itoa(i),
			Headers: `{}`, Body: []byte(`{}`), ReceivedAt: clock.Now().Add(time.Duration(i) * time.Millisecond)})
	}
	if _, err := st.InsertDeliveries(context.Background(), ds); err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	bulkRouter(NewOperators(st, testLogger(t), clock.Now)).ServeHTTP(rec,
		httptest.NewRequest(http.MethodPost, "/api/v1/deliveries/replay", strings.NewReader(`{"connection":"`+connFake+`","dry_run":true}`)))
	if rec.Code != http.StatusOK {
		t.Fatalf("status = %d (%s)", rec.Code, rec.Body)
	}
	got := decodeBulk(t, rec.Body.Bytes())
	if got.Matched != DefaultReplayMax || got.Skipped != DefaultReplayMax || len(got.Deliveries) != 20 ||
		got.Deliveries[0].DeliveryKey != "m"+strconv.Itoa(DefaultReplayMax) {
		t.Errorf("matched %d, skipped %d, %d shown (first %s); want the newest %d, 20 shown", got.Matched, got.Skipped,
			len(got.Deliveries), got.Deliveries[0].DeliveryKey, DefaultReplayMax)
	}
	if DefaultReplayMax != 10000 {
		t.Errorf("DefaultReplayMax = %d, want 10000 (docs/design.md)", DefaultReplayMax)
	}
}

// TestOperatorListErrorScanBound: an error_contains page reads at most
// ErrorScanPages times its limit of deliveries holding an error. A page the bound cut short
// (even empty) still gives a cursor, and following the cursors yields
// every match once, whatever the bound.
func TestOperatorListErrorScanBound(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		clock := newTestClock()
		const n = 5
		var ds []store.Delivery
		for i := range n {
			ds = append(ds, store.Delivery{ConnectionID: connFake, Provider: fakeProvider, Event: "issue", DeliveryKey: fmt.Sprint("e", i),
				Headers: `{}`, Body: []byte(`{}`), ReceivedAt: clock.Now().Add(time.Duration(i) * time.Second)})
		}
		if _, err := st.InsertDeliveries(ctx, ds); err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Minute)
		var failed []string // newest first
		for range n {
			got, err := st.ClaimDeliveries(ctx, "w", clock.Now(), time.Minute, 1)
			if err != nil || len(got) != 1 {
				t.Fatalf("claim = %v, %v", got, err)
			}
			d, now := got[0], clock.Now()
			d.Status, d.ProcessedAt, d.NextAttemptAt, d.LastError = store.DeliveryFailed, &now, now, "apply: Boom"
			if err := st.FinishDelivery(ctx, d, "w"); err != nil {
				t.Fatal(err)
			}
			failed = append([]string{d.ID}, failed...)
		}
		o := NewOperators(st, testLogger(t), clock.Now)
		o.ErrorScanPages = 1
		h := operatorRouter(o)
		list := func(query string) (got []string, pages int) {
			t.Helper()
			cursor := ""
			for pages = 1; pages <= n+2; pages++ {
				q := query
				if cursor != "" {
					q += "&cursor=" + url.QueryEscape(cursor)
				}
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/deliveries?"+q, nil))
				if rec.Code != http.StatusOK {
					t.Fatalf("%s: status %d %s", q, rec.Code, rec.Body)
				}
				page, next, more := listIDs(t, rec.Body.Bytes())
				if len(page) > 2 {
					t.Errorf("%s: a page of %d read more than the bound of 2 errors", q, len(page))
				}
				got = append(got, page...)
				if !more {
					return got, pages
				}
				cursor = next
			}
			t.Fatalf("%s: more than %d pages", query, n+2)
			return nil, 0
		}
		tests := []struct {
			query     string
			want      []string
			wantPages int
		}{
			// Five errors, two read per page of two: 2 + 2, then the last
			// one with no bound left to stop at.
			{"error_contains=nothing+like+it&limit=2", nil, 3},
			{"error_contains=BOOM&limit=2", failed, 3},
			// Pages of one: the bound ends each after one error, the
			// last with nothing left to read.
			{"error_contains=boom&limit=1", failed, n + 1},
		}
		for _, tt := range tests {
			got, pages := list(tt.query)
			if !slices.Equal(got, tt.want) || pages != tt.wantPages {
				t.Errorf("%s: %v in %d pages, want %v in %d", tt.query, got, pages, tt.want, tt.wantPages)
			}
		}
	})
}

// A row stored before a header was known to be secret, in whatever case,
// never shows it.
func TestShownHeadersHideEverySecretHeader(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		f := newOperatorFixture(t, st)
		names := []string{"Authorization", "Proxy-Authorization", "Cookie", "X-Api-Key", "X-Forwarded-Authorization",
			"X-Amz-Security-Token", "X-Hub-Signature-256", "X-Gitlab-Token"}
		stored := http.Header{"X-Fake-Event": {"issue"}}
		for _, name := range names {
			stored[name] = []string{"secret-value-of-" + name}
			stored[strings.ToLower(name)] = []string{"secret-value-lower-" + name}
			stored[strings.ToUpper(name)] = []string{"secret-value-upper-" + name}
		}
		raw, err := json.Marshal(stored)
		if err != nil {
			t.Fatal(err)
		}
		res, err := st.InsertDeliveries(context.Background(), []store.Delivery{{ConnectionID: connFake, Provider: fakeProvider,
			Event: "issue", DeliveryKey: "old-row", Headers: string(raw), Body: []byte(`{}`), ReceivedAt: f.clock.Now()}})
		if err != nil {
			t.Fatal(err)
		}
		code, body := f.do(t, http.MethodGet, "/api/v1/deliveries/"+res[0].ID)
		if code != http.StatusOK {
			t.Fatalf("status = %d (%s)", code, body)
		}
		if strings.Contains(string(body), "secret-value") {
			t.Errorf("GET /api/v1/deliveries/{id} shows a secret header: %s", body)
		}
		if !strings.Contains(string(body), "X-Fake-Event") {
			t.Errorf("GET /api/v1/deliveries/{id} = %s, want the other headers", body)
		}
	})
}
