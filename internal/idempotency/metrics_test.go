package idempotency

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/trackergateway/gateway/internal/metrics"
	"github.com/trackergateway/gateway/internal/store/sqlstore"
)

// Recovery counts each action it completes in
// gateway_recovery_actions_total{action}; the read-only replay of a
// settled operation is not an action.
func TestRecoveryActionsAreCounted(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		clock := newTestClock()
		crashed := New(st, discardLogger(), clock.Now, testContributionKinds)
		// Begun, then abandoned before its steps ran.
		begun, err := crashed.BeginTaskCreation(ctx, createRequest("ext-1"))
		if err != nil {
			t.Fatalf("Begin: %v", err)
		}
		reg := prometheus.NewRegistry()
		c := New(st, discardLogger(), clock.Now, testContributionKinds)
		c.Metrics = metrics.New(reg)
		r := NewRecoverer(c, st, discardLogger())
		pastGraceAndLease(clock, c, r)
		actions, err := c.RecoverTaskCreation(ctx, begun.Handle.OperationID, "r1")
		if err != nil {
			t.Fatalf("RecoverTaskCreation: %v", err)
		}
		want := map[string]float64{}
		for _, a := range actions {
			if a != ActionReplayTerminal {
				want[string(a)]++
			}
		}
		if len(want) == 0 {
			t.Fatalf("actions = %v: recovery did nothing to count", actions)
		}
		got := map[string]float64{}
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() != "gateway_recovery_actions_total" {
				continue
			}
			for _, m := range mf.GetMetric() {
				for _, lp := range m.GetLabel() {
					if lp.GetName() == "action" {
						got[lp.GetValue()] = m.GetCounter().GetValue()
					}
				}
			}
		}
		if len(got) != len(want) {
			t.Errorf("gateway_recovery_actions_total = %v, want %v (actions %v)", got, want, actions)
		}
		for a, n := range want {
			if got[a] != n {
				t.Errorf("gateway_recovery_actions_total{action=%q} = %v, want %v", a, got[a], n)
			}
		}
	})
}
