package recovery

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/trackergateway/gateway/connectors"
	"github.com/trackergateway/gateway/connectors/providers"
	"github.com/trackergateway/gateway/internal/config"
	gatewayinbox "github.com/trackergateway/gateway/internal/inbox"
	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/tasks/taskrules"
)

// This file recovers the connections of providers that keep no delivery
// history (providers.RecoverReconcile: Gitea and Forgejo, Linear): there
// is no failed attempt to find and nothing to ask the provider to resend.
// Instead a run lists the items (issues, pull requests) the provider
// updated in the window through its API, turns each into a delivery that
// describes the item as it is now, shaped like the provider's own webhook,
// and records it in the inbox, where it is processed like any delivery.
//
// Identity makes this exactly once per item and update time: the
// delivery's key is "reconcile:<external ID>@<updated_at>", unique in the
// inbox per connection, so another run, the background job or another
// replica recording the same state again is a duplicate, and never a
// second delivery. Processing needs no such guard: a state the task
// already has (its webhook came after all) is a stale update, skipped.

// ReconcileKeyPrefix starts the delivery key of every delivery recovery
// records for an item's state.
const ReconcileKeyPrefix = "reconcile:"

// HeaderReconciled marks a delivery recovery recorded (its value is the
// run's time); the provider never sends it.
const HeaderReconciled = "X-Gateway-Reconciled"

// itemState is one item as the provider's API lists it now: the headers
// and body of a delivery describing it, shaped as the provider's webhook.
// An item the lister could not turn into one has name and unreadable
// (why) instead: the run skips and reports it, and goes on with the rest.
type itemState struct {
	header http.Header
	body   []byte

	name       string
	unreadable string
}

// MaxSkippedItems is the most skipped items a run lists in its answer;
// Skipped counts them all.
const MaxSkippedItems = 100

// changeLister lists the items of a connection changed in a window, for a
// provider that keeps no delivery history.
type changeLister interface {
	// changes lists the page at cursor ("" the first) of the items
	// updated at or after since, and the next page's cursor ("" after
	// the last).
	changes(ctx context.Context, since time.Time, cursor string) (items []itemState, next string, err error)
	// source names what is listed, as Unfinished.Hook names it ("issues
	// and pull requests at https://gitea.example.com").
	source() string
}

// reconcileKey is the delivery key of ev's state.
func reconcileKey(ev connectors.Event) string {
	return ReconcileKeyPrefix + ev.ExternalID + "@" + ev.UpdatedAt.UTC().Format(time.RFC3339Nano)
}

// reconcile runs one reconciliation of conn within the run's bounds,
// adding to res what it found and recorded.
func (r *Recoverer) reconcile(ctx context.Context, run runBounds, conn config.Connection, lister changeLister, dryRun bool, res *Result) error {
	items, listErr := pageThrough(r, ctx, run, "items", lister.changes, nil)
	if listErr != nil {
		if ctx.Err() != nil {
			return listErr
		}
		listErr = &providerError{fmt.Errorf("list changed items: %w", listErr)}
	}
	p, _ := providers.Lookup(conn.Provider)
	type change struct {
		ev    connectors.Event
		state itemState
		key   string
	}
	// The newest state of each item; a listing that moved under the run
	// (an item updated between two pages) may list one twice.
	byKey := map[string]int{}
	var changes []change
	now := r.now()
	for _, it := range items {
		if it.unreadable != "" {
			r.skip(conn, res, it.name, it.unreadable)
			continue
		}
		ev, err := p.Adapter.Parse(conn.Host, it.header, it.body)
		switch {
		case err != nil:
			// The lister builds these from the provider's answer: an item
			// the adapter cannot read is the provider's to explain.
			r.skip(conn, res, it.name, err.Error())
			continue
		case ev.Action == connectors.ActionIgnore:
			continue
		case ev.UpdatedAt.IsZero():
			r.skip(conn, res, itemName(it.name, ev), "it has no update time")
			continue
		case taskrules.SourceTimeAhead(ev.UpdatedAt, now):
			// Its key would name that time, and processing would apply the
			// state at the run's time, a new one each run: the item is
			// recorded when the provider lists it with a real time.
			r.skip(conn, res, itemName(it.name, ev), "its update time "+ev.UpdatedAt.UTC().Format(time.RFC3339Nano)+
				" is more than a day ahead of the gateway's clock")
			continue
		}
		c := change{ev: ev, state: it, key: reconcileKey(ev)}
		if i, seen := byKey[ev.ExternalID]; seen {
			if ev.UpdatedAt.After(changes[i].ev.UpdatedAt) {
				changes[i] = c
			}
			continue
		}
		byKey[ev.ExternalID] = len(changes)
		changes = append(changes, c)
	}
	res.Checked += len(changes)
	if len(changes) == 0 {
		return listErr
	}
	keys := make([]string, len(changes))
	for i, c := range changes {
		keys[i] = c.key
	}
	held, err := r.st.HeldDeliveryKeys(ctx, conn.ID, keys)
	if err != nil {
		return fmt.Errorf("held delivery keys: %w", err)
	}
	var missing []change
	for _, c := range changes {
		if held[c.key] {
			continue
		}
		current, err := r.applied(ctx, conn, c.ev)
		if err != nil {
			return err
		}
		if !current {
			missing = append(missing, c)
		}
	}
	res.Missing += len(missing)
	if len(missing) == 0 {
		return listErr
	}
	var records []store.Delivery
	for _, c := range missing {
		d := Delivery{GUID: c.key, Event: c.ev.EventName, DeliveredAt: c.ev.UpdatedAt.UTC()}
		if dryRun {
			d.WouldRedeliver = new(bool)
			*d.WouldRedeliver = true
			*res.WouldRedeliver++
		} else {
			d.Redelivered = new(bool)
			header := c.state.header.Clone()
			header.Set(HeaderReconciled, now.Format(time.RFC3339))
			headers, err := gatewayinbox.EncodeHeaders(header, p.Adapter.SecretHeaders())
			if err != nil {
				return fmt.Errorf("encode headers: %w", err)
			}
			records = append(records, store.Delivery{ConnectionID: conn.ID, Provider: conn.Provider,
				Event: p.Adapter.EventName(header), DeliveryKey: c.key, Headers: headers, Body: c.state.body,
				ReceivedAt: now.Truncate(time.Microsecond)})
		}
		res.Deliveries = append(res.Deliveries, d)
	}
	if dryRun {
		return listErr
	}
	first := len(res.Deliveries) - len(missing)
	// The records are committed before the run answers: a state it says
	// it recorded is durable (the caller's context must not defer syncs).
	inserted, err := r.st.InsertDeliveries(context.WithoutCancel(ctx), records)
	if err != nil {
		return fmt.Errorf("record reconciled deliveries: %w", err)
	}
	for i, ins := range inserted {
		d := &res.Deliveries[first+i]
		if ins.Duplicate {
			// Another run or replica recorded the same state first.
			d.Request = store.RedeliveryRequested
			continue
		}
		*d.Redelivered = true
		d.Request = store.RedeliveryAccepted
		*res.Redelivered++
		r.Metrics.MissedDeliveryRedelivered(conn.ID)
		r.logger.Info("missed change recorded", "connection", conn.ID, "external_id", missing[i].ev.ExternalID,
			"delivery_id", ins.ID, "event", missing[i].ev.EventName)
	}
	if err := r.st.Notify(ctx, gatewayinbox.Channel); err != nil && ctx.Err() == nil {
		// Workers also poll for due deliveries; a lost wake-up only delays.
		r.logger.Warn("notify workers failed", "connection", conn.ID, "error", err)
	}
	return listErr
}

// skip reports an item the run could not read and goes past it: one bad
// item must not hold back the others, run after run.
func (r *Recoverer) skip(conn config.Connection, res *Result, item, why string) {
	if item == "" {
		item = "an item"
	}
	why = redact(why, conn.APIToken)
	res.Skipped++
	if len(res.SkippedItems) < MaxSkippedItems {
		res.SkippedItems = append(res.SkippedItems, SkippedItem{Item: item, Reason: why})
	}
	r.logger.Warn("recovery skipped an item it could not read", "connection", conn.ID, "item", item, "reason", why)
}

// itemName names a parsed item: the lister's name, else its external ID.
func itemName(name string, ev connectors.Event) string {
	if name != "" {
		return name
	}
	return ev.ExternalID
}

// applied says whether the gateway already has ev's state: the item's task
// was updated by it or by a later state, or the item's task was deleted
// (its suppression keeps it deleted). An item without a task is not: the
// state is recorded and processing decides (create, filters, links).
func (r *Recoverer) applied(ctx context.Context, conn config.Connection, ev connectors.Event) (bool, error) {
	task, err := r.st.LookupTaskByExternalID(ctx, conn.Workspace, ev.ExternalID)
	switch {
	case err == nil:
		// A task time far ahead of the clock (stored before such times
		// were refused) orders nothing: processing applies the state.
		return task.SourceUpdatedAt != nil && !task.SourceUpdatedAt.Before(ev.UpdatedAt) &&
			!taskrules.SourceTimeAhead(*task.SourceUpdatedAt, r.now()), nil
	case !errors.Is(err, store.ErrNotFound):
		return false, fmt.Errorf("lookup task: %w", err)
	}
	_, err = r.st.GetSuppression(ctx, conn.Workspace, ev.ExternalID)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, store.ErrNotFound):
		return false, nil
	}
	return false, fmt.Errorf("get suppression: %w", err)
}

// pageThrough reads pages from list, from the first, within the run's
// bounds: it stops at a cursor it read already, after MaxPages pages and
// at the deadline, returning what it read with the stopError; what names
// the listed things in the stop's message. keep, when set and false for an
// entry, ends the listing there (entries past the window).
func pageThrough[T any](r *Recoverer, ctx context.Context, run runBounds, what string,
	list func(ctx context.Context, since time.Time, cursor string) ([]T, string, error), keep func(T) bool) ([]T, error) {
	var out []T
	seen := map[string]bool{}
	cursor := ""
	for pages := 0; ; pages++ {
		switch {
		case pages == r.MaxPages:
			return out, &stopError{StopPageLimit, fmt.Sprintf("more than %d pages of %s in the window", r.MaxPages, what)}
		case !r.now().Before(run.deadline):
			return out, &stopError{StopDeadline, fmt.Sprintf("the run's time was up after %d pages", pages)}
		}
		seen[cursor] = true
		page, next, err := list(ctx, run.since, cursor)
		if err != nil {
			return out, err
		}
		for _, v := range page {
			if keep != nil && !keep(v) {
				return out, nil
			}
			out = append(out, v)
		}
		switch {
		case next == "" || len(page) == 0:
			return out, nil
		case seen[next]:
			return out, &stopError{StopRepeatedCursor, fmt.Sprintf("the provider gave a next page read already (after %d pages)", pages+1)}
		}
		cursor = next
	}
}
