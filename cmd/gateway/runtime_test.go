package main

import (
	"testing"

	"github.com/trackergateway/gateway/internal/inbox"
)

// TestCollectorFor: the gateway sets the soft memory limit and GOGC unless
// the process environment names its own (the runtime has applied that one).
func TestCollectorFor(t *testing.T) {
	t.Parallel()
	const inflight = 256 << 20
	limit := inbox.SoftMemoryLimit(inflight)
	tests := []struct {
		name string
		env  map[string]string
		want collectorSettings
	}{
		{"neither set", nil, collectorSettings{memoryLimit: limit, gcPercent: 400}},
		{"GOGC set", map[string]string{"GOGC": "100"}, collectorSettings{memoryLimit: limit}},
		{"GOGC off", map[string]string{"GOGC": "off"}, collectorSettings{memoryLimit: limit}},
		{"GOMEMLIMIT set", map[string]string{"GOMEMLIMIT": "1GiB"}, collectorSettings{gcPercent: 400}},
		{"both set", map[string]string{"GOGC": "200", "GOMEMLIMIT": "1GiB"}, collectorSettings{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			lookup := func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok }
			if got := collectorFor(lookup, inflight); got != tt.want {
				t.Errorf("collectorFor = %+v, want %+v", got, tt.want)
			}
		})
	}
}
