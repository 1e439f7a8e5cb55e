package console

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/gorilla/mux"

	"github.com/trackergateway/gateway/internal/failure"
	"github.com/trackergateway/gateway/internal/inbox"
	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/tracing"
)

// deliveriesShown is the size of a page of the delivery list.
const deliveriesShown = 50

// filterForm is the delivery filter form: the API's filters, as the
// request gave them, and what they parse to.
type filterForm struct {
	Values      url.Values
	Statuses    []string
	Connections []string
	Filter      store.DeliveryFilter
	Error       string
	// err is the error Error shows, for a post to fail with.
	err error
}

// Empty reports whether no filter is set.
func (f filterForm) Empty() bool { return f.Filter == (store.DeliveryFilter{}) }

// readFilterForm reads the filters of inbox.FilterParams from values; a
// bad one is the form's Error (and the page's 400), not a failure.
func (c *Console) readFilterForm(values url.Values) filterForm {
	f := filterForm{Values: url.Values{}, Statuses: store.DeliveryStatuses, Connections: c.d.Connections}
	for _, name := range inbox.FilterParams {
		if v := values.Get(name); v != "" {
			f.Values.Set(name, v)
		}
	}
	filter, err := inbox.ParseFilter(f.Values.Get)
	if err != nil {
		f.Error, f.err = failure.MessageOf(err), err
		return f
	}
	f.Filter = filter
	return f
}

type deliveriesPage struct {
	Form       filterForm
	Deliveries []store.Delivery
	// Next is the query of the next page, empty on the last.
	Next url.Values
}

// Deliveries lists deliveries newest first with the API's filters, a page
// at a time.
func (c *Console) Deliveries(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	page := deliveriesPage{Form: c.readFilterForm(q)}
	if page.Form.Error != "" {
		c.render(w, r, http.StatusBadRequest, "deliveries", "Deliveries", page)
		return
	}
	ds, next, err := c.d.Deliveries.List(r.Context(), page.Form.Filter, deliveriesShown, q.Get("cursor"))
	if err != nil {
		c.fail(w, r, err)
		return
	}
	page.Deliveries = ds
	if next != "" {
		page.Next = cloneWith(page.Form.Values, "cursor", next)
	}
	c.render(w, r, http.StatusOK, "deliveries", "Deliveries", page)
}

func cloneWith(v url.Values, key, value string) url.Values {
	out := url.Values{}
	for k, vs := range v {
		out[k] = slices.Clone(vs)
	}
	out.Set(key, value)
	return out
}

type header struct{ Name, Value string }

type deliveryPage struct {
	Delivery store.Delivery
	Headers  []header
	Body     string
	// Task is the task the outcome names, when it still exists.
	Task *store.Task
	// Replayable: finished, so a replay is allowed now.
	Replayable bool
	// TraceID is the trace of the delivery's receipt ("" when tracing was
	// off), TraceURL its address in the trace UI when one is configured.
	TraceID, TraceURL string
}

// Delivery shows one delivery: headers without secrets, the body (JSON
// indented), the outcome and its task, attempts and the last error, and a
// replay button.
func (c *Console) Delivery(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	d, err := c.d.Deliveries.Get(ctx, mux.Vars(r)["id"])
	if err != nil {
		c.fail(w, r, err)
		return
	}
	page := deliveryPage{Delivery: d, Body: readableBody(d.Body), Replayable: store.IsFinished(d.Status),
		TraceID: tracing.TraceID(d.TraceContext)}
	page.TraceURL = tracing.TraceURL(c.d.TraceURL, page.TraceID)
	shown := inbox.ShownHeaders(d)
	for _, name := range slices.Sorted(maps.Keys(shown)) {
		for _, v := range shown[name] {
			page.Headers = append(page.Headers, header{Name: name, Value: v})
		}
	}
	if d.OutcomeTaskID != "" && d.Status != store.DeliveryFailed {
		t, err := c.d.Activity.GetTask(ctx, d.OutcomeTaskID)
		switch {
		case err == nil:
			page.Task = &t
		case !errors.Is(err, store.ErrNotFound):
			c.fail(w, r, err)
			return
		}
	}
	c.render(w, r, http.StatusOK, "delivery", "Delivery "+d.ID, page)
}

// readableBody is a body as people read it: JSON indented, anything else
// as text; a body that is not valid UTF-8 as base64, as the API shows it
// (html/template would pass its bytes into the page as they are).
func readableBody(body []byte) string {
	if !utf8.Valid(body) {
		return "The body is not valid UTF-8; its bytes in base64:\n" + base64.StdEncoding.EncodeToString(body)
	}
	var buf bytes.Buffer
	if json.Indent(&buf, body, "", "  ") == nil {
		return buf.String()
	}
	return string(body)
}

// ReplayDelivery queues a finished delivery again and returns to it.
func (c *Console) ReplayDelivery(w http.ResponseWriter, r *http.Request) {
	d, err := c.d.Deliveries.Replay(r.Context(), mux.Vars(r)["id"])
	if err != nil {
		c.fail(w, r, err)
		return
	}
	seeOther(w, r, "/ui/deliveries/"+url.PathEscape(d.ID), url.Values{"notice": {"Delivery queued for replay."}})
}

type replayPage struct {
	Form filterForm
	Max  int
	// Preview is the dry run of the form's filters, nil without filters.
	Preview *store.BulkRequeueResult
}

// readMax reads the bulk replay's max (default inbox.DefaultReplayMax).
func readMax(values url.Values) (int, error) {
	v := values.Get("max")
	if v == "" {
		return inbox.DefaultReplayMax, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, failure.New(failure.Invalid, "max must be an integer between 1 and %d", inbox.MaxReplayMax)
	}
	return n, nil
}

// BulkReplayPage is the bulk replay's first step: the filters, and with
// them a dry run saying what a replay would do now and the first
// deliveries it matches; confirming posts the same filters to BulkReplay.
func (c *Console) BulkReplayPage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	page := replayPage{Form: c.readFilterForm(q)}
	max, err := readMax(q)
	page.Max = max
	switch {
	case page.Form.Error != "":
	case err != nil:
		page.Form.Error = failure.MessageOf(err)
	case !page.Form.Empty():
		res, err := c.d.Deliveries.ReplayMatching(r.Context(), page.Form.Filter, max, true)
		if err != nil && failure.CodeOf(err) != failure.Invalid {
			c.fail(w, r, err)
			return
		}
		if err != nil {
			page.Form.Error = failure.MessageOf(err)
			break
		}
		page.Preview = &res
	}
	status := http.StatusOK
	if page.Form.Error != "" {
		status = http.StatusBadRequest
	}
	c.render(w, r, status, "replay", "Bulk replay", page)
}

// BulkReplay replays what the confirmed filters match, then shows the
// filters again with what was done.
func (c *Console) BulkReplay(w http.ResponseWriter, r *http.Request) {
	form := c.readFilterForm(r.PostForm)
	if form.err != nil {
		c.fail(w, r, form.err)
		return
	}
	max, err := readMax(r.PostForm)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	res, err := c.d.Deliveries.ReplayMatching(r.Context(), form.Filter, max, false)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	q := cloneWith(form.Values, "notice", "Replayed "+strconv.Itoa(res.Requeued)+" of "+strconv.Itoa(res.Matched)+
		" matched deliveries; "+strconv.Itoa(res.Skipped)+" had not finished and were left as they were.")
	if r.PostForm.Get("max") != "" {
		q.Set("max", r.PostForm.Get("max"))
	}
	seeOther(w, r, "/ui/replay", q)
}
