package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"

	"github.com/XSAM/otelsql"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/trackergateway/gateway/internal/tracing"
)

// openDB opens the modernc.org/sqlite database dsn names. With tracing on
// (a provider in ctx) the database/sql driver is wrapped by otelsql, and
// each statement of traced work is a span under it; a statement whose
// context holds no span (the workers' polling claims, the checkpoints)
// makes none, so an idle gateway records nothing.
func openDB(ctx context.Context, dsn string) (*sql.DB, error) {
	tp := tracing.Provider(ctx)
	if tp == nil {
		return sql.Open("sqlite", dsn)
	}
	return otelsql.Open("sqlite", dsn, otelsql.WithTracerProvider(tp),
		otelsql.WithAttributes(attribute.String("db.system.name", "sqlite")),
		otelsql.WithSpanOptions(otelsql.SpanOptions{
			OmitConnResetSession: true, OmitRows: true, OmitConnectorConnect: true,
			SpanFilter: func(ctx context.Context, _ otelsql.Method, _ string, _ []driver.NamedValue) bool {
				return trace.SpanContextFromContext(ctx).IsValid()
			},
		}))
}
