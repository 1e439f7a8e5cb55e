// Package tracing is the gateway's OpenTelemetry tracing: the tracer
// provider built from the standard OTEL_* environment variables (off unless
// they ask for an exporter), the provider's place in a context, the trace
// context a delivery keeps in the inbox (a W3C traceparent), and the log
// handler that puts trace_id and span_id on every line written inside a
// span (docs/tracing.md).
package tracing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"go.opentelemetry.io/contrib/exporters/autoexport"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of the gateway's own spans.
const ScopeName = "github.com/trackergateway/gateway"

// DefaultServiceName is service.name when neither OTEL_SERVICE_NAME nor
// OTEL_RESOURCE_ATTRIBUTES names the service.
const DefaultServiceName = "tracker-gateway"

// TraceURLVariable names the environment variable holding the trace UI's
// URL template: "{trace_id}" in it is replaced by a delivery's trace id,
// and the console links the id there.
const TraceURLVariable = "GATEWAY_TRACE_URL_TEMPLATE"

// EnvironmentVariables are the OTEL_* variables the gateway honours: the
// first four decide whether tracing is on (Enabled); the rest are read by
// the OpenTelemetry SDK and its exporters as the specification describes.
var EnvironmentVariables = []string{
	"OTEL_SDK_DISABLED",
	"OTEL_TRACES_EXPORTER",
	"OTEL_EXPORTER_OTLP_ENDPOINT",
	"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
	"OTEL_EXPORTER_OTLP_PROTOCOL",
	"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
	"OTEL_EXPORTER_OTLP_HEADERS",
	"OTEL_EXPORTER_OTLP_TRACES_HEADERS",
	"OTEL_EXPORTER_OTLP_TIMEOUT",
	"OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
	"OTEL_EXPORTER_OTLP_INSECURE",
	"OTEL_EXPORTER_OTLP_TRACES_INSECURE",
	"OTEL_EXPORTER_OTLP_CERTIFICATE",
	"OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE",
	"OTEL_EXPORTER_OTLP_COMPRESSION",
	"OTEL_EXPORTER_OTLP_TRACES_COMPRESSION",
	"OTEL_SERVICE_NAME",
	"OTEL_RESOURCE_ATTRIBUTES",
	"OTEL_TRACES_SAMPLER",
	"OTEL_TRACES_SAMPLER_ARG",
	"OTEL_BSP_SCHEDULE_DELAY",
	"OTEL_BSP_EXPORT_TIMEOUT",
	"OTEL_BSP_MAX_QUEUE_SIZE",
	"OTEL_BSP_MAX_EXPORT_BATCH_SIZE",
	"OTEL_SEMCONV_STABILITY_OPT_IN",
}

// Enabled reports whether the environment turns tracing on: an exporter
// other than none in OTEL_TRACES_EXPORTER, or, with that unset, an OTLP
// endpoint (the exporter is then OTLP). OTEL_SDK_DISABLED=true turns it
// off whatever else is set.
func Enabled(lookup func(string) (string, bool)) bool {
	if v, _ := lookup("OTEL_SDK_DISABLED"); strings.EqualFold(strings.TrimSpace(v), "true") {
		return false
	}
	if v, _ := lookup("OTEL_TRACES_EXPORTER"); strings.TrimSpace(v) != "" {
		return strings.TrimSpace(v) != "none"
	}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"} {
		if v, _ := lookup(name); strings.TrimSpace(v) != "" {
			return true
		}
	}
	return false
}

// Setup returns the tracer provider the environment configures and the
// function that flushes and stops it; nil, and a no-op stop, when tracing
// is off. The exporter is the contrib autoexport package's choice
// (OTEL_TRACES_EXPORTER: otlp, console, none; OTEL_EXPORTER_OTLP_PROTOCOL:
// http/protobuf or grpc), the sampler the SDK's (OTEL_TRACES_SAMPLER,
// parent-based always-on by default).
func Setup(ctx context.Context, lookup func(string) (string, bool), version string) (trace.TracerProvider, func(context.Context) error, error) {
	stop := func(context.Context) error { return nil }
	if !Enabled(lookup) {
		return nil, stop, nil
	}
	exp, err := autoexport.NewSpanExporter(ctx)
	if err != nil {
		return nil, stop, fmt.Errorf("tracing exporter: %w", err)
	}
	if autoexport.IsNoneSpanExporter(exp) {
		return nil, stop, nil
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", DefaultServiceName),
			attribute.String("service.version", version)),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv())
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		_ = exp.Shutdown(ctx)
		return nil, stop, fmt.Errorf("tracing resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return tp, tp.Shutdown, nil
}

// FromEnvironment returns ctx carrying the tracer provider the
// environment configures (Setup), and the messaging conventions' opt-in
// (MessagingOptIn), with the function that flushes the last spans and
// stops the provider. A provider ctx carries already is kept as it is:
// tests record spans in memory that way. An export that fails (the
// collector down) is said in logger's log, like every other line.
func FromEnvironment(ctx context.Context, lookup func(string) (string, bool), version string, logger *slog.Logger) (context.Context, func(), error) {
	stop := func() {}
	if Provider(ctx) == nil {
		tp, shutdown, err := Setup(ctx, lookup, version)
		if err != nil {
			return ctx, stop, err
		}
		if tp != nil {
			otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
				logger.Warn("tracing: export failed", "error", err)
			}))
		}
		stop = func() {
			// An unreachable collector costs the stop a few seconds at
			// most.
			flushCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), flushTimeout)
			defer cancel()
			_ = shutdown(flushCtx)
		}
		ctx = WithProvider(ctx, tp)
	}
	if MessagingOptIn(lookup) {
		ctx = WithMessagingConventions(ctx)
	}
	return ctx, stop, nil
}

// flushTimeout bounds the export of the last spans at stop.
const flushTimeout = 5 * time.Second

// providerKey is the context key of the tracer provider.
type providerKey struct{}

// messagingKey is the context key of the messaging conventions' opt-in.
type messagingKey struct{}

// MessagingOptIn reports whether OTEL_SEMCONV_STABILITY_OPT_IN asks for the
// messaging semantic conventions ("messaging", or "messaging/dup", which
// for a gateway that never emitted older ones means the same). The
// conventions are still in development, so an instrumentation emits them
// only when asked, as the specification says.
func MessagingOptIn(lookup func(string) (string, bool)) bool {
	v, _ := lookup("OTEL_SEMCONV_STABILITY_OPT_IN")
	for item := range strings.SplitSeq(v, ",") {
		switch strings.TrimSpace(item) {
		case "messaging", "messaging/dup":
			return true
		}
	}
	return false
}

// WithMessagingConventions returns ctx under which the receipt and
// processing spans also carry the messaging semantic conventions'
// attributes (MessagingAttributes).
func WithMessagingConventions(ctx context.Context) context.Context {
	return context.WithValue(ctx, messagingKey{}, true)
}

// MessagingConventions reports whether ctx asks for the messaging
// conventions' attributes.
func MessagingConventions(ctx context.Context) bool {
	on, _ := ctx.Value(messagingKey{}).(bool)
	return on
}

// MessagingSystem is messaging.system of the inbox: the gateway's own
// queue, a value of its own as the conventions allow.
const MessagingSystem = "tracker_gateway"

// MessagingAttributes are the messaging conventions' attributes of a
// delivery in the inbox, the queue between its receipt (operation "send",
// a producer span) and each processing attempt ("process", a consumer
// span): the destination is the connection's inbox, the message the
// delivery. Nil unless ctx asks for them (WithMessagingConventions).
func MessagingAttributes(ctx context.Context, operation, connection, deliveryID string, bodySize int) []attribute.KeyValue {
	if !MessagingConventions(ctx) {
		return nil
	}
	kv := []attribute.KeyValue{attribute.String("messaging.system", MessagingSystem),
		attribute.String("messaging.operation.type", operation), attribute.String("messaging.operation.name", operation),
		attribute.String("messaging.destination.name", connection), attribute.String("messaging.message.id", deliveryID)}
	if bodySize >= 0 {
		kv = append(kv, attribute.Int("messaging.message.body.size", bodySize))
	}
	return kv
}

// WithProvider returns ctx carrying tp, the provider every span started
// under ctx comes from. A nil tp leaves ctx as it is: tracing stays off.
//
// The provider travels in the context, not in each component, because
// tracing crosses every layer (receiver, worker, coordinator, outbound) and
// a test's in-memory recorder must reach them all without a global.
func WithProvider(ctx context.Context, tp trace.TracerProvider) context.Context {
	if tp == nil {
		return ctx
	}
	return context.WithValue(ctx, providerKey{}, tp)
}

// Provider is the tracer provider ctx carries, nil when tracing is off.
func Provider(ctx context.Context) trace.TracerProvider {
	tp, _ := ctx.Value(providerKey{}).(trace.TracerProvider)
	return tp
}

// Start starts a span named name under ctx, from the provider ctx carries.
// With tracing off it returns ctx as it is and a no-op span: the hot path
// pays for a context lookup, nothing more. End the span either way.
func Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	tp := Provider(ctx)
	if tp == nil {
		return ctx, noopSpan
	}
	return tp.Tracer(ScopeName).Start(ctx, name, opts...)
}

// noopSpan is the span of a context without one: it records nothing, and
// ending it ends nothing.
var noopSpan = trace.SpanFromContext(context.Background())

// Propagator is the W3C trace context, in and out: traceparent and
// tracestate.
var Propagator propagation.TextMapPropagator = propagation.TraceContext{}

// Traceparent is the W3C traceparent of the span ctx holds, "" when none
// (tracing off).
func Traceparent(ctx context.Context) string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ""
	}
	c := propagation.MapCarrier{}
	Propagator.Inject(ctx, c)
	return c["traceparent"]
}

// Remote is the span context of a stored traceparent; invalid when s is
// empty or not a traceparent.
func Remote(s string) trace.SpanContext {
	if s == "" {
		return trace.SpanContext{}
	}
	ctx := Propagator.Extract(context.Background(), propagation.MapCarrier{"traceparent": s})
	return trace.SpanContextFromContext(ctx)
}

// TraceID is the trace id of a stored traceparent, "" when it holds none.
func TraceID(traceparent string) string {
	sc := Remote(traceparent)
	if !sc.IsValid() {
		return ""
	}
	return sc.TraceID().String()
}

// TraceURL is the trace UI's address of traceID: template with
// "{trace_id}" replaced; "" when either is empty.
func TraceURL(template, traceID string) string {
	if template == "" || traceID == "" {
		return ""
	}
	return strings.ReplaceAll(template, "{trace_id}", traceID)
}
