package recovery

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trackergateway/gateway/internal/config"
	"github.com/trackergateway/gateway/internal/providerapi"
	"github.com/trackergateway/gateway/internal/providerapi/githubapptest"
	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/store/storetest"
)

// An App's hook is recovered under the hook ID its deliveries carry; when
// GitHub names none, the run says so and asks for nothing, and an App
// with no delivery in GitHub's window has nothing to recover.
func TestRecoverGitHubAppHook(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		deliveries string // GET /app/hook/deliveries
		headers    string // the request headers of a delivery
		wantAsked  int
		wantReason string // of the one unfinished hook; "" when it finished
	}{
		{name: "hook ID from the delivery", wantAsked: 1, headers: `{"X-GitHub-Hook-ID": "77"}`,
			deliveries: fmt.Sprintf(`[{"id": 1, "guid": "g1", "delivered_at": %q, "status_code": 503, "event": "issues"}]`, now.Add(-time.Minute).Format(time.RFC3339))},
		{name: "no hook ID", headers: `{"X-GitHub-Event": "issues"}`, wantReason: StopProviderError,
			deliveries: fmt.Sprintf(`[{"id": 1, "guid": "g1", "delivered_at": %q, "status_code": 503, "event": "issues"}]`, now.Add(-time.Minute).Format(time.RFC3339))},
		{name: "no deliveries", deliveries: `[]`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			var asked []string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				switch {
				case r.Method == http.MethodGet && r.URL.Path == "/app/hook/deliveries":
					fmt.Fprint(w, tc.deliveries)
				case r.Method == http.MethodGet && r.URL.Path == "/app/hook/deliveries/1":
					fmt.Fprintf(w, `{"id": 1, "request": {"headers": %s}}`, tc.headers)
				case r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/app/hook/deliveries/"):
					mu.Lock()
					asked = append(asked, r.URL.Path)
					mu.Unlock()
					w.WriteHeader(http.StatusAccepted)
					fmt.Fprint(w, `{}`)
				default:
					http.NotFound(w, r)
				}
			}))
			t.Cleanup(srv.Close)
			conn := config.Connection{ID: "gh-app", Provider: "github", Host: "github.com", APIURL: srv.URL + "/",
				App: &config.App{ID: 42, PrivateKey: githubapptest.KeyPEM()}}
			apps, err := providerapi.LoadGitHubApps([]config.Connection{conn}, http.DefaultClient, nil, os.ReadFile)
			if err != nil {
				t.Fatal(err)
			}
			st := storetest.Open(t, store.DialectSQLite)
			rec := newRecoverer(st, conn)
			rec.Apps = apps
			res, err := rec.Recover(t.Context(), "gh-app", Options{})
			if err != nil {
				t.Fatalf("Recover: %v", err)
			}
			if res.Count() != tc.wantAsked || len(asked) != tc.wantAsked {
				t.Errorf("redelivered %d, asked %q; want %d", res.Count(), asked, tc.wantAsked)
			}
			if tc.wantAsked == 1 && (len(res.Deliveries) != 1 || res.Deliveries[0].HookID != 77) {
				t.Errorf("deliveries = %+v, want g1 of hook 77", res.Deliveries)
			}
			switch {
			case tc.wantReason == "" && len(res.Unfinished) != 0:
				t.Errorf("unfinished = %+v, want none", res.Unfinished)
			case tc.wantReason != "" && (len(res.Unfinished) != 1 || res.Unfinished[0].Reason != tc.wantReason ||
				res.Unfinished[0].Hook != "GitHub App 42's hook" || !strings.Contains(res.Unfinished[0].Error, "X-GitHub-Hook-ID")):
				t.Errorf("unfinished = %+v, want the App's hook stopped with %s, naming the missing header", res.Unfinished, tc.wantReason)
			}
		})
	}
}
