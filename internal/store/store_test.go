package store_test

import (
	"testing"

	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/store/storetest"
)

func TestConformanceSQLite(t *testing.T) {
	t.Parallel()
	storetest.Conformance(t, store.DialectSQLite)
}

func TestConformancePostgres(t *testing.T) {
	t.Parallel()
	storetest.PostgresURL(t)
	storetest.Conformance(t, store.DialectPostgres)
}
