package recovery

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trackergateway/gateway/internal/config"
	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/store/sqlstore"
	"github.com/trackergateway/gateway/internal/store/storetest"
)

// glEvent is one entry of GitLab's hook event list, in the shape the API
// answers (GET /projects/:id/hooks/:hook_id/events).
type glEvent struct {
	ID                int64             `json:"id"`
	URL               string            `json:"url"`
	Trigger           string            `json:"trigger"`
	RequestHeaders    map[string]string `json:"request_headers"`
	RequestData       string            `json:"request_data"`
	ResponseHeaders   map[string]string `json:"response_headers"`
	ResponseBody      string            `json:"response_body"`
	ExecutionDuration float64           `json:"execution_duration"`
	ResponseStatus    string            `json:"response_status"`
	CreatedAt         string            `json:"created_at"`
}

func glHookEvent(id int64, key string, ago time.Duration, status string) glEvent {
	return glEvent{ID: id, URL: "https://gateway.example.com/webhooks/gl", Trigger: "issue_hooks",
		RequestHeaders: map[string]string{"Content-Type": "application/json", "User-Agent": "GitLab/17.4.0",
			"X-Gitlab-Event": "Issue Hook", "X-Gitlab-Token": "[REDACTED]", "X-Gitlab-Event-UUID": "3c3e8f7a-0000",
			"Idempotency-Key": key},
		RequestData: `{"object_kind":"issue"}`, ResponseHeaders: map[string]string{}, ResponseBody: "",
		ExecutionDuration: 0.1, ResponseStatus: status, CreatedAt: now.Add(-ago).Format(time.RFC3339)}
}

// fakeGitLab answers like GitLab's hook event API: events newest first
// in pages (X-Next-Page), resends recorded, hooks' state.
type fakeGitLab struct {
	srv     *httptest.Server
	mu      sync.Mutex
	events  map[string][]glEvent // by escaped hook path
	resent  []string
	perPage int
	// refusals answer the next requests, in order, before anything else.
	refusals []http.Header
	// pager, when set, answers every listing: the events of the page and
	// the next page (0 none).
	pager func(page int) ([]glEvent, int)
}

func newFakeGitLab(t *testing.T) *fakeGitLab {
	f := &fakeGitLab{events: map[string][]glEvent{}, perPage: 100}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Private-Token") != testToken {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"message":"401 Unauthorized"}`)
			return
		}
		path := strings.TrimPrefix(r.URL.EscapedPath(), "/api/v4/")
		w.Header().Set("Content-Type", "application/json")
		f.mu.Lock()
		if len(f.refusals) > 0 {
			for k, v := range f.refusals[0] {
				w.Header()[k] = v
			}
			f.refusals = f.refusals[1:]
			f.mu.Unlock()
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = io.WriteString(w, `{"message":"429 Too Many Requests"}`)
			return
		}
		f.mu.Unlock()
		switch {
		case r.Method == http.MethodGet && strings.HasSuffix(path, "/events"):
			f.mu.Lock()
			all := f.events[strings.TrimSuffix(path, "/events")]
			size, pager := f.perPage, f.pager
			f.mu.Unlock()
			var page int
			_, _ = fmt.Sscan(r.URL.Query().Get("page"), &page)
			if pager != nil {
				events, next := pager(page)
				if next > 0 {
					w.Header().Set("X-Next-Page", fmt.Sprint(next))
				}
				_ = json.NewEncoder(w).Encode(events)
				return
			}
			start := (max(page, 1) - 1) * size
			end := min(start+size, len(all))
			if end < len(all) {
				w.Header().Set("X-Next-Page", fmt.Sprint(max(page, 1)+1))
			}
			_ = json.NewEncoder(w).Encode(all[min(start, len(all)):end])
		case r.Method == http.MethodPost && strings.HasSuffix(path, "/resend"):
			f.mu.Lock()
			f.resent = append(f.resent, strings.TrimSuffix(path, "/resend"))
			f.mu.Unlock()
			w.WriteHeader(http.StatusCreated)
			_, _ = io.WriteString(w, `{"response_status":201}`)
		case r.Method == http.MethodGet && strings.Contains(path, "/hooks/"):
			_, _ = io.WriteString(w, `{"id":1,"url":"https://gateway.example.com/webhooks/gl","name":"gateway",
				"push_events":false,"issues_events":true,"merge_requests_events":true,"note_events":false,
				"enable_ssl_verification":true,"alert_status":"temporarily_disabled",
				"disabled_until":"2026-03-04T12:10:00.000Z","created_at":"2026-01-01T00:00:00.000Z"}`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeGitLab) connection(hooks ...config.Hook) config.Connection {
	return config.Connection{ID: "gl", Provider: "gitlab", Host: "gitlab.com", APIToken: testToken,
		APIURL: f.srv.URL + "/api/v4", Hooks: hooks}
}

// GitLab project and group hooks: the failed events the inbox lacks
// (by Idempotency-Key) are resent once, across pages; one delivered at a
// retry, one in the inbox and one asked for before are not.
func TestRecoverGitLab(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		gl := newFakeGitLab(t)
		gl.perPage = 2
		gl.events["projects/acme%2Fapi/hooks/1"] = []glEvent{
			glHookEvent(15, "k5", time.Minute, "500"),              // missing
			glHookEvent(14, "k4", 2*time.Minute, "internal error"), // missing (no response)
			glHookEvent(13, "k3", 3*time.Minute, "200"),            // delivered at GitLab's retry
			glHookEvent(12, "k3", 4*time.Minute, "502"),            //
			glHookEvent(11, "k1", 5*time.Minute, "503"),            // in the inbox
			glHookEvent(10, "k0", 30*time.Hour, "503"),             // outside the window
		}
		gl.events["groups/acme/hooks/2"] = []glEvent{
			glHookEvent(22, "k22", time.Minute, "404"), // missing
			glHookEvent(21, "k21", time.Minute, "503"), // asked for before
		}
		inbox(t, st, "gl", "k1")
		if _, err := st.ClaimRedelivery(t.Context(), store.Redelivery{ConnectionID: "gl", HookID: 2, GUID: "k21",
			ProviderDeliveryID: 21, Event: "issue_hooks", RequestedAt: now}); err != nil {
			t.Fatal(err)
		}
		rec := newRecoverer(st, gl.connection(config.Hook{Project: "acme/api", ID: 1}, config.Hook{Group: "acme", ID: 2}))
		res, err := rec.Recover(t.Context(), "gl", Options{})
		if err != nil {
			t.Fatalf("Recover: %v", err)
		}
		if res.Checked != 6 || res.Missing != 4 || res.Count() != 3 || len(res.Unfinished) != 0 {
			t.Errorf("checked %d, missing %d, redelivered %d, unfinished %+v; want 6, 4, 3, none",
				res.Checked, res.Missing, res.Count(), res.Unfinished)
		}
		gl.mu.Lock()
		resent := slices.Sorted(slices.Values(gl.resent))
		gl.mu.Unlock()
		want := []string{"groups/acme/hooks/2/events/22", "projects/acme%2Fapi/hooks/1/events/14", "projects/acme%2Fapi/hooks/1/events/15"}
		if !slices.Equal(resent, want) {
			t.Errorf("resent %q, want %q", resent, want)
		}
		if again, err := rec.Recover(t.Context(), "gl", Options{}); err != nil || again.Count() != 0 {
			t.Errorf("second run = %+v, %v; want nothing asked again", again, err)
		}
	})
}

// Hook health shows what the provider says of each hook: GitHub's active
// flag, events and last response; GitLab's temporary disabling.
func TestHooks(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, store.DialectSQLite)
	gh, gl := newFakeGitHub(t), newFakeGitLab(t)
	rec := newRecoverer(st, gh.connection(repoHook), gl.connection(config.Hook{Group: "acme", ID: 2}))

	hooks, err := rec.Hooks(t.Context(), "gh")
	if err != nil || len(hooks) != 1 {
		t.Fatalf("Hooks(gh) = %+v, %v", hooks, err)
	}
	h := hooks[0]
	if h.Kind != "repository" || h.Owner != "acme/api" || h.ID != 11 || h.Active || !slices.Equal(h.Events, []string{"issues", "pull_request"}) ||
		h.LastResponse == nil || h.LastResponse.Code == nil || *h.LastResponse.Code != 503 || h.LastResponse.Status != "failed" {
		t.Errorf("GitHub hook = %+v (last response %+v), want repository acme/api 11, inactive, its events, last 503", h, h.LastResponse)
	}

	hooks, err = rec.Hooks(t.Context(), "gl")
	if err != nil || len(hooks) != 1 {
		t.Fatalf("Hooks(gl) = %+v, %v", hooks, err)
	}
	h = hooks[0]
	until := time.Date(2026, 3, 4, 12, 10, 0, 0, time.UTC)
	if h.Kind != "group" || h.Active || h.AlertStatus != "temporarily_disabled" || h.DisabledUntil == nil || !h.DisabledUntil.Equal(until) ||
		!slices.Equal(h.Events, []string{"issues_events", "merge_requests_events"}) {
		t.Errorf("GitLab hook = %+v, want group hook temporarily disabled until %v, issues and merge requests", h, until)
	}

	gh.srv.Close()
	rec.MaxElapsed = time.Second // a lost connection is retried that long
	hooks, err = rec.Hooks(t.Context(), "gh")
	if err != nil || len(hooks) != 1 || hooks[0].Error == "" || strings.Contains(hooks[0].Error, testToken) {
		t.Errorf("Hooks with GitHub down = %+v, %v; want the hook with an error, no token", hooks, err)
	}
}

// GitLab's rate limit (429 with RateLimit-Remaining 0 and RateLimit-Reset)
// is waited out until the reset, on the listing and on the resend.
func TestRecoverGitLabWaitsOutRateLimits(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, store.DialectSQLite)
	gl := newFakeGitLab(t)
	gl.events["projects/acme%2Fapi/hooks/1"] = []glEvent{glHookEvent(15, "k5", time.Minute, "500")}
	limited := http.Header{"Ratelimit-Limit": {"2000"}, "Ratelimit-Remaining": {"0"},
		"Ratelimit-Reset": {fmt.Sprint(now.Add(time.Second).Unix())}}
	gl.refusals = []http.Header{limited, limited}
	rec := newRecoverer(st, gl.connection(config.Hook{Project: "acme/api", ID: 1}))
	timer := &recordingTimer{}
	rec.timer = timer
	res, err := rec.Recover(t.Context(), "gl", Options{})
	if err != nil || res.Count() != 1 || len(res.Unfinished) != 0 {
		t.Fatalf("Recover = %+v, %v; want the event resent, finished", res, err)
	}
	waits := timer.recorded()
	if len(waits) != 2 {
		t.Fatalf("waits = %v, want one per refusal", waits)
	}
	for _, w := range waits {
		if w < time.Second {
			t.Errorf("waited %v, want at least the second to GitLab's reset", w)
		}
	}
}
