package recovery

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trackergateway/gateway/internal/config"
	"github.com/trackergateway/gateway/internal/openapitest"
	"github.com/trackergateway/gateway/internal/providerapi"
	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/store/storetest"
)

// failedPage is a page of two failed deliveries, new ones for each n.
func failedPage(n int64) []ghDelivery {
	return []ghDelivery{delivery(2*n+1, "g"+strconv.FormatInt(2*n+1, 10), time.Minute, 503),
		delivery(2*n, "g"+strconv.FormatInt(2*n, 10), time.Minute, 503)}
}

// A GitHub listing is bounded whatever the provider answers: a next
// cursor read already stops it at once, endless new cursors at MaxPages,
// an answer past the body limit at that page; what was read before the
// stop is still recovered, exactly once, and the stop is reported.
func TestRecoverGitHubPagingIsBounded(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// next is the next cursor after the page at cursor n.
		next       func(n int64) string
		huge       bool
		wantReason string
		wantPages  int64
		wantAsked  int
	}{
		{name: "repeated cursor", next: func(int64) string { return "same" }, wantReason: StopRepeatedCursor, wantPages: 2, wantAsked: 2},
		{name: "endless cursors", next: func(n int64) string { return strconv.FormatInt(n+1, 10) }, wantReason: StopPageLimit, wantPages: 3, wantAsked: 6},
		{name: "huge page", next: func(n int64) string { return strconv.FormatInt(n+1, 10) }, huge: true, wantReason: StopResponseTooLarge, wantPages: 2, wantAsked: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st := storetest.Open(t, store.DialectSQLite)
			var pages atomic.Int64
			gh := newFakeGitHub(t)
			gh.pager = func(cursor string) ([]ghDelivery, string) {
				pages.Add(1)
				n, _ := strconv.ParseInt(cursor, 10, 64)
				return failedPage(n), tc.next(n)
			}
			srv := gh.srv
			if tc.huge {
				// The second page streams past the body limit.
				srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if r.Method == http.MethodGet && r.URL.Query().Get("cursor") == "1" {
						pages.Add(1)
						w.Header().Set("Content-Type", "application/json")
						_, _ = io.WriteString(w, "[")
						pad := strings.Repeat(" ", 64<<10)
						for range (providerapi.MaxResponseBody + 2<<20) / len(pad) {
							if _, err := io.WriteString(w, pad); err != nil {
								return
							}
						}
						_, _ = io.WriteString(w, "]")
						return
					}
					gh.serve(w, r)
				}))
				t.Cleanup(srv.Close)
			}
			conn := gh.connection(repoHook)
			conn.APIURL = srv.URL + "/"
			rec := newRecoverer(st, conn)
			rec.MaxPages = 3

			res, err := rec.Recover(t.Context(), "gh", Options{})
			if err != nil {
				t.Fatalf("Recover: %v", err)
			}
			if len(res.Unfinished) != 1 || res.Unfinished[0].Reason != tc.wantReason || res.Unfinished[0].HookID != 11 {
				t.Errorf("unfinished = %+v, want hook 11 stopped for %s", res.Unfinished, tc.wantReason)
			}
			if got := pages.Load(); got != tc.wantPages {
				t.Errorf("pages read = %d, want %d", got, tc.wantPages)
			}
			if res.Count() != tc.wantAsked || len(gh.asked()) != tc.wantAsked {
				t.Errorf("redelivered %d, requests %q; want the %d read before the stop", res.Redelivered, gh.asked(), tc.wantAsked)
			}
			again, err := rec.Recover(t.Context(), "gh", Options{})
			if err != nil || again.Count() != 0 || len(gh.asked()) != tc.wantAsked {
				t.Errorf("second run = %+v, %v; requests %d; want nothing asked again", again, err, len(gh.asked()))
			}
		})
	}
}

// GitLab's numbered pages are bounded alike: a next page read already
// stops the listing, and so does MaxPages.
func TestRecoverGitLabPagingIsBounded(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		next       func(page int) int
		wantReason string
		wantPages  int64
	}{
		{"repeated page", func(int) int { return 2 }, StopRepeatedCursor, 2},
		{"endless pages", func(page int) int { return page + 1 }, StopPageLimit, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st := storetest.Open(t, store.DialectSQLite)
			var pages atomic.Int64
			gl := newFakeGitLab(t)
			gl.pager = func(page int) ([]glEvent, int) {
				n := pages.Add(1)
				return []glEvent{glHookEvent(n, "k"+strconv.FormatInt(n, 10), time.Minute, "500")}, tc.next(max(page, 1))
			}
			rec := newRecoverer(st, gl.connection(config.Hook{Project: "acme/api", ID: 1}))
			rec.MaxPages = 3
			res, err := rec.Recover(t.Context(), "gl", Options{})
			if err != nil {
				t.Fatalf("Recover: %v", err)
			}
			if len(res.Unfinished) != 1 || res.Unfinished[0].Reason != tc.wantReason {
				t.Errorf("unfinished = %+v, want %s", res.Unfinished, tc.wantReason)
			}
			if got := pages.Load(); got != tc.wantPages || res.Count() != int(got) {
				t.Errorf("pages read = %d, redelivered %d; want %d pages, each one's event resent", got, res.Redelivered, tc.wantPages)
			}
		})
	}
}

// steppingClock moves on by step at each reading.
type steppingClock struct {
	mu   sync.Mutex
	at   time.Time
	step time.Duration
}

func (c *steppingClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.at = c.at.Add(c.step)
	return c.at
}

// A run stops at its deadline (on the recoverer's clock) between two
// requests, reports it, and asks nothing more.
func TestRecoverStopsAtTheRunDeadline(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, store.DialectSQLite)
	gh := newFakeGitHub(t)
	var pages atomic.Int64
	gh.pager = func(cursor string) ([]ghDelivery, string) {
		pages.Add(1)
		n, _ := strconv.ParseInt(cursor, 10, 64)
		return failedPage(n), strconv.FormatInt(n+1, 10)
	}
	rec := newRecoverer(st, gh.connection(repoHook, config.Hook{Repository: "acme/web", ID: 12}))
	clock := &steppingClock{at: now, step: time.Minute}
	rec.now = clock.now
	rec.MaxRun = 10 * time.Minute
	res, err := rec.Recover(t.Context(), "gh", Options{})
	if err != nil {
		t.Fatalf("Recover: %v", err)
	}
	if len(res.Unfinished) != 1 || res.Unfinished[0].Reason != StopDeadline || res.Unfinished[0].HookID != 11 {
		t.Errorf("unfinished = %+v, want hook 11 stopped at the deadline, hook 12 not reached", res.Unfinished)
	}
	// A minute a clock reading, ten minutes: the listing stops within
	// ten pages, long before MaxPages.
	if got := pages.Load(); got > 10 {
		t.Errorf("pages read = %d, want the listing stopped at the deadline", got)
	}
	if res.Missing == 0 || res.Count() != 0 || len(gh.asked()) != 0 {
		t.Errorf("missing %d, redelivered %d; want what was read listed, nothing asked after the deadline", res.Missing, res.Redelivered)
	}
}

// A provider API that redirects to another host never gets the token
// there: the listing and the hook's state fail with the redirect refused,
// for GitHub and GitLab.
func TestRecoverRefusesRedirectsToAnotherHost(t *testing.T) {
	t.Parallel()
	var trapped, withToken atomic.Int32
	trap := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		trapped.Add(1)
		if r.Header.Get("Authorization") != "" || r.Header.Get("Private-Token") != "" {
			withToken.Add(1)
		}
		_, _ = io.WriteString(w, `[]`)
	}))
	t.Cleanup(trap.Close)
	// 127.0.0.1 and localhost: one machine, two hosts.
	other := strings.Replace(trap.URL, "127.0.0.1", "localhost", 1)
	var asked atomic.Int32
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		http.Redirect(w, r, other+r.URL.RequestURI(), http.StatusTemporaryRedirect)
	}))
	t.Cleanup(api.Close)
	st := storetest.Open(t, store.DialectSQLite)
	gh := config.Connection{ID: "gh", Provider: "github", Host: "github.com", APIToken: testToken, APIURL: api.URL + "/", Hooks: []config.Hook{repoHook}}
	gl := config.Connection{ID: "gl", Provider: "gitlab", Host: "gitlab.com", APIToken: testToken, APIURL: api.URL + "/api/v4",
		Hooks: []config.Hook{{Project: "acme/api", ID: 1}}}
	rec := newRecoverer(st, gh, gl)
	for _, id := range []string{"gh", "gl"} {
		res, err := rec.Recover(t.Context(), id, Options{})
		if err != nil || len(res.Unfinished) != 1 || res.Unfinished[0].Reason != StopRedirectRefused {
			t.Errorf("Recover(%s) = %+v, %v; want the hook unfinished, redirect refused", id, res, err)
		}
		body, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		openapitest.ValidateSchema(t, "RecoverResult", body)
		hooks, err := rec.Hooks(t.Context(), id)
		if err != nil || len(hooks) != 1 || !strings.Contains(hooks[0].Error, "refused") || strings.Contains(hooks[0].Error, testToken) {
			t.Errorf("Hooks(%s) = %+v, %v; want the hook with the refusal, no token", id, hooks, err)
		}
	}
	if n, tok := trapped.Load(), withToken.Load(); n != 0 || tok != 0 {
		t.Errorf("the other host got %d requests, %d with the token; want none", n, tok)
	}
	// A refusal is final: not asked again.
	if n := asked.Load(); n != 4 {
		t.Errorf("the API got %d requests, want 4 (a listing and a hook state per connection)", n)
	}
}

// syncBuffer is a log sink tests read while the recoverer writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// A background run's deadline is its interval when that is shorter than
// MaxRun: it stops, logs why, and leaves the next run its time.
func TestBackgroundRunStopsWithinItsInterval(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, store.DialectSQLite)
	gh := newFakeGitHub(t)
	var pages atomic.Int64
	gh.pager = func(cursor string) ([]ghDelivery, string) {
		pages.Add(1)
		n, _ := strconv.ParseInt(cursor, 10, 64)
		return failedPage(n), strconv.FormatInt(n+1, 10)
	}
	conn := gh.connection(repoHook)
	conn.RecoverEvery = "10m"
	rec := newRecoverer(st, conn)
	logs := &syncBuffer{}
	rec.logger = slog.New(slog.NewTextHandler(logs, nil))
	clock := &steppingClock{at: now, step: time.Minute}
	rec.now = clock.now
	rec.MaxRun = time.Hour // the API's bound; the interval is shorter
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		rec.Run(ctx, []config.Connection{conn})
		close(done)
	}()
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !strings.Contains(logs.String(), "reason=deadline") {
		if time.Now().After(deadline) {
			t.Fatalf("no deadline stop logged within 30s; logs:\n%s", logs.String())
		}
		<-tick.C
	}
	cancel()
	<-done
	// A minute a clock reading, a ten-minute interval: within ten pages.
	if got := pages.Load(); got > 10 {
		t.Errorf("pages read = %d, want the run stopped within its interval", got)
	}
	if !strings.Contains(logs.String(), "connection=gh") || !strings.Contains(logs.String(), "hook_id=11") {
		t.Errorf("the stop's log line lacks the connection or hook:\n%s", logs.String())
	}
}
