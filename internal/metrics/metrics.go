// Package metrics holds the gateway's Prometheus metrics (docs/design.md,
// Operations: metrics). Each gateway builds its own registry, so tests make
// fresh ones; every method is safe on a nil *Metrics, which records
// nothing, so the packages that record need no checks of their own.
package metrics

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/trace"

	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/tracing"
)

// Task actions (gateway_task_actions_total's action label). Anything a
// processor reports outside them counts as "other", so the label set stays
// bounded.
var taskActions = []string{"create", "update", "archive", "unarchive", "delete", "link", "unlink", "ignore", "suppress", "stale"}

// latencyBuckets span a fast acknowledgement (a millisecond) to a provider's
// timeout (GitHub waits 10 s).
var latencyBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// processingBuckets span an immediate processing to a backlog of hours.
var processingBuckets = []float64{.01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 4 * 3600}

// commitReceiptBuckets span a lone receipt to the group commit's largest
// batch (inbox.DefaultMaxBatch).
var commitReceiptBuckets = []float64{1, 2, 4, 8, 16, 32, 64, 128, 256}

// Metrics are the gateway's metric families, registered on one registry.
type Metrics struct {
	reg *prometheus.Registry

	webhookRequests    *prometheus.CounterVec
	webhookAck         *prometheus.HistogramVec
	commitReceipts     prometheus.Histogram
	processing         *prometheus.HistogramVec
	taskActions        *prometheus.CounterVec
	recoveryActions    *prometheus.CounterVec
	providerAPI        *prometheus.CounterVec
	retentionDeleted   *prometheus.CounterVec
	redelivered        *prometheus.CounterVec
	deliveries         *prometheus.GaugeVec
	oldestQueuedSecond prometheus.Gauge
	inbox              *inboxGauges
	outbound           *outboundMetrics
	handler            http.Handler
}

// New registers every family, and the Go runtime and process collectors, on
// reg.
func New(reg *prometheus.Registry) *Metrics {
	m := &Metrics{
		reg: reg,
		webhookRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_webhook_requests_total",
			Help: "Webhook requests answered, by connection and HTTP status code.",
		}, []string{"connection", "code"}),
		webhookAck: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "gateway_webhook_ack_seconds",
			Help:    "Time from a webhook's receipt to its 2xx, the delivery durably committed.",
			Buckets: latencyBuckets,
		}, []string{"connection"}),
		commitReceipts: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "gateway_inbox_commit_receipts",
			Help:    "Receipts committed together in one inbox transaction (the group commit's batch; one fsync each).",
			Buckets: commitReceiptBuckets,
		}),
		processing: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "gateway_delivery_processing_seconds",
			Help:    "Time from a delivery's receipt to its finished outcome (succeeded, ignored, suppressed, failed).",
			Buckets: processingBuckets,
		}, []string{"connection"}),
		taskActions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_task_actions_total",
			Help: "Task actions taken by processed deliveries, by connection and action.",
		}, []string{"connection", "action"}),
		recoveryActions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_recovery_actions_total",
			Help: "Actions of creation recovery, by action.",
		}, []string{"action"}),
		providerAPI: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_provider_api_requests_total",
			Help: "Requests to provider APIs (projection refreshes, missed-delivery recovery, hook health), by provider and HTTP status code (\"error\" when no answer came).",
		}, []string{"provider", "code"}),
		retentionDeleted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_retention_deleted_total",
			Help: "Rows deleted by retention, by kind.",
		}, []string{"kind"}),
		redelivered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_missed_deliveries_redelivered_total",
			Help: "Missed webhook deliveries a provider accepted to redeliver, by connection.",
		}, []string{"connection"}),
		deliveries: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gateway_deliveries",
			Help: "Deliveries in the inbox, by status (read at most once per refresh interval).",
		}, []string{"status"}),
		oldestQueuedSecond: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gateway_delivery_oldest_queued_seconds",
			Help: "Age of the oldest queued delivery; 0 when none is queued (read at most once per refresh interval).",
		}),
	}
	m.inbox = &inboxGauges{m: m}
	m.outbound = newOutboundMetrics()
	reg.MustRegister(m.outbound.collectors()...)
	// OpenMetrics, when a scrape asks for it, carries the histograms'
	// exemplars: the trace of an observed latency.
	m.handler = promhttp.HandlerFor(reg, promhttp.HandlerOpts{EnableOpenMetrics: true})
	reg.MustRegister(m.webhookRequests, m.webhookAck, m.commitReceipts, m.processing, m.taskActions, m.recoveryActions,
		m.providerAPI, m.retentionDeleted, m.redelivered, m.inbox,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, s := range store.DeliveryStatuses {
		m.deliveries.WithLabelValues(s)
	}
	return m
}

// presetWebhookCodes are the webhook answers whose series exist from start
// for every connection: accepted (202, duplicates included), malformed (400),
// refused signature (401) and unavailable or shedding load (503). Other codes
// appear at their first answer.
var presetWebhookCodes = []string{"202", "400", "401", "503"}

// presetProviderAPICodes are the provider API answers whose series exist
// from start: success, and no answer at all.
var presetProviderAPICodes = []string{"200", "error"}

// Known are the label values known before any sample.
type Known struct {
	// Connections are the configured connections; a connection with an API
	// token makes its provider's API series known too.
	Connections []KnownConnection
	// RecoveryActions are the creation-recovery actions
	// (idempotency.RecoveryActionLabels).
	RecoveryActions []string
	// RetentionKinds are the kinds of pruned rows (retention.Kinds).
	RetentionKinds []string
}

// KnownConnection is what Preset needs of a configured connection.
type KnownConnection struct {
	ID, Provider string
	// APIAccess says the connection has an API token
	// (config.Connection.HasAPIAccess).
	APIAccess bool
}

// Preset exports the series of k at zero, so that rate() and absence alerts
// work from the first scrape rather than from each series' first sample.
func (m *Metrics) Preset(k Known) {
	if m == nil {
		return
	}
	for _, c := range k.Connections {
		for _, code := range presetWebhookCodes {
			m.webhookRequests.WithLabelValues(c.ID, code)
		}
		m.webhookAck.WithLabelValues(c.ID)
		m.processing.WithLabelValues(c.ID)
		for _, a := range taskActions {
			m.taskActions.WithLabelValues(c.ID, a)
		}
		m.redelivered.WithLabelValues(c.ID)
		if c.APIAccess {
			for _, code := range presetProviderAPICodes {
				m.providerAPI.WithLabelValues(c.Provider, code)
			}
		}
	}
	for _, a := range k.RecoveryActions {
		m.recoveryActions.WithLabelValues(a)
	}
	for _, kind := range k.RetentionKinds {
		m.retentionDeleted.WithLabelValues(kind)
	}
}

// ServeHTTP serves GET /metrics in the Prometheus text format (404 on a
// nil *Metrics: a router built without metrics).
func (m *Metrics) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if m == nil {
		http.NotFound(w, r)
		return
	}
	m.handler.ServeHTTP(w, r)
}

// Registry is the registry the families are registered on.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// WebhookAnswered counts one webhook request answered with status code.
// connection is "" for a connection the gateway does not know, so that
// made-up URLs cannot grow the label set.
func (m *Metrics) WebhookAnswered(connection string, code int) {
	if m == nil {
		return
	}
	if connection == "" {
		connection = "unknown"
	}
	m.webhookRequests.WithLabelValues(connection, strconv.Itoa(code)).Inc()
}

// WebhookAcknowledged observes the time from receipt to the 2xx of a
// committed delivery, with the trace of ctx's span as its exemplar.
func (m *Metrics) WebhookAcknowledged(ctx context.Context, connection string, received time.Time) {
	if m == nil {
		return
	}
	observe(m.webhookAck.WithLabelValues(connection), time.Since(received).Seconds(), trace.SpanContextFromContext(ctx))
}

// observe records v, with the trace of sc as the exemplar when sc was
// sampled (an exemplar pointing at a trace nobody kept would lead nowhere).
func observe(o prometheus.Observer, v float64, sc trace.SpanContext) {
	if sc.IsSampled() {
		if eo, ok := o.(prometheus.ExemplarObserver); ok {
			eo.ObserveWithExemplar(v, prometheus.Labels{"trace_id": sc.TraceID().String()})
			return
		}
	}
	o.Observe(v)
}

// InboxCommitted observes one inbox transaction that committed n receipts.
func (m *Metrics) InboxCommitted(n int) {
	if m == nil {
		return
	}
	m.commitReceipts.Observe(float64(n))
}

// DeliveryFinished records a delivery whose outcome was just written, when
// it reached a final status (ProcessedAt set): the time from its receipt to
// ProcessedAt, and the task action it took (a failed delivery took none).
func (m *Metrics) DeliveryFinished(d store.Delivery) {
	// A delivery put back, postponed or to be retried has not finished.
	if m == nil || d.ProcessedAt == nil {
		return
	}
	// The exemplar is the delivery's trace: its receipt and every attempt.
	observe(m.processing.WithLabelValues(d.ConnectionID), max(d.ProcessedAt.Sub(d.ReceivedAt).Seconds(), 0),
		tracing.Remote(d.TraceContext))
	if action := TaskAction(d); action != "" {
		m.taskActions.WithLabelValues(d.ConnectionID, action).Inc()
	}
}

// TaskAction is the action label of a finished delivery: ignore and
// suppress from its status, stale for an update skipped as older than the
// last applied one, else the outcome's action (close and reopen archive and
// unarchive; an alias links). "" for a failed delivery.
func TaskAction(d store.Delivery) string {
	switch d.Status {
	case store.DeliveryIgnored:
		return "ignore"
	case store.DeliverySuppressed:
		return "suppress"
	case store.DeliverySucceeded:
	default:
		return ""
	}
	// The applier reports a skipped stale update in its result text only.
	if strings.HasPrefix(d.OutcomeResult, "stale ") {
		return "stale"
	}
	switch a := d.OutcomeAction; a {
	case "close":
		return "archive"
	case "reopen":
		return "unarchive"
	case "alias", "transfer":
		return "link"
	default:
		for _, known := range taskActions {
			if a == known {
				return a
			}
		}
		return "other"
	}
}

// RecoveryAction counts one action of creation recovery.
func (m *Metrics) RecoveryAction(action string) {
	if m == nil {
		return
	}
	m.recoveryActions.WithLabelValues(action).Inc()
}

// MissedDeliveryRedelivered counts one missed delivery a provider
// accepted to redeliver.
func (m *Metrics) MissedDeliveryRedelivered(connection string) {
	if m == nil {
		return
	}
	m.redelivered.WithLabelValues(connection).Inc()
}

// ProviderAPIRequest counts one request to a provider's API; code 0 means
// no answer came (a network error), counted as "error".
func (m *Metrics) ProviderAPIRequest(provider string, code int) {
	if m == nil {
		return
	}
	label := "error"
	if code > 0 {
		label = strconv.Itoa(code)
	}
	m.providerAPI.WithLabelValues(provider, label).Inc()
}

// RetentionDeleted counts n rows of kind deleted by retention.
func (m *Metrics) RetentionDeleted(kind string, n int64) {
	if m == nil || n <= 0 {
		return
	}
	m.retentionDeleted.WithLabelValues(kind).Add(float64(n))
}

// StatsReader reads the inbox statistics (store.Store does).
type StatsReader interface {
	DeliveryStats(ctx context.Context) (store.DeliveryStats, error)
}

// DefaultStatsInterval is how often, at most, the inbox gauges read the
// database.
const DefaultStatsInterval = 15 * time.Second

// statsTimeout bounds one read of the inbox statistics.
const statsTimeout = 5 * time.Second

// inboxGauges serve gateway_deliveries and
// gateway_delivery_oldest_queued_seconds. Counting the inbox reads the whole
// table, so it is not done per scrape: a scrape reads the database only
// when the last reading is older than the interval (one scrape at a time
// does; the others wait for it and serve its result), whatever the scrape
// rate. The oldest queued age is computed at each scrape from the cached
// receipt time, so it keeps growing between readings.
type inboxGauges struct {
	m *Metrics

	mu     sync.Mutex // serializes readings
	st     StatsReader
	every  throttle
	oldest time.Time
}

// throttle spaces a gauge's readings of the database: a scrape reads only
// when the last reading is older than the interval.
type throttle struct {
	now      func() time.Time
	interval time.Duration
	readAt   time.Time // zero: never read
}

// newThrottle is a throttle reading at most once per interval
// (DefaultStatsInterval when <= 0) by now (time.Now when nil).
func newThrottle(now func() time.Time, interval time.Duration) throttle {
	if interval <= 0 {
		interval = DefaultStatsInterval
	}
	if now == nil {
		now = time.Now
	}
	return throttle{now: now, interval: interval}
}

// refresh calls read, under statsTimeout, when the last successful
// reading is stale. A failed read keeps the last values: the next scrape
// retries.
func (t *throttle) refresh(read func(context.Context) error) {
	now := t.now()
	if !t.readAt.IsZero() && now.Sub(t.readAt) < t.interval {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), statsTimeout)
	defer cancel()
	if read(ctx) == nil {
		t.readAt = now
	}
}

// age is how long ago oldest was, in seconds: 0 when it is zero (nothing
// waits), never negative.
func (t *throttle) age(oldest time.Time) float64 {
	if oldest.IsZero() {
		return 0
	}
	return max(t.now().Sub(oldest).Seconds(), 0)
}

// WatchInbox makes the inbox gauges read st, at most once per interval
// (DefaultStatsInterval when <= 0); until then they stay zero.
func (m *Metrics) WatchInbox(st StatsReader, now func() time.Time, interval time.Duration) {
	if m == nil {
		return
	}
	g := m.inbox
	g.mu.Lock()
	defer g.mu.Unlock()
	g.st, g.every = st, newThrottle(now, interval)
}

// Describe implements prometheus.Collector.
func (g *inboxGauges) Describe(ch chan<- *prometheus.Desc) {
	g.m.deliveries.Describe(ch)
	g.m.oldestQueuedSecond.Describe(ch)
}

// Collect implements prometheus.Collector: it refreshes a stale reading
// first. A failed read keeps the last values (the next scrape retries).
func (g *inboxGauges) Collect(ch chan<- prometheus.Metric) {
	g.mu.Lock()
	if g.st != nil {
		g.every.refresh(func(ctx context.Context) error {
			stats, err := g.st.DeliveryStats(ctx)
			if err != nil {
				return err
			}
			for _, s := range store.DeliveryStatuses {
				g.m.deliveries.WithLabelValues(s).Set(float64(stats.ByStatus[s]))
			}
			g.oldest = stats.OldestQueuedAt
			return nil
		})
		g.m.oldestQueuedSecond.Set(g.every.age(g.oldest))
	}
	g.mu.Unlock()
	g.m.deliveries.Collect(ch)
	g.m.oldestQueuedSecond.Collect(ch)
}

// ProviderTransport wraps rt (http.DefaultTransport when nil) to count each
// request to provider's API under its status code; on a nil *Metrics it
// returns rt unchanged.
func (m *Metrics) ProviderTransport(provider string, rt http.RoundTripper) http.RoundTripper {
	if m == nil {
		return rt
	}
	if rt == nil {
		rt = http.DefaultTransport
	}
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		code := 0
		if err == nil {
			code = resp.StatusCode
		}
		m.ProviderAPIRequest(provider, code)
		return resp, err
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// StatusRecorder remembers the status an http.ResponseWriter was answered
// with (200 when the handler wrote none).
type StatusRecorder struct {
	http.ResponseWriter
	status int
}

// WriteHeader records the status and passes it on.
func (s *StatusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

// Write passes b on; a first Write without WriteHeader answers 200.
func (s *StatusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// Status is the status answered, 200 when none was written.
func (s *StatusRecorder) Status() int {
	if s.status == 0 {
		return http.StatusOK
	}
	return s.status
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (s *StatusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }
