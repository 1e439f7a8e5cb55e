package console

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/trackergateway/gateway/internal/store"
)

// The overview's chart: deliveries received per minute over the last hour,
// one bar a minute stacked by status, drawn as SVG on the server.
const (
	chartMinutes   = 60
	chartBarWidth  = 8
	chartBarGap    = 2
	chartHeight    = 64
	chartAxisSpace = 14
)

type chart struct {
	Width, Height, PlotHeight int
	Max                       int64
	Bars                      []chartBar
	// Statuses are the statuses drawn, for the legend.
	Statuses []string
	// Start and End are the first and last minute shown.
	Start, End time.Time
	Label      string
}

type chartBar struct {
	X        int
	Title    string
	Segments []chartSegment
}

type chartSegment struct {
	Status string
	Y, H   int
}

// newChart lays out the per-minute counts of one connection from start on.
func newChart(start time.Time, counts []store.DeliveryCount) chart {
	c := chart{Width: chartMinutes * (chartBarWidth + chartBarGap), PlotHeight: chartHeight,
		Height: chartHeight + chartAxisSpace, Start: start, End: start.Add((chartMinutes - 1) * time.Minute)}
	perMinute := make([]map[string]int64, chartMinutes)
	var total int64
	for _, n := range counts {
		i := int(n.Minute.Sub(start) / time.Minute)
		if i < 0 || i >= chartMinutes {
			continue
		}
		if perMinute[i] == nil {
			perMinute[i] = map[string]int64{}
		}
		perMinute[i][n.Status] += n.Count
		total += n.Count
		if !slices.Contains(c.Statuses, n.Status) {
			c.Statuses = append(c.Statuses, n.Status)
		}
	}
	slices.SortFunc(c.Statuses, byStatusOrder)
	for _, m := range perMinute {
		var sum int64
		for _, n := range m {
			sum += n
		}
		c.Max = max(c.Max, sum)
	}
	c.Label = fmt.Sprintf("Deliveries per minute from %s to %s UTC: %d in all, at most %d in a minute",
		start.UTC().Format("15:04"), c.End.UTC().Format("15:04"), total, c.Max)
	for i, m := range perMinute {
		if len(m) == 0 {
			continue
		}
		bar := chartBar{X: i * (chartBarWidth + chartBarGap)}
		var parts []string
		base := chartHeight
		for _, status := range c.Statuses {
			n := m[status]
			if n == 0 {
				continue
			}
			// At least one pixel, so a single delivery next to a busy
			// minute stays visible.
			h := min(base, max(1, int(n*chartHeight/c.Max)))
			base -= h
			bar.Segments = append(bar.Segments, chartSegment{Status: status, Y: base, H: h})
			parts = append(parts, fmt.Sprintf("%d %s", n, status))
		}
		bar.Title = start.Add(time.Duration(i)*time.Minute).UTC().Format("15:04") + " UTC: " + strings.Join(parts, ", ")
		c.Bars = append(c.Bars, bar)
	}
	return c
}
