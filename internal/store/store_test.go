package store_test

import (
	"testing"

	"github.com/trackergateway/gateway/internal/store/storetest"
)

// TestConformance runs the driver conformance suite on SQLite and, when a
// server is configured, PostgreSQL.
func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.Conformance(t)
}
