package main

import (
	"context"
	"math"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/trackergateway/gateway/internal/metrics"
)

// TestServerAckShares reads the gateway's own /metrics exposition: the
// shares at each bound add the connections up, and a gateway that has
// acknowledged nothing (or serves no such histogram) is an error, not a
// line of zeros.
func TestServerAckShares(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// ages of acknowledgements at the moment they were recorded, per connection
		acks    map[string][]time.Duration
		want    map[float64]float64 // bound → share, for the bounds checked
		wantErr string
	}{
		{
			name: "two connections",
			// Each age is recorded a moment after it is taken, so each
			// lies well below the bound it is counted under: a loaded
			// machine must not move one into the next bucket.
			acks: map[string][]time.Duration{
				"gh": {0, 300 * time.Millisecond, 3 * time.Second},
				"gl": {0},
			},
			want: map[float64]float64{.25: 0.5, .5: 0.75, 2.5: 0.75, 5: 1},
		},
		{name: "nothing acknowledged", wantErr: "no gateway_webhook_ack_seconds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := metrics.New(prometheus.NewRegistry())
			for conn, ages := range tt.acks {
				for _, age := range ages {
					m.WebhookAcknowledged(context.Background(), conn, time.Now().Add(-age))
				}
			}
			srv := httptest.NewServer(m)
			defer srv.Close()
			shares, err := serverAckShares(strings.TrimPrefix(srv.URL, "http://"))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("serverAckShares error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("serverAckShares: %v", err)
			}
			got := map[float64]float64{}
			for _, s := range shares {
				got[s.bound] = s.share
			}
			for bound, want := range tt.want {
				if math.Abs(got[bound]-want) > 1e-9 {
					t.Errorf("share at %g s = %v, want %v (all: %v)", bound, got[bound], want, shares)
				}
			}
		})
	}
}

func TestFormatShares(t *testing.T) {
	t.Parallel()
	shares := []bucketShare{{.001, .5}, {.005, .9876}, {.01, 1}, {.025, 1}}
	want := "50.00% ≤ 1ms, 98.76% ≤ 5ms, 100.00% ≤ 10ms"
	if got := formatShares(shares); got != want {
		t.Errorf("formatShares = %q, want %q", got, want)
	}
}
