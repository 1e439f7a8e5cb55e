package tracing_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/trackergateway/gateway/internal/tracing"
)

func lookupOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestEnabled(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		env  map[string]string
		want bool
	}{
		{"nothing set", nil, false},
		{"otlp", map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, true},
		{"console", map[string]string{"OTEL_TRACES_EXPORTER": "console"}, true},
		{"none", map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, false},
		{"endpoint alone", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, true},
		{"traces endpoint alone", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, true},
		{"sdk disabled", map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"}, false},
		{"service name alone", map[string]string{"OTEL_SERVICE_NAME": "x"}, false},
	} {
		if got := tracing.Enabled(lookupOf(tc.env)); got != tc.want {
			t.Fatalf("%s: Enabled = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestSetupOffIsNil(t *testing.T) {
	t.Parallel()
	tp, stop, err := tracing.Setup(context.Background(), lookupOf(nil), "test")
	if err != nil {
		t.Fatal(err)
	}
	if tp != nil {
		t.Fatalf("provider with tracing off: %T, want nil", tp)
	}
	if err := stop(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestStartOffRecordsNothing(t *testing.T) {
	t.Parallel()
	ctx, span := tracing.Start(context.Background(), "webhook.receive")
	defer span.End()
	if span.IsRecording() || span.SpanContext().IsValid() {
		t.Fatalf("span with tracing off: recording %v, valid %v", span.IsRecording(), span.SpanContext().IsValid())
	}
	if got := tracing.Traceparent(ctx); got != "" {
		t.Fatalf("traceparent with tracing off = %q, want none", got)
	}
}

func TestTraceparentRoundTrip(t *testing.T) {
	t.Parallel()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	ctx, span := tracing.Start(tracing.WithProvider(context.Background(), tp), "webhook.receive")
	span.End()
	tpHeader := tracing.Traceparent(ctx)
	if tpHeader == "" {
		t.Fatal("no traceparent for a recorded span")
	}
	sc := tracing.Remote(tpHeader)
	if sc.TraceID() != span.SpanContext().TraceID() || sc.SpanID() != span.SpanContext().SpanID() {
		t.Fatalf("Remote(%q) = %v/%v, want %v/%v", tpHeader, sc.TraceID(), sc.SpanID(),
			span.SpanContext().TraceID(), span.SpanContext().SpanID())
	}
	if got, want := tracing.TraceID(tpHeader), span.SpanContext().TraceID().String(); got != want {
		t.Fatalf("TraceID = %q, want %q", got, want)
	}
	for _, bad := range []string{"", "garbage", "00-00000000000000000000000000000000-0000000000000000-01"} {
		if got := tracing.TraceID(bad); got != "" {
			t.Fatalf("TraceID(%q) = %q, want none", bad, got)
		}
	}
	if got, want := tracing.TraceURL("http://127.0.0.1:16686/trace/{trace_id}", "abc"), "http://127.0.0.1:16686/trace/abc"; got != want {
		t.Fatalf("TraceURL = %q, want %q", got, want)
	}
}

func TestLogHandlerAddsTraceAndSpanIDs(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	logger := slog.New(tracing.LogHandler(slog.NewJSONHandler(&buf, nil))).With("component", "test")
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tracetest.NewSpanRecorder()))
	ctx, span := tracing.Start(tracing.WithProvider(context.Background(), tp), "delivery.process")
	logger.InfoContext(ctx, "inside")
	span.End()
	logger.InfoContext(context.Background(), "outside")

	dec := json.NewDecoder(&buf)
	var inside, outside map[string]any
	if err := dec.Decode(&inside); err != nil {
		t.Fatal(err)
	}
	if err := dec.Decode(&outside); err != nil {
		t.Fatal(err)
	}
	if got, want := inside["trace_id"], span.SpanContext().TraceID().String(); got != want {
		t.Fatalf("trace_id inside a span = %v, want %v", got, want)
	}
	if got, want := inside["span_id"], span.SpanContext().SpanID().String(); got != want {
		t.Fatalf("span_id inside a span = %v, want %v", got, want)
	}
	if _, ok := outside["trace_id"]; ok {
		t.Fatalf("trace_id outside a span: %v", outside)
	}
}

// TestStartOffAllocatesNothing: with tracing off, a span's start and end
// and the traceparent read allocate nothing: the hot path pays a context
// lookup.
func TestStartOffAllocatesNothing(t *testing.T) {
	ctx := context.Background()
	allocs := testing.AllocsPerRun(1000, func() {
		sctx, span := tracing.Start(ctx, "webhook.receive")
		_ = tracing.Traceparent(sctx)
		span.End()
	})
	if allocs != 0 {
		t.Fatalf("tracing off: %v allocations per span, want 0", allocs)
	}
}

func BenchmarkStart(b *testing.B) {
	b.Run("off", func(b *testing.B) {
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			sctx, span := tracing.Start(ctx, "webhook.receive")
			_ = tracing.Traceparent(sctx)
			span.End()
		}
	})
	b.Run("on", func(b *testing.B) {
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tracetest.NewSpanRecorder()))
		ctx := tracing.WithProvider(context.Background(), tp)
		b.ReportAllocs()
		for b.Loop() {
			sctx, span := tracing.Start(ctx, "webhook.receive")
			_ = tracing.Traceparent(sctx)
			span.End()
		}
	})
}

func TestMessagingOptIn(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, value string
		want        bool
	}{
		{"unset", "", false},
		{"messaging", "messaging", true},
		{"messaging/dup", "messaging/dup", true},
		{"in a list", "http, messaging", true},
		{"other conventions only", "http,database", false},
		{"a prefix is not the value", "messagingx", false},
	} {
		env := map[string]string{}
		if tc.value != "" {
			env["OTEL_SEMCONV_STABILITY_OPT_IN"] = tc.value
		}
		if got := tracing.MessagingOptIn(lookupOf(env)); got != tc.want {
			t.Fatalf("%s: MessagingOptIn = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestMessagingAttributesOnlyWhenAsked(t *testing.T) {
	t.Parallel()
	if kv := tracing.MessagingAttributes(context.Background(), "send", "github", "d1", 10); kv != nil {
		t.Fatalf("attributes without the opt-in: %v", kv)
	}
	kv := tracing.MessagingAttributes(tracing.WithMessagingConventions(context.Background()), "send", "github", "d1", 10)
	got := map[string]string{}
	for _, a := range kv {
		got[string(a.Key)] = a.Value.Emit()
	}
	want := map[string]string{"messaging.system": tracing.MessagingSystem, "messaging.operation.type": "send",
		"messaging.operation.name": "send", "messaging.destination.name": "github", "messaging.message.id": "d1",
		"messaging.message.body.size": "10"}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("%s = %q, want %q (all: %v)", k, got[k], v, got)
		}
	}
}
