package ingest

import (
	"time"

	"github.com/trackergateway/gateway/connectors"
	"github.com/trackergateway/gateway/internal/tasks/taskrules"
)

// boundTimestamps returns ev with every provider timestamp that orders
// its changes (the entity's, its pull or merge request's, its links' and
// its installation's) that is more than taskrules.MaxSourceAhead ahead of
// the clock replaced by the delivery's receipt time, and a note for the
// outcome naming what was replaced ("" when nothing was). Stale updates
// are told by these times: kept, a time in the future (9999-12-31) would
// make every later real update look older and skip it for good. The
// receipt time is when the gateway learned of the state, the best bound
// it has; the next real update is later than it and applies.
func (a *Applier) boundTimestamps(ev connectors.Event, receivedAt time.Time) (connectors.Event, string) {
	now := a.now()
	if receivedAt.IsZero() || receivedAt.After(now) {
		receivedAt = now
	}
	receivedAt = receivedAt.UTC()
	var first time.Time
	bound := func(t *time.Time) {
		if !t.IsZero() && taskrules.SourceTimeAhead(*t, now) {
			if first.IsZero() {
				first = *t
			}
			*t = receivedAt
		}
	}
	bound(&ev.UpdatedAt)
	if ev.Contribution != nil {
		c := *ev.Contribution
		bound(&c.UpdatedAt)
		ev.Contribution = &c
	}
	if ev.Installation != nil {
		in := *ev.Installation
		bound(&in.At)
		ev.Installation = &in
	}
	if len(ev.Links) > 0 {
		// The parsed event may be processed again (a retry): a copy.
		links := make([]connectors.ContributionLink, len(ev.Links))
		copy(links, ev.Links)
		for i := range links {
			bound(&links[i].UpdatedAt)
		}
		ev.Links = links
	}
	if first.IsZero() {
		return ev, ""
	}
	return ev, "provider timestamp " + first.UTC().Format(time.RFC3339) + " is more than a day ahead of the gateway's clock; " +
		"applied at the receipt time " + receivedAt.Format(time.RFC3339)
}
