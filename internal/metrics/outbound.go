package metrics

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/trackergateway/gateway/internal/store"
)

// attemptBuckets span a local receiver (a millisecond) to the attempt
// timeout (15 s).
var attemptBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 15}

// outboundMetrics are the families of outbound webhooks.
type outboundMetrics struct {
	deliveries *prometheus.CounterVec
	attempt    prometheus.Histogram
	lag        *lagGauge
}

func newOutboundMetrics() *outboundMetrics {
	return &outboundMetrics{
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_outbound_deliveries_total",
			Help: "Outbound webhook attempts by subscription and outcome: succeeded, retrying (failed, to be tried again), failed (given up).",
		}, []string{"subscription", "outcome"}),
		attempt: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "gateway_outbound_attempt_seconds",
			Help:    "Time of one outbound webhook attempt, from connecting to the answer read.",
			Buckets: attemptBuckets,
		}),
		lag: &lagGauge{gauge: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gateway_outbound_lag_seconds",
			Help: "Age of the oldest event a subscription is owed and has not been delivered; 0 when none (read at most once per refresh interval).",
		}, []string{"subscription"})},
	}
}

func (o *outboundMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{o.deliveries, o.attempt, o.lag}
}

// OutboundDelivery counts one outbound attempt's outcome for subscription:
// store.OutboundSucceeded, OutboundRetrying or OutboundFailed.
func (m *Metrics) OutboundDelivery(subscription, outcome string) {
	if m == nil {
		return
	}
	m.outbound.deliveries.WithLabelValues(subscription, outcome).Inc()
}

// OutboundAttemptTook observes how long one outbound attempt took, with
// the attempt's trace (sc, its span) as the exemplar.
func (m *Metrics) OutboundAttemptTook(d time.Duration, sc trace.SpanContext) {
	if m == nil {
		return
	}
	observe(m.outbound.attempt, d.Seconds(), sc)
}

// LagReader reads the subscriptions' lags (store.Store does).
type LagReader interface {
	SubscriptionLags(ctx context.Context) ([]store.SubscriptionLag, error)
}

// WatchOutbound makes the lag gauge read st, at most once per interval
// (DefaultStatsInterval when <= 0).
func (m *Metrics) WatchOutbound(st LagReader, now func() time.Time, interval time.Duration) {
	if m == nil {
		return
	}
	g := m.outbound.lag
	g.mu.Lock()
	defer g.mu.Unlock()
	g.st, g.every = st, newThrottle(now, interval)
}

// lagGauge serves gateway_outbound_lag_seconds as inboxGauges serve the
// inbox's: a scrape reads the database only when the last reading is older
// than the interval, and the ages grow between readings. A subscription
// deleted since the last reading loses its series.
type lagGauge struct {
	gauge *prometheus.GaugeVec

	mu     sync.Mutex
	st     LagReader
	every  throttle
	oldest map[string]time.Time
}

func (g *lagGauge) Describe(ch chan<- *prometheus.Desc) { g.gauge.Describe(ch) }

func (g *lagGauge) Collect(ch chan<- prometheus.Metric) {
	g.mu.Lock()
	if g.st != nil {
		g.every.refresh(func(ctx context.Context) error {
			lags, err := g.st.SubscriptionLags(ctx)
			if err != nil {
				return err
			}
			g.oldest = make(map[string]time.Time, len(lags))
			for _, l := range lags {
				g.oldest[l.SubscriptionID] = l.Oldest
			}
			return nil
		})
		g.gauge.Reset()
		for id, oldest := range g.oldest {
			g.gauge.WithLabelValues(id).Set(g.every.age(oldest))
		}
	}
	g.mu.Unlock()
	g.gauge.Collect(ch)
}
