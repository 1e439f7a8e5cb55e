package console

import (
	"net/http"
	"slices"
	"time"

	"github.com/trackergateway/gateway/internal/store"
)

// recentFailuresShown is how many failed deliveries the overview lists per
// connection.
const recentFailuresShown = 5

// connectionOverview is one connection's row of the overview.
type connectionOverview struct {
	ID string
	// Installations: the connection has GitHub App installations to show
	// (it is an App's, or has recorded some).
	Installations  bool
	LastHour       statusCounts
	LastDay        statusCounts
	Pending        int64
	OldestQueuedAt time.Time
	Chart          chart
	RecentFailures []store.Delivery
}

// statusCount is the count of one status; statusCounts lists the statuses
// in store.DeliveryStatuses order, with a total.
type statusCount struct {
	Status string
	Count  int64
}

type statusCounts struct {
	ByStatus []statusCount
	Total    int64
}

func (s *statusCounts) add(status string, n int64) {
	s.Total += n
	i, found := slices.BinarySearchFunc(s.ByStatus, status, func(c statusCount, status string) int {
		return byStatusOrder(c.Status, status)
	})
	if found {
		s.ByStatus[i].Count += n
		return
	}
	s.ByStatus = slices.Insert(s.ByStatus, i, statusCount{Status: status, Count: n})
}

// byStatusOrder orders statuses as store.DeliveryStatuses lists them.
func byStatusOrder(a, b string) int {
	return slices.Index(store.DeliveryStatuses, a) - slices.Index(store.DeliveryStatuses, b)
}

type overviewPage struct {
	Connections []*connectionOverview
	Workspaces  []store.Workspace
	Now         time.Time
}

// Overview is the console's home: for the admin, each connection's
// deliveries by status over the last hour and day, a per-minute chart of
// the last hour, its backlog and its recent failures; for everyone, the
// workspaces they can see.
func (c *Console) Overview(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	s, _ := sessionFrom(ctx)
	now := c.now().UTC()
	page := overviewPage{Now: now}
	var err error
	if page.Workspaces, err = c.d.Tasks.VisibleWorkspaces(ctx, s.principal); err != nil {
		c.fail(w, r, err)
		return
	}
	if s.principal.Admin {
		if page.Connections, err = c.connectionOverviews(r, now); err != nil {
			c.fail(w, r, err)
			return
		}
	}
	c.render(w, r, http.StatusOK, "overview", "Overview", page)
}

func (c *Console) connectionOverviews(r *http.Request, now time.Time) ([]*connectionOverview, error) {
	ctx := r.Context()
	byID := map[string]*connectionOverview{}
	var out []*connectionOverview
	conn := func(id string) *connectionOverview {
		if o, ok := byID[id]; ok {
			return o
		}
		o := &connectionOverview{ID: id}
		byID[id] = o
		out = append(out, o)
		return o
	}
	// Configured connections first, in their order; one that is no longer
	// configured still shows while it has deliveries.
	for _, id := range c.d.Connections {
		conn(id)
	}
	hourAgo := now.Add(-time.Hour)
	day, err := c.d.Activity.CountDeliveriesReceived(ctx, now.Add(-24*time.Hour))
	if err != nil {
		return nil, err
	}
	for _, n := range day {
		conn(n.ConnectionID).LastDay.add(n.Status, n.Count)
	}
	// The chart's first minute is the one an hour ago, so it shows 60
	// whole-or-current minutes; the hour's counts are the same rows.
	chartStart := hourAgo.Truncate(time.Minute).Add(time.Minute)
	minutes, err := c.d.Activity.CountDeliveriesPerMinute(ctx, chartStart)
	if err != nil {
		return nil, err
	}
	perConn := map[string][]store.DeliveryCount{}
	for _, n := range minutes {
		conn(n.ConnectionID).LastHour.add(n.Status, n.Count)
		perConn[n.ConnectionID] = append(perConn[n.ConnectionID], n)
	}
	backlogs, err := c.d.Activity.DeliveryBacklogs(ctx)
	if err != nil {
		return nil, err
	}
	for _, b := range backlogs {
		o := conn(b.ConnectionID)
		o.Pending, o.OldestQueuedAt = b.Pending, b.OldestQueuedAt
	}
	for _, o := range out {
		if o.Installations, err = c.d.Installations.Offered(ctx, o.ID); err != nil {
			return nil, err
		}
		o.Chart = newChart(chartStart, perConn[o.ID])
		failed, _, err := c.d.Deliveries.List(ctx, store.DeliveryFilter{Status: store.DeliveryFailed, ConnectionID: o.ID},
			recentFailuresShown, "")
		if err != nil {
			return nil, err
		}
		o.RecentFailures = failed
	}
	return out, nil
}
