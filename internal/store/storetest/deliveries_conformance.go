package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/store/sqlstore"
)

var deliveryTests = []contractTest{
	{name: "inbox dedupes and claims", fn: testInbox},
	// The encoding a body is stored in is invisible through the contract:
	// reads return it as received.
	{name: "delivery bodies are stored encoded and read as received", driver: testDeliveryBodies},
	{name: "a delivery's content is stored once and deleted with it", driver: testDeliveryContents},
	{name: "a delivery keeps its receipt's trace context", fn: testDeliveryTraceContext},
	{name: "only a finished delivery is requeued", fn: testRequeueGuard},
	{name: "the next delivery due", fn: testNextDeliveryDue},
	{name: "deliveries filtered alone and combined, paged stably", fn: testDeliveryFilters},
	{name: "bulk requeue of filtered deliveries", fn: testRequeueDeliveries},
	{name: "a delivery found by its provider's delivery ID", fn: testDeliveryKeyFilter},
	// The plan is beneath the contract: each filter must be served by an
	// index in the list's order, or a page costs a scan of the inbox.
	{name: "each delivery filter is served by an index", driver: testDeliveryFilterPlans},
	{name: "the reads of partial indexes use them", driver: testPartialIndexReadPlans},
}

// testDeliveryContents: the headers and body of a delivery live in
// delivery_contents, one row per stored delivery, whether the batch fits
// one statement or spans several (insertChunk, 128); a duplicate, in its
// batch or in a later one, writes no content; deleting a delivery deletes
// its content.
func testDeliveryContents(t *testing.T, s *sqlstore.Store) {
	ctx := context.Background()
	contents := func() int {
		t.Helper()
		var n int
		must(t, s.Driver().QueryRow(ctx, `SELECT COUNT(*) FROM delivery_contents`).Scan(&n))
		return n
	}
	batch := func(prefix string, n int) []store.Delivery {
		ds := make([]store.Delivery, n)
		for i := range ds {
			ds[i] = store.Delivery{ConnectionID: "gh", Provider: "github", Event: "issues",
				DeliveryKey: prefix + strconv.Itoa(i), Headers: `{"X-Github-Event":["issues"]}`,
				Body: []byte(`{"n":` + strconv.Itoa(i) + `}`), ReceivedAt: epoch}
		}
		return ds
	}
	tests := []struct {
		name string
		ds   []store.Delivery
		want int // content rows after the batch
	}{
		{"one statement with a duplicate", append(batch("small-", 3), batch("small-", 1)...), 3},
		{"several statements with a duplicate", append(batch("big-", 200), batch("big-", 1)...), 203},
		{"only earlier duplicates", batch("small-", 2), 203},
	}
	for _, tt := range tests {
		res, err := s.InsertDeliveries(ctx, tt.ds)
		must(t, err)
		if got := contents(); got != tt.want {
			t.Errorf("%s: %d content rows, want %d", tt.name, got, tt.want)
		}
		last := len(tt.ds) - 1
		got, err := s.GetDelivery(ctx, res[last].ID)
		must(t, err)
		if got.Headers != tt.ds[last].Headers || !bytes.Equal(got.Body, tt.ds[last].Body) {
			t.Errorf("%s: read back headers %q body %q, want %q %q", tt.name, got.Headers, got.Body, tt.ds[last].Headers, tt.ds[last].Body)
		}
	}
	_, err := s.Driver().Exec(ctx, `UPDATE deliveries SET status = 'succeeded', attempts = 1, processed_at = $1
		WHERE delivery_key LIKE 'small-%'`, epoch)
	must(t, err)
	n, err := s.DeleteExpiredDeliveries(ctx, store.ProcessedStatuses, epoch.Add(time.Hour), 10)
	must(t, err)
	if n != 3 || contents() != 200 {
		t.Errorf("deleted %d deliveries, %d content rows left; want 3 and 200", n, contents())
	}
}

// testDeliveryTraceContext: the receipt's traceparent is stored with the
// delivery (the first receipt's, a duplicate's is not) and read back by the
// claim, the detail, the list and a replay, so a retry joins the trace;
// a delivery received with tracing off has none.
func testDeliveryTraceContext(t *testing.T, s store.Store) {
	ctx := context.Background()
	const traced = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	d := store.Delivery{ConnectionID: "gh", Provider: "github", Event: "issues", DeliveryKey: "traced", Headers: `{}`,
		Body: []byte(`{}`), ReceivedAt: epoch, TraceContext: traced}
	dup := d
	dup.TraceContext = "00-11111111111111111111111111111111-2222222222222222-01"
	plain := store.Delivery{ConnectionID: "gh", Provider: "github", Event: "issues", DeliveryKey: "plain", Headers: `{}`,
		Body: []byte(`{}`), ReceivedAt: epoch}
	res, err := s.InsertDeliveries(ctx, []store.Delivery{d, dup, plain})
	must(t, err)
	claimed, err := s.ClaimDeliveries(ctx, "w1", epoch, time.Minute, 10)
	must(t, err)
	want := map[string]string{res[0].ID: traced, res[2].ID: ""}
	if len(claimed) != 2 {
		t.Fatalf("claimed %d deliveries, want 2", len(claimed))
	}
	for _, c := range claimed {
		if c.TraceContext != want[c.ID] {
			t.Errorf("claimed %s: trace context %q, want %q", c.DeliveryKey, c.TraceContext, want[c.ID])
		}
	}
	got, err := s.GetDelivery(ctx, res[0].ID)
	must(t, err)
	if got.TraceContext != traced {
		t.Errorf("read trace context %q, want %q", got.TraceContext, traced)
	}
	page, err := s.ListDeliveries(ctx, store.DeliveryFilter{Limit: 10})
	must(t, err)
	for _, l := range page.Deliveries {
		if l.TraceContext != want[l.ID] {
			t.Errorf("listed %s: trace context %q, want %q", l.DeliveryKey, l.TraceContext, want[l.ID])
		}
	}
	done := got
	done.Status = store.DeliverySucceeded
	now := epoch.Add(time.Minute)
	done.ProcessedAt = &now
	must(t, s.FinishDelivery(ctx, done, "w1"))
	rq, requeued, err := s.RequeueDelivery(ctx, done.ID, now)
	must(t, err)
	if !requeued || rq.TraceContext != traced {
		t.Errorf("replayed: requeued %v, trace context %q, want %q", requeued, rq.TraceContext, traced)
	}
}

func testInbox(t *testing.T, s store.Store) {
	ctx := context.Background()
	d := store.Delivery{ConnectionID: "gh", Provider: "github", Event: "issues", DeliveryKey: "k1", Headers: `{}`,
		Body: []byte(`{"a":1}`), ReceivedAt: epoch}
	res, err := s.InsertDeliveries(ctx, []store.Delivery{d, d})
	must(t, err)
	if res[0].Duplicate || !res[1].Duplicate || res[0].ID != res[1].ID {
		t.Fatalf("batch with duplicate = %+v", res)
	}
	claimed, err := s.ClaimDeliveries(ctx, "w1", epoch, time.Minute, 10)
	must(t, err)
	if len(claimed) != 1 || claimed[0].Attempts != 1 || string(claimed[0].Body) != `{"a":1}` {
		t.Fatalf("claimed = %+v", claimed)
	}
	again, err := s.ClaimDeliveries(ctx, "w2", epoch.Add(time.Second), time.Minute, 10)
	must(t, err)
	if len(again) != 0 {
		t.Fatalf("leased delivery claimed twice: %+v", again)
	}
	// An expired lease is reclaimed.
	stolen, err := s.ClaimDeliveries(ctx, "w2", epoch.Add(2*time.Minute), time.Minute, 10)
	must(t, err)
	if len(stolen) != 1 || stolen[0].Attempts != 2 {
		t.Fatalf("expired lease not reclaimed: %+v", stolen)
	}
	done := stolen[0]
	done.Status = store.DeliverySucceeded
	now := epoch.Add(3 * time.Minute)
	done.ProcessedAt = &now
	if err := s.FinishDelivery(ctx, done, "w1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("finish by lost lease err = %v, want ErrNotFound", err)
	}
	must(t, s.FinishDelivery(ctx, done, "w2"))
	got, err := s.GetDelivery(ctx, done.ID)
	must(t, err)
	if got.Status != store.DeliverySucceeded || got.LeaseOwner != "" {
		t.Errorf("finished = %+v", got)
	}
	list, err := s.ListDeliveries(ctx, store.DeliveryFilter{Status: store.DeliverySucceeded, Limit: 10})
	must(t, err)
	if len(list.Deliveries) != 1 {
		t.Errorf("list succeeded = %d", len(list.Deliveries))
	}
	rq, requeued, err := s.RequeueDelivery(ctx, done.ID, now)
	must(t, err)
	if !requeued || rq.Status != store.DeliveryQueued || rq.Attempts != 0 {
		t.Errorf("requeued = %v, %+v", requeued, rq)
	}
}

func testDeliveryBodies(t *testing.T, s *sqlstore.Store) {
	ctx := context.Background()
	webhook := []byte(`{"action":"opened","issue":{"title":"` + strings.Repeat("a long and repetitive title ", 80) + `"}}`)
	noise := make([]byte, 4096)
	_, _ = rand.NewChaCha8([32]byte{1}).Read(noise) // never fails
	preEncoded, encoding := store.EncodeDeliveryBody(webhook)
	if encoding != store.BodyS2 {
		t.Fatalf("webhook body encoding = %q, want %q", encoding, store.BodyS2)
	}
	tests := []struct {
		name         string
		body         []byte
		bodyEncoding string // as given to InsertDeliveries
		wantStored   string // body_encoding of the row
	}{
		{"compressible body is compressed", webhook, "", store.BodyS2},
		{"pre-encoded body is stored as it is", preEncoded, store.BodyS2, store.BodyS2},
		{"small body is stored as received", []byte(`{"zen":"Keep it logically awesome."}`), "", store.BodyIdentity},
		{"incompressible body is stored as received", noise, "", store.BodyIdentity},
		{"empty body", []byte{}, "", store.BodyIdentity},
	}
	for i, tc := range tests {
		d := store.Delivery{ConnectionID: "gh", Provider: "github", Event: "issues", DeliveryKey: "body-" + strconv.Itoa(i),
			Headers: `{}`, Body: tc.body, BodyEncoding: tc.bodyEncoding, ReceivedAt: epoch}
		res, err := s.InsertDeliveries(ctx, []store.Delivery{d})
		must(t, err)
		var stored string
		var storedBody []byte
		must(t, s.Driver().QueryRow(ctx, `SELECT body_encoding, body FROM delivery_contents WHERE delivery_id = $1`, res[0].ID).Scan(&stored, &storedBody))
		if stored != tc.wantStored {
			t.Errorf("%s: stored encoding = %q, want %q", tc.name, stored, tc.wantStored)
		}
		want := tc.body
		if tc.bodyEncoding != "" {
			want = webhook
		}
		if stored == store.BodyS2 && len(storedBody) >= len(want) {
			t.Errorf("%s: stored %d bytes for a %d-byte body", tc.name, len(storedBody), len(want))
		}
		got, err := s.GetDelivery(ctx, res[0].ID)
		must(t, err)
		if !bytes.Equal(got.Body, want) || got.BodyEncoding != "" {
			t.Errorf("%s: read back %d bytes (encoding %q), want the %d bytes received", tc.name, len(got.Body), got.BodyEncoding, len(want))
		}
	}
	// A row stored before bodies had an encoding (migration 00005) has the
	// identity encoding, and reads back as it was stored.
	old := uuid.NewString()
	_, err := s.Driver().Exec(ctx, `INSERT INTO deliveries (id, connection_id, provider, event, delivery_key,
		status, attempts, next_attempt_at, received_at) VALUES ($1, 'gh', 'github', 'issues', 'before-00005',
		'succeeded', 1, $2, $2)`, old, epoch)
	must(t, err)
	_, err = s.Driver().Exec(ctx, `INSERT INTO delivery_contents (delivery_id, headers, body, body_encoding)
		VALUES ($1, '{}', $2, 'identity')`, old, webhook)
	must(t, err)
	if got, err := s.GetDelivery(ctx, old); err != nil || !bytes.Equal(got.Body, webhook) {
		t.Errorf("row from before body encodings: %d bytes (err %v), want the %d stored", len(got.Body), err, len(webhook))
	}

	claimed, err := s.ClaimDeliveries(ctx, "w1", epoch, time.Minute, len(tests))
	must(t, err)
	if len(claimed) != len(tests) {
		t.Fatalf("claimed %d deliveries, want %d", len(claimed), len(tests))
	}
	for _, d := range claimed {
		var i int
		if _, err := fmt.Sscanf(d.DeliveryKey, "body-%d", &i); err != nil {
			t.Fatalf("delivery key %q: %v", d.DeliveryKey, err)
		}
		want := tests[i].body
		if tests[i].bodyEncoding != "" {
			want = webhook
		}
		if !bytes.Equal(d.Body, want) {
			t.Errorf("%s: claimed body is %d bytes, want the %d bytes received", tests[i].name, len(d.Body), len(want))
		}
	}
}

// deliveryIn stores a delivery and takes it, through the inbox's own
// statements, to status: claimed at epoch with a 10-minute lease, then
// finished (a retry due in an hour) unless it stays queued or processing.
// A queued one must be made last: later claims would take it.
func deliveryIn(t testing.TB, s store.Store, key, status string) string {
	t.Helper()
	ctx := context.Background()
	id := insertDelivery(t, s, newDelivery(key))
	if status == store.DeliveryQueued {
		return id
	}
	claimed, err := s.ClaimDeliveries(ctx, "w-"+key, epoch, 10*time.Minute, 1)
	must(t, err)
	if len(claimed) != 1 || claimed[0].ID != id {
		t.Fatalf("claimed %+v, want delivery %s", claimed, id)
	}
	if status == store.DeliveryProcessing {
		return id
	}
	d := claimed[0]
	processed := epoch.Add(time.Second)
	d.Status, d.ProcessedAt, d.NextAttemptAt = status, &processed, processed
	switch status {
	case store.DeliveryRetrying:
		d.ProcessedAt, d.NextAttemptAt, d.LastError = nil, epoch.Add(time.Hour), "provider unavailable"
	case store.DeliveryFailed:
		d.LastError = "malformed payload"
	default:
		d.OutcomeTaskID, d.OutcomeExternalID, d.OutcomeAction, d.OutcomeResult = uuid.NewString(), "github:x:issue:1", "create", "created"
	}
	must(t, s.FinishDelivery(ctx, d, "w-"+key))
	return id
}

// testRequeueGuard: the replay UPDATE resets a finished delivery (and only
// a finished one) to a fresh queued delivery; one that has not finished is
// left exactly as it is, and an unknown one is ErrNotFound.
func testRequeueGuard(t *testing.T, s store.Store) {
	ctx := context.Background()
	tests := []struct {
		status       string
		wantRequeued bool
	}{
		{store.DeliverySucceeded, true},
		{store.DeliveryIgnored, true},
		{store.DeliverySuppressed, true},
		{store.DeliveryFailed, true},
		{store.DeliveryRetrying, false},
		{store.DeliveryProcessing, false},
		{store.DeliveryQueued, false}, // last: see deliveryIn
	}
	ids := map[string]string{}
	for _, tc := range tests {
		ids[tc.status] = deliveryIn(t, s, tc.status, tc.status)
	}
	now := epoch.Add(time.Minute) // the processing delivery's lease is live
	var requeuedIDs []string
	for _, tc := range tests {
		id := ids[tc.status]
		before, err := s.GetDelivery(ctx, id)
		must(t, err)
		d, requeued, err := s.RequeueDelivery(ctx, id, now)
		must(t, err)
		after, err := s.GetDelivery(ctx, id)
		must(t, err)
		if requeued != tc.wantRequeued || d.ID != id {
			t.Errorf("%s: requeued = %v (delivery %s), want %v", tc.status, requeued, d.ID, tc.wantRequeued)
			continue
		}
		if !requeued {
			if d.Status != tc.status || after.Status != tc.status || after.Attempts != before.Attempts ||
				after.LeaseOwner != before.LeaseOwner || !after.NextAttemptAt.Equal(before.NextAttemptAt) || after.LastError != before.LastError {
				t.Errorf("%s: answered %s, stored %+v; want it untouched: %+v", tc.status, d.Status, after, before)
			}
			continue
		}
		requeuedIDs = append(requeuedIDs, id)
		for _, got := range []store.Delivery{d, after} {
			if got.Status != store.DeliveryQueued || got.Attempts != 0 || got.LastError != "" || !got.NextAttemptAt.Equal(now) ||
				got.LeaseOwner != "" || got.LeaseExpiresAt != nil || got.ProcessedAt != nil || got.OutcomeTaskID != "" ||
				got.OutcomeExternalID != "" || got.OutcomeAction != "" || got.OutcomeResult != "" {
				t.Errorf("%s: requeued as %+v, want queued afresh, due %v", tc.status, got, now)
			}
		}
	}
	for _, id := range []string{uuid.NewString(), "not-a-uuid"} {
		if _, requeued, err := s.RequeueDelivery(ctx, id, now); !errors.Is(err, store.ErrNotFound) || requeued {
			t.Errorf("requeue %q = %v, %v; want ErrNotFound", id, requeued, err)
		}
	}
	// Requeued deliveries are due again, with their attempts counted afresh.
	claimed, err := s.ClaimDeliveries(ctx, "w", now, time.Minute, 10)
	must(t, err)
	var claimedIDs []string
	for _, d := range claimed {
		if d.ID != ids[store.DeliveryQueued] {
			claimedIDs = append(claimedIDs, d.ID)
		}
		if d.Attempts != 1 {
			t.Errorf("claimed %s with attempts %d, want 1", d.ID, d.Attempts)
		}
	}
	slices.Sort(claimedIDs)
	slices.Sort(requeuedIDs)
	if !slices.Equal(claimedIDs, requeuedIDs) || len(claimed) != len(requeuedIDs)+1 {
		t.Errorf("claimed %d deliveries (%q besides the queued one), want the requeued %q", len(claimed), claimedIDs, requeuedIDs)
	}
}

// testNextDeliveryDue: the earliest next attempt of a pending delivery
// (queued, retrying, or processing until its lease expires), zero when none.
func testNextDeliveryDue(t *testing.T, s store.Store) {
	ctx := context.Background()
	check := func(step string, want time.Time) {
		t.Helper()
		got, err := s.NextDeliveryDue(ctx)
		must(t, err)
		if !got.Equal(want) {
			t.Errorf("%s: next due = %v, want %v", step, got, want)
		}
	}
	check("empty inbox", time.Time{})
	a, b := newDelivery("a"), newDelivery("b")
	a.ReceivedAt, b.ReceivedAt = epoch.Add(time.Minute), epoch.Add(2*time.Minute)
	insertDelivery(t, s, a)
	insertDelivery(t, s, b)
	check("two queued", a.ReceivedAt)

	claim := func(now time.Time) store.Delivery {
		t.Helper()
		claimed, err := s.ClaimDeliveries(ctx, "w", now, 10*time.Minute, 1)
		must(t, err)
		if len(claimed) != 1 {
			t.Fatalf("claimed %d deliveries at %v, want 1", len(claimed), now)
		}
		return claimed[0]
	}
	d := claim(a.ReceivedAt)
	check("the first claimed", b.ReceivedAt)
	d.Status = store.DeliverySucceeded
	must(t, s.FinishDelivery(ctx, d, "w"))
	check("the first finished", b.ReceivedAt)

	d = claim(b.ReceivedAt)
	check("both claimed: the lease expiry", b.ReceivedAt.Add(10*time.Minute))
	d.Status, d.NextAttemptAt = store.DeliveryRetrying, epoch.Add(5*time.Minute)
	must(t, s.FinishDelivery(ctx, d, "w"))
	check("a retry", d.NextAttemptAt)
	d = claim(d.NextAttemptAt)
	d.Status = store.DeliveryFailed
	must(t, s.FinishDelivery(ctx, d, "w"))
	check("all finished", time.Time{})
}

// filterSeed is one delivery of the filter tests.
type filterSeed struct {
	conn, event, status, lastError, externalID string
	at                                         time.Duration
}

// filterSeeds: pairs share received_at (the id breaks the tie), every
// status, errors of two kinds and outcomes of two external IDs.
var filterSeeds = []filterSeed{
	{"gh", "issues", store.DeliverySucceeded, "", "github:x:issue:1", 0},
	{"gh", "issues", store.DeliveryFailed, "Malformed payload at line 3", "", 0},
	{"gl", "push", store.DeliveryIgnored, "", "", time.Minute},
	{"gh", "pull_request", store.DeliverySucceeded, "", "github:x:issue:2", time.Minute},
	{"gl", "issues", store.DeliveryFailed, "provider 100% unavailable_now", "", 2 * time.Minute},
	{"gh", "issues", store.DeliverySuppressed, "", "github:x:issue:1", 2 * time.Minute},
	{"gh", "issues", store.DeliveryRetrying, "provider unavailable: 503", "", 3 * time.Minute},
	{"gl", "push", store.DeliveryFailed, "malformed JSON", "", 3 * time.Minute},
	{"gh", "issues", store.DeliveryProcessing, "", "", 4 * time.Minute},
	{"gl", "issues", store.DeliveryQueued, "", "", 5 * time.Minute},
	{"gh", "pull_request", store.DeliveryQueued, "", "", 5 * time.Minute},
	// Events with actions, and names that only begin like one: the event
	// filter matches a family by its dot, never by a prefix.
	{"gl", "issues.opened", store.DeliverySucceeded, "", "", 6 * time.Minute},
	{"gl", "issues.closed", store.DeliveryIgnored, "", "", 6 * time.Minute},
	{"gl", "issues.opened.draft", store.DeliverySucceeded, "", "", 7 * time.Minute},
	{"gl", "issues-hook", store.DeliverySucceeded, "", "", 7 * time.Minute},
	{"gl", "issues_comment.created", store.DeliverySucceeded, "", "", 8 * time.Minute},
	{"gl", "issue", store.DeliverySucceeded, "", "", 8 * time.Minute},
	// An event only one action of which is stored.
	{"gh", "pull_request_review.submitted", store.DeliveryFailed, "review gone", "", 9 * time.Minute},
}

// inEventFamily is the event filter's reference: the event itself and its
// actions.
func inEventFamily(event, filter string) bool {
	return event == filter || strings.HasPrefix(event, filter+".")
}

// seedFilterDeliveries stores filterSeeds, takes each to its status through
// the inbox's own statements, and returns them as stored, newest first.
func seedFilterDeliveries(t testing.TB, s store.Store) []store.Delivery {
	t.Helper()
	ctx := context.Background()
	var ds []store.Delivery
	for i, sd := range filterSeeds {
		if sd.status == store.DeliveryQueued {
			continue
		}
		ds = append(ds, store.Delivery{ConnectionID: sd.conn, Provider: "github", Event: sd.event,
			DeliveryKey: "f" + strconv.Itoa(i), Headers: `{}`, Body: []byte(`{}`), ReceivedAt: epoch.Add(sd.at)})
	}
	_, err := s.InsertDeliveries(ctx, ds)
	must(t, err)
	claimed, err := s.ClaimDeliveries(ctx, "w", epoch.Add(time.Hour), 10*time.Minute, len(ds))
	must(t, err)
	if len(claimed) != len(ds) {
		t.Fatalf("claimed %d, want %d", len(claimed), len(ds))
	}
	for _, d := range claimed {
		i, _ := strconv.Atoi(strings.TrimPrefix(d.DeliveryKey, "f"))
		sd := filterSeeds[i]
		if sd.status == store.DeliveryProcessing {
			continue
		}
		done := epoch.Add(time.Hour)
		d.Status, d.LastError, d.OutcomeExternalID, d.ProcessedAt, d.NextAttemptAt = sd.status, sd.lastError, sd.externalID, &done, done
		if sd.externalID != "" {
			d.OutcomeTaskID, d.OutcomeAction, d.OutcomeResult = uuid.NewString(), "create", "created"
		}
		if sd.status == store.DeliveryRetrying {
			d.ProcessedAt, d.NextAttemptAt = nil, epoch.Add(2*time.Hour)
		}
		must(t, s.FinishDelivery(ctx, d, "w"))
	}
	ds = ds[:0]
	for i, sd := range filterSeeds {
		if sd.status == store.DeliveryQueued {
			ds = append(ds, store.Delivery{ConnectionID: sd.conn, Provider: "github", Event: sd.event,
				DeliveryKey: "f" + strconv.Itoa(i), Headers: `{}`, Body: []byte(`{}`), ReceivedAt: epoch.Add(sd.at)})
		}
	}
	_, err = s.InsertDeliveries(ctx, ds)
	must(t, err)
	all, err := s.ListDeliveries(ctx, store.DeliveryFilter{Limit: 100})
	must(t, err)
	if len(all.Deliveries) != len(filterSeeds) || all.ScanStop != nil {
		t.Fatalf("stored %d deliveries (scan stop %v), want %d", len(all.Deliveries), all.ScanStop, len(filterSeeds))
	}
	return all.Deliveries
}

// filterCases are filters alone and combined, with the reference predicate
// each must equal.
func filterCases() []struct {
	name string
	f    store.DeliveryFilter
	want func(store.Delivery) bool
} {
	at := func(d time.Duration) time.Time { return epoch.Add(d) }
	return []struct {
		name string
		f    store.DeliveryFilter
		want func(store.Delivery) bool
	}{
		{"none", store.DeliveryFilter{}, func(store.Delivery) bool { return true }},
		{"status", store.DeliveryFilter{Status: store.DeliveryFailed}, func(d store.Delivery) bool { return d.Status == store.DeliveryFailed }},
		{"status without a match", store.DeliveryFilter{Status: "no-such-status"}, func(store.Delivery) bool { return false }},
		{"connection", store.DeliveryFilter{ConnectionID: "gl"}, func(d store.Delivery) bool { return d.ConnectionID == "gl" }},
		{"event and its actions", store.DeliveryFilter{Event: "issues"}, func(d store.Delivery) bool { return inEventFamily(d.Event, "issues") }},
		{"event with an action", store.DeliveryFilter{Event: "issues.opened"},
			func(d store.Delivery) bool { return inEventFamily(d.Event, "issues.opened") }},
		{"event that begins others' names", store.DeliveryFilter{Event: "issue"}, func(d store.Delivery) bool { return d.Event == "issue" }},
		{"event without a match", store.DeliveryFilter{Event: "issues."}, func(store.Delivery) bool { return false }},
		{"event of which one action is stored", store.DeliveryFilter{Event: "pull_request_review"},
			func(d store.Delivery) bool { return inEventFamily(d.Event, "pull_request_review") }},
		{"event of which one action is stored, with an error", store.DeliveryFilter{Event: "pull_request_review", ErrorContains: "gone"},
			func(d store.Delivery) bool { return d.Event == "pull_request_review.submitted" }},
		{"received after (inclusive)", store.DeliveryFilter{ReceivedAfter: at(2 * time.Minute)},
			func(d store.Delivery) bool { return !d.ReceivedAt.Before(at(2 * time.Minute)) }},
		{"received before (inclusive)", store.DeliveryFilter{ReceivedBefore: at(time.Minute)},
			func(d store.Delivery) bool { return !d.ReceivedAt.After(at(time.Minute)) }},
		{"received between", store.DeliveryFilter{ReceivedAfter: at(time.Minute), ReceivedBefore: at(3 * time.Minute)},
			func(d store.Delivery) bool {
				return !d.ReceivedAt.Before(at(time.Minute)) && !d.ReceivedAt.After(at(3*time.Minute))
			}},
		{"error contains, any case", store.DeliveryFilter{ErrorContains: "MALFORMED"},
			func(d store.Delivery) bool { return strings.Contains(strings.ToLower(d.LastError), "malformed") }},
		{"error contains LIKE wildcards literally", store.DeliveryFilter{ErrorContains: "100% unavailable_"},
			func(d store.Delivery) bool { return strings.Contains(d.LastError, "100% unavailable_") }},
		{"error contains a wildcard only", store.DeliveryFilter{ErrorContains: "_"},
			func(d store.Delivery) bool { return strings.Contains(d.LastError, "_") }},
		{"external id", store.DeliveryFilter{ExternalID: "github:x:issue:1"},
			func(d store.Delivery) bool { return d.OutcomeExternalID == "github:x:issue:1" }},
		{"delivery key", store.DeliveryFilter{DeliveryKey: "f4"}, func(d store.Delivery) bool { return d.DeliveryKey == "f4" }},
		{"delivery key, event family and error", store.DeliveryFilter{DeliveryKey: "f1", Event: "issues", ErrorContains: "malformed"},
			func(d store.Delivery) bool { return d.DeliveryKey == "f1" }},
		{"status and connection", store.DeliveryFilter{Status: store.DeliveryFailed, ConnectionID: "gl"},
			func(d store.Delivery) bool { return d.Status == store.DeliveryFailed && d.ConnectionID == "gl" }},
		{"every filter", store.DeliveryFilter{Status: store.DeliveryFailed, ConnectionID: "gl", Event: "issues",
			ReceivedAfter: at(time.Minute), ReceivedBefore: at(2 * time.Minute), ErrorContains: "unavailable"},
			func(d store.Delivery) bool { return d.DeliveryKey == "f4" }},
		{"connection, event and external id", store.DeliveryFilter{ConnectionID: "gh", Event: "issues", ExternalID: "github:x:issue:1"},
			func(d store.Delivery) bool {
				return d.ConnectionID == "gh" && inEventFamily(d.Event, "issues") && d.OutcomeExternalID == "github:x:issue:1"
			}},
	}
}

// testDeliveryFilters: each filter alone and combined answers exactly the
// deliveries its predicate holds for, newest first, and paging through it
// with any page size yields the same list once.
func testDeliveryFilters(t *testing.T, s store.Store) {
	ctx := context.Background()
	all := seedFilterDeliveries(t, s)
	for _, tc := range filterCases() {
		var want []string
		for _, d := range all {
			if tc.want(d) {
				want = append(want, d.ID)
			}
		}
		// An error scan bound changes where pages end, never what the
		// pages yield together.
		for _, scan := range []int{0, 1, 2} {
			for _, limit := range []int{1, 2, 3, 100} {
				f := tc.f
				f.Limit, f.ErrorScanLimit = limit, scan
				var got []string
				for pages := 0; pages <= len(all)+1; pages++ {
					page, err := s.ListDeliveries(ctx, f)
					must(t, err)
					for _, d := range page.Deliveries {
						got = append(got, d.ID)
					}
					if stop := page.ScanStop; stop != nil {
						f.BeforeReceivedAt, f.BeforeID = stop.ReceivedAt, stop.ID
						continue
					}
					if len(page.Deliveries) < limit {
						break
					}
					last := page.Deliveries[len(page.Deliveries)-1]
					f.BeforeReceivedAt, f.BeforeID = last.ReceivedAt, last.ID
				}
				if !slices.Equal(got, want) {
					t.Errorf("%s, pages of %d, error scan bound %d: got %v, want %v", tc.name, limit, scan, got, want)
				}
			}
		}
	}
	// The first case checks the order itself: newest first, id descending.
	for i := 1; i < len(all); i++ {
		a, b := all[i-1], all[i]
		if a.ReceivedAt.Before(b.ReceivedAt) || (a.ReceivedAt.Equal(b.ReceivedAt) && a.ID < b.ID) {
			t.Errorf("list order: %s (%v) before %s (%v)", a.ID, a.ReceivedAt, b.ID, b.ReceivedAt)
		}
	}
}

// testRequeueDeliveries: a dry run changes nothing and counts; a replay
// requeues exactly the finished deliveries it matches (newest first, at most
// Max) and skips the unfinished ones, leaving them as they are.
func testRequeueDeliveries(t *testing.T, s store.Store) {
	ctx := context.Background()
	all := seedFilterDeliveries(t, s)
	now := epoch.Add(3 * time.Hour)
	byID := map[string]store.Delivery{}
	for _, d := range all {
		byID[d.ID] = d
	}
	stored := func() []store.Delivery {
		t.Helper()
		ds, err := s.ListDeliveries(ctx, store.DeliveryFilter{Limit: 100})
		must(t, err)
		return ds.Deliveries
	}
	gh := store.DeliveryFilter{ConnectionID: "gh"}
	var ghIDs, ghFinished []string
	for _, d := range all {
		if d.ConnectionID == "gh" {
			ghIDs = append(ghIDs, d.ID)
			if store.IsFinished(d.Status) {
				ghFinished = append(ghFinished, d.ID)
			}
		}
	}

	dry, err := s.RequeueDeliveries(ctx, store.BulkRequeue{Filter: gh, Max: 100, Show: 3, DryRun: true, Now: now})
	must(t, err)
	if dry.Matched != len(ghIDs) || dry.Requeued != len(ghFinished) || dry.Skipped != len(ghIDs)-len(ghFinished) {
		t.Errorf("dry run = %+v, want %d matched, %d to requeue", dry, len(ghIDs), len(ghFinished))
	}
	if got := ids(dry.Shown); !slices.Equal(got, ghIDs[:3]) {
		t.Errorf("dry run shows %v, want the newest three %v", got, ghIDs[:3])
	}
	if after := stored(); !deliveriesEqual(after, all) {
		t.Errorf("a dry run changed the inbox")
	}
	// An event matches its actions in a replay as in the list.
	var issues []string
	for _, d := range all {
		if inEventFamily(d.Event, "issues") {
			issues = append(issues, d.ID)
		}
	}
	family, err := s.RequeueDeliveries(ctx, store.BulkRequeue{Filter: store.DeliveryFilter{Event: "issues"}, Max: 100, Show: 100, DryRun: true, Now: now})
	must(t, err)
	if got := ids(family.Shown); family.Matched != len(issues) || !slices.Equal(got, issues) {
		t.Errorf("dry run of event issues matched %d %v, want %v", family.Matched, got, issues)
	}

	// Max: only the newest two matched.
	two, err := s.RequeueDeliveries(ctx, store.BulkRequeue{Filter: store.DeliveryFilter{Status: store.DeliveryFailed}, Max: 2, Show: 20, Now: now})
	must(t, err)
	var failed []string
	for _, d := range all {
		if d.Status == store.DeliveryFailed {
			failed = append(failed, d.ID)
		}
	}
	if two.Matched != 2 || two.Requeued != 2 || two.Skipped != 0 || !slices.Equal(ids(two.Shown), failed[:2]) {
		t.Errorf("requeue of 2 failed = %+v (shown %v), want the newest two %v", two, ids(two.Shown), failed[:2])
	}
	for _, d := range two.Shown {
		if d.Status != store.DeliveryQueued || d.Attempts != 0 || d.LastError != "" || !d.NextAttemptAt.Equal(now) {
			t.Errorf("shown after requeue: %+v, want queued afresh", d)
		}
	}

	res, err := s.RequeueDeliveries(ctx, store.BulkRequeue{Filter: gh, Max: 100, Show: 20, Now: now})
	must(t, err)
	// The failed gh delivery is among the two already requeued (newest
	// failed: f7 is gl, f4 gl, f1 gh): count what stands finished now.
	wantRequeued := 0
	for _, id := range ghFinished {
		if !slices.Contains(failed[:2], id) {
			wantRequeued++
		}
	}
	if res.Matched != len(ghIDs) || res.Requeued != wantRequeued || res.Skipped != len(ghIDs)-wantRequeued {
		t.Errorf("requeue gh = %+v, want %d matched, %d requeued", res, len(ghIDs), wantRequeued)
	}
	if !slices.Equal(ids(res.Shown), ghIDs) {
		t.Errorf("shown %v, want every gh delivery newest first %v", ids(res.Shown), ghIDs)
	}
	for _, d := range stored() {
		before := byID[d.ID]
		switch {
		case d.ConnectionID == "gh" && store.IsFinished(before.Status), slices.Contains(failed[:2], d.ID):
			if d.Status != store.DeliveryQueued || d.Attempts != 0 || d.OutcomeExternalID != "" || !d.NextAttemptAt.Equal(now) {
				t.Errorf("%s (%s) after the replay: %+v, want queued afresh", d.DeliveryKey, before.Status, d)
			}
		default:
			if d.Status != before.Status || d.Attempts != before.Attempts || !d.NextAttemptAt.Equal(before.NextAttemptAt) || d.LeaseOwner != before.LeaseOwner {
				t.Errorf("%s (%s) after the replay: %+v, want it untouched", d.DeliveryKey, before.Status, d)
			}
		}
	}

	none, err := s.RequeueDeliveries(ctx, store.BulkRequeue{Filter: store.DeliveryFilter{ConnectionID: "nope"}, Max: 10, Show: 20, Now: now})
	must(t, err)
	if none.Matched != 0 || none.Requeued != 0 || none.Skipped != 0 || len(none.Shown) != 0 {
		t.Errorf("requeue of nothing = %+v", none)
	}
}

// testDeliveryKeyFilter: delivery_key finds a delivery by the provider's
// delivery ID, with or without the prefix the gateway stores before it
// (GitHub's keys are "<hook id>:<GUID>"), exactly and case-sensitively,
// with the other filters, page by page, and in a bulk replay.
func testDeliveryKeyFilter(t *testing.T, s store.Store) {
	ctx := context.Background()
	seeds := []struct{ conn, key string }{
		{"gh", "111:guid-a"},
		{"gh2", "222:guid-a"}, // the same GUID under another hook
		{"gl", "guid-a"},      // a provider whose key has no prefix
		{"gh", "111:guid-b"},
		{"jira", "sha256:abc"}, // a key made from the body
		{"gl", "GUID-A"},
		{"gh", "111:guid-a-2"}, // an ID that begins like another
		{"x", "a:b:c"},
	}
	var ds []store.Delivery
	for i, sd := range seeds {
		ds = append(ds, store.Delivery{ConnectionID: sd.conn, Provider: "github", Event: "issues", DeliveryKey: sd.key,
			Headers: `{}`, Body: []byte(`{}`), ReceivedAt: epoch.Add(time.Duration(i) * time.Minute)})
	}
	inserted, err := s.InsertDeliveries(ctx, ds)
	must(t, err)
	idOf := map[string]string{}
	for i, in := range inserted {
		idOf[seeds[i].conn+"/"+seeds[i].key] = in.ID
	}
	tests := []struct {
		key, conn string
		want      []string // connection/key, newest first
	}{
		{"guid-a", "", []string{"gl/guid-a", "gh2/222:guid-a", "gh/111:guid-a"}},
		{"111:guid-a", "", []string{"gh/111:guid-a"}},
		{"222:guid-a", "", []string{"gh2/222:guid-a"}},
		{"guid-a", "gh", []string{"gh/111:guid-a"}},
		{"guid-b", "", []string{"gh/111:guid-b"}},
		{"GUID-A", "", []string{"gl/GUID-A"}},
		{"sha256:abc", "", []string{"jira/sha256:abc"}},
		{"abc", "", []string{"jira/sha256:abc"}},
		{"a:b:c", "", []string{"x/a:b:c"}},
		{"b:c", "", []string{"x/a:b:c"}},
		{"guid", "", nil},
		{"c", "", nil},
		{"333:guid-a", "", nil},
		{"guid-a-2", "gl", nil},
	}
	for _, tc := range tests {
		var want []string
		for _, w := range tc.want {
			want = append(want, idOf[w])
		}
		for _, limit := range []int{1, 100} {
			f := store.DeliveryFilter{DeliveryKey: tc.key, ConnectionID: tc.conn, Limit: limit}
			var got []string
			for pages := 0; pages <= len(seeds); pages++ {
				page, err := s.ListDeliveries(ctx, f)
				must(t, err)
				got = append(got, ids(page.Deliveries)...)
				if len(page.Deliveries) < limit {
					break
				}
				last := page.Deliveries[len(page.Deliveries)-1]
				f.BeforeReceivedAt, f.BeforeID = last.ReceivedAt, last.ID
			}
			if !slices.Equal(got, want) {
				t.Errorf("delivery_key %q connection %q, pages of %d: got %v, want %v", tc.key, tc.conn, limit, got, want)
			}
		}
	}
	res, err := s.RequeueDeliveries(ctx, store.BulkRequeue{Filter: store.DeliveryFilter{DeliveryKey: "guid-a"}, Max: 10, Show: 10,
		DryRun: true, Now: epoch.Add(time.Hour)})
	must(t, err)
	if want := []string{idOf["gl/guid-a"], idOf["gh2/222:guid-a"], idOf["gh/111:guid-a"]}; res.Matched != 3 || !slices.Equal(ids(res.Shown), want) {
		t.Errorf("bulk replay of delivery_key guid-a matched %d %v, want %v", res.Matched, ids(res.Shown), want)
	}
}

func ids(ds []store.Delivery) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.ID
	}
	return out
}

func deliveriesEqual(a, b []store.Delivery) bool {
	return slices.EqualFunc(a, b, func(x, y store.Delivery) bool {
		return x.ID == y.ID && x.Status == y.Status && x.Attempts == y.Attempts && x.LastError == y.LastError &&
			x.NextAttemptAt.Equal(y.NextAttemptAt) && x.OutcomeExternalID == y.OutcomeExternalID && x.LeaseOwner == y.LeaseOwner
	})
}

// testDeliveryFilterPlans: the page query of each filter alone reads an
// index in the list's order (no sort of the matches, no scan of the
// table). PostgreSQL is asked with sequential scans and sorts priced out,
// as a large table would: a plan that still scans or sorts has no index it
// could use.
func testDeliveryFilterPlans(t *testing.T, s *sqlstore.Store) {
	seedFilterDeliveries(t, s)
	tests := []struct {
		name  string
		f     store.DeliveryFilter
		index string
	}{
		{"status", store.DeliveryFilter{Status: store.DeliveryFailed}, "idx_deliveries_status"},
		{"connection", store.DeliveryFilter{ConnectionID: "gh"}, "idx_deliveries_connection"},
		{"event", store.DeliveryFilter{Event: "push"}, "idx_deliveries_event"},
		{"external id", store.DeliveryFilter{ExternalID: "github:x:issue:1"}, "idx_deliveries_external_id"},
		{"received after", store.DeliveryFilter{ReceivedAfter: epoch}, "idx_deliveries_received"},
		{"received before", store.DeliveryFilter{ReceivedBefore: epoch}, "idx_deliveries_received"},
		{"error contains", store.DeliveryFilter{ErrorContains: "x"}, "idx_deliveries_errors"},
		{"a page after a cursor", store.DeliveryFilter{Status: store.DeliveryFailed, BeforeReceivedAt: epoch, BeforeID: uuid.NewString()}, "idx_deliveries_status"},
		{"status and connection", store.DeliveryFilter{Status: store.DeliveryFailed, ConnectionID: "gh"}, "idx_deliveries_connection_status"},
		{"a plain page after a cursor", store.DeliveryFilter{BeforeReceivedAt: epoch, BeforeID: uuid.NewString()}, "idx_deliveries_received"},
		{"delivery key", store.DeliveryFilter{DeliveryKey: "72d3162e-cc78-11e3-81ab-4c9367dc0958"}, "idx_deliveries_provider_key"},
	}
	// A page after a cursor starts in the index at the cursor, not at the
	// newest row.
	cursorBound := map[string]string{store.DialectSQLite: "received_at<?", store.DialectPostgres: "Index Cond: ((status = 'failed'::text) AND (received_at <="}
	for _, tc := range tests {
		f := tc.f
		f.Limit = 10
		plan := explainDeliveryPage(t, s, f)
		if !strings.Contains(plan, tc.index) {
			t.Errorf("%s: plan does not use %s:\n%s", tc.name, tc.index, plan)
		}
		if tc.f.BeforeID != "" && tc.f.Status != "" && !strings.Contains(plan, cursorBound[s.Dialect()]) {
			t.Errorf("%s: the cursor does not bound the index range (want %q):\n%s", tc.name, cursorBound[s.Dialect()], plan)
		}
		for _, bad := range []string{"TEMP B-TREE", "Sort", "Seq Scan", "SCAN deliveries\n"} {
			if strings.Contains(plan+"\n", bad) {
				t.Errorf("%s: plan has %q:\n%s", tc.name, bad, plan)
			}
		}
	}

	// A delivery key with a prefix of its own ("<hook id>:<GUID>") reads
	// the same index for two values, and sorts what it finds (a delivery
	// or two).
	plan := explainDeliveryPage(t, s, store.DeliveryFilter{DeliveryKey: "12345:72d3162e-cc78-11e3-81ab-4c9367dc0958", Limit: 10})
	if !strings.Contains(plan, "idx_deliveries_provider_key") || strings.Contains(plan+"\n", "SCAN deliveries\n") || strings.Contains(plan, "Seq Scan") {
		t.Errorf("prefixed delivery key: plan does not read idx_deliveries_provider_key:\n%s", plan)
	}

	// An event naming several stored events (its actions) reads each
	// one's page in the index's order and merges them (sorting at most a
	// page per event); the events themselves are found by a skip scan of
	// the index, one probe each.
	family := []string{"issues", "issues.closed", "issues.opened"}
	query, qargs := sqlstore.DeliveryPageQuery(s.Dialect(), store.DeliveryFilter{Event: "issues", Limit: 10}, family)
	plan = explain(t, s, query, qargs)
	if n := strings.Count(plan, "idx_deliveries_event"); n != len(family) {
		t.Errorf("event family: plan reads idx_deliveries_event %d times, want %d:\n%s", n, len(family), plan)
	}
	for _, bad := range []string{"Seq Scan", "SCAN deliveries\n", "idx_deliveries_received"} {
		if strings.Contains(plan+"\n", bad) {
			t.Errorf("event family: plan has %q:\n%s", bad, plan)
		}
	}
	plan = explain(t, s, sqlstore.EventFamilyQuery, []any{"issues", "issues/"})
	if !strings.Contains(plan, "idx_deliveries_event") || strings.Contains(plan+"\n", "SCAN deliveries\n") || strings.Contains(plan, "Seq Scan") {
		t.Errorf("event family: the events are not found in idx_deliveries_event:\n%s", plan)
	}

	// The backlog statuses read the index of due deliveries (and sort what
	// it holds): never the inbox by received time.
	for _, status := range []string{store.DeliveryQueued, store.DeliveryProcessing} {
		plan := explainDeliveryPage(t, s, store.DeliveryFilter{Status: status, Limit: 10})
		if !strings.Contains(plan, "idx_deliveries_due") || strings.Contains(plan, "idx_deliveries_received") {
			t.Errorf("status %s: plan does not read idx_deliveries_due alone:\n%s", status, plan)
		}
	}

	// A bulk replay's batch UPDATE finds its rows by id, whatever the
	// planner thinks of the status guard next to a thousand ids.
	args := []any{epoch}
	for range 1000 {
		args = append(args, uuid.NewString())
	}
	plan = explain(t, s, sqlstore.RequeueBatchStatement(1000), args)
	if !strings.Contains(plan, "sqlite_autoindex_deliveries_1 (id=?)") && !strings.Contains(plan, "deliveries_pkey") {
		t.Errorf("the batch requeue does not look its rows up by id:\n%s", plan)
	}
}

// testPartialIndexReadPlans: every statement whose WHERE repeats a partial
// index's predicate reads that index on both dialects (on SQLite a
// predicate that differs by a word from the index's makes it a full scan).
//
// An empty table gives SQLite's planner no reason to prefer one index over
// another, so on SQLite the test names the index (INDEXED BY), which fails
// to plan when the predicate does not match; PostgreSQL proves the
// predicate itself and is asked for its plan with scans priced out.
func testPartialIndexReadPlans(t *testing.T, s *sqlstore.Store) {
	for _, read := range s.PartialIndexReads() {
		query := read.Query
		if s.Dialect() == store.DialectSQLite {
			from := regexp.MustCompile(`FROM ` + read.Table + `\s`).FindStringIndex(query)
			if from == nil {
				t.Fatalf("%s: query does not read %q", read.Name, read.Table)
			}
			query = query[:from[1]] + "INDEXED BY " + read.Index + " " + query[from[1]:]
		}
		plan, err := explainErr(s, query, read.Args)
		if err != nil {
			t.Errorf("%s: cannot read %s: %v", read.Name, read.Index, err)
			continue
		}
		if !strings.Contains(plan, read.Index) {
			t.Errorf("%s: plan does not use %s:\n%s", read.Name, read.Index, plan)
		}
	}
}

// explainDeliveryPage returns the plan of ListDeliveries' query for f.
func explainDeliveryPage(t testing.TB, s *sqlstore.Store, f store.DeliveryFilter) string {
	t.Helper()
	query, args := sqlstore.DeliveryPageQuery(s.Dialect(), f, nil)
	return explain(t, s, query, args)
}

// explain returns the plan of query, with sequential scans and sorts
// priced out on PostgreSQL.
func explain(t testing.TB, s *sqlstore.Store, query string, args []any) string {
	t.Helper()
	plan, err := explainErr(s, query, args)
	must(t, err)
	return plan
}

func explainErr(s *sqlstore.Store, query string, args []any) (string, error) {
	ctx := context.Background()
	tx, err := s.Driver().Begin(ctx)
	if err != nil {
		return "", err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	explain := "EXPLAIN QUERY PLAN "
	if s.Dialect() == store.DialectPostgres {
		explain = "EXPLAIN "
		for _, set := range []string{"SET LOCAL enable_seqscan = off", "SET LOCAL enable_sort = off", "SET LOCAL enable_bitmapscan = off"} {
			if _, err := tx.Exec(ctx, set); err != nil {
				return "", err
			}
		}
	}
	rows, err := tx.Query(ctx, explain+query, args...)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var lines []string
	for rows.Next() {
		var line string
		if s.Dialect() == store.DialectPostgres {
			err = rows.Scan(&line)
		} else {
			var id, parent, notused int
			err = rows.Scan(&id, &parent, &notused, &line)
		}
		if err != nil {
			return "", err
		}
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n"), rows.Err()
}
