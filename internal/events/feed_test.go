package events

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/gorilla/mux"

	"github.com/trackergateway/gateway/internal/httpapi"
	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/store/postgres"
	"github.com/trackergateway/gateway/internal/store/sqlstore"
	"github.com/trackergateway/gateway/internal/store/storetest"
)

func TestParseTypesAndWait(t *testing.T) {
	t.Parallel()
	types := []struct {
		in      string
		want    []string
		wantErr string
	}{
		{"", nil, ""},
		{"task.created", []string{"task.created"}, ""},
		{" task.created , task.deleted,task.created,", []string{"task.created", "task.deleted"}, ""},
		{"task.created,task.closed", nil, `unknown event type "task.closed"`},
		{"task.Created,nope", nil, `unknown event types "task.Created", "nope"`},
	}
	for _, tt := range types {
		got, err := ParseTypes(tt.in)
		if tt.wantErr != "" {
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("ParseTypes(%q) = %v, want error %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("ParseTypes(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
	waits := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"", 0, true}, {"0", 0, true}, {"10", 10 * time.Second, true}, {"2.5", 2500 * time.Millisecond, true},
		{"30s", 30 * time.Second, true}, {"250ms", 250 * time.Millisecond, true}, {"30", 30 * time.Second, true},
		{"31", 0, false}, {"31s", 0, false}, {"1m", 0, false}, {"-1", 0, false}, {"-1s", 0, false},
		{"NaN", 0, false}, {"-Inf", 0, false}, {"Inf", 0, false}, {"soon", 0, false},
	}
	for _, tt := range waits {
		got, err := ParseWait(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseWait(%q) = %v, %v; want %v (ok %v)", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

// feedEnv is a Feed over a real store, served at the route's path with a
// principal per bearer token: "admin", or "ws-bot" (workspace "ws" only).
type feedEnv struct {
	t    *testing.T
	st   *sqlstore.Store
	feed *Feed
	srv  *httptest.Server
	// stop ends the feed's Run.
	stop context.CancelFunc
	done chan struct{}
}

var feedPrincipals = map[string]httpapi.Principal{
	"admin":  {Name: "admin", Admin: true},
	"ws-bot": {Name: "ws-bot", Workspaces: []string{"ws"}},
}

func newFeedEnv(t *testing.T, st *sqlstore.Store) *feedEnv {
	t.Helper()
	storetest.SeedWorkspace(t, st, "ws")
	storetest.SeedWorkspace(t, st, "other")
	e := &feedEnv{t: t, st: st, feed: NewFeed(st, slog.New(slog.DiscardHandler)), done: make(chan struct{})}
	r := mux.NewRouter()
	r.HandleFunc("/api/v1/workspaces/{id}/events", func(w http.ResponseWriter, r *http.Request) {
		p := feedPrincipals[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
		e.feed.ListEvents(w, r.WithContext(httpapi.WithPrincipal(r.Context(), p)))
	})
	e.srv = httptest.NewServer(r)
	t.Cleanup(e.srv.Close)
	ctx, stop := context.WithCancel(context.Background())
	e.stop = stop
	go func() { defer close(e.done); e.feed.Run(ctx) }()
	t.Cleanup(func() { stop(); <-e.done })
	return e
}

// appendEvent commits one event of typ in workspace ws and returns its row.
func (e *feedEnv) appendEvent(ws, typ string) store.TaskEvent {
	e.t.Helper()
	ctx := context.Background()
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	task := store.Task{ID: uuid.NewString(), WorkspaceID: ws, Identifier: "T-1", Title: "A task", WorkflowStepID: "backlog",
		Revision: 1, CreatedAt: at, UpdatedAt: at}
	var id int64
	if err := e.st.InTx(ctx, func(tx store.Queries) error {
		if err := Append(ctx, tx, typ, task, nil, nil, Cause{Actor: ActorAPI}, at); err != nil {
			return err
		}
		evs, _, err := tx.ListWorkspaceEvents(ctx, store.EventPage{WorkspaceID: ws, AfterID: 0, Limit: 1000})
		if err == nil {
			id = evs[len(evs)-1].ID
		}
		return err
	}); err != nil {
		e.t.Fatalf("append %s: %v", typ, err)
	}
	evs, _, err := e.st.ListWorkspaceEvents(ctx, store.EventPage{WorkspaceID: ws, AfterID: id - 1, Limit: 1})
	if err != nil || len(evs) != 1 {
		e.t.Fatalf("read the appended event: %v %v", evs, err)
	}
	return evs[0]
}

// get asks for path as token and returns the status and the raw body.
func (e *feedEnv) get(token, path string) (int, []byte) {
	e.t.Helper()
	req, err := http.NewRequest(http.MethodGet, e.srv.URL+path, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp.StatusCode, body
}

// page asks for a page that must answer 200.
func (e *feedEnv) page(token, path string) feedPage {
	e.t.Helper()
	status, body := e.get(token, path)
	if status != http.StatusOK {
		e.t.Fatalf("GET %s = %d %s", path, status, body)
	}
	var p feedPage
	if err := json.Unmarshal(body, &p); err != nil {
		e.t.Fatalf("GET %s: %v in %s", path, err, body)
	}
	return p
}

type feedPage struct {
	Events     []json.RawMessage `json:"events"`
	NextCursor string            `json:"next_cursor"`
}

// ids are the ids of p's events.
func (p feedPage) ids(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, raw := range p.Events {
		var e struct{ ID string }
		if err := json.Unmarshal(raw, &e); err != nil {
			t.Fatal(err)
		}
		out = append(out, e.ID)
	}
	return out
}

func eventIDs(rows ...store.TaskEvent) []string {
	var out []string
	for _, r := range rows {
		out = append(out, FormatID(r.ID))
	}
	return out
}

func TestFeedPagesAWorkspacesEvents(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		t.Parallel()
		e := newFeedEnv(t, st)
		var mine []store.TaskEvent
		for _, typ := range []string{TypeCreated, TypeUpdated, TypeArchived, TypeCreated, TypeDeleted} {
			e.appendEvent("other", TypeCreated)
			mine = append(mine, e.appendEvent("ws", typ))
		}
		const path = "/api/v1/workspaces/ws/events"
		all := e.page("ws-bot", path)
		if got, want := all.ids(t), eventIDs(mine...); !slices.Equal(got, want) {
			t.Fatalf("events = %v, want %v", got, want)
		}
		for i, raw := range all.Events {
			body, err := Body(mine[i])
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(raw, body) {
				t.Errorf("event %d =\n%s\nwant the event's body\n%s", i, raw, body)
			}
		}
		last := FormatID(mine[4].ID)
		tests := []struct {
			name, query string
			want        []store.TaskEvent
			next        string
		}{
			{"every event", "", mine, last},
			{"a page", "?limit=2", mine[:2], FormatID(mine[1].ID)},
			{"after a next_cursor", "?limit=2&after=" + FormatID(mine[1].ID), mine[2:4], FormatID(mine[3].ID)},
			{"after an event's id", "?after=" + FormatID(mine[2].ID), mine[3:], last},
			{"caught up", "?after=" + last, nil, last},
			{"caught up, waiting a moment", "?wait=0.05&after=" + last, nil, last},
			{"one type", "?type=task.created", []store.TaskEvent{mine[0], mine[3]}, FormatID(mine[3].ID)},
			{"two types", "?type=task.archived,task.deleted&after=" + FormatID(mine[0].ID),
				[]store.TaskEvent{mine[2], mine[4]}, last},
			{"before any", "?after=evt_0000000000000000&limit=1", mine[:1], FormatID(mine[0].ID)},
		}
		for _, tt := range tests {
			p := e.page("ws-bot", path+tt.query)
			if got, want := p.ids(t), eventIDs(tt.want...); !slices.Equal(got, want) || p.NextCursor != tt.next {
				t.Errorf("%s: events %v, next %s; want %v, %s", tt.name, got, p.NextCursor, want, tt.next)
			}
		}
		if p := e.page("admin", "/api/v1/workspaces/other/events"); len(p.Events) != 5 {
			t.Errorf("the admin's page of another workspace holds %d events, want 5", len(p.Events))
		}
	})
}

func TestFeedRefusesBadInputAndOtherWorkspaces(t *testing.T) {
	t.Parallel()
	e := newFeedEnv(t, storetest.Open(t, store.DialectSQLite))
	tests := []struct {
		token, path string
		status      int
		message     string
	}{
		{"ws-bot", "/api/v1/workspaces/other/events", http.StatusNotFound, "workspace not found"},
		{"ws-bot", "/api/v1/workspaces/other/events?type=nope", http.StatusNotFound, "workspace not found"},
		{"admin", "/api/v1/workspaces/missing/events", http.StatusNotFound, "workspace not found"},
		{"ws-bot", "/api/v1/workspaces/ws/events?type=task.created,task.closed", http.StatusBadRequest, `unknown event type "task.closed"`},
		{"ws-bot", "/api/v1/workspaces/ws/events?type=a,b", http.StatusBadRequest, `unknown event types "a", "b"`},
		{"ws-bot", "/api/v1/workspaces/ws/events?wait=31s", http.StatusBadRequest, "wait is at most 30s"},
		{"ws-bot", "/api/v1/workspaces/ws/events?wait=60", http.StatusBadRequest, "wait is at most 30s"},
		{"ws-bot", "/api/v1/workspaces/ws/events?wait=-1s", http.StatusBadRequest, "wait must not be negative"},
		{"ws-bot", "/api/v1/workspaces/ws/events?wait=soon", http.StatusBadRequest, "wait must be a duration (10s) or a number of seconds"},
		{"ws-bot", "/api/v1/workspaces/ws/events?after=42", http.StatusBadRequest, "after must be an event id or a next_cursor"},
		{"ws-bot", "/api/v1/workspaces/ws/events?limit=1001", http.StatusBadRequest, "limit must be an integer between 1 and 1000"},
		{"ws-bot", "/api/v1/workspaces/ws/events?after=%ff", http.StatusBadRequest, ""},
	}
	for _, tt := range tests {
		status, body := e.get(tt.token, tt.path)
		var got struct{ Error string }
		_ = json.Unmarshal(body, &got)
		if status != tt.status || (tt.message != "" && got.Error != tt.message) {
			t.Errorf("GET %s as %s = %d %s, want %d %q", tt.path, tt.token, status, body, tt.status, tt.message)
		}
	}
}

// TestFeedFilteredPageEndsWithItsWindow: a page filtered by type reads at
// most its window of the workspace's events; a window without a match is
// an empty page whose next_cursor moves on, answered at once even when the
// request would wait.
func TestFeedFilteredPageEndsWithItsWindow(t *testing.T) {
	t.Parallel()
	e := newFeedEnv(t, storetest.Open(t, store.DialectSQLite))
	e.feed.scan = 3
	var rows []store.TaskEvent
	for _, typ := range []string{TypeUpdated, TypeUpdated, TypeUpdated, TypeUpdated, TypeDeleted} {
		rows = append(rows, e.appendEvent("ws", typ))
	}
	p := e.page("ws-bot", "/api/v1/workspaces/ws/events?type=task.deleted&limit=2&wait=30")
	if len(p.Events) != 0 || p.NextCursor != FormatID(rows[2].ID) {
		t.Fatalf("first window: events %v, next %s; want none, %s", p.ids(t), p.NextCursor, FormatID(rows[2].ID))
	}
	p = e.page("ws-bot", "/api/v1/workspaces/ws/events?type=task.deleted&limit=2&wait=30&after="+p.NextCursor)
	if got, want := p.ids(t), eventIDs(rows[4]); !slices.Equal(got, want) || p.NextCursor != want[0] {
		t.Errorf("second window: events %v, next %s; want %v", got, p.NextCursor, want)
	}
}

// answer is an HTTP answer a test waits for.
type answer struct {
	status int
	body   []byte
}

// getAsync asks in the background; the answer arrives on the channel.
func (e *feedEnv) getAsync(token, path string) <-chan answer {
	got := make(chan answer, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodGet, e.srv.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := e.srv.Client().Do(req)
		if err != nil {
			got <- answer{status: -1, body: []byte(err.Error())}
			return
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		got <- answer{status: resp.StatusCode, body: body}
	}()
	return got
}

// untilWaiting polls until n requests wait for an event.
func (e *feedEnv) untilWaiting(n int64) {
	e.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for e.feed.waiting.Load() != n {
		if time.Now().After(deadline) {
			e.t.Fatalf("waiting requests = %d, want %d", e.feed.waiting.Load(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// receive returns the answer, failing the test when none comes in time.
func receive(t *testing.T, got <-chan answer) answer {
	t.Helper()
	select {
	case a := <-got:
		return a
	case <-time.After(20 * time.Second):
		t.Fatal("no answer within 20s")
		return answer{}
	}
}

// TestFeedWaitAnswersWhenAnEventCommits: a request that finds nothing
// newer waits; an event of another workspace or another type leaves it
// waiting, and the first event it would list answers it.
func TestFeedWaitAnswersWhenAnEventCommits(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		t.Parallel()
		e := newFeedEnv(t, st)
		e.feed.poll = time.Hour // only a notification wakes it
		first := e.appendEvent("ws", TypeCreated)
		got := e.getAsync("ws-bot", "/api/v1/workspaces/ws/events?wait=30s&type=task.deleted&after="+FormatID(first.ID))
		e.untilWaiting(1)
		e.appendEvent("other", TypeDeleted)
		e.appendEvent("ws", TypeUpdated)
		deleted := e.appendEvent("ws", TypeDeleted)
		a := receive(t, got)
		var p feedPage
		if err := json.Unmarshal(a.body, &p); a.status != http.StatusOK || err != nil {
			t.Fatalf("answer = %d %s", a.status, a.body)
		}
		if got, want := p.ids(t), eventIDs(deleted); !slices.Equal(got, want) || p.NextCursor != want[0] {
			t.Errorf("answered events %v, next %s; want %v", got, p.NextCursor, want)
		}
	})
}

// TestFeedWaitEndsWhenTheFeedStops: a waiting request answers as soon as
// the feed stops (the gateway's graceful stop), with nothing new.
func TestFeedWaitEndsWhenTheFeedStops(t *testing.T) {
	t.Parallel()
	e := newFeedEnv(t, storetest.Open(t, store.DialectSQLite))
	e.feed.poll = time.Hour
	got := e.getAsync("ws-bot", "/api/v1/workspaces/ws/events?wait=30")
	e.untilWaiting(1)
	e.stop()
	a := receive(t, got)
	if a.status != http.StatusOK || string(a.body) != `{"events":[],"next_cursor":"evt_0000000000000000"}`+"\n" {
		t.Errorf("answer = %d %s, want an empty page", a.status, a.body)
	}
	// Once stopped, a request does not wait.
	if p := e.page("ws-bot", "/api/v1/workspaces/ws/events?wait=30"); len(p.Events) != 0 {
		t.Errorf("events after the stop = %v", p.ids(t))
	}
}

// TestFeedWaitAnswersAnotherReplicasCommit: on PostgreSQL a request
// waiting on one replica answers when another replica commits the event.
func TestFeedWaitAnswersAnotherReplicasCommit(t *testing.T) {
	t.Parallel()
	url := storetest.PostgresURL(t)
	schema := storetest.NewSchema(t, url)
	replica := func() *sqlstore.Store {
		d, err := postgres.Open(context.Background(), url, postgres.Options{Schema: schema, MaxConns: 4}, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		s := sqlstore.New(d)
		t.Cleanup(s.Close)
		return s
	}
	serving, other := replica(), replica()
	if err := serving.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	e := newFeedEnv(t, serving)
	e.feed.poll = time.Hour // only a notification wakes it
	writer := &feedEnv{t: t, st: other}
	got := e.getAsync("ws-bot", "/api/v1/workspaces/ws/events?wait=30")
	e.untilWaiting(1)
	row := writer.appendEvent("ws", TypeCreated)
	a := receive(t, got)
	var p feedPage
	if err := json.Unmarshal(a.body, &p); a.status != http.StatusOK || err != nil {
		t.Fatalf("answer = %d %s", a.status, a.body)
	}
	if got, want := p.ids(t), eventIDs(row); !slices.Equal(got, want) {
		t.Errorf("answered events %v, want %v", got, want)
	}
}
