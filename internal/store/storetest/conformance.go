package storetest

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/store/sqlstore"
)

// contractTest is one conformance test. It runs against the store.Store
// contract (fn) unless it must look beneath it (driver): those few say why.
type contractTest struct {
	name   string
	fn     func(t *testing.T, s store.Store)
	driver func(t *testing.T, s *sqlstore.Store)
}

// areas groups the suite by the contract's sections, one file each.
var areas = []struct {
	name  string
	tests []contractTest
}{
	{"workspaces and tokens", workspaceTests},
	{"tasks", taskTests},
	{"creation ledger", ledgerTests},
	{"outbox", outboxTests},
	{"associations", associationTests},
	{"projection", projectionTests},
	{"inbox", deliveryTests},
	{"inbox statistics", deliveryStatsTests},
	{"entity leases", leaseTests},
	{"ownership and lease take-back", ownershipTests},
	{"suppressions and aliases", suppressionTests},
	{"migrations and transactions", storeTests},
	{"probe", probeTests},
	{"retention", retentionTests},
	{"console sessions and inbox activity", consoleTests},
	{"redelivery requests", redeliveryTests},
	{"github installations", installationTests},
	{"contribution links and former references", linkTests},
	{"webhook subscriptions", subscriptionTests},
}

// Conformance runs the driver conformance suite on every dialect, each test
// against a fresh store. Every driver must pass it unchanged.
func Conformance(t *testing.T) {
	ForDialects(t, func(t *testing.T, dialect string) {
		t.Parallel()
		for _, a := range areas {
			t.Run(a.name, func(t *testing.T) {
				t.Parallel()
				for _, tc := range a.tests {
					t.Run(tc.name, func(t *testing.T) {
						t.Parallel()
						s := Open(t, dialect)
						if got := s.Dialect(); got != dialect {
							t.Fatalf("Dialect() = %q, want %q", got, dialect)
						}
						if tc.driver != nil {
							tc.driver(t, s)
							return
						}
						tc.fn(t, s)
					})
				}
			})
		}
	})
}

// epoch is the suite's clock: every instant a test writes is epoch plus an
// offset, with microsecond precision so both dialects read it back equal.
var epoch = time.Date(2026, 1, 2, 3, 4, 5, 123456000, time.UTC)

// SeedWorkspace creates workspace id with steps backlog (unlimited) and
// doing (WIP 1).
func SeedWorkspace(t testing.TB, s store.Store, id string) store.Workspace {
	t.Helper()
	one := 1
	ws := store.Workspace{ID: id, Name: "Workspace " + id, TaskPrefix: "WS", CreatedAt: epoch,
		Steps: []store.Step{{ID: "backlog", Name: "Backlog"}, {ID: "doing", Name: "Doing", WIPLimit: &one}}}
	if err := s.UpsertWorkspace(context.Background(), ws); err != nil {
		t.Fatalf("upsert workspace: %v", err)
	}
	return ws
}

// newTask is a completed task WS-n of workspace ws, created n seconds after
// epoch.
func newTask(ws, ext string, n int) store.Task {
	return store.Task{ID: uuid.NewString(), WorkspaceID: ws, Identifier: "WS-" + strconv.Itoa(n), Title: "task",
		WorkflowStepID: "backlog", Labels: []string{"a"}, ExternalID: ext, CreationState: store.CreationComplete,
		CreatedAt: epoch.Add(time.Duration(n) * time.Second), UpdatedAt: epoch}
}

// newDelivery is a delivery of connection "gh" received at epoch.
func newDelivery(key string) store.Delivery {
	return store.Delivery{ConnectionID: "gh", Provider: "github", Event: "issues", DeliveryKey: key,
		Headers: `{}`, Body: []byte(`{}`), ReceivedAt: epoch}
}

// insertDelivery stores d and returns its ID.
func insertDelivery(t testing.TB, s store.Store, d store.Delivery) string {
	t.Helper()
	res, err := s.InsertDeliveries(context.Background(), []store.Delivery{d})
	must(t, err)
	return res[0].ID
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
