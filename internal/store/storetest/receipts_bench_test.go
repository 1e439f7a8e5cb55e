package storetest

// The group commit's statement: one InsertDeliveries per batch of receipts
// (docs/benchmarks.md, "Statement journals in memory", and "Receipts that
// wait for a crowd" for the batch sizes):
//
//	go test ./internal/store/storetest -run '^$' -bench 'BenchmarkInsertDeliveries' -benchtime 6000x
//
// The PostgreSQL half needs GATEWAY_TEST_POSTGRES_URL; its cpu-µs/delivery
// is the client's alone, the server's CPU is not in it.

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/trackergateway/gateway/internal/store"
)

// processCPU is the CPU the test process has used, user and system.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkInsertDeliveries stores batches of new issues.opened receipts
// (the fixture's 13.5 KB body and a hook's headers), as the group commit
// does with the receipts that queued while the previous commit ran. One
// op is one batch; cpu-µs/delivery counts every goroutine of the process,
// the background checkpoints included.
func BenchmarkInsertDeliveries(b *testing.B) {
	body, err := os.ReadFile("../../../fixtures/github/issues.opened.json")
	if err != nil {
		b.Fatal(err)
	}
	headers := `{"Content-Type":["application/json"],"User-Agent":["GitHub-Hookshot/044aadd"],` +
		`"X-Github-Delivery":["72d3162e-cc78-11e3-81ab-4c9367dc0958"],"X-Github-Event":["issues"],` +
		`"X-Github-Hook-Id":["292430182"],"X-Github-Hook-Installation-Target-Id":["79929171"],` +
		`"X-Github-Hook-Installation-Target-Type":["repository"]}`
	for _, dialect := range Dialects {
		for _, batch := range []int{6, 12, 20, 30, 64} {
			b.Run(fmt.Sprintf("%s/batch=%d", dialect, batch), func(b *testing.B) {
				s := Open(b, dialect)
				ctx := context.Background()
				ds := make([]store.Delivery, batch)
				n := 0
				b.ResetTimer()
				cpu := processCPU(b)
				for range b.N {
					for i := range ds {
						n++
						// Keys in no order, as a tracker's delivery GUIDs are.
						key := strconv.Itoa(n*7919%1000003) + "-" + strconv.Itoa(n)
						ds[i] = store.Delivery{ConnectionID: "gh", Provider: "github", Event: "issues",
							DeliveryKey: key, Headers: headers, Body: body, ReceivedAt: time.Now()}
					}
					if _, err := s.InsertDeliveries(ctx, ds); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64((processCPU(b)-cpu).Microseconds())/float64(n), "cpu-µs/delivery")
			})
		}
	}
}
