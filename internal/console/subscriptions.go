package console

import (
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/gorilla/mux"

	"github.com/trackergateway/gateway/internal/httpapi"
	"github.com/trackergateway/gateway/internal/store"
)

// subscriptionDeliveriesShown is the size of a page of a subscription's
// deliveries.
const subscriptionDeliveriesShown = 50

// subscriptionRow is a subscription with the commit time of the oldest
// event it is owed (zero: none).
type subscriptionRow struct {
	Sub    store.Subscription
	Oldest time.Time
}

type subscriptionsPage struct {
	Rows []subscriptionRow
}

// Subscriptions lists the webhook subscriptions of every workspace the
// caller may see, with their state and lag.
func (c *Console) Subscriptions(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	s, _ := sessionFrom(ctx)
	subs, err := c.d.Subscriptions.List(ctx, s.principal, "")
	if err != nil {
		c.fail(w, r, err)
		return
	}
	lags, err := c.d.Subscriptions.Lags(ctx)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	page := subscriptionsPage{}
	for _, sub := range subs {
		page.Rows = append(page.Rows, subscriptionRow{Sub: sub, Oldest: lags[sub.ID]})
	}
	c.render(w, r, http.StatusOK, "subscriptions", "Subscriptions", page)
}

type subscriptionPage struct {
	Row        subscriptionRow
	Statuses   []string
	Status     string
	Deliveries []store.OutboundDelivery
	Next       url.Values
	Now        time.Time
}

// Subscription shows one subscription: its state, lag and recent
// deliveries (newest event first, filtered by status), a replay button per
// finished delivery and one for every event since a time.
func (c *Console) Subscription(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	s, _ := sessionFrom(ctx)
	sub, err := c.d.Subscriptions.Visible(ctx, s.principal, "", mux.Vars(r)["id"])
	if err != nil {
		c.fail(w, r, err)
		return
	}
	q := r.URL.Query()
	status, err := httpapi.QueryText(q, "status")
	if err != nil {
		c.fail(w, r, err)
		return
	}
	ds, next, err := c.d.Subscriptions.Deliveries(ctx, sub.ID, status, subscriptionDeliveriesShown, q.Get("cursor"))
	if err != nil {
		c.fail(w, r, err)
		return
	}
	lags, err := c.d.Subscriptions.Lags(ctx)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	page := subscriptionPage{Row: subscriptionRow{Sub: sub, Oldest: lags[sub.ID]}, Statuses: store.OutboundStatuses,
		Status: status, Deliveries: ds, Now: c.now()}
	if next != "" {
		page.Next = url.Values{"cursor": {next}}
		if status != "" {
			page.Next.Set("status", status)
		}
	}
	c.render(w, r, http.StatusOK, "subscription", "Subscription "+sub.ID, page)
}

// ReplaySubscription sends events to a subscription again (form: event_id,
// or since) and returns to its page.
func (c *Console) ReplaySubscription(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	s, _ := sessionFrom(ctx)
	sub, err := c.d.Subscriptions.Visible(ctx, s.principal, "", mux.Vars(r)["id"])
	if err != nil {
		c.fail(w, r, err)
		return
	}
	eventID, err := httpapi.QueryText(r.PostForm, "event_id")
	if err != nil {
		c.fail(w, r, err)
		return
	}
	since, err := httpapi.QueryText(r.PostForm, "since")
	if err != nil {
		c.fail(w, r, err)
		return
	}
	res, err := c.d.Subscriptions.Replay(ctx, s.principal, sub, eventID, since)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	notice := "Replayed " + strconv.Itoa(res.Replayed) + ": sent again with the same webhook-id."
	if res.Skipped > 0 {
		notice += " " + strconv.Itoa(res.Skipped) + " still owed, sent anyway."
	}
	seeOther(w, r, "/ui/subscriptions/"+url.PathEscape(sub.ID), url.Values{"notice": {notice}})
}

// replayable reports whether a delivery has finished, so it can be sent
// again.
func replayable(d store.OutboundDelivery) bool { return store.OutboundFinished(d.Status) }

// parked reports whether an owed delivery waits for something other than
// time: its task's earlier event, or its subscription being enabled.
func parked(d store.OutboundDelivery) bool {
	return !store.OutboundFinished(d.Status) && !d.NextAttemptAt.Before(store.OutboundParked)
}
