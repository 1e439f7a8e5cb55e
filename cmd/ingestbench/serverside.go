package main

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// serverAckShares reads the gateway's own histogram of receipt-to-2xx
// times (gateway_webhook_ack_seconds, every connection together) and
// returns, for each bucket bound, the share of acknowledgements at or under
// it. Set beside the senders' latencies, it tells whether a tail was spent
// in the gateway's handler or around it (the loopback, the senders' own
// scheduling).
func serverAckShares(url string) ([]bucketShare, error) {
	resp, err := http.Get("http://" + url + "/metrics")
	if err != nil {
		return nil, fmt.Errorf("get metrics: %w", err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("parse metrics: %w", err)
	}
	family, ok := families["gateway_webhook_ack_seconds"]
	if !ok {
		return nil, fmt.Errorf("no gateway_webhook_ack_seconds")
	}
	var total uint64
	cumulative := map[float64]uint64{}
	var bounds []float64
	for _, m := range family.GetMetric() {
		h := m.GetHistogram()
		total += h.GetSampleCount()
		for _, b := range h.GetBucket() {
			if _, seen := cumulative[b.GetUpperBound()]; !seen {
				bounds = append(bounds, b.GetUpperBound())
			}
			cumulative[b.GetUpperBound()] += b.GetCumulativeCount()
		}
	}
	if total == 0 {
		return nil, fmt.Errorf("no acknowledgements counted")
	}
	out := make([]bucketShare, 0, len(bounds))
	for _, b := range bounds {
		out = append(out, bucketShare{bound: b, share: float64(cumulative[b]) / float64(total)})
	}
	return out, nil
}

type bucketShare struct {
	bound float64 // seconds
	share float64 // of all acknowledgements, at or under bound
}

// formatShares prints the shares up to 10 ms, where the ack targets are.
func formatShares(shares []bucketShare) string {
	var parts []string
	for _, s := range shares {
		if s.bound > 0.010 {
			break
		}
		parts = append(parts, fmt.Sprintf("%.2f%% ≤ %gms", 100*s.share, 1000*s.bound))
	}
	return strings.Join(parts, ", ")
}
