package storetest

// Benchmarks of the delivery list's filters and of bulk replay
// (docs/benchmarks.md, "Delivery filters and bulk replay"):
//
//	go test ./internal/store/storetest -run '^$' -bench 'BenchmarkDeliveryPage' -benchtime 50x
//	go test ./internal/store/storetest -run '^$' -bench 'BenchmarkBulkReplay' -benchtime 1x
//
// BENCH_DELIVERIES sets the inbox sizes (default "10000,100000"); the
// PostgreSQL half needs GATEWAY_TEST_POSTGRES_URL.

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/store/sqlstore"
)

func benchSizes(b *testing.B) []int {
	v := os.Getenv("BENCH_DELIVERIES")
	if v == "" {
		return []int{10000, 100000}
	}
	var out []int
	for _, s := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1000 {
			b.Fatalf("BENCH_DELIVERIES=%q: want sizes of at least 1000", v)
		}
		out = append(out, n)
	}
	return out
}

// seedInbox stores n deliveries received a second apart over four
// connections and three events, with a 1.5 KB body; then, with the
// statements of a busy inbox, 99% succeeded (each with its own outcome
// external ID) and 1% failed with an error. None is retrying.
func seedInbox(b *testing.B, s *sqlstore.Store, n int) {
	b.Helper()
	ctx := context.Background()
	body := []byte(`{"action":"opened","issue":{"title":"` + strings.Repeat("a webhook body of realistic size ", 45) + `"}}`)
	events := []string{"issues", "push", "pull_request"}
	batch := make([]store.Delivery, 0, 1000)
	for i := range n {
		batch = append(batch, store.Delivery{ConnectionID: "c" + strconv.Itoa(i%4), Provider: "github", Event: events[i%3],
			DeliveryKey: "k" + strconv.Itoa(i), Headers: `{}`, Body: body, ReceivedAt: epoch.Add(time.Duration(i) * time.Second)})
		if len(batch) == cap(batch) || i == n-1 {
			if _, err := s.InsertDeliveries(ctx, batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	for _, q := range []string{
		`UPDATE deliveries SET status = 'succeeded', attempts = 1, processed_at = received_at, outcome_external_id = 'github:x:issue:' || delivery_key, outcome_action = 'create'`,
		// Every hundredth, spread over the whole inbox.
		`UPDATE deliveries SET status = 'failed', outcome_external_id = NULL, outcome_action = NULL, last_error = 'provider unavailable: 503 from api.github.com'
		  WHERE delivery_key LIKE '%00'`,
	} {
		if _, err := s.Driver().Exec(ctx, q); err != nil {
			b.Fatal(err)
		}
	}
	settle(b, s)
}

// settle does what time would have done to rows written long before the
// measured statements: SQLite checkpoints the WAL (else the first commits
// measured would copy the seeding's pages back), PostgreSQL vacuums and
// analyzes (autovacuum).
func settle(b *testing.B, s *sqlstore.Store) {
	b.Helper()
	q := `PRAGMA wal_checkpoint(TRUNCATE)`
	if s.Dialect() == store.DialectPostgres {
		q = `VACUUM ANALYZE deliveries`
	}
	if _, err := s.Driver().Exec(context.Background(), q); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkDeliveryPage: one page of 100 with each filter against a plain
// page, at each inbox size; then the same without migration 00008's
// indexes, which is what every filter cost before.
func BenchmarkDeliveryPage(b *testing.B) {
	for _, dialect := range Dialects {
		b.Run(dialect, func(b *testing.B) {
			if dialect == store.DialectPostgres {
				PostgresURL(b)
			}
			for _, n := range benchSizes(b) {
				b.Run(strconv.Itoa(n), func(b *testing.B) {
					s := Open(b, dialect)
					seedInbox(b, s, n)
					middle := epoch.Add(time.Duration(n/2) * time.Second)
					cases := []struct {
						name string
						f    store.DeliveryFilter
					}{
						{"plain", store.DeliveryFilter{}},
						{"status=failed (1%)", store.DeliveryFilter{Status: store.DeliveryFailed}},
						{"status=succeeded (99%)", store.DeliveryFilter{Status: store.DeliverySucceeded}},
						{"status=queued (none)", store.DeliveryFilter{Status: store.DeliveryQueued}},
						{"status=retrying (none)", store.DeliveryFilter{Status: store.DeliveryRetrying}},
						{"connection (25%)", store.DeliveryFilter{ConnectionID: "c1"}},
						{"connection (none)", store.DeliveryFilter{ConnectionID: "nope"}},
						{"event (33%)", store.DeliveryFilter{Event: "push"}},
						{"event (none)", store.DeliveryFilter{Event: "nope"}},
						{"received_after (middle)", store.DeliveryFilter{ReceivedAfter: middle}},
						{"received_before (middle)", store.DeliveryFilter{ReceivedBefore: middle}},
						{"external_id (one)", store.DeliveryFilter{ExternalID: "github:x:issue:k7"}},
						{"external_id (none)", store.DeliveryFilter{ExternalID: "nope"}},
						{"delivery_key (one)", store.DeliveryFilter{DeliveryKey: "k7"}},
						{"delivery_key (none)", store.DeliveryFilter{DeliveryKey: "nope"}},
						{"delivery_key with a prefix (none)", store.DeliveryFilter{DeliveryKey: "1:k7"}},
						{"error_contains (every error)", store.DeliveryFilter{ErrorContains: "UNAVAILABLE"}},
						{"error_contains (none, unbounded)", store.DeliveryFilter{ErrorContains: "timeout"}},
						// What the API asks for a page of 100 (inbox.DefaultErrorScanPages, not
						// imported: the store's tests stay below the inbox).
						{"error_contains (none, API bound)", store.DeliveryFilter{ErrorContains: "timeout", ErrorScanLimit: 400}},
						{"status=failed+connection", store.DeliveryFilter{Status: store.DeliveryFailed, ConnectionID: "c1"}},
					}
					run := func(b *testing.B) {
						for _, tc := range cases {
							b.Run(strings.ReplaceAll(tc.name, " ", "_"), func(b *testing.B) {
								f := tc.f
								f.Limit = 100
								ctx := context.Background()
								for b.Loop() {
									if _, err := s.ListDeliveries(ctx, f); err != nil {
										b.Fatal(err)
									}
								}
							})
						}
					}
					b.Run("indexed", run)
					if n > 100000 {
						return // without the indexes each page reads the inbox: minutes at a million
					}
					for _, idx := range []string{"idx_deliveries_status", "idx_deliveries_connection", "idx_deliveries_connection_status", "idx_deliveries_event",
						"idx_deliveries_external_id", "idx_deliveries_errors"} {
						if _, err := s.Driver().Exec(context.Background(), `DROP INDEX `+idx); err != nil {
							b.Fatal(err)
						}
					}
					b.Run("before_00008", run)
				})
			}
		})
	}
}

// BenchmarkBulkReplay: a bulk replay of every failed delivery when n of
// them failed (the inbox holds n more that succeeded), at the first size
// of BENCH_DELIVERIES above 10000 (default 100000).
func BenchmarkBulkReplay(b *testing.B) {
	n := 100000
	for _, size := range benchSizes(b) {
		if size > 10000 {
			n = size
			break
		}
	}
	for _, dialect := range Dialects {
		b.Run(fmt.Sprintf("%s/%d_failed", dialect, n), func(b *testing.B) {
			if dialect == store.DialectPostgres {
				PostgresURL(b)
			}
			ctx := context.Background()
			s := Open(b, dialect)
			seedInbox(b, s, 2*n)
			fail := `UPDATE deliveries SET status = 'failed', attempts = 8, processed_at = received_at, outcome_external_id = NULL,
				last_error = 'provider unavailable' WHERE connection_id IN ('c0', 'c2')`
			for b.Loop() {
				b.StopTimer()
				if _, err := s.Driver().Exec(ctx, fail); err != nil {
					b.Fatal(err)
				}
				settle(b, s)
				b.StartTimer()
				res, err := s.RequeueDeliveries(ctx, store.BulkRequeue{Filter: store.DeliveryFilter{Status: store.DeliveryFailed},
					Max: 2 * n, Show: 20, Now: epoch.Add(time.Hour)})
				if err != nil || res.Requeued != n {
					b.Fatalf("requeued %+v, %v; want %d", res, err, n)
				}
			}
		})
	}
}

// BenchmarkDeliveryKeyIndex: what idx_deliveries_provider_key (migration
// 00021, the delivery_key filter's) costs the inbox, with it and with it
// dropped. One op stores 20 GitHub receipts ("<hook id>:<GUID>" keys), claims
// them and records them succeeded: the index is written at the insert on
// both dialects, and again at each update on PostgreSQL, whose updates of a
// delivery are never HOT.
func BenchmarkDeliveryKeyIndex(b *testing.B) {
	body, err := os.ReadFile("../../../fixtures/github/issues.opened.json")
	if err != nil {
		b.Fatal(err)
	}
	for _, dialect := range Dialects {
		for _, index := range []string{"with", "without"} {
			b.Run(dialect+"/"+index, func(b *testing.B) {
				s := Open(b, dialect)
				ctx := context.Background()
				if index == "without" {
					if _, err := s.Driver().Exec(ctx, `DROP INDEX idx_deliveries_provider_key`); err != nil {
						b.Fatal(err)
					}
				}
				ds := make([]store.Delivery, 20)
				n := 0
				cpu := processCPU(b)
				for b.Loop() {
					for i := range ds {
						n++
						ds[i] = store.Delivery{ConnectionID: "gh", Provider: "github", Event: "issues",
							DeliveryKey: "292430182:" + uuid.NewString(), Headers: `{}`, Body: body, ReceivedAt: time.Now()}
					}
					if _, err := s.InsertDeliveries(ctx, ds); err != nil {
						b.Fatal(err)
					}
					claimed, err := s.ClaimDeliveries(ctx, "w", time.Now().Add(time.Hour), time.Minute, len(ds))
					if err != nil {
						b.Fatal(err)
					}
					now := time.Now()
					for i := range claimed {
						claimed[i].Status, claimed[i].ProcessedAt = store.DeliverySucceeded, &now
					}
					if _, err := s.FinishDeliveries(ctx, claimed, "w"); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64((processCPU(b)-cpu).Microseconds())/float64(n), "cpu-µs/delivery")
			})
		}
	}
}
