package inbox

import (
	"context"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/store/sqlstore"
	"github.com/trackergateway/gateway/internal/store/storetest"
	"github.com/trackergateway/gateway/internal/tracing"
)

// TestWorkerRetryJoinsReceiptTrace: a delivery whose first attempt fails
// is retried later, and each attempt's delivery.process span is a child of
// the receipt's span (kept with the delivery) in its trace, linked to it,
// with its attempt number.
func TestWorkerRetryJoinsReceiptTrace(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		rec := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
		base := tracing.WithProvider(context.Background(), tp)

		rctx, receipt := tracing.Start(base, "webhook.receive")
		receipt.End()
		clock := newTestClock()
		res, err := st.InsertDeliveries(context.Background(), []store.Delivery{{ConnectionID: connFake,
			Provider: fakeProvider, Event: "issue", DeliveryKey: "traced-retry", Headers: `{}`,
			Body: []byte(body("e-traced", modePanicOnce)), ReceivedAt: clock.Now(), TraceContext: tracing.Traceparent(rctx)}})
		if err != nil {
			t.Fatal(err)
		}
		w := NewWorker(st, newFakeProcessor(), testLogger(t), clock.Now, fastOptions(WorkerOptions{Concurrency: 1}))
		runInBackground(t, func(ctx context.Context) error { return w.Run(tracing.WithProvider(ctx, tp)) })

		waitStatus(t, st, res[0].ID, store.DeliveryRetrying, nil)
		clock.Advance(2 * time.Second)
		waitStatus(t, st, res[0].ID, store.DeliverySucceeded, nil)

		var attempts []sdktrace.ReadOnlySpan
		waitFor(t, "both attempts' spans ended", func() bool {
			attempts = attempts[:0]
			for _, s := range rec.Ended() {
				if s.Name() == "delivery.process" {
					attempts = append(attempts, s)
				}
			}
			return len(attempts) == 2
		})
		want := receipt.SpanContext()
		for i, s := range attempts {
			if s.SpanContext().TraceID() != want.TraceID() || s.Parent().SpanID() != want.SpanID() {
				t.Errorf("attempt %d: trace %s parent %s, want the receipt's trace %s and span %s", i+1,
					s.SpanContext().TraceID(), s.Parent().SpanID(), want.TraceID(), want.SpanID())
			}
			if links := s.Links(); len(links) != 1 || links[0].SpanContext.SpanID() != want.SpanID() {
				t.Errorf("attempt %d: links %v, want the receipt's span", i+1, links)
			}
			if s.SpanKind() != trace.SpanKindConsumer {
				t.Errorf("attempt %d: kind %v, want consumer", i+1, s.SpanKind())
			}
			var attempt int64
			for _, kv := range s.Attributes() {
				if kv.Key == "gateway.attempt" {
					attempt = kv.Value.AsInt64()
				}
			}
			if attempt != int64(i+1) {
				t.Errorf("span %d: gateway.attempt = %d, want %d", i+1, attempt, i+1)
			}
		}
	})
}
