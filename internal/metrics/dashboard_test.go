package metrics

import (
	"context"
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"gopkg.in/yaml.v3"

	"github.com/trackergateway/gateway/internal/store"
	"go.opentelemetry.io/otel/trace"
)

// gatheredFamilies registers everything on a fresh registry, records one
// sample in every vector (a vector without children is not gathered) and
// returns the families' names and which of them are histograms.
func gatheredFamilies(t *testing.T) (names map[string]bool, histograms map[string]bool) {
	t.Helper()
	m := New(prometheus.NewRegistry())
	now := time.Now()
	m.WebhookAnswered("c", 202)
	m.WebhookAcknowledged(context.Background(), "c", now)
	m.DeliveryFinished(store.Delivery{ConnectionID: "c", Status: store.DeliverySucceeded, OutcomeAction: "create",
		ReceivedAt: now, ProcessedAt: &now})
	m.RecoveryAction("resume_preparing")
	m.ProviderAPIRequest("github", 200)
	m.RetentionDeleted("deliveries", 1)
	m.MissedDeliveryRedelivered("c")
	m.InboxCommitted(1)
	m.OutboundDelivery("sub_1", store.OutboundSucceeded)
	m.OutboundAttemptTook(time.Millisecond, trace.SpanContext{})
	m.WatchOutbound(lagsOf{{SubscriptionID: "sub_1"}}, nil, 0)
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	names, histograms = map[string]bool{}, map[string]bool{}
	for _, mf := range mfs {
		names[mf.GetName()] = true
		if mf.GetType().String() == "HISTOGRAM" {
			histograms[mf.GetName()] = true
		}
	}
	return names, histograms
}

// lagsOf is a fixed reading of the subscriptions' lags.
type lagsOf []store.SubscriptionLag

func (l lagsOf) SubscriptionLags(context.Context) ([]store.SubscriptionLag, error) { return l, nil }

// metricName matches the identifiers of a PromQL expression that name the
// gateway's, the Go runtime's or the process's series.
var metricName = regexp.MustCompile(`\b(?:gateway|go|process)_[a-zA-Z0-9_:]*`)

// exported reports whether a name in a query is a series the gateway
// exports: a family, or a histogram's _bucket, _sum or _count.
func exported(name string, names, histograms map[string]bool) bool {
	if names[name] {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && histograms[base] {
			return true
		}
	}
	return false
}

type dashboardPanel struct {
	Title   string `json:"title"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
	Panels []dashboardPanel `json:"panels"`
}

func TestDashboardQueriesNameExportedMetrics(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../docs/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		UID    string           `json:"uid"`
		Panels []dashboardPanel `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("docs/grafana-dashboard.json: %v", err)
	}
	names, histograms := gatheredFamilies(t)
	used := map[string]bool{}
	queries := 0
	var walk func([]dashboardPanel)
	walk = func(ps []dashboardPanel) {
		for _, p := range ps {
			walk(p.Panels)
			for _, target := range p.Targets {
				queries++
				found := metricName.FindAllString(target.Expr, -1)
				if len(found) == 0 {
					t.Errorf("panel %q: query %q names no gateway, Go or process metric", p.Title, target.Expr)
				}
				for _, name := range found {
					if !exported(name, names, histograms) {
						t.Errorf("panel %q: query %q names %s, which the gateway does not export", p.Title, target.Expr, name)
					}
					for _, suffix := range []string{"_bucket", "_sum", "_count"} {
						if base, ok := strings.CutSuffix(name, suffix); ok && histograms[base] {
							name = base
						}
					}
					used[name] = true
				}
			}
		}
	}
	walk(dash.Panels)
	if queries == 0 {
		t.Fatal("the dashboard has no queries")
	}
	// Every family of the gateway's own is on the dashboard.
	for name := range names {
		if strings.HasPrefix(name, "gateway_") && !used[name] {
			t.Errorf("the dashboard shows no panel of %s", name)
		}
	}
}

func TestExported(t *testing.T) {
	t.Parallel()
	names := map[string]bool{"gateway_x_total": true, "gateway_h_seconds": true}
	histograms := map[string]bool{"gateway_h_seconds": true}
	for _, tc := range []struct {
		name string
		want bool
	}{
		{"gateway_x_total", true},
		{"gateway_h_seconds_bucket", true},
		{"gateway_h_seconds_count", true},
		{"gateway_x_total_bucket", false},
		{"gateway_y_total", false},
	} {
		if got := exported(tc.name, names, histograms); got != tc.want {
			t.Errorf("exported(%q) = %t, want %t", tc.name, got, tc.want)
		}
	}
	if got := metricName.FindAllString(`histogram_quantile(0.9, sum by (le) (rate(gateway_h_seconds_bucket[5m]))) / go_goroutines`, -1); !slices.Equal(got, []string{"gateway_h_seconds_bucket", "go_goroutines"}) {
		t.Errorf("metric names = %q", got)
	}
}

// The monitoring profile: the compose file, Prometheus' scrape of the
// gateway and Grafana's provisioning agree with each other.
func TestMonitoringDeployment(t *testing.T) {
	t.Parallel()
	readYAML := func(path string, v any) {
		t.Helper()
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(raw, v); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
	var compose struct {
		Services map[string]struct {
			Profiles []string `yaml:"profiles"`
			Volumes  []string `yaml:"volumes"`
			Command  []string `yaml:"command"`
		} `yaml:"services"`
	}
	readYAML("../../docker-compose.yml", &compose)
	for _, svc := range []string{"prometheus", "grafana"} {
		if !slices.Contains(compose.Services[svc].Profiles, "monitoring") {
			t.Errorf("compose service %s: not in the monitoring profile", svc)
		}
	}
	if len(compose.Services["gateway"].Profiles) != 0 {
		t.Error("compose service gateway: must run without a profile")
	}
	// Every file a monitoring service mounts from the repository exists.
	for _, svc := range []string{"prometheus", "grafana"} {
		for _, v := range compose.Services[svc].Volumes {
			src, _, _ := strings.Cut(v, ":")
			if !strings.HasPrefix(src, "./") {
				continue // a named volume
			}
			if _, err := os.Stat("../../" + src); err != nil {
				t.Errorf("compose service %s mounts %s: %v", svc, src, err)
			}
		}
	}

	var prom struct {
		ScrapeConfigs []struct {
			MetricsPath   string `yaml:"metrics_path"`
			StaticConfigs []struct {
				Targets []string `yaml:"targets"`
			} `yaml:"static_configs"`
		} `yaml:"scrape_configs"`
	}
	readYAML("../../deploy/prometheus.yml", &prom)
	scrapesGateway := false
	for _, sc := range prom.ScrapeConfigs {
		for _, st := range sc.StaticConfigs {
			scrapesGateway = scrapesGateway || (sc.MetricsPath == "/metrics" && slices.Contains(st.Targets, "gateway:8080"))
		}
	}
	if !scrapesGateway {
		t.Error("deploy/prometheus.yml: no scrape of gateway:8080/metrics")
	}

	var datasources struct {
		Datasources []struct {
			UID  string `yaml:"uid"`
			Type string `yaml:"type"`
			URL  string `yaml:"url"`
		} `yaml:"datasources"`
	}
	readYAML("../../deploy/grafana/provisioning/datasources/prometheus.yml", &datasources)
	var dash struct {
		Panels []struct {
			Datasource struct {
				UID string `json:"uid"`
			} `json:"datasource"`
		} `json:"panels"`
	}
	raw, err := os.ReadFile("../../docs/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatal(err)
	}
	if len(datasources.Datasources) != 1 || datasources.Datasources[0].Type != "prometheus" ||
		datasources.Datasources[0].URL != "http://prometheus:9090" {
		t.Fatalf("grafana data sources = %+v, want the compose Prometheus", datasources.Datasources)
	}
	for _, p := range dash.Panels {
		if p.Datasource.UID != "" && p.Datasource.UID != datasources.Datasources[0].UID {
			t.Errorf("dashboard panel data source %q, want the provisioned %q", p.Datasource.UID, datasources.Datasources[0].UID)
		}
	}

	var dashboards struct {
		Providers []struct {
			Options struct {
				Path string `yaml:"path"`
			} `yaml:"options"`
		} `yaml:"providers"`
	}
	readYAML("../../deploy/grafana/provisioning/dashboards/gateway.yml", &dashboards)
	mounted := false
	for _, v := range compose.Services["grafana"].Volumes {
		parts := strings.Split(v, ":")
		if len(parts) >= 2 && parts[0] == "./docs/grafana-dashboard.json" && len(dashboards.Providers) == 1 &&
			strings.HasPrefix(parts[1], dashboards.Providers[0].Options.Path+"/") {
			mounted = true
		}
	}
	if !mounted {
		t.Error("the dashboard is not mounted where Grafana's dashboard provider reads")
	}
}
