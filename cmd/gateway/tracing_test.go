package main

// Tracing end to end: a signed webhook through the real server, recorded
// with the SDK's in-memory span recorder, makes one trace from the receipt
// to the outbound attempt; with tracing off nothing carries a trace.

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/trackergateway/gateway/internal/tracing"
)

// recordedSpans is a span recorder's ended spans.
type recordedSpans []sdktrace.ReadOnlySpan

func (rs recordedSpans) named(name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range rs {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

// byID finds a span by its span id.
func (rs recordedSpans) byID(id trace.SpanID) sdktrace.ReadOnlySpan {
	for _, s := range rs {
		if s.SpanContext().SpanID() == id {
			return s
		}
	}
	return nil
}

// descends reports whether s is a descendant of ancestor (through parents
// the recorder holds).
func (rs recordedSpans) descends(s, ancestor sdktrace.ReadOnlySpan) bool {
	for p := rs.byID(s.Parent().SpanID()); p != nil; p = rs.byID(p.Parent().SpanID()) {
		if p.SpanContext().SpanID() == ancestor.SpanContext().SpanID() {
			return true
		}
	}
	return false
}

func attr(s sdktrace.ReadOnlySpan, key string) (attribute.Value, bool) {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

func attrString(s sdktrace.ReadOnlySpan, key string) string {
	v, _ := attr(s, key)
	return v.Emit()
}

// only is the one span of a name, else the test fails.
func only(t *testing.T, rs recordedSpans, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	got := rs.named(name)
	if len(got) != 1 {
		t.Fatalf("%d %s spans, want 1; recorded: %s", len(got), name, spanNames(rs))
	}
	return got[0]
}

func spanNames(rs recordedSpans) string {
	names := make([]string, len(rs))
	for i, s := range rs {
		names[i] = s.Name()
	}
	return strings.Join(names, ", ")
}

// TestTracingEndToEnd: with a tracer provider in Main's context, a GitHub
// issue opened makes one trace: the HTTP server span, webhook.receive,
// delivery.process (its child across the inbox, and linked to it),
// task.create with its write, and event.deliver, whose context the
// subscriber receives as traceparent. The delivery JSON and the event's
// cause name the trace; no span attribute holds a secret.
func TestTracingEndToEnd(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, dialect string) {
		rec := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
		t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
		g := startGatewayWith(t, tracing.WithProvider(context.Background(), tp), newDatabaseURL(t, dialect),
			"--config", outboundConfig(t))
		rc := newHookReceiver(t)
		sub := g.subscribe(t, rc)

		d := g.process(t, fixtureHook(t, "github/issues.opened.json"))
		if d.Status != "succeeded" || d.action() != "create" {
			t.Fatalf("delivery = %s %s, want a create", d.Status, d.action())
		}
		poll(t, "the event at the receiver", waitTimeout, func() bool { return len(rc.requests()) >= 1 })
		poll(t, "the attempt's span ended", waitTimeout, func() bool {
			return len(recordedSpans(rec.Ended()).named("event.deliver")) >= 1
		})
		spans := recordedSpans(rec.Ended())

		receipt := only(t, spans, "webhook.receive")
		traceID := receipt.SpanContext().TraceID()
		server := spans.byID(receipt.Parent().SpanID())
		if server == nil || server.Name() != "POST /webhooks/{connection}" || server.SpanKind() != trace.SpanKindServer {
			t.Errorf("webhook.receive's parent = %v, want the HTTP server span POST /webhooks/{connection}", server)
		}
		// The receipt names the event as its header does; processing
		// refines it.
		for key, want := range map[string]string{"gateway.connection": "github", "gateway.provider": "github",
			"gateway.event": "issues", "gateway.delivery_key": d.DeliveryKey, "gateway.delivery_id": d.ID,
			"gateway.outcome": "accepted"} {
			if got := attrString(receipt, key); got != want {
				t.Errorf("webhook.receive %s = %q, want %q", key, got, want)
			}
		}

		process := only(t, spans, "delivery.process")
		if process.Parent().SpanID() != receipt.SpanContext().SpanID() || process.SpanContext().TraceID() != traceID {
			t.Errorf("delivery.process is not the receipt's child in its trace")
		}
		if links := process.Links(); len(links) != 1 || links[0].SpanContext.SpanID() != receipt.SpanContext().SpanID() {
			t.Errorf("delivery.process links = %v, want the receipt's span", links)
		}
		for key, want := range map[string]string{"gateway.attempt": "1", "gateway.task_id": d.taskID(), "gateway.event": d.Event,
			"gateway.action": "create", "gateway.external_id": outcomeField(d, func(o *outcome) *string { return o.ExternalID })} {
			if got := attrString(process, key); got != want {
				t.Errorf("delivery.process %s = %q, want %q", key, got, want)
			}
		}

		// The database's statements under the processing span, from the
		// pgx or database/sql instrumentation.
		dbSpans := 0
		for _, s := range spans {
			for _, kv := range s.Attributes() {
				if strings.HasPrefix(string(kv.Key), "db.") && spans.descends(s, process) {
					dbSpans++
					break
				}
			}
		}
		if dbSpans == 0 {
			t.Errorf("no database span under delivery.process; recorded: %s", spanNames(spans))
		}

		create := only(t, spans, "task.create")
		if create.Parent().SpanID() != process.SpanContext().SpanID() {
			t.Errorf("task.create is not delivery.process's child")
		}
		if write := only(t, spans, "task.create.write"); write.Parent().SpanID() != create.SpanContext().SpanID() {
			t.Errorf("task.create.write is not task.create's child")
		}

		attempt := only(t, spans, "event.deliver")
		if attempt.SpanContext().TraceID() != traceID || !spans.descends(attempt, create) {
			t.Errorf("event.deliver is not under task.create in the delivery's trace")
		}
		r := rc.requests()[0]
		for key, want := range map[string]string{"gateway.subscription_id": sub.ID, "gateway.event_id": r.ID,
			"http.response.status_code": "200"} {
			if got := attrString(attempt, key); got != want {
				t.Errorf("event.deliver %s = %q, want %q", key, got, want)
			}
		}
		sent := tracing.Remote(r.Traceparent)
		if sent.TraceID() != traceID || sent.SpanID() != attempt.SpanContext().SpanID() {
			t.Errorf("traceparent %q, want trace %s and the attempt's span %s", r.Traceparent, traceID, attempt.SpanContext().SpanID())
		}

		if d.TraceID != traceID.String() {
			t.Errorf("delivery trace_id = %q, want %s", d.TraceID, traceID)
		}
		var data struct {
			Cause struct {
				TraceID string `json:"trace_id"`
			} `json:"cause"`
		}
		if err := json.Unmarshal(r.Event.Data, &data); err != nil || data.Cause.TraceID != traceID.String() {
			t.Errorf("event cause trace_id = %q (%v), want %s", data.Cause.TraceID, err, traceID)
		}

		secrets := []string{githubSecret, testAdminToken, sub.Secret}
		for _, s := range spans {
			for _, kv := range s.Attributes() {
				v := kv.Value.Emit()
				for _, secret := range secrets {
					if strings.Contains(v, secret) {
						t.Errorf("span %s attribute %s holds a secret", s.Name(), kv.Key)
					}
				}
				if k := strings.ToLower(string(kv.Key)); strings.Contains(k, "authorization") || strings.Contains(k, "signature") {
					t.Errorf("span %s records %s", s.Name(), kv.Key)
				}
			}
		}
	})
}

// TestTracingOff: without the OTEL_* variables the gateway traces nothing:
// no trace id in the delivery JSON or the event's cause, no traceparent
// on the outbound request.
func TestTracingOff(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, dialect string) {
		g := startGateway(t, newDatabaseURL(t, dialect), "--config", outboundConfig(t))
		rc := newHookReceiver(t)
		g.subscribe(t, rc)
		d := g.process(t, fixtureHook(t, "github/issues.opened.json"))
		if d.TraceID != "" {
			t.Errorf("delivery trace_id = %q with tracing off", d.TraceID)
		}
		poll(t, "the event at the receiver", waitTimeout, func() bool { return len(rc.requests()) >= 1 })
		r := rc.requests()[0]
		if r.Traceparent != "" {
			t.Errorf("traceparent %q sent with tracing off", r.Traceparent)
		}
		if strings.Contains(string(r.Event.Data), "trace_id") {
			t.Errorf("event data %s names a trace with tracing off", r.Event.Data)
		}
	})
}

// TestTracingMessagingConventions: the receipt and processing spans carry
// the messaging conventions' attributes (the connection's inbox as the
// destination, the delivery as the message) only when the gateway is asked
// for them (OTEL_SEMCONV_STABILITY_OPT_IN=messaging).
func TestTracingMessagingConventions(t *testing.T) {
	t.Parallel()
	for _, optIn := range []bool{false, true} {
		t.Run(fmt.Sprintf("opt-in=%t", optIn), func(t *testing.T) {
			t.Parallel()
			rec := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
			t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
			base := tracing.WithProvider(context.Background(), tp)
			if optIn {
				base = tracing.WithMessagingConventions(base)
			}
			g := startGatewayWith(t, base, newDatabaseURL(t, "sqlite"))
			d := g.process(t, fixtureHook(t, "github/issues.opened.json"))
			poll(t, "the processing span ended", waitTimeout, func() bool {
				return len(recordedSpans(rec.Ended()).named("delivery.process")) >= 1
			})
			spans := recordedSpans(rec.Ended())
			for name, operation := range map[string]string{"webhook.receive": "send", "delivery.process": "process"} {
				s := only(t, spans, name)
				want := map[string]string{"messaging.system": "", "messaging.operation.type": "",
					"messaging.destination.name": "", "messaging.message.id": ""}
				if optIn {
					want = map[string]string{"messaging.system": tracing.MessagingSystem, "messaging.operation.type": operation,
						"messaging.destination.name": "github", "messaging.message.id": d.ID}
				}
				for key, w := range want {
					if got := attrString(s, key); got != w {
						t.Errorf("%s %s = %q, want %q", name, key, got, w)
					}
				}
			}
		})
	}
}
