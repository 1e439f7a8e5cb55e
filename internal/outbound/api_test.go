package outbound

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/gorilla/mux"

	"github.com/trackergateway/gateway/internal/events"
	"github.com/trackergateway/gateway/internal/httpapi"
	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/store/storetest"
)

// apiRouter mounts the subscription routes as internal/server does; the
// caller is the principal the request carries in X-Test-Principal
// ("admin", or a workspace's token).
func apiRouter(a *API) http.Handler {
	r := mux.NewRouter()
	base := "/api/v1/workspaces/{id}/subscriptions"
	for _, rt := range []struct {
		method, path string
		h            http.HandlerFunc
	}{
		{http.MethodPost, base, a.CreateSubscription},
		{http.MethodGet, base, a.ListSubscriptions},
		{http.MethodGet, base + "/{sid}", a.GetSubscription},
		{http.MethodPatch, base + "/{sid}", a.UpdateSubscription},
		{http.MethodDelete, base + "/{sid}", a.DeleteSubscription},
		{http.MethodPost, base + "/{sid}/rotate-secret", a.RotateSecret},
		{http.MethodGet, base + "/{sid}/deliveries", a.ListDeliveries},
		{http.MethodPost, base + "/{sid}/replay", a.ReplayDeliveries},
	} {
		r.HandleFunc(rt.path, rt.h).Methods(rt.method)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		p := admin
		if ws := req.Header.Get("X-Test-Workspace-Token"); ws != "" {
			p = httpapi.Principal{Name: "bot", Workspaces: []string{ws}}
		}
		r.ServeHTTP(w, req.WithContext(httpapi.WithPrincipal(req.Context(), p)))
	})
}

type apiClient struct {
	t *testing.T
	h http.Handler
	// as, when set, is the workspace whose token calls.
	as string
}

func (c apiClient) do(method, path, body string) (int, map[string]any, string) {
	c.t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if c.as != "" {
		req.Header.Set("X-Test-Workspace-Token", c.as)
	}
	rec := httptest.NewRecorder()
	c.h.ServeHTTP(rec, req)
	var out map[string]any
	_ = json.Unmarshal(rec.Body.Bytes(), &out)
	return rec.Code, out, rec.Body.String()
}

const subs = "/api/v1/workspaces/ws/subscriptions"

func TestSubscriptionAPI(t *testing.T) {
	t.Parallel()
	storetest.ForDialects(t, func(t *testing.T, dialect string) {
		t.Parallel()
		e := newEnv(t, dialect)
		c := apiClient{t: t, h: apiRouter(e.api)}

		code, created, raw := c.do(http.MethodPost, subs, `{"url":"https://example.com/hook","types":["task.created","task.deleted","task.created"],"description":"bot"}`)
		if code != http.StatusCreated {
			t.Fatalf("create = %d %s", code, raw)
		}
		secret, _ := created["secret"].(string)
		key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
		if !strings.HasPrefix(secret, "whsec_") || err != nil || len(key) != 32 {
			t.Errorf("secret %q: want whsec_ and 32 bytes in base64", secret)
		}
		id, _ := created["id"].(string)
		if !strings.HasPrefix(id, "sub_") || created["url"] != "https://example.com/hook" || created["enabled"] != true ||
			created["workspace_id"] != "ws" || created["description"] != "bot" {
			t.Errorf("created = %s", raw)
		}
		if types, _ := json.Marshal(created["types"]); string(types) != `["task.created","task.deleted"]` {
			t.Errorf("types = %s, want the known ones once each", types)
		}
		one := subs + "/" + id

		// Reads never show the secret.
		for _, path := range []string{subs, one} {
			code, _, raw := c.do(http.MethodGet, path, "")
			if code != http.StatusOK || strings.Contains(raw, secret) || strings.Contains(raw, `"secret"`) || !strings.Contains(raw, id) {
				t.Errorf("GET %s = %d %s, want it without the secret", path, code, raw)
			}
		}

		// Scoping: another workspace's token sees neither the workspace
		// nor the subscription; the subscription is not under another
		// workspace's path.
		other := apiClient{t: t, h: c.h, as: "other"}
		for _, tc := range []struct {
			client       apiClient
			method, path string
			want         string
		}{
			{other, http.MethodGet, subs, "workspace not found"},
			{other, http.MethodGet, one, "workspace not found"},
			{other, http.MethodPost, subs, "workspace not found"},
			{other, http.MethodDelete, one, "workspace not found"},
			{c, http.MethodGet, "/api/v1/workspaces/other/subscriptions/" + id, "subscription not found"},
			{c, http.MethodPatch, "/api/v1/workspaces/other/subscriptions/" + id, "subscription not found"},
			{c, http.MethodGet, subs + "/sub_nope", "subscription not found"},
			{c, http.MethodGet, "/api/v1/workspaces/nope/subscriptions", "workspace not found"},
		} {
			code, out, _ := tc.client.do(tc.method, tc.path, `{"url":"https://example.com"}`)
			if code != http.StatusNotFound || out["error"] != tc.want {
				t.Errorf("%s %s as %q = %d %v, want 404 %q", tc.method, tc.path, tc.client.as, code, out, tc.want)
			}
		}
		mine := apiClient{t: t, h: c.h, as: "ws"}
		if code, _, raw := mine.do(http.MethodGet, one, ""); code != http.StatusOK {
			t.Errorf("the workspace's own token: %d %s", code, raw)
		}

		// Patch.
		code, patched, raw := c.do(http.MethodPatch, one, `{"url":"https://example.org/new","types":[],"description":"","enabled":false}`)
		if code != http.StatusOK || patched["url"] != "https://example.org/new" || patched["enabled"] != false || patched["description"] != "" {
			t.Errorf("patch = %d %s", code, raw)
		}
		if types, _ := json.Marshal(patched["types"]); string(types) != `[]` {
			t.Errorf("types after patch = %s, want [] (every type)", types)
		}
		if code, out, _ := c.do(http.MethodPatch, one, `{"enabled":true}`); code != http.StatusOK || out["enabled"] != true || out["url"] != "https://example.org/new" {
			t.Errorf("enable = %d %v", code, out)
		}

		// Rotation: a new secret, shown once; the old one signs for 24h.
		before := time.Now()
		code, rotated, raw := c.do(http.MethodPost, one+"/rotate-secret", "")
		if code != http.StatusOK || rotated["secret"] == secret || !strings.HasPrefix(rotated["secret"].(string), "whsec_") {
			t.Fatalf("rotate = %d %s", code, raw)
		}
		expires, _ := time.Parse(time.RFC3339, rotated["previous_secret_expires_at"].(string))
		if d := expires.Sub(before); d < 23*time.Hour || d > 25*time.Hour {
			t.Errorf("previous secret expires in %v, want 24h", d)
		}
		s := e.subscription(t, id)
		if s.PreviousSecret != secret || s.Secret != rotated["secret"] {
			t.Error("the stored secrets are not the rotated ones")
		}
		if _, _, raw := c.do(http.MethodGet, one, ""); strings.Contains(raw, `"secret"`) {
			t.Errorf("GET after rotation shows a secret: %s", raw)
		}

		// Delete.
		if code, _, raw := c.do(http.MethodDelete, one, ""); code != http.StatusNoContent || raw != "" {
			t.Errorf("delete = %d %q", code, raw)
		}
		if code, _, _ := c.do(http.MethodGet, one, ""); code != http.StatusNotFound {
			t.Errorf("GET after delete = %d", code)
		}
	})
}

func TestSubscriptionBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "sqlite")
	httpsOnly := apiClient{t: t, h: apiRouter(NewAPI(e.st, nil, nil, false))}
	c := apiClient{t: t, h: apiRouter(e.api)}
	sub := e.subscribe(t, "https://example.com/x")
	one := subs + "/" + sub.ID
	long := `"https://example.com/` + strings.Repeat("a", 2100) + `"`
	tests := []struct {
		name         string
		client       apiClient
		method, path string
		body         string
		want         string
	}{
		{"no url", c, http.MethodPost, subs, `{}`, "url is required"},
		{"not http", c, http.MethodPost, subs, `{"url":"ftp://example.com/x"}`, "url must be an http or https URL"},
		{"javascript", c, http.MethodPost, subs, `{"url":"javascript:alert(1)"}`, "url must be an http or https URL"},
		{"userinfo", c, http.MethodPost, subs, `{"url":"https://me:pw@example.com/"}`, "url must not hold user information (user:password@)"},
		{"too long", c, http.MethodPost, subs, `{"url":` + long + `}`, "url is longer than 2048 bytes"},
		{"no host", c, http.MethodPost, subs, `{"url":"https:///x"}`, "url must name a host"},
		{"http while https only", httpsOnly, http.MethodPost, subs, `{"url":"http://example.com/"}`, "url must be https (outbound.allow_http is off)"},
		{"unknown types", c, http.MethodPost, subs, `{"url":"https://example.com","types":["task.created","task.exploded","issue.opened"]}`,
			"unknown event types: task.exploded, issue.opened (known: " + strings.Join(events.Types, ", ") + ")"},
		{"description too long", c, http.MethodPost, subs, `{"url":"https://example.com","description":"` + strings.Repeat("d", 1025) + `"}`, "description is longer than 1024 bytes"},
		{"unknown field", c, http.MethodPost, subs, `{"url":"https://example.com","secret":"whsec_mine"}`, `malformed JSON: json: unknown field "secret"`},
		{"invalid text", c, http.MethodPost, subs, "{\"url\":\"https://example.com/\xff\"}", "url is not valid UTF-8 text"},
		{"patch bad url", c, http.MethodPatch, one, `{"url":"https://u@example.com"}`, "url must not hold user information (user:password@)"},
		{"patch unknown type", c, http.MethodPatch, one, `{"types":["nope"]}`, "unknown event types: nope (known: " + strings.Join(events.Types, ", ") + ")"},
		{"patch enabled not a bool", c, http.MethodPatch, one, `{"enabled":"yes"}`, `field "enabled" must be bool`},
		{"deliveries bad status", c, http.MethodGet, one + "/deliveries?status=done", "", "status must be one of pending, retrying, succeeded, failed"},
		{"deliveries bad cursor", c, http.MethodGet, one + "/deliveries?cursor=abc", "", "malformed cursor"},
		{"deliveries bad limit", c, http.MethodGet, one + "/deliveries?limit=0", "", "limit must be an integer between 1 and 1000"},
		{"replay nothing", c, http.MethodPost, one + "/replay", `{}`, "exactly one of event_id and since is required"},
		{"replay both", c, http.MethodPost, one + "/replay", `{"event_id":"evt_0000000000000001","since":"1h"}`, "exactly one of event_id and since is required"},
		{"replay bad id", c, http.MethodPost, one + "/replay", `{"event_id":"42"}`, "event_id must be an event id (evt_ and 16 hex digits)"},
		{"replay bad since", c, http.MethodPost, one + "/replay", `{"since":"yesterday"}`, "since must be an RFC 3339 time or a positive duration such as 24h"},
	}
	for _, tc := range tests {
		code, out, raw := tc.client.do(tc.method, tc.path, tc.body)
		if code != http.StatusBadRequest || out["error"] != tc.want {
			t.Errorf("%s: %d %s, want 400 %q", tc.name, code, raw, tc.want)
		}
	}
	// Nothing was created or changed.
	list, err := e.st.ListSubscriptions(context.Background(), "ws")
	if err != nil || len(list) != 1 || list[0].URL != "https://example.com/x" || list[0].Types != nil {
		t.Errorf("subscriptions after bad input = %+v, %v", list, err)
	}
	if code, out, _ := c.do(http.MethodPost, one+"/replay", `{"event_id":"evt_00000000000000ff"}`); code != http.StatusNotFound || out["error"] != "event not found" {
		t.Errorf("replay of an unknown event = %d %v", code, out)
	}
}

func TestDeliveriesAndReplayAPI(t *testing.T) {
	t.Parallel()
	storetest.ForDialects(t, func(t *testing.T, dialect string) {
		t.Parallel()
		e := newEnv(t, dialect)
		rc := newReceiver(t)
		sub := e.subscribe(t, rc.srv.URL)
		e.run(t, allowLoopback())
		c := apiClient{t: t, h: apiRouter(e.api)}
		var ids []int64
		for range 3 {
			ids = append(ids, e.emit(t, uuid.NewString(), events.TypeCreated, 1))
		}
		poll(t, "three deliveries", func() bool {
			for _, id := range ids {
				if e.delivery(t, sub.ID, id).Status != store.OutboundSucceeded {
					return false
				}
			}
			return true
		})
		base := subs + "/" + sub.ID
		code, page, raw := c.do(http.MethodGet, base+"/deliveries?status=succeeded&limit=2", "")
		ds, _ := page["deliveries"].([]any)
		if code != http.StatusOK || len(ds) != 2 || page["next_cursor"] != events.FormatID(ids[1]) {
			t.Fatalf("first page = %d %s", code, raw)
		}
		first := ds[0].(map[string]any)
		if first["event_id"] != events.FormatID(ids[2]) || first["status"] != "succeeded" || first["attempts"] != 1.0 ||
			first["last_response_code"] != 200.0 || first["last_error"] != nil || first["next_attempt_at"] != nil || first["event_type"] != "task.created" {
			t.Errorf("newest delivery = %v", first)
		}
		_, page, _ = c.do(http.MethodGet, base+"/deliveries?status=succeeded&limit=2&cursor="+page["next_cursor"].(string), "")
		if ds, _ := page["deliveries"].([]any); len(ds) != 1 || page["next_cursor"] != nil {
			t.Errorf("second page = %v", page)
		}
		if _, page, _ := c.do(http.MethodGet, base+"/deliveries?status=failed", ""); len(page["deliveries"].([]any)) != 0 {
			t.Errorf("failed deliveries = %v", page)
		}

		// Replay: the same webhook-id again.
		code, out, raw := c.do(http.MethodPost, base+"/replay", `{"event_id":"`+events.FormatID(ids[0])+`"}`)
		if code != http.StatusOK || out["replayed"] != 1.0 || out["skipped"] != 0.0 {
			t.Fatalf("replay = %d %s", code, raw)
		}
		poll(t, "the replayed event", func() bool { return rc.count(events.FormatID(ids[0])) == 2 })
		poll(t, "the replay recorded", func() bool { return e.delivery(t, sub.ID, ids[0]).Status == store.OutboundSucceeded })
		code, out, _ = c.do(http.MethodPost, base+"/replay", `{"since":"1h"}`)
		if code != http.StatusOK || out["replayed"] != 3.0 {
			t.Errorf("replay since 1h = %d %v, want 3 replayed", code, out)
		}
		poll(t, "every event replayed", func() bool {
			for _, id := range ids {
				if rc.count(events.FormatID(id)) < 2 {
					return false
				}
			}
			return true
		})
	})
}
