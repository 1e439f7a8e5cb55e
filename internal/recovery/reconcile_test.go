package recovery

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/trackergateway/gateway/connectors"
	"github.com/trackergateway/gateway/internal/config"
	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/store/sqlstore"
	"github.com/trackergateway/gateway/internal/store/storetest"
)

// fakeGitea answers Gitea's issue search (GET /api/v1/repos/issues/search)
// with its issues, pages of two with a Link to the next, and a pull
// request read (GET /api/v1/repos/{owner}/{repo}/pulls/{index}).
type fakeGitea struct {
	srv *httptest.Server

	mu       sync.Mutex
	issues   []map[string]any // newest first
	pulls    map[string]map[string]any
	searches []string // the since of each search
	pages    int
	// nextPage, when set, is the page every answer names as the next.
	nextPage string
	// perPage is the issues a page holds (2 when zero).
	perPage int
}

func newFakeGitea(t testing.TB) *fakeGitea {
	f := &fakeGitea{pulls: map[string]map[string]any{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeGitea) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.Header.Get("Authorization") != "token gitea-token" {
		http.Error(w, `{"message":"token is required"}`, http.StatusUnauthorized)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.URL.Path == "/api/v1/repos/issues/search":
		f.pages++
		since, err := time.Parse(time.RFC3339, r.URL.Query().Get("since"))
		if err != nil || r.URL.Query().Get("state") != "all" {
			http.Error(w, "bad query "+r.URL.RawQuery, http.StatusBadRequest)
			return
		}
		f.searches = append(f.searches, r.URL.Query().Get("since"))
		var match []map[string]any
		for _, is := range f.issues {
			if u, err := time.Parse(time.RFC3339, fmt.Sprint(is["updated_at"])); err != nil || !u.Before(since) {
				match = append(match, is)
			}
		}
		page, _ := strconv.Atoi(r.URL.Query().Get("page"))
		page = max(page, 1)
		per := f.perPage
		if per == 0 {
			per = 2
		}
		from, to := min((page-1)*per, len(match)), min(page*per, len(match))
		next := f.nextPage
		if next == "" && to < len(match) {
			next = strconv.Itoa(page + 1)
		}
		if next != "" {
			w.Header().Set("Link", fmt.Sprintf(`<%s%s?page=%s>; rel="next"`, f.srv.URL, r.URL.Path, next))
		}
		_ = json.NewEncoder(w).Encode(match[from:to])
	case strings.HasPrefix(r.URL.Path, "/api/v1/repos/") && strings.Contains(r.URL.Path, "/pulls/"):
		pr, ok := f.pulls[strings.TrimPrefix(r.URL.Path, "/api/v1/repos/")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_ = json.NewEncoder(w).Encode(pr)
	default:
		http.NotFound(w, r)
	}
}

var giteaRepo = map[string]any{"id": 7, "name": "api", "owner": "acme", "full_name": "acme/api"}

// giteaIssue is an issue as Gitea's API answers it.
func giteaIssue(id, number int64, title, state string, updated time.Time) map[string]any {
	return map[string]any{"id": id, "number": number, "title": title, "body": "", "state": state,
		"html_url": fmt.Sprintf("https://gitea.example.com/acme/api/issues/%d", number),
		"labels":   []any{map[string]any{"id": 1, "name": "bug"}}, "user": map[string]any{"id": 1, "login": "ana"},
		"created_at": updated.Add(-time.Hour).Format(time.RFC3339), "updated_at": updated.Format(time.RFC3339),
		"repository": giteaRepo}
}

// giteaPull is the issue side of a pull request and the pull request
// itself, as Gitea's API answers them.
func giteaPull(id, number int64, title string, merged bool, updated time.Time) (map[string]any, map[string]any) {
	issue := giteaIssue(id+1000, number, title, "open", updated)
	issue["html_url"] = fmt.Sprintf("https://gitea.example.com/acme/api/pulls/%d", number)
	issue["pull_request"] = map[string]any{"merged": merged}
	state := "open"
	var mergedAt any
	if merged {
		state, mergedAt = "closed", updated.Format(time.RFC3339)
		issue["state"] = "closed"
	}
	repo := map[string]any{"id": 7, "name": "api", "full_name": "acme/api", "owner": map[string]any{"id": 3, "login": "acme"}}
	pr := map[string]any{"id": id, "number": number, "title": title, "body": "Fixes #1", "state": state,
		"html_url": issue["html_url"], "user": map[string]any{"id": 1, "login": "ana"}, "labels": []any{},
		"merged": merged, "merged_at": mergedAt, "updated_at": updated.Format(time.RFC3339),
		"head": map[string]any{"ref": "fix", "sha": "abc123", "repo": repo},
		"base": map[string]any{"ref": "main", "sha": "def456", "repo": repo}}
	return issue, pr
}

func (f *fakeGitea) connection() config.Connection {
	return config.Connection{ID: "gt", Provider: connectors.ProviderGitea, Host: "gitea.example.com", Workspace: "eng",
		APIToken: "gitea-token", APIURL: f.srv.URL}
}

// recordedKeys are the delivery keys of connection's deliveries, sorted.
func recordedKeys(t *testing.T, st *sqlstore.Store, connection string) []string {
	t.Helper()
	page, err := st.ListDeliveries(t.Context(), store.DeliveryFilter{ConnectionID: connection, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, d := range page.Deliveries {
		keys = append(keys, d.DeliveryKey)
	}
	slices.Sort(keys)
	return keys
}

// A Gitea run lists the issues and pull requests changed in the window and
// records, once, each state the gateway does not have: not one the inbox
// holds, not one a task already has (or a later one), not a deleted one.
// The pull request is read whole; a second run records nothing.
func TestReconcileGitea(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := t.Context()
		gt := newFakeGitea(t)
		t1, t2, t3, t4 := now.Add(-time.Minute), now.Add(-2*time.Minute), now.Add(-3*time.Minute), now.Add(-4*time.Minute)
		pull, pr := giteaPull(55, 9, "Fix the thing", true, t2)
		gt.pulls["acme/api/pulls/9"] = pr
		gt.issues = []map[string]any{
			giteaIssue(11, 1, "new issue", "open", t1), // missing
			pull, // missing: read whole
			giteaIssue(12, 2, "held already", "open", t3),    // in the inbox under its key
			giteaIssue(13, 3, "task is current", "open", t3), // its task has this state
			giteaIssue(14, 4, "deleted here", "closed", t4),  // suppressed
			giteaIssue(15, 5, "too old", "open", now.Add(-25*time.Hour)),
		}
		held := "reconcile:gitea:gitea.example.com:issue:12@" + t3.Format(time.RFC3339Nano)
		if _, err := st.InsertDeliveries(ctx, []store.Delivery{{ConnectionID: "gt", Provider: "gitea", Event: "issues",
			DeliveryKey: held, Headers: `{}`, Body: []byte(`{}`), ReceivedAt: now}}); err != nil {
			t.Fatal(err)
		}
		seedTask(t, st, "gitea:gitea.example.com:issue:13", t3)
		if err := st.UpsertSuppression(ctx, store.Suppression{WorkspaceID: "eng", ExternalID: "gitea:gitea.example.com:issue:14",
			Reason: "deleted at source", CreatedAt: now}); err != nil {
			t.Fatal(err)
		}
		rec := newRecoverer(st, gt.connection())

		dry, err := rec.Recover(ctx, "gt", Options{DryRun: true})
		if err != nil {
			t.Fatalf("dry run: %v", err)
		}
		if dry.Method != MethodReconcile || dry.Checked != 5 || dry.Missing != 2 || dry.Count() != 2 {
			t.Errorf("dry run = method %q checked %d missing %d would record %d; want reconcile 5 2 2", dry.Method, dry.Checked, dry.Missing, dry.Count())
		}
		if got := recordedKeys(t, st, "gt"); len(got) != 1 {
			t.Errorf("a dry run recorded %q", got)
		}

		res, err := rec.Recover(ctx, "gt", Options{})
		if err != nil {
			t.Fatalf("Recover: %v", err)
		}
		if res.Checked != 5 || res.Missing != 2 || res.Count() != 2 || len(res.Unfinished) != 0 {
			t.Errorf("run = checked %d missing %d recorded %d unfinished %+v; want 5 2 2 none", res.Checked, res.Missing, res.Count(), res.Unfinished)
		}
		issueKey := "reconcile:gitea:gitea.example.com:issue:11@" + t1.Format(time.RFC3339Nano)
		prKey := "reconcile:gitea:gitea.example.com:pull_request:55@" + t2.Format(time.RFC3339Nano)
		var listed []string
		for _, d := range res.Deliveries {
			listed = append(listed, fmt.Sprintf("%s %s %t %s", d.GUID, d.Event, d.Asked(), d.Request))
		}
		wantListed := []string{issueKey + " issues.edited true accepted", prKey + " pull_request.edited true accepted"}
		if !slices.Equal(listed, wantListed) {
			t.Errorf("deliveries = %q, want %q", listed, wantListed)
		}
		want := []string{held, issueKey, prKey}
		slices.Sort(want)
		if got := recordedKeys(t, st, "gt"); !slices.Equal(got, want) {
			t.Errorf("recorded keys = %q, want %q", got, want)
		}
		d := findDelivery(t, st, "gt", prKey)
		if d.Event != "pull_request" || !strings.Contains(d.Headers, HeaderReconciled) {
			t.Errorf("recorded pull request = event %q headers %s; want pull_request with %s", d.Event, d.Headers, HeaderReconciled)
		}

		again, err := rec.Recover(ctx, "gt", Options{})
		if err != nil || again.Missing != 0 || again.Count() != 0 {
			t.Errorf("second run = %+v, %v; want nothing missing, nothing recorded", again, err)
		}
		if got := recordedKeys(t, st, "gt"); len(got) != 3 {
			t.Errorf("after a second run %d deliveries, want 3", len(got))
		}
	})
}

// Two replicas reconciling one connection at once record each state once
// in total.
func TestReconcileConcurrentRunsRecordOnce(t *testing.T) {
	t.Parallel()
	storetest.ForDialects(t, func(t *testing.T, dialect string) {
		first, second := twoReplicas(t, dialect)
		gt := newFakeGitea(t)
		for i := range 10 {
			gt.issues = append(gt.issues, giteaIssue(int64(100+i), int64(i+1), "issue", "open", now.Add(-time.Duration(i+1)*time.Minute)))
		}
		conn := gt.connection()
		replicas := []*Recoverer{newRecoverer(first, conn), newRecoverer(second, conn)}
		var wg sync.WaitGroup
		counts := make([]int, 4)
		for i := range counts {
			wg.Go(func() {
				res, err := replicas[i%2].Recover(t.Context(), "gt", Options{})
				if err != nil {
					t.Errorf("run %d: %v", i, err)
				}
				counts[i] = res.Count()
			})
		}
		wg.Wait()
		total := 0
		for _, n := range counts {
			total += n
		}
		if got := recordedKeys(t, first, "gt"); len(got) != 10 || total != 10 {
			t.Errorf("%d deliveries recorded, %d reported; want 10 each", len(got), total)
		}
	})
}

// A listing that names the same page as next again stops there and says so.
func TestReconcileStopsAtARepeatedPage(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		gt := newFakeGitea(t)
		gt.issues = []map[string]any{giteaIssue(11, 1, "one", "open", now.Add(-time.Minute))}
		gt.nextPage = "1"
		rec := newRecoverer(st, gt.connection())
		res, err := rec.Recover(t.Context(), "gt", Options{})
		if err != nil {
			t.Fatalf("Recover: %v", err)
		}
		if len(res.Unfinished) != 1 || res.Unfinished[0].Reason != StopRepeatedCursor || res.Count() != 1 {
			t.Errorf("run = %+v; want the issue recorded and the run stopped at the repeated page", res)
		}
		if !strings.HasPrefix(res.Unfinished[0].Hook, "issues and pull requests at ") {
			t.Errorf("unfinished names %q, want the listing", res.Unfinished[0].Hook)
		}
		if gt.pages != 2 {
			t.Errorf("%d pages asked, want 2", gt.pages)
		}
	})
}

// fakeLinear answers Linear's GraphQL issues query with its issues,
// filtered by updatedAt, one page.
type fakeLinear struct {
	srv    *httptest.Server
	mu     sync.Mutex
	issues []map[string]any
	auth   []string
	// answers counts the queries answered.
	answers int
}

func newFakeLinear(t *testing.T) *fakeLinear {
	f := &fakeLinear{}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeLinear) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.auth = append(f.auth, r.Header.Get("Authorization"))
	var req struct {
		Query     string         `json:"query"`
		Variables map[string]any `json:"variables"`
	}
	if r.Method != http.MethodPost || json.NewDecoder(r.Body).Decode(&req) != nil || !strings.Contains(req.Query, "issues(") {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	since, err := time.Parse(time.RFC3339Nano, fmt.Sprint(req.Variables["since"]))
	if err != nil {
		http.Error(w, "bad since", http.StatusBadRequest)
		return
	}
	nodes := []any{}
	for _, is := range f.issues {
		// A node whose time does not parse is answered too: the gateway
		// must cope with what it is given.
		if u, err := time.Parse(time.RFC3339Nano, fmt.Sprint(is["updatedAt"])); err != nil || !u.Before(since) {
			nodes = append(nodes, is)
		}
	}
	f.answers++
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"data": map[string]any{"issues": map[string]any{
		"nodes": nodes, "pageInfo": map[string]any{"hasNextPage": false, "endCursor": nil}}}})
}

// linearIssue is an issue as Linear's GraphQL API answers it.
func linearIssue(id, identifier, title, stateType string, updated time.Time) map[string]any {
	team, number, _ := strings.Cut(identifier, "-")
	n, _ := strconv.Atoi(number)
	return map[string]any{"id": id, "identifier": identifier, "number": n, "title": title, "description": "",
		"url": "https://linear.app/acme/issue/" + identifier, "createdAt": updated.Add(-time.Hour).Format(time.RFC3339Nano),
		"updatedAt": updated.Format(time.RFC3339Nano), "archivedAt": nil,
		"state":       map[string]any{"id": "s1", "name": stateType, "type": stateType},
		"team":        map[string]any{"id": "t1", "key": team, "name": team},
		"labels":      map[string]any{"nodes": []any{map[string]any{"id": "l1", "name": "bug"}}},
		"attachments": map[string]any{"nodes": []any{}}}
}

// A Linear run queries the issues changed in the window with the API key
// and records each state the gateway does not have, once.
func TestReconcileLinear(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ln := newFakeLinear(t)
		t1 := now.Add(-time.Minute)
		ln.issues = []map[string]any{
			linearIssue("2f1e3c1a-0000-4000-8000-000000000001", "ENG-1", "open one", "started", t1),
			linearIssue("2f1e3c1a-0000-4000-8000-000000000002", "ENG-2", "done one", "completed", t1),
			linearIssue("2f1e3c1a-0000-4000-8000-000000000003", "ENG-3", "old", "started", now.Add(-30*time.Hour)),
		}
		conn := config.Connection{ID: "ln", Provider: connectors.ProviderLinear, Host: "acme", Workspace: "eng",
			APIToken: "lin_api_secretkey", APIURL: ln.srv.URL}
		rec := newRecoverer(st, conn)
		res, err := rec.Recover(t.Context(), "ln", Options{})
		if err != nil {
			t.Fatalf("Recover: %v", err)
		}
		if res.Method != MethodReconcile || res.Checked != 2 || res.Count() != 2 {
			t.Errorf("run = %+v; want two issues recorded", res)
		}
		want := []string{
			"reconcile:linear:acme:issue:2f1e3c1a-0000-4000-8000-000000000001@" + t1.Format(time.RFC3339Nano),
			"reconcile:linear:acme:issue:2f1e3c1a-0000-4000-8000-000000000002@" + t1.Format(time.RFC3339Nano),
		}
		if got := recordedKeys(t, st, "ln"); !slices.Equal(got, want) {
			t.Errorf("recorded keys = %q, want %q", got, want)
		}
		if again, err := rec.Recover(t.Context(), "ln", Options{}); err != nil || again.Count() != 0 {
			t.Errorf("second run = %+v, %v; want nothing recorded", again, err)
		}
		if ln.auth[0] != "lin_api_secretkey" {
			t.Errorf("Authorization = %q, want the personal API key as it is", ln.auth[0])
		}
	})
}

// seedTask stores a task of externalID whose source was last updated at.
func seedTask(t *testing.T, st *sqlstore.Store, externalID string, at time.Time) {
	t.Helper()
	storetest.SeedWorkspace(t, st, "eng")
	updated := at
	if err := st.InsertTask(t.Context(), store.Task{ID: uuid.NewString(), WorkspaceID: "eng", Identifier: "WS-1",
		Title: "task", WorkflowStepID: "backlog", ExternalID: externalID, SourceUpdatedAt: &updated,
		CreationState: store.CreationComplete, CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatalf("insert task: %v", err)
	}
}

// findDelivery is connection's delivery with key.
func findDelivery(t *testing.T, st *sqlstore.Store, connection, key string) store.Delivery {
	t.Helper()
	page, err := st.ListDeliveries(t.Context(), store.DeliveryFilter{ConnectionID: connection, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range page.Deliveries {
		if d.DeliveryKey == key {
			full, err := st.GetDelivery(t.Context(), d.ID)
			if err != nil {
				t.Fatal(err)
			}
			return full
		}
	}
	t.Fatalf("no delivery %s", key)
	return store.Delivery{}
}

// BenchmarkReconcileGitea: one run over 500 changed issues (pages of 50)
// that records every one, on each dialect: the listing, parsing, the inbox
// and task lookups and the one insert of the run's states.
func BenchmarkReconcileGitea(b *testing.B) {
	for _, dialect := range []string{store.DialectSQLite, store.DialectPostgres} {
		b.Run(dialect, func(b *testing.B) { benchmarkReconcileGitea(b, dialect) })
	}
}

func benchmarkReconcileGitea(b *testing.B, dialect string) {
	gt := newFakeGitea(b)
	gt.perPage = 50
	for i := range 500 {
		gt.issues = append(gt.issues, giteaIssue(int64(1000+i), int64(i+1), "issue", "open", now.Add(-time.Duration(i+1)*time.Second)))
	}
	for b.Loop() {
		b.StopTimer()
		st := storetest.Open(b, dialect)
		rec := newRecoverer(st, gt.connection())
		b.StartTimer()
		res, err := rec.Recover(b.Context(), "gt", Options{})
		if err != nil || res.Count() != 500 {
			b.Fatalf("Recover = %d recorded, %v; want 500", res.Count(), err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/500, "ns/item")
}
