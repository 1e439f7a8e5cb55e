package console_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/mux"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/trackergateway/gateway/connectors"
	"github.com/trackergateway/gateway/connectors/providers"
	"github.com/trackergateway/gateway/internal/config"
	"github.com/trackergateway/gateway/internal/console"
	"github.com/trackergateway/gateway/internal/httpapi"
	"github.com/trackergateway/gateway/internal/idempotency"
	"github.com/trackergateway/gateway/internal/inbox"
	"github.com/trackergateway/gateway/internal/ingest"
	"github.com/trackergateway/gateway/internal/metrics"
	"github.com/trackergateway/gateway/internal/outbound"
	"github.com/trackergateway/gateway/internal/projection"
	"github.com/trackergateway/gateway/internal/server"
	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/store/sqlstore"
	"github.com/trackergateway/gateway/internal/store/storetest"
	"github.com/trackergateway/gateway/internal/tasks"
)

const (
	adminToken = "admin-token-0123456789"
	engToken   = "eng-token-0123456789"
	opsToken   = "ops-token-0123456789"
)

// start is the tests' clock at the beginning: every row they write is
// relative to it.
var start = time.Date(2026, 3, 4, 10, 30, 15, 0, time.UTC)

// env is the gateway's router over one store, with workspaces eng and ops,
// the admin token and one token per workspace.
type env struct {
	st     *sqlstore.Store
	router *mux.Router
	clock  *storetest.Clock
}

func newEnv(t *testing.T, st *sqlstore.Store) *env {
	t.Helper()
	return newEnvWithRecovery(t, st, func(func() time.Time) console.Recovery { return &fakeRecovery{} })
}

// newEnvWithRecovery is newEnv with the recovery recovery builds on the
// env's clock.
func newEnvWithRecovery(t *testing.T, st *sqlstore.Store, recovery func(now func() time.Time) console.Recovery) *env {
	t.Helper()
	ctx := context.Background()
	logger := slog.New(slog.DiscardHandler)
	clk := storetest.NewClock(start, 0)
	now := clk.Now
	for _, ws := range []string{"eng", "ops"} {
		if err := st.UpsertWorkspace(ctx, store.Workspace{ID: ws, Name: strings.ToUpper(ws) + " team", TaskPrefix: strings.ToUpper(ws),
			CreatedAt: start, Steps: []store.Step{{ID: "backlog", Name: "Backlog"}}}); err != nil {
			t.Fatalf("upsert workspace: %v", err)
		}
	}
	for _, tok := range []store.Token{
		{ID: "t-admin", Name: "admin", TokenSHA256: httpapi.HashToken(adminToken), Admin: true, CreatedAt: start},
		{ID: "t-eng", Name: "eng-bot", TokenSHA256: httpapi.HashToken(engToken), Workspaces: []string{"eng"}, CreatedAt: start},
		{ID: "t-ops", Name: "ops-bot", TokenSHA256: httpapi.HashToken(opsToken), Workspaces: []string{"ops"}, CreatedAt: start},
	} {
		if err := st.UpsertToken(ctx, tok); err != nil {
			t.Fatalf("upsert token: %v", err)
		}
	}
	noConnections := func(string) (config.Connection, bool) { return config.Connection{}, false }
	// gh is a GitHub connection (with installations), gl a GitLab one.
	ghOnly := func(id string) (config.Connection, bool) {
		provider := map[string]string{"gh": "github", "gl": "gitlab"}[id]
		return config.Connection{ID: id, Provider: provider}, provider != ""
	}
	installations := ingest.NewInstallations(st, ghOnly, logger)
	coord := idempotency.New(st, logger, now, providers.ContributionKinds())
	receiver := inbox.NewReceiver(st, map[string]connectors.Adapter{}, noConnections, logger, now)
	taskAPI := tasks.NewAPI(tasks.NewService(st, logger, now), coord, projection.New(st, noConnections, logger, now), st, logger, now)
	deliveries := inbox.NewOperators(st, logger, now)
	suppressions := ingest.NewSuppressions(st, logger)
	authenticator := httpapi.NewAuthenticator(st, logger, now)
	subscriptions := outbound.NewAPI(st, logger, now, true)
	r := server.NewRouter(server.Deps{
		Receiver:      receiver,
		Tasks:         taskAPI,
		Deliveries:    deliveries,
		Suppressions:  suppressions,
		Installations: installations,
		Creations:     idempotency.NewOperators(coord, logger),
		Readiness:     inbox.NewReadiness(st, receiver, now),
		Metrics:       metrics.New(prometheus.NewRegistry()),
		Console: console.New(console.Deps{Sessions: st, Activity: st, Authenticator: authenticator,
			Deliveries: deliveries, Suppressions: suppressions, Tasks: taskAPI, Recovery: recovery(now),
			Installations: installations, Subscriptions: subscriptions, Connections: []string{"gh", "gl"},
			TraceURL: "http://127.0.0.1:16686/trace/{trace_id}"}, logger, now),
		Subscriptions: subscriptions,
		Authenticator: authenticator,
		Logger:        logger,
	})
	return &env{st: st, router: r, clock: clk}
}

// response is what a request got.
type response struct {
	status   int
	body     string
	location string
	header   http.Header
}

// browser is one client of the console: its session cookie and the CSRF
// token of the last page it read.
type browser struct {
	e      *env
	cookie *http.Cookie
	csrf   string
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func (e *env) do(t *testing.T, b *browser, method, path string, form url.Values, header http.Header) response {
	t.Helper()
	var req *http.Request
	if form != nil {
		req = httptest.NewRequest(method, path, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	} else {
		req = httptest.NewRequest(method, path, nil)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if b != nil && b.cookie != nil {
		req.AddCookie(b.cookie)
	}
	rec := httptest.NewRecorder()
	e.router.ServeHTTP(rec, req)
	res := response{status: rec.Code, body: rec.Body.String(), location: rec.Header().Get("Location"), header: rec.Header()}
	if b != nil {
		if m := csrfField.FindStringSubmatch(res.body); m != nil {
			b.csrf = m[1]
		}
	}
	return res
}

// login signs in with token and returns the signed-in browser, having read
// the overview (and so its CSRF token).
func (e *env) login(t *testing.T, token string) *browser {
	t.Helper()
	res := e.do(t, nil, http.MethodPost, "/ui/login", url.Values{"token": {token}}, nil)
	if res.status != http.StatusSeeOther || res.location != "/ui/" {
		t.Fatalf("sign in = %d Location %q, want 303 to /ui/; body:\n%s", res.status, res.location, res.body)
	}
	var cookie *http.Cookie
	for _, c := range (&http.Response{Header: res.header}).Cookies() {
		if c.Name == "gateway_console" {
			cookie = c
		}
	}
	if cookie == nil {
		t.Fatalf("sign in set no session cookie: %v", res.header["Set-Cookie"])
	}
	b := &browser{e: e, cookie: cookie}
	if res := b.get(t, "/ui/"); res.status != http.StatusOK {
		t.Fatalf("GET /ui/ after sign in = %d", res.status)
	}
	return b
}

func (b *browser) get(t *testing.T, path string) response {
	t.Helper()
	return b.e.do(t, b, http.MethodGet, path, nil, nil)
}

// post posts form with the session's CSRF token.
func (b *browser) post(t *testing.T, path string, form url.Values) response {
	t.Helper()
	if form == nil {
		form = url.Values{}
	}
	form.Set("csrf", b.csrf)
	return b.e.do(t, b, http.MethodPost, path, form, nil)
}

// seedDelivery stores a delivery of conn received ago before the clock's
// now, and finishes it with status (and lastError) as a worker would,
// unless status is queued.
func (e *env) seedDelivery(t *testing.T, conn, key string, ago time.Duration, status, lastError string) store.Delivery {
	t.Helper()
	ctx := context.Background()
	d := store.Delivery{ConnectionID: conn, Provider: "github", Event: "issues.opened", DeliveryKey: key,
		Headers: `{"Content-Type":["application/json"],"X-Github-Event":["issues"],"X-Hub-Signature-256":["sha256=secret-signature"]}`,
		Body:    []byte(`{"action":"opened","issue":{"id":1,"title":"Console test"}}`), ReceivedAt: e.clock.Now().Add(-ago)}
	res, err := e.st.InsertDeliveries(ctx, []store.Delivery{d})
	if err != nil {
		t.Fatalf("insert delivery: %v", err)
	}
	stored, err := e.st.GetDelivery(ctx, res[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if status == store.DeliveryQueued {
		return stored
	}
	// Callers seed queued deliveries last, so this one is the only one
	// due.
	claimed, err := e.st.ClaimDeliveries(ctx, "w-"+key, e.clock.Now().Add(365*24*time.Hour), time.Hour, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(claimed) != 1 || claimed[0].ID != stored.ID {
		t.Fatalf("claimed %d deliveries, want only %s", len(claimed), key)
	}
	done := claimed[0]
	done.Status, done.LastError = status, lastError
	at := e.clock.Now()
	done.ProcessedAt = &at
	if status != store.DeliveryFailed {
		done.OutcomeAction, done.OutcomeResult = "ignore", "event not mapped"
	}
	if err := e.st.FinishDelivery(ctx, done, "w-"+key); err != nil {
		t.Fatal(err)
	}
	out, err := e.st.GetDelivery(ctx, stored.ID)
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != status {
		t.Fatalf("seeded delivery %s is %s, want %s", key, out.Status, status)
	}
	return out
}
