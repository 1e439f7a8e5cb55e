package inbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"mime"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/gorilla/mux"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/trackergateway/gateway/connectors"
	"github.com/trackergateway/gateway/internal/config"
	"github.com/trackergateway/gateway/internal/failure"
	"github.com/trackergateway/gateway/internal/httpapi"
	"github.com/trackergateway/gateway/internal/metrics"
	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/tracing"
)

// Limits on the header-derived columns, so that one odd request can never
// fail the batch it is committed with (index entry size, encoding).
const (
	maxDeliveryKeyBytes = 512
	maxEventBytes       = 256
)

// Delivery statuses of a receipt.
const (
	ReceiptAccepted  = "accepted"
	ReceiptDuplicate = "duplicate"
	// ReceiptRefused is the outcome of a receipt span whose request was
	// answered with an error: nothing was stored.
	ReceiptRefused = "refused"
)

// alwaysSecretHeaders are never stored or shown, whatever the provider:
// the credentials a client, a proxy or a platform in between may send.
// With the providers' own secret headers they are the one list both
// EncodeHeaders (storing) and ShownHeaders (showing) remove.
var alwaysSecretHeaders = []string{"Authorization", "Proxy-Authorization", "Cookie",
	"X-Api-Key", "X-Forwarded-Authorization", "X-Amz-Security-Token"}

// DeliveryWriter is what the receiver needs from the store.
type DeliveryWriter interface {
	// InsertDeliveries commits a batch in one transaction (see store.Store).
	InsertDeliveries(ctx context.Context, ds []store.Delivery) ([]store.InsertedDelivery, error)
	// Notify wakes the workers (best effort).
	Notify(ctx context.Context, channel string) error
}

// ReceiverOptions tune a Receiver.
type ReceiverOptions struct {
	// MaxBatch caps the deliveries committed in one transaction
	// (DefaultMaxBatch when zero).
	MaxBatch int
	// MaxInflightBodyBytes bounds the webhook body bytes all requests hold
	// at once (DefaultMaxInflightBodyBytes when zero); a request that would
	// go over it is answered 503 with Retry-After at once.
	MaxInflightBodyBytes int64
	// Metrics, when set, counts the answers, times the acknowledgements and
	// observes the receipts of each commit.
	Metrics *metrics.Metrics
}

// Receiver is the http.Handler of POST /webhooks/{connection}. Run must be
// running for receipts to be committed.
type Receiver struct {
	adapters    map[string]connectors.Adapter
	connections func(id string) (config.Connection, bool)
	logger      *slog.Logger
	now         func() time.Time
	opts        ReceiverOptions

	commits *groupCommit
	bodies  *bodyBudget
	// secretHeaders are every provider's secret headers: a delivery stores
	// none of them, whichever provider it claims to come from.
	secretHeaders []string
	// byName are the adapters in the order of their provider names, for
	// telling which provider a delivery's headers name.
	byName []connectors.Adapter
	// badSignatures summarises rejected signatures per connection in the
	// log, so unauthenticated traffic cannot flood it.
	badSignatures *httpapi.LogSampler
	// refusals summarises 503s: for the in-flight bound, for storage down.
	refusals *httpapi.LogSampler
	started  atomic.Bool
}

// discardLogger answers errors that are logged another way.
var discardLogger = slog.New(slog.DiscardHandler)

// ReceiptResponse is the 202 body.
type ReceiptResponse struct {
	DeliveryID string `json:"delivery_id"`
	Status     string `json:"status"` // accepted | duplicate
}

// NewReceiver returns a Receiver storing deliveries through st. adapters is
// keyed by provider name (config.Connection.Provider); connections resolves
// a connection ID from the URL.
func NewReceiver(st DeliveryWriter, adapters map[string]connectors.Adapter, connections func(id string) (config.Connection, bool), logger *slog.Logger, now func() time.Time) *Receiver {
	return NewReceiverWithOptions(st, adapters, connections, logger, now, ReceiverOptions{})
}

// NewReceiverWithOptions is NewReceiver with options (the batch cap, the
// in-flight bound).
func NewReceiverWithOptions(st DeliveryWriter, adapters map[string]connectors.Adapter, connections func(id string) (config.Connection, bool), logger *slog.Logger, now func() time.Time, opts ReceiverOptions) *Receiver {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if now == nil {
		now = time.Now
	}
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = DefaultMaxBatch
	}
	secretHeaders := secretHeadersOf(adapters)
	return &Receiver{
		adapters:      adapters,
		connections:   connections,
		logger:        logger,
		now:           now,
		opts:          opts,
		commits:       newGroupCommit(st, logger, opts.MaxBatch, now, opts.Metrics),
		bodies:        newBodyBudget(opts.MaxInflightBodyBytes),
		secretHeaders: secretHeaders,
		byName:        adaptersByName(adapters),
		badSignatures: httpapi.NewLogSampler(badSignatureLogInterval, now),
		refusals:      httpapi.NewLogSampler(badSignatureLogInterval, now),
	}
}

// badSignatureLogInterval is how often rejected signatures of one
// connection, and refusals for the in-flight bound, are summarised in the
// log.
const badSignatureLogInterval = time.Minute

// busyReceipts is how many receipts waiting for their commit make the
// receiver busy: concurrent senders, not a steady trickle (measured: 4 cut
// PostgreSQL's ack p99 at 1,000/s from 56–94 ms to 24 ms; 16 did not).
const busyReceipts = 4

// Busy reports whether many receipts are waiting for their commit, or a
// batch of them committed within the last hold (busyHold, serialBusyHold);
// workers yield to it (WorkerOptions.Yield), so acknowledgements come
// first.
func (rc *Receiver) Busy() bool { return rc.commits.busy() }

// Run commits receipts until ctx ends, then returns nil. A batch in flight
// when ctx ends still completes; receipts after that are answered 503. Run
// may be called once.
func (rc *Receiver) Run(ctx context.Context) error {
	if !rc.started.CompareAndSwap(false, true) {
		return errors.New("receiver already started")
	}
	rc.commits.run(ctx)
	return nil
}

// ServeHTTP receives one delivery for the connection named by the route's
// {connection}.
func (rc *Receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rc.commits.handling.Add(1)
	defer rc.commits.handling.Add(-1)
	rec := &metrics.StatusRecorder{ResponseWriter: w}
	w = rec
	defer func() { rc.opts.Metrics.WebhookAnswered(rc.knownConnection(r), rec.Status()) }()
	// The receipt's span: its context is stored with the delivery, so
	// every processing attempt joins this trace.
	ctx, span := tracing.Start(r.Context(), "webhook.receive", trace.WithSpanKind(trace.SpanKindProducer))
	defer span.End()
	if ctx != r.Context() {
		r = r.WithContext(ctx)
	}
	err := rc.receive(w, r)
	if err != nil && span.IsRecording() {
		span.SetAttributes(attribute.String("gateway.outcome", ReceiptRefused))
		if failure.CodeOf(err) == failure.Internal || failure.CodeOf(err) == failure.Unavailable {
			span.SetStatus(codes.Error, failure.MessageOf(err))
		}
		if id := rc.knownConnection(r); id != "" {
			span.SetAttributes(attribute.String("gateway.connection", id))
		}
	}
	switch {
	case err == nil:
	case errors.Is(err, errInflightBound):
		// A burst of big uploads: one line per interval, not one per 503.
		if suppressed, log := rc.refusals.Observe("inflight"); log {
			rc.logger.WarnContext(r.Context(), "webhooks refused: body bytes in flight at their bound",
				"max_inflight_body_bytes", rc.bodies.max, "suppressed_since_last_line", suppressed)
		}
		httpapi.WriteError(w, r, discardLogger, err)
	case failure.CodeOf(err) == failure.Unavailable:
		// Storage down (or the gateway stopping) refuses every delivery
		// alike: one line per reason per interval, not one per 503.
		reason := failure.MessageOf(err)
		if suppressed, log := rc.refusals.Observe("unavailable: " + reason); log {
			rc.logger.WarnContext(r.Context(), "webhooks refused: "+reason, "error", err,
				"suppressed_since_last_line", suppressed)
		}
		httpapi.WriteError(w, r, discardLogger, err)
	default:
		httpapi.WriteError(w, r, rc.logger, err)
	}
}

// knownConnection is the request's connection ID when the gateway serves
// it, else "" (made-up IDs must not become metric labels).
func (rc *Receiver) knownConnection(r *http.Request) string {
	id := mux.Vars(r)["connection"]
	if _, ok := rc.connections(id); !ok {
		return ""
	}
	return id
}

func (rc *Receiver) receive(w http.ResponseWriter, r *http.Request) error {
	received := time.Now() // the acknowledgement's latency, on the monotonic clock
	ctx := r.Context()
	connID := mux.Vars(r)["connection"]
	conn, ok := rc.connections(connID)
	if !ok || connID == "" {
		return failure.New(failure.NotFound, "connection not found")
	}
	adapter, ok := rc.adapters[conn.Provider]
	if !ok {
		return fmt.Errorf("receive webhook: no adapter for provider %q of connection %q", conn.Provider, conn.ID)
	}

	if err := rc.checkProvider(r.Header, conn.Provider); err != nil {
		return err
	}
	if err := checkContentType(r.Header, adapter); err != nil {
		return err
	}
	rb, err := rc.bodies.readBody(w, r)
	defer rb.done()
	if err != nil {
		return err
	}
	body := rb.data

	// A connection without a secret is refused at start-up; should one get
	// here anyway, it is never accepted unsigned.
	secrets := conn.SecretBytes()
	if len(secrets) == 0 {
		rc.logger.WarnContext(ctx, "webhook refused: connection has no secret", "connection", conn.ID)
		return failure.New(failure.Unauthorized, "invalid signature")
	}
	if err := adapter.Verify(r.Header, body, secrets); err != nil {
		// One line per connection per interval in the log; the caller is
		// told the reason (connectors.VerifyError: which header, and how it
		// failed), never a secret or a signature.
		if suppressed, log := rc.badSignatures.Observe(conn.ID); log {
			rc.logger.WarnContext(ctx, "webhook signature rejected", "connection", conn.ID,
				"provider", conn.Provider, "reason", err, "client_address", httpapi.ClientAddress(r),
				"suppressed_since_last_line", suppressed)
		}
		return failure.New(failure.Unauthorized, "%s", verifyReason(err))
	}
	// After the signature, so that only the provider's own requests learn
	// which header they lack; the worker could never process the delivery.
	if missing, ok := connectors.MissingHeader(r.Header, adapter); ok {
		return failure.New(failure.Invalid, "missing %s header: every %s delivery carries it", missing, providerTitle(adapter))
	}

	key := adapter.DeliveryKey(r.Header, body)
	switch {
	case key == "":
		return failure.New(failure.Invalid, "missing delivery key")
	case len(key) > maxDeliveryKeyBytes:
		return failure.New(failure.Invalid, "delivery key exceeds %d bytes", maxDeliveryKeyBytes)
	case !utf8.ValidString(key) || strings.ContainsRune(key, 0):
		return failure.New(failure.Invalid, "delivery key is not valid UTF-8 text")
	}
	headers, err := EncodeHeaders(r.Header, rc.secretHeaders)
	if err != nil {
		return err
	}
	d := store.Delivery{
		ConnectionID: conn.ID,
		Provider:     conn.Provider,
		Event:        cleanEvent(adapter.EventName(r.Header)),
		DeliveryKey:  key,
		Headers:      headers,
		Body:         body,
		ReceivedAt:   rc.now().UTC().Truncate(time.Microsecond),
	}

	// Encoded here, in parallel across requests, not in the group commit.
	// A compressed body is a copy, so the read buffer is free again; a body
	// stored as received keeps its buffer out of the pool (the commit may
	// outlive this request when the caller goes away).
	d.Body, d.BodyEncoding = store.EncodeDeliveryBody(body)
	d.TraceContext = tracing.Traceparent(ctx)
	if d.BodyEncoding != store.BodyIdentity {
		rb.release()
	} else {
		rb.pooled = nil
	}
	ins, err := rc.commits.submit(ctx, d)
	if err != nil {
		return classifyCommitError(err)
	}
	status := ReceiptAccepted
	if ins.Duplicate {
		status = ReceiptDuplicate
	}
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.SetAttributes(attribute.String("gateway.connection", conn.ID), attribute.String("gateway.provider", conn.Provider),
			attribute.String("gateway.event", d.Event), attribute.String("gateway.delivery_key", key),
			attribute.String("gateway.delivery_id", ins.ID), attribute.String("gateway.outcome", status),
			attribute.Int("gateway.body_size", len(body)))
		span.SetAttributes(tracing.MessagingAttributes(ctx, "send", conn.ID, ins.ID, len(body))...)
	}
	rc.logger.DebugContext(ctx, "webhook received", "connection", conn.ID, "delivery_id", ins.ID,
		"event", d.Event, "status", status, "bytes", len(body))
	httpapi.WriteJSON(w, http.StatusAccepted, ReceiptResponse{DeliveryID: ins.ID, Status: status})
	rc.opts.Metrics.WebhookAcknowledged(ctx, conn.ID, received)
	return nil
}

// checkProvider refuses a delivery whose headers name another provider
// than the connection's (a Gitea hook pointed at a GitHub connection: Gitea
// sends GitHub's headers too, and would be stored and parsed as GitHub's),
// naming the provider and what to configure. Headers only: it runs before
// the body is read, and before the signature, which another provider's
// scheme could never pass.
func (rc *Receiver) checkProvider(h http.Header, provider string) error {
	named := connectors.IdentifyProviders(h, rc.byName)
	if len(named) == 0 || slices.ContainsFunc(named, func(id connectors.Identified) bool { return id.Provider == provider }) {
		return nil
	}
	id := named[0]
	return failure.New(failure.Invalid, "this delivery comes from %s (%s); a connection for it needs provider: %s",
		id.Title, id.Header, id.Provider)
}

// adaptersByName is adapters in the order of their provider names.
func adaptersByName(adapters map[string]connectors.Adapter) []connectors.Adapter {
	names := slices.Sorted(maps.Keys(adapters))
	out := make([]connectors.Adapter, len(names))
	for i, n := range names {
		out[i] = adapters[n]
	}
	return out
}

// providerTitle is the provider's name as its users write it.
func providerTitle(a connectors.Adapter) string {
	if d, ok := a.(connectors.HeaderDescriber); ok && d.DeliveryHeaders().Title != "" {
		return d.DeliveryHeaders().Title
	}
	return a.Provider()
}

// verifyReason is what a 401 says of a failed verification: the adapter's
// reason, else the failure's kind.
func verifyReason(err error) string {
	var ve *connectors.VerifyError
	switch {
	case errors.As(err, &ve):
		return ve.Reason
	case errors.Is(err, connectors.ErrMissingSignature):
		return "missing signature"
	case errors.Is(err, connectors.ErrUnsupportedSignature):
		return "unsupported signature"
	case errors.Is(err, connectors.ErrStaleTimestamp):
		return "timestamp outside the window"
	case errors.Is(err, connectors.ErrBadSignature):
		return "signature mismatch"
	}
	return "invalid signature"
}

// contentTypeLister is implemented by adapters whose provider sends more
// than JSON (GitHub's form-encoded deliveries).
type contentTypeLister interface {
	ContentTypes() []string
}

// jsonOnly is what a provider sends unless its adapter says otherwise.
var jsonOnly = []string{"application/json"}

// checkContentType refuses, before the body is read, a content type the
// connection's provider never sends (415 naming the accepted ones).
// Parameters such as charset are allowed.
func checkContentType(h http.Header, adapter connectors.Adapter) error {
	accepted := jsonOnly
	if l, ok := adapter.(contentTypeLister); ok {
		accepted = l.ContentTypes()
	}
	mediaType, _, err := mime.ParseMediaType(h.Get("Content-Type"))
	if err == nil && slices.Contains(accepted, strings.ToLower(mediaType)) {
		return nil
	}
	return failure.New(failure.UnsupportedMediaType, "unsupported content type; %s webhooks are accepted as %s",
		adapter.Provider(), strings.Join(accepted, " or "))
}

// classifyCommitError maps a failed commit to the answer the provider gets:
// 503 (retry) for everything but a bug (a constraint the inbox should never
// violate), which is a 500.
func classifyCommitError(err error) error {
	switch {
	case errors.Is(err, errStopped):
		return failure.Wrap(failure.Unavailable, err, "service shutting down")
	case errors.Is(err, store.ErrConstraint):
		// Coded here: the error table would answer a constraint with 409.
		return failure.Wrap(failure.Internal, fmt.Errorf("receive webhook: %w", err), "internal error")
	default:
		return failure.Wrap(failure.Unavailable, err, "storage unavailable")
	}
}

// secretHeadersOf is every header a delivery never keeps: the adapters'
// secret headers and alwaysSecretHeaders.
func secretHeadersOf(adapters map[string]connectors.Adapter) []string {
	out := slices.Clone(alwaysSecretHeaders)
	for _, a := range adapters {
		out = append(out, a.SecretHeaders()...)
	}
	return out
}

// EncodeHeaders returns h as the JSON object stored with a delivery
// (canonical name → values, as http.Header marshals), without the secret
// headers (removeSecretHeaders).
func EncodeHeaders(h http.Header, secretHeaders []string) (string, error) {
	out := make(http.Header, len(h))
	for name, values := range h {
		out[http.CanonicalHeaderKey(name)] = values
	}
	removeSecretHeaders(out, secretHeaders)
	b, err := json.Marshal(out)
	if err != nil {
		return "", fmt.Errorf("encode headers: %w", err)
	}
	return string(b), nil
}

// removeSecretHeaders deletes from h every header named in secretHeaders
// or alwaysSecretHeaders, whatever the case of its name in h (a row stored
// before names were canonical keeps its own spelling). On the webhook path
// every name is canonical already, so this is a map delete per secret
// header.
func removeSecretHeaders(h http.Header, secretHeaders []string) {
	for name := range h {
		if c := http.CanonicalHeaderKey(name); c != name &&
			(slices.ContainsFunc(secretHeaders, func(s string) bool { return http.CanonicalHeaderKey(s) == c }) ||
				slices.Contains(alwaysSecretHeaders, c)) {
			delete(h, name)
		}
	}
	for _, name := range secretHeaders {
		delete(h, http.CanonicalHeaderKey(name))
	}
	for _, name := range alwaysSecretHeaders {
		delete(h, name)
	}
}

// cleanEvent makes a header-supplied event name safe to store.
func cleanEvent(s string) string {
	return truncateUTF8(cleanText(s), maxEventBytes)
}

// cleanText makes s storable as text in both dialects: valid UTF-8, no NUL
// (PostgreSQL refuses both in text columns).
func cleanText(s string) string {
	if utf8.ValidString(s) && !strings.ContainsRune(s, 0) {
		return s
	}
	return strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", ""), "\uFFFD")
}

// truncateUTF8 cuts valid UTF-8 s to at most n bytes on a rune boundary.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}
