package events

import (
	"context"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/mux"

	"github.com/trackergateway/gateway/internal/failure"
	"github.com/trackergateway/gateway/internal/httpapi"
	"github.com/trackergateway/gateway/internal/store"
)

// FeedStore is what the feed reads.
type FeedStore interface {
	GetWorkspace(ctx context.Context, id string) (store.Workspace, error)
	ListWorkspaceEvents(ctx context.Context, p store.EventPage) ([]store.TaskEvent, int64, error)
	WaitForNotification(ctx context.Context, channel string) error
}

// Limits of the feed.
const (
	// MaxWait is the longest a request may wait for an event (wait).
	MaxWait = 30 * time.Second
	// filteredScan is how many of a workspace's events a page filtered by
	// type looks at, at most (store.EventPage.Scan).
	filteredScan = 5000
	// pollEvery is how often a waiting request reads again without a
	// notification: notifications are best effort (one lost between
	// replicas, or between two the relay coalesced, costs at most this).
	pollEvery = time.Second
	// minReread spaces a waiting request's reads: every commit that
	// appends events in any workspace wakes every waiting request, which
	// then reads its own workspace's feed.
	minReread = 20 * time.Millisecond
)

// Feed serves the events feed, GET /api/v1/workspaces/{id}/events
// (docs/design.md, "Task events out"): a workspace's events ascending by id
// after a cursor, optionally of some types, waiting up to wait for one to
// commit when there is none yet.
type Feed struct {
	st     FeedStore
	logger *slog.Logger

	mu      sync.Mutex
	changed chan struct{} // closed when events commit (Run)
	stopped bool
	// waiting counts the requests waiting for an event now.
	waiting atomic.Int64
	// scan is store.EventPage.Scan of a filtered page (filteredScan), and
	// poll how often a waiting request reads without a notification
	// (pollEvery).
	scan int
	poll time.Duration
}

// NewFeed returns the feed over st.
func NewFeed(st FeedStore, logger *slog.Logger) *Feed {
	return &Feed{st: st, logger: logger, changed: make(chan struct{}), scan: filteredScan, poll: pollEvery}
}

// Run relays the store's notifications of committed events
// (store.EventsChannel: at once in this process, through LISTEN/NOTIFY
// from other replicas) to the requests waiting for them, until ctx ends:
// then every waiting request answers at once and later ones do not wait,
// so a graceful stop is not held up by a long poll. Without Run a waiting
// request still reads again every pollEvery.
func (f *Feed) Run(ctx context.Context) {
	defer func() {
		f.mu.Lock()
		f.stopped = true
		f.mu.Unlock()
		f.wake()
	}()
	for {
		if err := f.st.WaitForNotification(ctx, store.EventsChannel); err != nil {
			return
		}
		f.wake()
	}
}

// wake releases the requests waiting on the current channel.
func (f *Feed) wake() {
	f.mu.Lock()
	defer f.mu.Unlock()
	close(f.changed)
	f.changed = make(chan struct{})
}

// changes is the channel the next commit closes, and whether the feed has
// stopped.
func (f *Feed) changes() (<-chan struct{}, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.changed, f.stopped
}

// Page is one page of the feed. NextCursor is always set: the position to
// read on from, which a consumer passes back as after (the last event of
// the page, the end of a filtered page's window, or after itself when
// nothing is newer).
type Page struct {
	Events     []Event `json:"events"`
	NextCursor string  `json:"next_cursor"`
}

// ListEvents answers a page of the route's workspace's feed (List).
func (f *Feed) ListEvents(w http.ResponseWriter, r *http.Request) {
	p, _ := httpapi.PrincipalFrom(r.Context())
	page, err := f.List(r.Context(), p, mux.Vars(r)["id"], r.URL.Query())
	if err != nil {
		httpapi.WriteError(w, r, f.logger, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, page)
}

var errWorkspaceNotFound = failure.New(failure.NotFound, "workspace not found")

// Query is a feed request, as List validates it.
type Query struct {
	After int64
	Types []string
	Limit int
	Wait  time.Duration
}

// ParseQuery validates the feed's parameters: after (an event id or a
// next_cursor), type (a comma list of event types), limit, wait (a
// duration, or seconds, at most MaxWait).
func ParseQuery(q url.Values) (Query, error) {
	var out Query
	for _, name := range []string{"after", "type", "limit", "wait"} {
		if _, err := httpapi.QueryText(q, name); err != nil {
			return out, err
		}
	}
	if after := q.Get("after"); after != "" {
		id, err := ParseID(after)
		if err != nil {
			return out, failure.New(failure.Invalid, "after must be an event id or a next_cursor")
		}
		out.After = id
	}
	types, err := ParseTypes(q.Get("type"))
	if err != nil {
		return out, err
	}
	out.Types = types
	if out.Limit, err = httpapi.ParsePageLimit(q.Get("limit")); err != nil {
		return out, err
	}
	if out.Wait, err = ParseWait(q.Get("wait")); err != nil {
		return out, err
	}
	return out, nil
}

// ParseTypes parses a comma list of event types ("" is every type); the
// error names every unknown one.
func ParseTypes(list string) ([]string, error) {
	var types, unknown []string
	for t := range strings.SplitSeq(list, ",") {
		t = strings.TrimSpace(t)
		switch {
		case t == "":
		case !KnownType(t):
			unknown = append(unknown, strconv.Quote(t))
		case !slices.Contains(types, t):
			types = append(types, t)
		}
	}
	switch len(unknown) {
	case 0:
		return types, nil
	case 1:
		return nil, failure.New(failure.Invalid, "unknown event type %s", unknown[0])
	}
	return nil, failure.New(failure.Invalid, "unknown event types %s", strings.Join(unknown, ", "))
}

// ParseWait parses wait: a Go duration ("10s", "1m") or a number of
// seconds ("10", "2.5"), from 0 to MaxWait.
func ParseWait(v string) (time.Duration, error) {
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		secs, ferr := strconv.ParseFloat(v, 64)
		switch {
		case ferr != nil || secs != secs: // NaN
			return 0, failure.New(failure.Invalid, "wait must be a duration (10s) or a number of seconds")
		case secs < 0:
			return 0, failure.New(failure.Invalid, "wait must not be negative")
		case secs > MaxWait.Seconds():
			return 0, failure.New(failure.Invalid, "wait is at most %s", MaxWait)
		}
		d = time.Duration(secs * float64(time.Second))
	}
	switch {
	case d < 0:
		return 0, failure.New(failure.Invalid, "wait must not be negative")
	case d > MaxWait:
		return 0, failure.New(failure.Invalid, "wait is at most %s", MaxWait)
	}
	return d, nil
}

// List reads a page of workspace wsID's feed for p: query holds the
// route's parameters, checked once p may see the workspace (any other is
// "workspace not found", as the task list answers). With wait, a request
// that finds nothing newer waits until an event it would list commits, the
// wait ends, or the feed stops (Run), and answers then.
func (f *Feed) List(ctx context.Context, p httpapi.Principal, wsID string, query url.Values) (Page, error) {
	if !p.CanSee(wsID) || !httpapi.ValidText(wsID) {
		return Page{}, errWorkspaceNotFound
	}
	if _, err := f.st.GetWorkspace(ctx, wsID); err != nil {
		return Page{}, httpapi.Reword(err, errWorkspaceNotFound)
	}
	q, err := ParseQuery(query)
	if err != nil {
		return Page{}, err
	}
	return f.read(ctx, wsID, q)
}

// read answers q, waiting as it says.
func (f *Feed) read(ctx context.Context, wsID string, q Query) (Page, error) {
	deadline := time.Now().Add(q.Wait)
	var lastRead time.Time
	for {
		// The channel is taken before the read, so an event committed
		// after the read wakes this request.
		changed, stopped := f.changes()
		lastRead = time.Now()
		page, more, err := f.page(ctx, wsID, q)
		if err != nil || len(page.Events) > 0 || more || stopped {
			return page, err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return page, nil
		}
		poll := time.NewTimer(min(left, f.poll))
		f.waiting.Add(1)
		select {
		case <-changed:
			// Spaced, so that a stream of commits elsewhere does not
			// make every waiting request read at its pace.
			if d := minReread - time.Since(lastRead); d > 0 {
				poll.Reset(min(d, time.Until(deadline)))
				select {
				case <-poll.C:
				case <-ctx.Done():
				}
			}
		case <-poll.C:
		case <-ctx.Done():
		}
		poll.Stop()
		f.waiting.Add(-1)
		if ctx.Err() != nil {
			// The caller has gone: nothing to answer.
			return page, nil
		}
	}
}

// page reads one page; more says the page is short only because its
// window ended (there may be matching events after NextCursor).
func (f *Feed) page(ctx context.Context, wsID string, q Query) (Page, bool, error) {
	ep := store.EventPage{WorkspaceID: wsID, AfterID: q.After, Types: q.Types, Limit: q.Limit}
	if len(q.Types) > 0 {
		ep.Scan = max(f.scan, q.Limit)
	}
	rows, scannedTo, err := f.st.ListWorkspaceEvents(ctx, ep)
	if err != nil {
		return Page{}, false, err
	}
	page := Page{Events: make([]Event, 0, len(rows)), NextCursor: FormatID(q.After)}
	for _, row := range rows {
		e, err := FromRow(row)
		if err != nil {
			return Page{}, false, err
		}
		page.Events = append(page.Events, e)
	}
	more := false
	switch {
	case len(rows) == q.Limit:
		page.NextCursor = FormatID(rows[len(rows)-1].ID)
		more = true
	case scannedTo != 0:
		page.NextCursor, more = FormatID(scannedTo), true
	case len(rows) > 0:
		page.NextCursor = FormatID(rows[len(rows)-1].ID)
	}
	return page, more, nil
}
