package projection

import (
	"net/http"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/trackergateway/gateway/internal/metrics"
	"github.com/trackergateway/gateway/internal/providerapi"
	"github.com/trackergateway/gateway/internal/store/sqlstore"
	"github.com/trackergateway/gateway/internal/store/storetest"
)

// Each provider API request of a refresh is counted in
// gateway_provider_api_requests_total{provider,code}, a refusal too.
func TestRefreshCountsProviderAPIRequests(t *testing.T) {
	t.Parallel()
	for _, x := range expectations {
		t.Run(x.c.provider, func(t *testing.T) {
			t.Parallel()
			storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
				t.Parallel()
				e := newEnv(t, st)
				reg := prometheus.NewRegistry()
				e.proj.Metrics = metrics.New(reg)
				e.api.script(x.c.path, reply{status: http.StatusBadGateway, body: `{"message":"bad gateway"}`}, ok(x.answer(t)))
				task := e.createTask(x.c, x.conn)
				e.upsert(payloadRow(x.c, task.ID, x.conn))
				e.runOnce() // refused: 502, retried later
				e.clock.Advance(providerapi.MaxWait)
				e.runOnce() // 200

				got := map[string]float64{}
				mfs, err := reg.Gather()
				if err != nil {
					t.Fatal(err)
				}
				for _, mf := range mfs {
					if mf.GetName() != "gateway_provider_api_requests_total" {
						continue
					}
					for _, m := range mf.GetMetric() {
						labels := map[string]string{}
						for _, lp := range m.GetLabel() {
							labels[lp.GetName()] = lp.GetValue()
						}
						got[labels["provider"]+" "+labels["code"]] = m.GetCounter().GetValue()
					}
				}
				want := map[string]float64{x.c.provider + " 502": 1, x.c.provider + " 200": 1}
				if len(got) != len(want) || got[x.c.provider+" 502"] != 1 || got[x.c.provider+" 200"] != 1 {
					t.Errorf("gateway_provider_api_requests_total = %v, want %v", got, want)
				}
			})
		})
	}
}
