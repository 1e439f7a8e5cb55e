package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// TestMetrics runs a fixture flow through the real server and reads it back
// from GET /metrics: the webhook answers under their codes, the create as a
// task action, the processing time, and the inbox gauge.
func TestMetrics(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, dialect string) {
		g := startGateway(t, newDatabaseURL(t, dialect))
		h := hook{Conn: "github", Event: "issues", Body: githubIssueOpened(t, 7001, 71, "Metrics fixture")}
		if d := g.process(t, h); d.Status != "succeeded" || d.action() != "create" {
			t.Fatalf("delivery = %s %s, want succeeded create", d.Status, d.action())
		}
		status, _, err := g.postWebhook("github", h.header("not-the-secret"), h.Body)
		if err != nil || status != http.StatusUnauthorized {
			t.Fatalf("badly signed webhook = %d, %v; want 401", status, err)
		}

		// A made-up connection is counted, but not under its own name.
		status, _, err = g.postWebhook("made-up-connection", h.header(githubSecret), h.Body)
		if err != nil || status != http.StatusNotFound {
			t.Fatalf("webhook to an unknown connection = %d, %v; want 404", status, err)
		}

		families := g.scrape(t)
		if m := findMetric(families, "gateway_webhook_requests_total", map[string]string{"connection": "made-up-connection"}); m != nil {
			t.Errorf("an unknown connection's ID became a label: %v", m)
		}
		for _, tc := range []struct {
			family string
			labels map[string]string
			check  func(*dto.Metric) bool
			want   string
		}{
			{"gateway_webhook_requests_total", map[string]string{"connection": "github", "code": "202"}, counterAtLeast(1), ">= 1"},
			{"gateway_webhook_requests_total", map[string]string{"connection": "github", "code": "401"}, counterAtLeast(1), ">= 1"},
			{"gateway_webhook_requests_total", map[string]string{"connection": "unknown", "code": "404"}, counterAtLeast(1), ">= 1"},
			{"gateway_webhook_ack_seconds", map[string]string{"connection": "github"}, histogramCountAtLeast(1), "count >= 1"},
			{"gateway_task_actions_total", map[string]string{"connection": "github", "action": "create"}, counterAtLeast(1), ">= 1"},
			{"gateway_delivery_processing_seconds", map[string]string{"connection": "github"}, histogramCountAtLeast(1), "count >= 1"},
			{"gateway_deliveries", map[string]string{"status": "succeeded"}, gaugeAtLeast(1), ">= 1"},
			{"gateway_delivery_oldest_queued_seconds", nil, gaugeAtLeast(0), ">= 0"},
		} {
			m := findMetric(families, tc.family, tc.labels)
			if m == nil {
				t.Errorf("%s%v: not exported", tc.family, tc.labels)
				continue
			}
			if !tc.check(m) {
				t.Errorf("%s%v = %v, want %s", tc.family, tc.labels, m, tc.want)
			}
		}
		// The runtime and process collectors are registered too.
		for _, name := range []string{"go_goroutines", "process_start_time_seconds"} {
			if families[name] == nil {
				t.Errorf("%s: not exported", name)
			}
		}
	})
}

// TestMetricsExportedAtZeroFromStart: before any delivery, every family
// holds the series known in advance at zero, for every configured
// connection, so rate() and absence alerts work from the first scrape. The
// store plays no part: SQLite only.
func TestMetricsExportedAtZeroFromStart(t *testing.T) {
	t.Parallel()
	// An API token makes the connection's provider call its API.
	cfg := filepath.Join(t.TempDir(), "gateway.yaml")
	text := strings.Replace(testConfig, "    on_merge: archive\n", "    on_merge: archive\n    api_token: metrics-test-token\n", 1)
	if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	g := startGateway(t, newDatabaseURL(t, "sqlite"), "--config", cfg)
	families := g.scrape(t)

	counterZero := func(m *dto.Metric) bool { return m.GetCounter() != nil && m.GetCounter().GetValue() == 0 }
	histogramEmpty := func(m *dto.Metric) bool { return m.GetHistogram() != nil && m.GetHistogram().GetSampleCount() == 0 }
	type series struct {
		family string
		labels map[string]string
		check  func(*dto.Metric) bool
	}
	var want []series
	for _, conn := range []string{"github", "gitlab", "jira"} {
		for _, code := range []string{"202", "400", "401", "503"} {
			want = append(want, series{"gateway_webhook_requests_total", map[string]string{"connection": conn, "code": code}, counterZero})
		}
		want = append(want,
			series{"gateway_webhook_ack_seconds", map[string]string{"connection": conn}, histogramEmpty},
			series{"gateway_delivery_processing_seconds", map[string]string{"connection": conn}, histogramEmpty},
			series{"gateway_missed_deliveries_redelivered_total", map[string]string{"connection": conn}, counterZero})
		for _, action := range []string{"create", "update", "archive", "unarchive", "delete", "link", "ignore", "suppress", "stale"} {
			want = append(want, series{"gateway_task_actions_total", map[string]string{"connection": conn, "action": action}, counterZero})
		}
	}
	for _, code := range []string{"200", "error"} {
		want = append(want, series{"gateway_provider_api_requests_total", map[string]string{"provider": "github", "code": code}, counterZero})
	}
	for _, action := range []string{"reconcile_unknown_step", "retry_compensation", "resume_preparing", "complete_preparing",
		"retry_preparing_release", "complete_completing", "abort_preparing", "reconcile_launch_dispatch",
		"retry_launch_dispatch", "transfer_launch_dispatch", "replay_terminal"} {
		want = append(want, series{"gateway_recovery_actions_total", map[string]string{"action": action}, counterZero})
	}
	for _, kind := range []string{"deliveries_processed", "deliveries_failed", "events"} {
		want = append(want, series{"gateway_retention_deleted_total", map[string]string{"kind": kind}, counterZero})
	}
	want = append(want, series{"gateway_inbox_commit_receipts", nil, histogramEmpty})
	for _, s := range want {
		m := findMetric(families, s.family, s.labels)
		if m == nil {
			t.Errorf("%s%v: not exported before any sample", s.family, s.labels)
			continue
		}
		if !s.check(m) {
			t.Errorf("%s%v = %v, want 0", s.family, s.labels, m)
		}
	}
	// Only a connection with an API token calls its provider's API.
	for _, provider := range []string{"gitlab", "jira"} {
		if m := findMetric(families, "gateway_provider_api_requests_total", map[string]string{"provider": provider}); m != nil {
			t.Errorf("provider %s has no API token, but its API series is exported: %v", provider, m)
		}
	}
}

// scrape reads GET /metrics (no token) and parses the text format.
func (g *gateway) scrape(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := g.client.Get(g.URL + "/metrics")
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("GET /metrics = %d %s, want 200 text/plain", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return families
}

// findMetric returns the metric of family whose labels include labels.
func findMetric(families map[string]*dto.MetricFamily, family string, labels map[string]string) *dto.Metric {
	mf := families[family]
	if mf == nil {
		return nil
	}
next:
	for _, m := range mf.GetMetric() {
		have := map[string]string{}
		for _, lp := range m.GetLabel() {
			have[lp.GetName()] = lp.GetValue()
		}
		for k, v := range labels {
			if have[k] != v {
				continue next
			}
		}
		return m
	}
	return nil
}

func counterAtLeast(n float64) func(*dto.Metric) bool {
	return func(m *dto.Metric) bool { return m.GetCounter().GetValue() >= n }
}

func gaugeAtLeast(n float64) func(*dto.Metric) bool {
	return func(m *dto.Metric) bool { return m.GetGauge() != nil && m.GetGauge().GetValue() >= n }
}

func histogramCountAtLeast(n uint64) func(*dto.Metric) bool {
	return func(m *dto.Metric) bool { return m.GetHistogram().GetSampleCount() >= n }
}
