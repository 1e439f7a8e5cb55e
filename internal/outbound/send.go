package outbound

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/trackergateway/gateway/internal/events"
	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/tracing"
)

// Defaults of the delivery rules (docs/design.md, "Task events out").
const (
	// DefaultTimeout bounds one attempt, from connecting to the answer.
	DefaultTimeout = 15 * time.Second
	// DefaultMaxResponseBytes is how much of an answer is read; the rest
	// is never looked at.
	DefaultMaxResponseBytes = 64 << 10
)

// userAgent identifies the gateway's requests.
const userAgent = "tracker-gateway-webhooks/1"

// answer is what one attempt learnt.
type answer struct {
	code int // 0: no answer
	err  error
	// retryAfter is a 429/503's Retry-After (0: none).
	retryAfter time.Duration
	// gone: the receiver answered 410 Gone.
	gone bool
	// permanent: no retry can change the outcome.
	permanent bool
}

// post sends one event to one subscription, signed, and reads the answer.
func (w *Worker) post(ctx context.Context, sub store.Subscription, ev outgoing, now time.Time) answer {
	// The configuration may have changed since the URL was saved.
	if err := w.checkURL(sub.URL); err != nil {
		return answer{err: err}
	}
	if ev.err != nil {
		return answer{err: ev.err, permanent: true}
	}
	body := ev.body
	signed, err := Sign(sub, events.FormatID(ev.ev.ID), now, body)
	if err != nil {
		return answer{err: err, permanent: true}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, sub.URL, bytes.NewReader(body))
	if err != nil {
		return answer{err: errors.New("url is not a valid URL"), permanent: true}
	}
	h := req.Header
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", userAgent)
	h.Set("webhook-id", signed.ID)
	h.Set("webhook-timestamp", signed.Timestamp)
	h.Set("webhook-signature", signed.Signature)
	// The attempt's span context (none with tracing off): a consumer that
	// traces continues the delivery's trace.
	tracing.Propagator.Inject(ctx, propagation.HeaderCarrier(h))
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.SetAttributes(attribute.String("server.address", serverAddress(sub.URL)))
	}
	resp, err := w.client.Do(req)
	if err != nil {
		return answer{err: w.requestError(err)}
	}
	defer resp.Body.Close()
	// Only the start of the answer is read: a receiver answering
	// megabytes costs no more than one answering nothing.
	excerpt, _ := io.ReadAll(io.LimitReader(resp.Body, w.opts.MaxResponseBytes))
	a := answer{code: resp.StatusCode}
	switch c := resp.StatusCode; {
	case c >= 200 && c < 300:
		return a
	case c >= 300 && c < 400:
		a.err = fmt.Errorf("answered %s: redirects are not followed", resp.Status)
	case c == http.StatusGone:
		a.err, a.gone = fmt.Errorf("answered %s", resp.Status), true
	case c == http.StatusTooManyRequests || c == http.StatusServiceUnavailable:
		a.err = fmt.Errorf("answered %s", resp.Status)
		a.retryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), now)
	default:
		a.err = fmt.Errorf("answered %s", resp.Status)
	}
	if s := excerptText(excerpt); s != "" {
		a.err = fmt.Errorf("%w: %s", a.err, s)
	}
	return a
}

// requestError is why a request got no answer, without its URL: a
// subscription URL may carry a token, and last_error is shown and logged.
func (w *Worker) requestError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var ne net.Error
	switch {
	case errors.Is(err, ErrRefusedDestination):
		return err
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return fmt.Errorf("no answer within %s", w.opts.Timeout)
	}
	return err
}

// maxExcerpt bounds the part of an answer kept in last_error.
const maxExcerpt = 200

// excerptText is the start of an answer as storable, one-line text.
func excerptText(b []byte) string {
	if len(b) > maxExcerpt {
		b = b[:maxExcerpt]
	}
	return cleanText(strings.Join(strings.Fields(string(b)), " "))
}

// maxLastError bounds the stored last_error.
const maxLastError = 1024

// cleanText makes s storable on both databases (valid UTF-8, no NUL) and
// bounded.
func cleanText(s string) string {
	s = strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "")
	if len(s) <= maxLastError {
		return s
	}
	cut := maxLastError
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// maxCheckedURLs bounds the remembered URL checks.
const maxCheckedURLs = 1024

// checkURL is CheckURL with the worker's allow_http, remembered per URL
// (the same few URLs are checked before every request).
func (w *Worker) checkURL(raw string) error {
	w.urlsMu.Lock()
	defer w.urlsMu.Unlock()
	if err, ok := w.urls[raw]; ok {
		return err
	}
	if len(w.urls) >= maxCheckedURLs {
		clear(w.urls)
	}
	err := CheckURL(raw, w.opts.AllowHTTP)
	w.urls[raw] = err
	return err
}
