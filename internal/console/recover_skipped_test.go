package console_test

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/trackergateway/gateway/internal/console"
	"github.com/trackergateway/gateway/internal/recovery"
	"github.com/trackergateway/gateway/internal/store/sqlstore"
	"github.com/trackergateway/gateway/internal/store/storetest"
)

// A reconciliation that skipped items it could not read names each one
// and why, beside what it recorded.
func TestRecoverShowsSkippedItems(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		fake := &fakeRecovery{result: recovery.Result{Method: recovery.MethodReconcile, Checked: 2, Missing: 2, Redelivered: new(2),
			Deliveries: []recovery.Delivery{}, Skipped: 2, SkippedItems: []recovery.SkippedItem{
				{Item: "issue ENG-9 (0bad)", Reason: `updatedAt: parsing time "not-a-date"`},
				{Item: "issue 12 (number 2) at https://gitea.example.com", Reason: "issue delivery: issue 12 has no repository"},
			}}}
		e := newEnvWithRecovery(t, st, func(func() time.Time) console.Recovery { return fake })
		b := e.login(t, adminToken)
		b.get(t, "/ui/recover")
		res := b.post(t, "/ui/recover", url.Values{"connection": {"gh"}, "since": {"6h"}, "dry_run": {"false"}})
		if res.status != http.StatusOK {
			t.Fatalf("run = %d, want 200 with the run's answer; body:\n%s", res.status, res.body)
		}
		wantIn(t, "the run", section(t, res.body, "gh"), []string{
			"<strong>2</strong> listed items could not be read and were skipped",
			`issue ENG-9 (0bad): updatedAt: parsing time "not-a-date"`,
			"issue 12 (number 2) at https://gitea.example.com: issue delivery: issue 12 has no repository",
		}, nil)
	})
}
