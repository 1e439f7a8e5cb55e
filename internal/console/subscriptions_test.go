package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/trackergateway/gateway/internal/events"
	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/store/sqlstore"
	"github.com/trackergateway/gateway/internal/store/storetest"
)

// seedSubscription stores a subscription of ws and, for each status given,
// one event delivered to it that ended so.
func seedSubscription(t *testing.T, st store.Store, id, ws string, statuses ...string) []int64 {
	t.Helper()
	ctx := context.Background()
	sub := store.Subscription{ID: id, WorkspaceID: ws, URL: "https://hooks.example.com/" + id, Types: []string{"task.created"},
		Description: "the " + id + " bot", Enabled: true, Secret: "whsec_c2VjcmV0", CreatedAt: start, UpdatedAt: start}
	if err := st.InsertSubscription(ctx, sub); err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for range statuses {
		id, err := st.AppendTaskEvent(ctx, store.TaskEvent{WorkspaceID: ws, TaskID: uuid.NewString(), Revision: 1,
			Type: store.EventTaskCreated, Payload: `{}`, CreatedAt: start.Add(-time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if _, err := st.FanOutEvents(ctx, store.FanOut{Now: start, Limit: 100}); err != nil {
		t.Fatal(err)
	}
	claimed, err := st.ClaimOutboundDeliveries(ctx, "w", start, time.Minute, 100)
	if err != nil || len(claimed) != len(statuses) {
		t.Fatalf("claimed %d, %v; want %d", len(claimed), err, len(statuses))
	}
	for i, s := range statuses {
		at := start
		claimed[i].Status, claimed[i].LastAttemptAt, claimed[i].LastStatusCode = s, &at, 200
		claimed[i].NextAttemptAt = start.Add(time.Hour)
		if store.OutboundFinished(s) {
			claimed[i].FinishedAt, claimed[i].NextAttemptAt = &at, at
		}
		if s != store.OutboundSucceeded {
			claimed[i].LastStatusCode, claimed[i].LastError = 500, "answered 500 Internal Server Error: boom"
		}
	}
	if _, err := st.FinishOutboundDeliveries(ctx, store.OutboundFinish{Owner: "w", Deliveries: claimed, Now: start}); err != nil {
		t.Fatal(err)
	}
	return ids
}

func TestSubscriptionPages(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		e := newEnv(t, st)
		ids := seedSubscription(t, st, "sub_eng", "eng", store.OutboundSucceeded, store.OutboundFailed, store.OutboundRetrying)
		seedSubscription(t, st, "sub_ops", "ops")

		admin := e.login(t, adminToken)
		res := admin.get(t, "/ui/subscriptions")
		wantIn(t, "the admin's list", res.body, []string{`href="/ui/subscriptions/sub_eng"`, `href="/ui/subscriptions/sub_ops"`,
			"the sub_eng bot", "https://hooks.example.com/sub_eng", "task.created", "enabled", ">1h<"}, []string{"whsec_"})

		eng := e.login(t, engToken)
		res = eng.get(t, "/ui/subscriptions")
		wantIn(t, "a workspace token's list", res.body, []string{"sub_eng", `href="/ui/subscriptions"`}, []string{"sub_ops"})
		if res := eng.get(t, "/ui/subscriptions/sub_ops"); res.status != http.StatusNotFound {
			t.Errorf("another workspace's subscription = %d, want 404", res.status)
		}
		if res := eng.post(t, "/ui/subscriptions/sub_ops/replay", url.Values{"since": {"1h"}}); res.status != http.StatusNotFound {
			t.Errorf("replay of another workspace's subscription = %d, want 404", res.status)
		}

		res = eng.get(t, "/ui/subscriptions/sub_eng")
		wantIn(t, "the subscription page", res.body, []string{"https://hooks.example.com/sub_eng", "1h <span class=\"muted\">(oldest owed event",
			events.FormatID(ids[0]), events.FormatID(ids[1]), events.FormatID(ids[2]),
			`<span class="status s-succeeded">succeeded</span>`, `<span class="status s-failed">failed</span>`,
			`<span class="status s-retrying">retrying</span>`, "answered 500 Internal Server Error: boom",
			`action="/ui/subscriptions/sub_eng/replay"`, `name="event_id" value="` + events.FormatID(ids[1]) + `"`},
			[]string{`name="event_id" value="` + events.FormatID(ids[2]) + `"`, "whsec_"})
		res = eng.get(t, "/ui/subscriptions/sub_eng?status=failed")
		wantIn(t, "the failed deliveries", res.body, []string{events.FormatID(ids[1])}, []string{events.FormatID(ids[0])})

		// Replay: only with the form's CSRF token.
		res = e.do(t, eng, http.MethodPost, "/ui/subscriptions/sub_eng/replay", url.Values{"event_id": {events.FormatID(ids[1])}}, nil)
		if res.status != http.StatusForbidden {
			t.Errorf("replay without the CSRF token = %d, want 403", res.status)
		}
		res = eng.post(t, "/ui/subscriptions/sub_eng/replay", url.Values{"event_id": {events.FormatID(ids[1])}})
		if res.status != http.StatusSeeOther || !strings.HasPrefix(res.location, "/ui/subscriptions/sub_eng?notice=") {
			t.Fatalf("replay = %d Location %q", res.status, res.location)
		}
		res = eng.get(t, res.location)
		wantIn(t, "after the replay", res.body, []string{"Replayed 1: sent again with the same webhook-id."}, nil)
		ds, err := st.ListOutboundDeliveries(context.Background(), store.OutboundDeliveryPage{SubscriptionID: "sub_eng", Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range ds {
			if d.EventID == ids[1] && (d.Status != store.OutboundPending || d.Attempts != 0) {
				t.Errorf("the replayed delivery = %s, %d attempts; want pending again", d.Status, d.Attempts)
			}
		}
		res = eng.post(t, "/ui/subscriptions/sub_eng/replay", url.Values{"since": {"whenever"}})
		if res.status != http.StatusBadRequest || !strings.Contains(res.body, "since must be an RFC 3339 time") {
			t.Errorf("replay with a bad since = %d", res.status)
		}
	})
}
