package recovery

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trackergateway/gateway/internal/config"
	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/store/sqlstore"
)

// now is the tests' clock.
var now = time.Date(2026, 3, 4, 12, 0, 0, 0, time.UTC)

// ghDelivery is one entry of GitHub's hook delivery list, in the shape
// the API answers (GET /repos/{owner}/{repo}/hooks/{hook_id}/deliveries).
type ghDelivery struct {
	ID             int64   `json:"id"`
	GUID           string  `json:"guid"`
	DeliveredAt    string  `json:"delivered_at"`
	Redelivery     bool    `json:"redelivery"`
	Duration       float64 `json:"duration"`
	Status         string  `json:"status"`
	StatusCode     int     `json:"status_code"`
	Event          string  `json:"event"`
	Action         *string `json:"action"`
	InstallationID *int64  `json:"installation_id"`
	RepositoryID   int64   `json:"repository_id"`
	ThrottledAt    *string `json:"throttled_at"`
}

// delivery is an attempt of guid ago before now, answered with code.
func delivery(id int64, guid string, ago time.Duration, code int) ghDelivery {
	status := "OK"
	if code == 0 {
		status = "Timed out"
	} else if code >= 300 {
		status = "Invalid HTTP Response: " + strconv.Itoa(code)
	}
	action := "opened"
	return ghDelivery{ID: id, GUID: guid, DeliveredAt: now.Add(-ago).Format(time.RFC3339), Duration: 0.27,
		Status: status, StatusCode: code, Event: "issues", Action: &action, RepositoryID: 1296269}
}

// fakeGitHub answers like GitHub's hook delivery API for the hooks it
// holds: deliveries newest first in pages with a Link cursor, redelivery
// requests answered 202 (and recorded), and refusals queued by tests.
type fakeGitHub struct {
	t   *testing.T
	srv *httptest.Server

	mu sync.Mutex
	// deliveries per hook path ("repos/acme/api/hooks/11").
	deliveries map[string][]ghDelivery
	pageSize   int
	// refusals are answered, in order, before anything else.
	refusals []func(w http.ResponseWriter)
	// redelivered are the "hook path/delivery id" asked for, in order.
	redelivered []string
	// onRedeliver runs on each accepted redelivery request.
	onRedeliver func(hookPath string, id int64)
	// redeliverStatus, when set, answers redelivery requests instead of
	// 202 (they are recorded all the same).
	redeliverStatus int
	requests        int
	// pager, when set, answers every listing: the page at cursor and the
	// next page's cursor ("" none).
	pager func(cursor string) ([]ghDelivery, string)
}

func newFakeGitHub(t *testing.T) *fakeGitHub {
	f := &fakeGitHub{t: t, deliveries: map[string][]ghDelivery{}, pageSize: 100}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeGitHub) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.requests++
	if r.Header.Get("Authorization") != "Bearer "+testToken {
		f.mu.Unlock()
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, `{"message":"Bad credentials","documentation_url":"https://docs.github.com/rest"}`)
		return
	}
	if len(f.refusals) > 0 {
		refuse := f.refusals[0]
		f.refusals = f.refusals[1:]
		f.mu.Unlock()
		refuse(w)
		return
	}
	f.mu.Unlock()
	path := strings.TrimPrefix(r.URL.Path, "/")
	switch {
	case r.Method == http.MethodGet && strings.HasSuffix(path, "/deliveries"):
		f.list(w, r, strings.TrimSuffix(path, "/deliveries"))
	case r.Method == http.MethodPost && strings.HasSuffix(path, "/attempts"):
		hook, id, _ := strings.Cut(strings.TrimSuffix(path, "/attempts"), "/deliveries/")
		n, _ := strconv.ParseInt(id, 10, 64)
		f.mu.Lock()
		f.redelivered = append(f.redelivered, hook+"/"+id)
		on, status := f.onRedeliver, f.redeliverStatus
		f.mu.Unlock()
		if status != 0 {
			w.WriteHeader(status)
			_, _ = io.WriteString(w, `{"message":"Server Error"}`)
			return
		}
		if on != nil {
			on(hook, n)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusAccepted)
		_, _ = io.WriteString(w, `{}`)
	case r.Method == http.MethodGet && strings.Contains(path, "/hooks/"):
		f.hook(w, path)
	default:
		http.NotFound(w, r)
	}
}

func (f *fakeGitHub) list(w http.ResponseWriter, r *http.Request, hook string) {
	f.mu.Lock()
	all, ok := f.deliveries[hook]
	size, pager := f.pageSize, f.pager
	f.mu.Unlock()
	if pager != nil {
		page, next := pager(r.URL.Query().Get("cursor"))
		if next != "" {
			w.Header().Set("Link", fmt.Sprintf(`<%s/%s/deliveries?cursor=%s&per_page=100>; rel="next"`, f.srv.URL, hook, next))
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(page)
		return
	}
	if !ok {
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"message":"Not Found"}`)
		return
	}
	if got := r.URL.Query().Get("per_page"); got != "100" {
		f.t.Errorf("per_page = %q, want 100", got)
	}
	start, _ := strconv.Atoi(r.URL.Query().Get("cursor"))
	end := min(start+size, len(all))
	if end < len(all) {
		next := *r.URL
		q := next.Query()
		q.Set("cursor", strconv.Itoa(end))
		next.RawQuery = q.Encode()
		w.Header().Set("Link", fmt.Sprintf(`<%s%s>; rel="next"`, f.srv.URL, next.RequestURI()))
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(all[start:end])
}

func (f *fakeGitHub) hook(w http.ResponseWriter, path string) {
	id := path[strings.LastIndex(path, "/")+1:]
	w.Header().Set("Content-Type", "application/json")
	_, _ = fmt.Fprintf(w, `{"type":"Repository","id":%s,"name":"web","active":false,"events":["issues","pull_request"],
		"config":{"content_type":"json","insecure_ssl":"0","url":"https://gateway.example.com/webhooks/gh"},
		"updated_at":"2026-03-01T10:00:00Z","created_at":"2026-01-01T10:00:00Z",
		"url":"https://api.github.com/%s","last_response":{"code":503,"status":"failed","message":"Service Unavailable"}}`, id, path)
}

// asked returns the redeliveries asked for so far, sorted.
func (f *fakeGitHub) asked() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := slices.Clone(f.redelivered)
	slices.Sort(out)
	return out
}

// refuse queues a refusal with status and headers.
func (f *fakeGitHub) refuse(status int, header map[string]string, body string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.refusals = append(f.refusals, func(w http.ResponseWriter) {
		for k, v := range header {
			w.Header().Set(k, v)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	})
}

const testToken = "ghp_test_token_0123456789"

// connection is a GitHub connection "gh" with hooks against the fake.
func (f *fakeGitHub) connection(hooks ...config.Hook) config.Connection {
	return config.Connection{ID: "gh", Provider: "github", Host: "github.com", APIToken: testToken,
		APIURL: f.srv.URL + "/", Hooks: hooks}
}

// recordingTimer is backoff's timer, waiting for real but recording each
// wait asked for.
type recordingTimer struct {
	mu    sync.Mutex
	waits []time.Duration
	timer *time.Timer
}

func (r *recordingTimer) Start(d time.Duration) {
	r.mu.Lock()
	r.waits = append(r.waits, d)
	r.mu.Unlock()
	r.timer = time.NewTimer(d)
}
func (r *recordingTimer) Stop() {
	if r.timer != nil {
		r.timer.Stop()
	}
}
func (r *recordingTimer) C() <-chan time.Time { return r.timer.C }

func (r *recordingTimer) recorded() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.waits)
}

// newRecoverer is a Recoverer over st for conns, on the tests' clock.
func newRecoverer(st *sqlstore.Store, conns ...config.Connection) *Recoverer {
	r := New(st, func(id string) (config.Connection, bool) {
		for _, c := range conns {
			if c.ID == id {
				return c, true
			}
		}
		return config.Connection{}, false
	}, slog.New(slog.NewTextHandler(io.Discard, nil)), func() time.Time { return now })
	return r
}

// inbox stores a delivery of connection with key.
func inbox(t *testing.T, st *sqlstore.Store, connection, key string) {
	t.Helper()
	_, err := st.InsertDeliveries(t.Context(), []store.Delivery{{ConnectionID: connection, Provider: "github", Event: "issues",
		DeliveryKey: key, Headers: `{}`, Body: []byte(`{}`), ReceivedAt: now}})
	if err != nil {
		t.Fatalf("insert delivery %s: %v", key, err)
	}
}
