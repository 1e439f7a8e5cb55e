package inbox

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/gorilla/mux"

	"github.com/trackergateway/gateway/connectors/providers"
	"github.com/trackergateway/gateway/internal/failure"
	"github.com/trackergateway/gateway/internal/httpapi"
	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/tracing"
)

// shownSecretHeaders are removed from headers shown to operators, in case a
// row was stored before a header became secret: every registered
// provider's secret headers and the ones no delivery keeps.
var shownSecretHeaders = secretHeadersOf(providers.Adapters())

// Operators serves the operator delivery routes: its exported methods are
// the handlers internal/server mounts behind authentication and the admin
// requirement. Those of one delivery read its ID from the route's {id}.
type Operators struct {
	st     store.Store
	logger *slog.Logger
	now    func() time.Time
	// ErrorScanPages bounds an error_contains page: it reads at most this
	// many times its limit of deliveries holding an error
	// (DefaultErrorScanPages).
	ErrorScanPages int
}

// NewOperators returns the operator delivery handlers; logger and now may be
// nil (discarded, time.Now).
func NewOperators(st store.Store, logger *slog.Logger, now func() time.Time) *Operators {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if now == nil {
		now = time.Now
	}
	return &Operators{st: st, logger: logger, now: now, ErrorScanPages: DefaultErrorScanPages}
}

// ListDeliveries lists deliveries, newest first (query: the filters of
// FilterParams, limit, cursor).
func (o *Operators) ListDeliveries(w http.ResponseWriter, r *http.Request) { o.serve(w, r, o.list) }

// ReplayDeliveries queues again the finished deliveries a filter matches
// (bulk replay).
func (o *Operators) ReplayDeliveries(w http.ResponseWriter, r *http.Request) {
	o.serve(w, r, o.replayMatching)
}

// GetDelivery shows one delivery with its headers (secrets removed) and body.
func (o *Operators) GetDelivery(w http.ResponseWriter, r *http.Request) { o.serve(w, r, o.get) }

// ReplayDelivery queues a finished delivery again.
func (o *Operators) ReplayDelivery(w http.ResponseWriter, r *http.Request) { o.serve(w, r, o.replay) }

func (o *Operators) serve(w http.ResponseWriter, r *http.Request, fn func(w http.ResponseWriter, r *http.Request) error) {
	if err := fn(w, r); err != nil {
		httpapi.WriteError(w, r, o.logger, err)
	}
}

// DeliveryJSON is a delivery as operators see it (docs/design.md, "Operators").
type DeliveryJSON struct {
	ID          string  `json:"id"`
	Connection  string  `json:"connection"`
	Provider    string  `json:"provider"`
	Event       string  `json:"event"`
	DeliveryKey string  `json:"delivery_key"`
	Status      string  `json:"status"`
	Attempts    int     `json:"attempts"`
	LastError   *string `json:"last_error"`
	// NextAttemptAt is null once the delivery is final.
	NextAttemptAt *string `json:"next_attempt_at"`
	ReceivedAt    string  `json:"received_at"`
	// Outcome is null until the delivery is processed.
	Outcome *OutcomeJSON `json:"outcome"`
	// TraceID is the trace of the delivery's receipt, which its attempts
	// join; absent when tracing was off.
	TraceID string `json:"trace_id,omitempty"`
}

// OutcomeJSON is a processed delivery's outcome; absent values are null.
type OutcomeJSON struct {
	TaskID     *string `json:"task_id"`
	ExternalID *string `json:"external_id"`
	Action     *string `json:"action"`
	Result     *string `json:"result"`
}

// DeliveryDetailJSON adds the stored headers (secrets removed) and the body:
// a JSON value when the body is JSON whose strings are all valid UTF-8
// text, else a string when it is UTF-8 text, else its base64 with
// BodyEncoding "base64". The answer is valid JSON whatever the body holds.
type DeliveryDetailJSON struct {
	DeliveryJSON
	Headers      json.RawMessage `json:"headers"`
	Body         json.RawMessage `json:"body"`
	BodyEncoding string          `json:"body_encoding,omitempty"`
}

// BodyBase64 is DeliveryDetailJSON.BodyEncoding for a body that is not
// valid UTF-8.
const BodyBase64 = "base64"

// DeliveryListJSON is a page of deliveries.
type DeliveryListJSON struct {
	Deliveries []DeliveryJSON `json:"deliveries"`
	NextCursor string         `json:"next_cursor,omitempty"`
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// NewDeliveryJSON renders a delivery's summary.
func NewDeliveryJSON(d store.Delivery) DeliveryJSON {
	out := DeliveryJSON{
		ID:          d.ID,
		Connection:  d.ConnectionID,
		Provider:    d.Provider,
		Event:       d.Event,
		DeliveryKey: d.DeliveryKey,
		Status:      d.Status,
		Attempts:    d.Attempts,
		LastError:   optional(d.LastError),
		ReceivedAt:  rfc3339(d.ReceivedAt),
		TraceID:     tracing.TraceID(d.TraceContext),
	}
	if !store.IsFinished(d.Status) && !d.NextAttemptAt.IsZero() {
		out.NextAttemptAt = optional(rfc3339(d.NextAttemptAt))
	}
	if d.ProcessedAt != nil && d.Status != store.DeliveryFailed {
		out.Outcome = &OutcomeJSON{
			TaskID:     optional(d.OutcomeTaskID),
			ExternalID: optional(d.OutcomeExternalID),
			Action:     optional(d.OutcomeAction),
			Result:     optional(d.OutcomeResult),
		}
	}
	return out
}

// NewDeliveryDetailJSON renders a delivery with its headers and body.
func NewDeliveryDetailJSON(d store.Delivery) DeliveryDetailJSON {
	out := DeliveryDetailJSON{DeliveryJSON: NewDeliveryJSON(d), Headers: json.RawMessage(`{}`)}
	if b, err := json.Marshal(ShownHeaders(d)); err == nil {
		out.Headers = b
	}
	switch {
	case len(d.Body) > 0 && jsontext.Value(d.Body).IsValid(jsontext.AllowDuplicateNames(true)):
		// Strict: json.Valid takes raw bytes that are not UTF-8 inside a
		// string, and an answer holding them is not JSON to its readers.
		out.Body = json.RawMessage(d.Body)
	case utf8.Valid(d.Body):
		b, _ := json.Marshal(string(d.Body))
		out.Body = b
	default:
		b, _ := json.Marshal(base64.StdEncoding.EncodeToString(d.Body))
		out.Body, out.BodyEncoding = b, BodyBase64
	}
	return out
}

// ShownHeaders are a delivery's stored headers as operators see them:
// every secret header removed, even one a row kept from before it was
// known to be secret. Headers that do not decode are shown as none.
func ShownHeaders(d store.Delivery) http.Header {
	h, err := store.DecodeDeliveryHeaders(d.Headers)
	if err != nil {
		return http.Header{}
	}
	removeSecretHeaders(h, shownSecretHeaders)
	return h
}

// EncodeCursor returns the opaque cursor after delivery d (newest first).
func EncodeCursor(d store.Delivery) string { return httpapi.EncodeCursor(d.ReceivedAt, d.ID) }

// decodeCursor parses a cursor into the (received_at, id) to list before.
func decodeCursor(c string) (time.Time, string, error) {
	t, id, ok := httpapi.DecodeCursor(c)
	if !ok {
		return time.Time{}, "", failure.New(failure.Invalid, "invalid cursor")
	}
	return t, id, nil
}

// FilterParams are the delivery filters, as the list's query parameters
// and the bulk replay's JSON fields name them (docs/design.md, "Operators").
var FilterParams = []string{"status", "connection", "event", "received_after", "received_before", "error_contains", "external_id",
	"delivery_key"}

// ParseFilter reads the filters from value (a query parameter, form or
// JSON field by name; empty means absent). Times are RFC 3339.
func ParseFilter(value func(name string) string) (store.DeliveryFilter, error) {
	var f store.DeliveryFilter
	text := map[string]*string{"status": &f.Status, "connection": &f.ConnectionID, "event": &f.Event,
		"error_contains": &f.ErrorContains, "external_id": &f.ExternalID, "delivery_key": &f.DeliveryKey}
	times := map[string]*time.Time{"received_after": &f.ReceivedAfter, "received_before": &f.ReceivedBefore}
	for _, name := range FilterParams {
		v := value(name)
		if err := httpapi.CheckText(name, v); err != nil {
			return f, err
		}
		if p, ok := text[name]; ok {
			*p = v
		} else if v != "" {
			t, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				return f, failure.New(failure.Invalid, "%s must be an RFC 3339 time such as 2026-01-02T15:04:05Z", name)
			}
			*times[name] = t
		}
	}
	if f.Status != "" && !slices.Contains(store.DeliveryStatuses, f.Status) {
		return f, failure.New(failure.Invalid, "invalid status %q: want one of %s", f.Status, strings.Join(store.DeliveryStatuses, ", "))
	}
	return f, nil
}

// DefaultErrorScanPages: a page of error_contains reads at most four times
// its limit of deliveries holding an error (store.DeliveryFilter's
// ErrorScanLimit), so a page with few or no matches costs about what a
// plain page does however many errors the inbox holds (docs/benchmarks.md),
// and its cursor says where to go on.
const DefaultErrorScanPages = 4

// listParams are the query parameters the list takes; any other is a 400,
// so a misspelt filter never silently lists everything.
var listParams = append(slices.Clone(FilterParams), "limit", "cursor")

func (o *Operators) list(w http.ResponseWriter, r *http.Request) error {
	out, err := o.ListJSON(r.Context(), r.URL.Query())
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, out)
	return nil
}

// ListJSON is the list as the REST route answers it, query holding the
// route's parameters (listParams): the agent tools call it too.
func (o *Operators) ListJSON(ctx context.Context, query url.Values) (DeliveryListJSON, error) {
	for _, name := range slices.Sorted(maps.Keys(query)) {
		if !slices.Contains(listParams, name) {
			return DeliveryListJSON{}, failure.New(failure.Invalid, "unknown query parameter %q: want %s", name, strings.Join(listParams, ", "))
		}
		if len(query[name]) > 1 {
			return DeliveryListJSON{}, failure.New(failure.Invalid, "query parameter %q is given more than once", name)
		}
	}
	f, err := ParseFilter(query.Get)
	if err != nil {
		return DeliveryListJSON{}, err
	}
	limit, err := httpapi.ParsePageLimit(query.Get("limit"))
	if err != nil {
		return DeliveryListJSON{}, err
	}
	ds, next, err := o.List(ctx, f, limit, query.Get("cursor"))
	if err != nil {
		return DeliveryListJSON{}, err
	}
	out := DeliveryListJSON{Deliveries: make([]DeliveryJSON, 0, len(ds)), NextCursor: next}
	for _, d := range ds {
		out.Deliveries = append(out.Deliveries, NewDeliveryJSON(d))
	}
	return out, nil
}

// List returns a page of at most limit deliveries f matches, newest first,
// after cursor (empty: the first page), and the cursor of the next page
// (empty: none).
func (o *Operators) List(ctx context.Context, f store.DeliveryFilter, limit int, cursor string) ([]store.Delivery, string, error) {
	if cursor != "" {
		var err error
		if f.BeforeReceivedAt, f.BeforeID, err = decodeCursor(cursor); err != nil {
			return nil, "", err
		}
	}
	f.Limit = limit + 1 // one more tells whether a next page exists
	f.ErrorScanLimit = o.ErrorScanPages * limit
	page, err := o.st.ListDeliveries(ctx, f)
	if err != nil {
		return nil, "", err
	}
	ds, next := httpapi.TrimPage(page.Deliveries, limit, EncodeCursor)
	if stop := page.ScanStop; stop != nil {
		// The error scan ended before the page filled: the page may be
		// short, even empty, and the next one continues where it stopped.
		next = httpapi.EncodeCursor(stop.ReceivedAt, stop.ID)
	}
	return ds, next, nil
}

var errDeliveryNotFound = failure.New(failure.NotFound, "delivery not found")

func (o *Operators) get(w http.ResponseWriter, r *http.Request) error {
	d, err := o.Get(r.Context(), mux.Vars(r)["id"])
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, NewDeliveryDetailJSON(d))
	return nil
}

// Get returns one delivery; "delivery not found" when there is none.
func (o *Operators) Get(ctx context.Context, id string) (store.Delivery, error) {
	if !httpapi.ValidText(id) {
		return store.Delivery{}, errDeliveryNotFound
	}
	d, err := o.st.GetDelivery(ctx, id)
	if err != nil {
		return d, httpapi.Reword(err, errDeliveryNotFound)
	}
	return d, nil
}

func (o *Operators) replay(w http.ResponseWriter, r *http.Request) error {
	d, err := o.Replay(r.Context(), mux.Vars(r)["id"])
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusAccepted, NewDeliveryJSON(d))
	return nil
}

// Replay queues a finished delivery (failed, ignored, suppressed,
// succeeded) again as received; its signature was verified at ingest and
// is not re-verified. One that has not finished is a conflict: a worker
// holds it or will.
func (o *Operators) Replay(ctx context.Context, id string) (store.Delivery, error) {
	if !httpapi.ValidText(id) {
		return store.Delivery{}, errDeliveryNotFound
	}
	// Only a finished delivery is replayed, guarded in the store's UPDATE: a
	// check here before it would race a worker claiming the delivery.
	d, requeued, err := o.st.RequeueDelivery(ctx, id, o.now())
	if err != nil {
		return d, httpapi.Reword(err, errDeliveryNotFound)
	}
	if !requeued {
		return d, failure.New(failure.Conflict, "delivery has not finished; replay it once it has")
	}
	o.notifyWorkers(ctx)
	principal, _ := httpapi.PrincipalFrom(ctx)
	o.logger.InfoContext(ctx, "delivery replayed", "delivery_id", d.ID, "connection", d.ConnectionID,
		"principal", principal.Name)
	return d, nil
}

// notifyWorkers wakes the workers for requeued deliveries.
func (o *Operators) notifyWorkers(ctx context.Context) {
	if err := o.st.Notify(ctx, Channel); err != nil {
		// Workers poll too; the replay is due either way.
		o.logger.WarnContext(ctx, "notify workers failed", "channel", Channel, "error", err)
	}
}

// Bulk replay bounds (docs/design.md, "Operators").
const (
	DefaultReplayMax = 10000
	MaxReplayMax     = 100000
	// replayShown is how many matched deliveries a bulk replay answers with.
	replayShown = 20
)

// ReplayRequest is the bulk replay's body: the list's filters, dry_run and
// max.
type ReplayRequest struct {
	Status         string `json:"status"`
	Connection     string `json:"connection"`
	Event          string `json:"event"`
	ReceivedAfter  string `json:"received_after"`
	ReceivedBefore string `json:"received_before"`
	ErrorContains  string `json:"error_contains"`
	ExternalID     string `json:"external_id"`
	DeliveryKey    string `json:"delivery_key"`
	DryRun         bool   `json:"dry_run"`
	Max            *int   `json:"max"`
}

// ReplayResultJSON is the bulk replay's answer: matched = replayed +
// skipped, and the first matched deliveries as they now are. A dry run
// answers would_replay in place of replayed, so it never reads as done.
type ReplayResultJSON struct {
	Matched int `json:"matched"`
	// Replayed is nil in a dry run, WouldReplay in a replay.
	Replayed    *int           `json:"replayed,omitempty"`
	WouldReplay *int           `json:"would_replay,omitempty"`
	Skipped     int            `json:"skipped"`
	Deliveries  []DeliveryJSON `json:"deliveries"`
}

// Count is the deliveries replayed, or a dry run would replay.
func (r ReplayResultJSON) Count() int {
	switch {
	case r.WouldReplay != nil:
		return *r.WouldReplay
	case r.Replayed != nil:
		return *r.Replayed
	}
	return 0
}

// replayMatching answers a bulk replay.
func (o *Operators) replayMatching(w http.ResponseWriter, r *http.Request) error {
	var req ReplayRequest
	if err := httpapi.DecodeJSON(w, r, &req); err != nil {
		return err
	}
	out, err := o.ReplayMatchingJSON(r.Context(), req)
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, out)
	return nil
}

// ReplayMatchingJSON is the bulk replay as the REST route answers it (the
// agent tools call it too).
func (o *Operators) ReplayMatchingJSON(ctx context.Context, req ReplayRequest) (ReplayResultJSON, error) {
	fields := map[string]string{"status": req.Status, "connection": req.Connection, "event": req.Event,
		"received_after": req.ReceivedAfter, "received_before": req.ReceivedBefore,
		"error_contains": req.ErrorContains, "external_id": req.ExternalID, "delivery_key": req.DeliveryKey}
	f, err := ParseFilter(func(name string) string { return fields[name] })
	if err != nil {
		return ReplayResultJSON{}, err
	}
	limit := DefaultReplayMax
	if req.Max != nil {
		limit = *req.Max
	}
	res, err := o.ReplayMatching(ctx, f, limit, req.DryRun)
	if err != nil {
		return ReplayResultJSON{}, err
	}
	out := ReplayResultJSON{Matched: res.Matched, Skipped: res.Skipped, Deliveries: make([]DeliveryJSON, 0, len(res.Shown))}
	if req.DryRun {
		out.WouldReplay = &res.Requeued
	} else {
		out.Replayed = &res.Requeued
	}
	for _, d := range res.Shown {
		out.Deliveries = append(out.Deliveries, NewDeliveryJSON(d))
	}
	return out, nil
}

// ReplayMatching replays the newest max deliveries f matches as Replay
// replays one (store.RequeueDeliveries shares its guard); the unfinished
// ones are skipped. A dry run changes nothing and counts what a replay
// would do now. At least one filter is required.
func (o *Operators) ReplayMatching(ctx context.Context, f store.DeliveryFilter, max int, dryRun bool) (store.BulkRequeueResult, error) {
	if f == (store.DeliveryFilter{}) {
		return store.BulkRequeueResult{}, failure.New(failure.Invalid, "at least one filter is required: %s", strings.Join(FilterParams, ", "))
	}
	if max < 1 || max > MaxReplayMax {
		return store.BulkRequeueResult{}, failure.New(failure.Invalid, "max must be an integer between 1 and %d", MaxReplayMax)
	}
	res, err := o.st.RequeueDeliveries(ctx, store.BulkRequeue{Filter: f, Max: max, Show: replayShown, DryRun: dryRun, Now: o.now()})
	if err != nil {
		return res, err
	}
	if !dryRun && res.Requeued > 0 {
		o.notifyWorkers(ctx)
	}
	principal, _ := httpapi.PrincipalFrom(ctx)
	o.logger.InfoContext(ctx, "deliveries replayed", "matched", res.Matched, "replayed", res.Requeued,
		"skipped", res.Skipped, "dry_run", dryRun, "principal", principal.Name)
	return res, nil
}
