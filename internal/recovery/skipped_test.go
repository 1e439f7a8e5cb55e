package recovery

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trackergateway/gateway/connectors"
	"github.com/trackergateway/gateway/internal/config"
	"github.com/trackergateway/gateway/internal/openapitest"
	"github.com/trackergateway/gateway/internal/store/sqlstore"
	"github.com/trackergateway/gateway/internal/store/storetest"
)

// skippedOf is a run's skipped items as "item: reason".
func skippedOf(res Result) []string {
	var out []string
	for _, s := range res.SkippedItems {
		out = append(out, s.Item+": "+s.Reason)
	}
	return out
}

// checkSkipped checks the run skipped len(want) items, each named and
// explained by the substrings of one entry of want, in order.
func checkSkipped(t *testing.T, what string, res Result, want [][]string) {
	t.Helper()
	got := skippedOf(res)
	if res.Skipped != len(want) || len(got) != len(want) {
		t.Fatalf("%s: skipped %d %q, want %d", what, res.Skipped, got, len(want))
	}
	for i, subs := range want {
		for _, sub := range subs {
			if !strings.Contains(got[i], sub) {
				t.Errorf("%s: skipped item %q does not say %q", what, got[i], sub)
			}
		}
	}
}

// A Linear listing with bad items (an updatedAt that is no time, a member
// of the wrong type, a time far in the future) records the good items
// around them and names each bad one in the answer, run after run.
func TestReconcileLinearSkipsBadItems(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ln := newFakeLinear(t)
		t1, t2 := now.Add(-time.Minute), now.Add(-2*time.Minute)
		badTime := linearIssue("2f1e3c1a-0000-4000-8000-00000000000b", "ENG-2", "bad time", "started", t1)
		badTime["updatedAt"] = "not-a-date"
		badType := linearIssue("2f1e3c1a-0000-4000-8000-00000000000c", "ENG-3", "bad number", "started", t1)
		badType["number"] = "three"
		future := linearIssue("2f1e3c1a-0000-4000-8000-00000000000d", "ENG-4", "from the future", "started", t1)
		future["updatedAt"] = "9999-12-31T00:00:00Z"
		ln.issues = []map[string]any{
			linearIssue("2f1e3c1a-0000-4000-8000-00000000000a", "ENG-1", "good", "started", t1),
			badTime, badType, future,
			linearIssue("2f1e3c1a-0000-4000-8000-00000000000e", "ENG-5", "good too", "started", t2),
		}
		conn := config.Connection{ID: "ln", Provider: connectors.ProviderLinear, Host: "acme", Workspace: "eng",
			APIToken: "lin_api_secretkey", APIURL: ln.srv.URL}
		rec := newRecoverer(st, conn)
		wantSkipped := [][]string{
			{"issue ENG-2 (2f1e3c1a-0000-4000-8000-00000000000b)", "updatedAt", "not-a-date"},
			{"issue ENG-4 (2f1e3c1a-0000-4000-8000-00000000000d)", "9999-12-31T00:00:00Z", "more than a day ahead"},
			{"issue ENG-3 (2f1e3c1a-0000-4000-8000-00000000000c)", "decode linear issue"},
		}
		wantKeys := []string{
			"reconcile:linear:acme:issue:2f1e3c1a-0000-4000-8000-00000000000a@" + t1.Format(time.RFC3339Nano),
			"reconcile:linear:acme:issue:2f1e3c1a-0000-4000-8000-00000000000e@" + t2.Format(time.RFC3339Nano),
		}
		for run, wantCount := range []int{2, 0} {
			res, err := rec.Recover(t.Context(), "ln", Options{})
			if err != nil {
				t.Fatalf("run %d: %v", run, err)
			}
			if res.Checked != 2 || res.Count() != wantCount || len(res.Unfinished) != 0 {
				t.Errorf("run %d = checked %d recorded %d unfinished %+v; want 2 %d none", run, res.Checked, res.Count(), res.Unfinished, wantCount)
			}
			checkSkipped(t, fmt.Sprintf("run %d", run), res, wantSkipped)
			body, err := json.Marshal(res)
			if err != nil {
				t.Fatal(err)
			}
			openapitest.ValidateSchema(t, "RecoverResult", body)
			if got := recordedKeys(t, st, "ln"); !slices.Equal(got, wantKeys) {
				t.Errorf("run %d: recorded keys = %q, want %q", run, got, wantKeys)
			}
		}
	})
}

// A Gitea listing with an issue that names no repository and a pull
// request gone by the time it is read records the items around them and
// names each in the answer.
func TestReconcileGiteaSkipsBadItems(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		gt := newFakeGitea(t)
		t1 := now.Add(-time.Minute)
		noRepo := giteaIssue(12, 2, "no repository", "open", t1)
		delete(noRepo, "repository")
		gone, _ := giteaPull(56, 10, "gone", false, t1) // no pull request to read
		gt.issues = []map[string]any{giteaIssue(11, 1, "good", "open", t1), noRepo, gone, giteaIssue(13, 3, "good too", "open", t1)}
		rec := newRecoverer(st, gt.connection())
		res, err := rec.Recover(t.Context(), "gt", Options{})
		if err != nil {
			t.Fatalf("Recover: %v", err)
		}
		if res.Checked != 2 || res.Count() != 2 || len(res.Unfinished) != 0 {
			t.Errorf("run = checked %d recorded %d unfinished %+v; want 2 2 none", res.Checked, res.Count(), res.Unfinished)
		}
		checkSkipped(t, "run", res, [][]string{
			{"issue 12 (number 2) at " + gt.srv.URL, "no repository"},
			{"pull request acme/api#10", "404"},
		})
		if got := recordedKeys(t, st, "gt"); len(got) != 2 {
			t.Errorf("recorded keys = %q, want issues 11 and 13", got)
		}
	})
}

// A task pinned by a far-future time stored before such times were
// refused does not hide the item's real state from recovery.
func TestReconcileRecordsTheStateOfAPinnedTask(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		gt := newFakeGitea(t)
		t1 := now.Add(-time.Minute)
		gt.issues = []map[string]any{giteaIssue(11, 1, "real update", "open", t1)}
		seedTask(t, st, "gitea:gitea.example.com:issue:11", time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC))
		res, err := newRecoverer(st, gt.connection()).Recover(t.Context(), "gt", Options{})
		if err != nil {
			t.Fatalf("Recover: %v", err)
		}
		if res.Missing != 1 || res.Count() != 1 {
			t.Errorf("run = missing %d recorded %d; want the real state recorded", res.Missing, res.Count())
		}
	})
}
