package recovery

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trackergateway/gateway/internal/config"
	"github.com/trackergateway/gateway/internal/failure"
	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/store/postgres"
	"github.com/trackergateway/gateway/internal/store/sqlite"
	"github.com/trackergateway/gateway/internal/store/sqlstore"
	"github.com/trackergateway/gateway/internal/store/storetest"
)

var repoHook = config.Hook{Repository: "acme/api", ID: 11}

// A page of deliveries with some failed, some delivered at a later
// attempt, some in the inbox under either key, one asked for before:
// exactly the missing ones are redelivered, each once, at its latest
// attempt, and a second run asks nothing.
func TestRecoverRedeliversExactlyTheMissing(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		gh := newFakeGitHub(t)
		gh.deliveries["repos/acme/api/hooks/11"] = []ghDelivery{
			delivery(81, "g8", time.Minute, 503),    // in the inbox of another hook only: missing
			delivery(71, "g7", 2*time.Minute, 0),    // failed twice: missing, redelivered at 71
			delivery(70, "g7", 3*time.Minute, 502),  //
			delivery(51, "g5", 4*time.Minute, 500),  // asked for before: missing, not asked again
			delivery(41, "g4", 5*time.Minute, 503),  // in the inbox under the GUID alone
			delivery(31, "g3", 6*time.Minute, 503),  // in the inbox as hook:GUID
			delivery(21, "g2", 7*time.Minute, 200),  // delivered at its second attempt
			delivery(20, "g2", 8*time.Minute, 503),  //
			delivery(11, "g1", 9*time.Minute, 503),  // missing
			delivery(10, "g0", 25*time.Hour, 503),   // outside the window
			delivery(9, "g-old", 26*time.Hour, 503), //
		}
		inbox(t, st, "gh", "11:g3")
		inbox(t, st, "gh", "g4")
		inbox(t, st, "gh", "999:g8")
		inbox(t, st, "other", "11:g1")
		if _, err := st.ClaimRedelivery(t.Context(), store.Redelivery{ConnectionID: "gh", HookID: 11, GUID: "g5",
			ProviderDeliveryID: 51, Event: "issues", RequestedAt: now.Add(-time.Hour)}); err != nil {
			t.Fatal(err)
		}
		rec := newRecoverer(st, gh.connection(repoHook))

		res, err := rec.Recover(t.Context(), "gh", Options{})
		if err != nil {
			t.Fatalf("Recover: %v", err)
		}
		if res.Checked != 7 || res.Missing != 4 || res.Count() != 3 || len(res.Unfinished) != 0 {
			t.Errorf("checked %d, missing %d, redelivered %d, unfinished %+v; want 7, 4, 3, none",
				res.Checked, res.Missing, res.Count(), res.Unfinished)
		}
		want := []string{"repos/acme/api/hooks/11/11", "repos/acme/api/hooks/11/71", "repos/acme/api/hooks/11/81"}
		if got := gh.asked(); !slices.Equal(got, want) {
			t.Errorf("redelivery requests = %q, want %q", got, want)
		}
		var listed []string
		for _, d := range res.Deliveries {
			listed = append(listed, fmt.Sprintf("%s:%d:%d:%t:%s", d.GUID, d.DeliveryID, d.StatusCode, d.Asked(), d.Request))
		}
		wantListed := []string{"g8:81:503:true:accepted", "g7:71:0:true:accepted", "g5:51:500:false:requested", "g1:11:503:true:accepted"}
		if !slices.Equal(listed, wantListed) {
			t.Errorf("deliveries = %q, want %q", listed, wantListed)
		}
		if d := res.Deliveries[0]; d.HookID != 11 || d.Event != "issues" || d.Action != "opened" || !d.DeliveredAt.Equal(now.Add(-time.Minute)) {
			t.Errorf("delivery = %+v, want hook 11, issues.opened, delivered a minute ago", d)
		}

		again, err := rec.Recover(t.Context(), "gh", Options{})
		if err != nil {
			t.Fatalf("second Recover: %v", err)
		}
		if again.Missing != 4 || again.Count() != 0 || len(gh.asked()) != 3 {
			t.Errorf("second run: missing %d, redelivered %d, requests %d; want 4, 0, 3 (nothing asked again)",
				again.Missing, again.Count(), len(gh.asked()))
		}
	})
}

// Paging follows GitHub's cursor across pages and stops at the first
// delivery older than the window, asking for no page beyond it.
func TestRecoverPagesWithCursor(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		gh := newFakeGitHub(t)
		gh.pageSize = 3
		var all []ghDelivery
		for i := range 10 {
			code := 200
			if i%3 == 2 {
				code = 503
			}
			all = append(all, delivery(int64(100-i), "p"+strconv.Itoa(i), time.Duration(i+1)*time.Hour, code))
		}
		gh.deliveries["orgs/acme/hooks/7"] = all
		rec := newRecoverer(st, gh.connection(config.Hook{Organization: "acme", ID: 7}))
		res, err := rec.Recover(t.Context(), "gh", Options{Since: 7*time.Hour + 30*time.Minute})
		if err != nil {
			t.Fatalf("Recover: %v", err)
		}
		// p0..p6 are in the window (3 pages); p2 and p5 failed.
		if res.Checked != 7 || res.Missing != 2 || res.Count() != 2 {
			t.Errorf("checked %d, missing %d, redelivered %d; want 7, 2, 2", res.Checked, res.Missing, res.Count())
		}
		if got, want := gh.asked(), []string{"orgs/acme/hooks/7/95", "orgs/acme/hooks/7/98"}; !slices.Equal(got, want) {
			t.Errorf("redelivery requests = %q, want %q", got, want)
		}
		if gh.requests != 3+2 {
			t.Errorf("API requests = %d, want 3 pages and 2 redeliveries", gh.requests)
		}
	})
}

// 429 and 403 refusals with Retry-After or a spent rate limit are waited
// out as long as GitHub asks, then the run finishes.
func TestRecoverWaitsOutRateLimits(t *testing.T) {
	t.Parallel()
	reset := strconv.FormatInt(now.Add(2*time.Second).Unix(), 10)
	tests := []struct {
		name     string
		status   int
		header   map[string]string
		body     string
		wantWait time.Duration
	}{
		{"429 Retry-After", http.StatusTooManyRequests, map[string]string{"Retry-After": "1"}, `{"message":"slow down"}`, time.Second},
		{"403 secondary limit", http.StatusForbidden, map[string]string{"Retry-After": "1"},
			`{"message":"You have exceeded a secondary rate limit.","documentation_url":"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"}`, time.Second},
		{"403 rate limit reset", http.StatusForbidden, map[string]string{"X-RateLimit-Limit": "5000", "X-RateLimit-Remaining": "0",
			"X-RateLimit-Used": "5000", "X-RateLimit-Reset": reset}, `{"message":"API rate limit exceeded"}`, 2 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st := storetest.Open(t, store.DialectSQLite)
			gh := newFakeGitHub(t)
			gh.deliveries["repos/acme/api/hooks/11"] = []ghDelivery{delivery(1, "g1", time.Minute, 503)}
			gh.refuse(tc.status, tc.header, tc.body) // the listing
			gh.refuse(tc.status, tc.header, tc.body) // the redelivery
			rec := newRecoverer(st, gh.connection(repoHook))
			timer := &recordingTimer{}
			rec.timer = timer
			res, err := rec.Recover(t.Context(), "gh", Options{})
			if err != nil || res.Count() != 1 || len(res.Unfinished) != 0 {
				t.Fatalf("Recover = %+v, %v; want one redelivery, finished", res, err)
			}
			waits := timer.recorded()
			if len(waits) != 2 {
				t.Fatalf("waits = %v, want one per refusal", waits)
			}
			for _, w := range waits {
				if w < tc.wantWait {
					t.Errorf("waited %v, want at least the %v GitHub asked for", w, tc.wantWait)
				}
			}
		})
	}
}

// A rate limit longer than a run waits ends the run, reported; the
// refused redelivery is not recorded as asked, so the next run asks.
func TestRecoverReportsALongRateLimit(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		gh := newFakeGitHub(t)
		gh.deliveries["repos/acme/api/hooks/11"] = []ghDelivery{delivery(2, "g2", time.Minute, 503), delivery(1, "g1", 2*time.Minute, 503)}
		rec := newRecoverer(st, gh.connection(repoHook, config.Hook{Repository: "acme/web", ID: 12}))
		gh.mu.Lock()
		gh.onRedeliver = func(string, int64) {
			// The first redelivery is accepted; then the limit is spent.
			gh.refusals = append(gh.refusals, func(w http.ResponseWriter) {
				w.Header().Set("Retry-After", "3600")
				w.WriteHeader(http.StatusTooManyRequests)
			})
			gh.onRedeliver = nil
		}
		gh.mu.Unlock()
		res, err := rec.Recover(t.Context(), "gh", Options{})
		if err != nil {
			t.Fatalf("Recover: %v", err)
		}
		if res.Missing != 2 || res.Count() != 1 || len(res.Unfinished) != 1 || res.Unfinished[0].Reason != StopRateLimited ||
			!strings.Contains(res.Unfinished[0].Error, "rate limited") {
			t.Fatalf("Recover = %+v; want 2 missing, 1 redelivered, the rate limit reported", res)
		}
		if u := res.Unfinished[0]; u.Hook != "repository acme/api hook 11" || u.HookID != 11 {
			t.Errorf("unfinished = %+v, want hook acme/api only (the run stops there)", res.Unfinished)
		}
		next, err := rec.Recover(t.Context(), "gh", Options{})
		if err != nil || next.Count() != 1 || len(gh.asked()) != 2 {
			t.Errorf("next run = %+v, %v; requests %q; want the refused one asked for", next, err, gh.asked())
		}
	})
}

// Two replicas recovering the same connection at once ask GitHub once in
// total for each missing delivery.
func TestRecoverConcurrentRunsAskOnce(t *testing.T) {
	t.Parallel()
	storetest.ForDialects(t, func(t *testing.T, dialect string) {
		first, second := twoReplicas(t, dialect)
		gh := newFakeGitHub(t)
		var page []ghDelivery
		for i := range 20 {
			page = append(page, delivery(int64(100-i), "c"+strconv.Itoa(i), time.Duration(i+1)*time.Minute, 503))
		}
		gh.deliveries["repos/acme/api/hooks/11"] = page
		conn := gh.connection(repoHook)
		replicas := []*Recoverer{newRecoverer(first, conn), newRecoverer(second, conn)}
		var wg sync.WaitGroup
		results := make([]Result, 4)
		for i := range results {
			wg.Go(func() {
				res, err := replicas[i%2].Recover(t.Context(), "gh", Options{})
				if err != nil {
					t.Errorf("run %d: %v", i, err)
				}
				results[i] = res
			})
		}
		wg.Wait()
		total := 0
		for _, r := range results {
			total += r.Count()
		}
		if asked := gh.asked(); len(asked) != 20 || len(slices.Compact(asked)) != 20 || total != 20 {
			t.Errorf("%d redelivery requests (%d distinct), %d reported; want 20 each", len(asked), len(slices.Compact(asked)), total)
		}
	})
}

// A dry run lists what a run would ask for and asks nothing.
func TestRecoverDryRunAsksNothing(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		gh := newFakeGitHub(t)
		gh.deliveries["repos/acme/api/hooks/11"] = []ghDelivery{delivery(2, "g2", time.Minute, 503), delivery(1, "g1", 2*time.Minute, 200)}
		rec := newRecoverer(st, gh.connection(repoHook))
		res, err := rec.Recover(t.Context(), "gh", Options{DryRun: true})
		if err != nil {
			t.Fatalf("Recover: %v", err)
		}
		if res.Checked != 2 || res.Missing != 1 || res.Count() != 1 || !res.Deliveries[0].Asked() || res.Deliveries[0].Request != "" {
			t.Errorf("dry run = %+v; want g2 missing and to be asked for, no request recorded", res)
		}
		// The answer says what would happen, never that it happened.
		raw, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{`"would_redeliver":1,`, `"would_redeliver":true`} {
			if !strings.Contains(string(raw), want) {
				t.Errorf("dry run answers %s, want %s", raw, want)
			}
		}
		if strings.Contains(string(raw), `"redelivered"`) {
			t.Errorf("dry run answers %s, with redelivered", raw)
		}
		real, err := json.Marshal(Result{Redelivered: new(0), Deliveries: []Delivery{{Redelivered: new(false)}}})
		if err != nil {
			t.Fatal(err)
		}
		if s := string(real); !strings.Contains(s, `"redelivered":0,`) || !strings.Contains(s, `"redelivered":false`) || strings.Contains(s, "would_") {
			t.Errorf("a run answers %s, want redelivered and no would_redeliver", s)
		}
		if asked := gh.asked(); len(asked) != 0 {
			t.Errorf("a dry run asked for %q", asked)
		}
		if got, _ := st.ListRedeliveries(t.Context(), "gh", 11, []string{"g2"}); len(got) != 0 {
			t.Errorf("a dry run recorded %+v", got)
		}
	})
}

// Refusals before anything is asked: unknown connection, a connection that
// cannot be recovered, a window beyond three days.
func TestRecoverRefusals(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, store.DialectSQLite)
	gh := newFakeGitHub(t)
	noToken := gh.connection(repoHook)
	noToken.ID, noToken.APIToken = "no-token", ""
	noHooks := gh.connection()
	noHooks.ID = "no-hooks"
	jira := config.Connection{ID: "jira", Provider: "jira", APIToken: "t", Hooks: []config.Hook{{Project: "P", ID: 1}}}
	neither := noHooks
	neither.ID, neither.APIToken = "neither", ""
	rec := newRecoverer(st, gh.connection(repoHook), noToken, noHooks, neither, jira)
	tests := []struct {
		name, connection string
		since            time.Duration
		want             failure.Code
		// message is what the refusal says (and Recoverable with it),
		// empty when the connection itself can be recovered.
		message string
	}{
		{"unknown connection", "nope", 0, failure.NotFound, "connection not found"},
		{"no api_token", "no-token", 0, failure.Invalid, "recovery needs api_token and hooks, or an app, in its configuration (it has no api_token)"},
		{"no hooks", "no-hooks", 0, failure.Invalid, "(it has no hooks)"},
		{"neither", "neither", 0, failure.Invalid, "(it has no api_token and no hooks)"},
		{"jira", "jira", 0, failure.Invalid, "jira retries deliveries by itself"},
		{"beyond three days", "gh", 73 * time.Hour, failure.Invalid, ""},
		{"negative", "gh", -time.Hour, failure.Invalid, ""},
	}
	for _, tc := range tests {
		_, err := rec.Recover(t.Context(), tc.connection, Options{Since: tc.since})
		if got := failure.CodeOf(err); got != tc.want {
			t.Errorf("%s: error %v (%s), want %s", tc.name, err, got, tc.want)
		}
		recoverable := rec.Recoverable(tc.connection)
		switch {
		case tc.message == "" && recoverable != nil:
			t.Errorf("%s: Recoverable = %v, want nil", tc.name, recoverable)
		case tc.message != "" && (recoverable == nil || !strings.Contains(err.Error(), tc.message) || recoverable.Error() != err.Error()):
			t.Errorf("%s: Recover error %v, Recoverable %v, want both saying %q", tc.name, err, recoverable, tc.message)
		}
	}
	if gh.requests != 0 {
		t.Errorf("refused runs made %d API requests", gh.requests)
	}
}

// A hook GitHub cannot list (a wrong ID, a token without access) is
// reported; the other hooks are recovered.
func TestRecoverReportsAHookItCannotRead(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, store.DialectSQLite)
	gh := newFakeGitHub(t)
	gh.deliveries["repos/acme/api/hooks/11"] = []ghDelivery{delivery(1, "g1", time.Minute, 503)}
	rec := newRecoverer(st, gh.connection(config.Hook{Repository: "acme/gone", ID: 5}, repoHook))
	res, err := rec.Recover(t.Context(), "gh", Options{})
	if err != nil {
		t.Fatalf("Recover: %v", err)
	}
	if res.Count() != 1 || len(res.Unfinished) != 1 || res.Unfinished[0].Hook != "repository acme/gone hook 5" ||
		res.Unfinished[0].Reason != StopProviderError || !strings.Contains(res.Unfinished[0].Error, "404") {
		t.Errorf("Recover = %+v; want acme/api recovered and acme/gone reported with GitHub's 404", res)
	}
	if errors.Is(err, ErrRateLimited) {
		t.Errorf("a 404 reported as a rate limit")
	}
}

// twoReplicas opens one database twice, as two gateway replicas do: two
// PostgreSQL pools on one schema, or two SQLite handles on one file.
func twoReplicas(t *testing.T, dialect string) (*sqlstore.Store, *sqlstore.Store) {
	t.Helper()
	ctx := t.Context()
	open := func() *sqlstore.Store { return nil }
	switch dialect {
	case store.DialectPostgres:
		url := storetest.PostgresURL(t)
		schema := storetest.NewSchema(t, url)
		open = func() *sqlstore.Store {
			d, err := postgres.Open(ctx, url, postgres.Options{Schema: schema}, slog.New(slog.NewTextHandler(io.Discard, nil)))
			if err != nil {
				t.Fatalf("open postgres: %v", err)
			}
			return sqlstore.New(d)
		}
	default:
		path := filepath.Join(t.TempDir(), "gateway.db")
		open = func() *sqlstore.Store {
			d, err := sqlite.Open(ctx, path)
			if err != nil {
				t.Fatalf("open sqlite: %v", err)
			}
			return sqlstore.New(d)
		}
	}
	a := open()
	t.Cleanup(a.Close)
	if err := a.Migrate(ctx); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	b := open()
	t.Cleanup(b.Close)
	return a, b
}

// A redelivery request that fails in a way the provider may have acted on
// (a server error) is asked once, recorded failed with its error and
// reported; a later run does not ask again. A listing that fails the same
// way is simply read again.
func TestRecoverNeverAsksTwiceAfterAFailure(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		gh := newFakeGitHub(t)
		gh.deliveries["repos/acme/api/hooks/11"] = []ghDelivery{delivery(1, "g1", time.Minute, 503)}
		gh.refuse(http.StatusBadGateway, nil, `{"message":"Server Error"}`) // the first listing
		gh.redeliverStatus = http.StatusBadGateway
		rec := newRecoverer(st, gh.connection(repoHook))
		rec.timer = &recordingTimer{}
		res, err := rec.Recover(t.Context(), "gh", Options{})
		if err != nil {
			t.Fatalf("Recover: %v", err)
		}
		if res.Missing != 1 || res.Count() != 0 || len(res.Deliveries) != 1 || res.Deliveries[0].Request != store.RedeliveryFailed ||
			!strings.Contains(res.Deliveries[0].Error, "502") {
			t.Fatalf("Recover = %+v; want g1 missing, its request failed with GitHub's 502", res)
		}
		again, err := rec.Recover(t.Context(), "gh", Options{})
		if err != nil || again.Count() != 0 || again.Deliveries[0].Request != store.RedeliveryFailed {
			t.Errorf("second run = %+v, %v; want the failed request listed, not asked again", again, err)
		}
		if asked := gh.asked(); len(asked) != 1 {
			t.Errorf("redelivery requests = %q, want one", asked)
		}
	})
}

// since is read the same way by the API and the console.
func TestParseSince(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want time.Duration
		err  string
	}{
		{"", 0, ""},
		{"6h", 6 * time.Hour, ""},
		{"90m", 90 * time.Minute, ""},
		{"yesterday", 0, `since "yesterday" is not a duration (e.g. 24h)`},
		{"0s", 0, "since must be positive"},
		{"-1h", 0, "since must be positive"},
	}
	for _, tc := range tests {
		got, err := ParseSince(tc.in)
		switch {
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("ParseSince(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		case tc.err != "" && (err == nil || failure.CodeOf(err) != failure.Invalid || failure.MessageOf(err) != tc.err):
			t.Errorf("ParseSince(%q) error %v, want invalid %q", tc.in, err, tc.err)
		}
	}
}
