package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
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
	{name: "only a finished delivery is requeued", fn: testRequeueGuard},
	{name: "the next delivery due", fn: testNextDeliveryDue},
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
	if len(list) != 1 {
		t.Errorf("list succeeded = %d", len(list))
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
		must(t, s.Driver().QueryRow(ctx, `SELECT body_encoding, body FROM deliveries WHERE id = $1`, res[0].ID).Scan(&stored, &storedBody))
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
	// A row stored before bodies had an encoding (migration 00005) reads
	// back as it was stored.
	old := uuid.NewString()
	_, err := s.Driver().Exec(ctx, `INSERT INTO deliveries (id, connection_id, provider, event, delivery_key, headers, body,
		status, attempts, next_attempt_at, received_at) VALUES ($1, 'gh', 'github', 'issues', 'before-00005', '{}', $2,
		'succeeded', 1, $3, $3)`, old, webhook, epoch)
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
