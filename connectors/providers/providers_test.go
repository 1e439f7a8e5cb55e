package providers

import (
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/trackergateway/gateway/connectors"
)

func TestAllIsInFixedOrder(t *testing.T) {
	t.Parallel()
	want := []string{"github", "gitlab", "jira", "gitea", "linear"}
	if got := Names(); !slices.Equal(got, want) {
		t.Fatalf("Names() = %v, want %v", got, want)
	}
	for i, p := range All() {
		if p.Name != want[i] {
			t.Fatalf("All()[%d] = %q, want %q", i, p.Name, want[i])
		}
	}
}

// Every descriptor must agree with its own adapter: the headers it names are
// the ones the adapter reads and writes.
func TestEveryProviderIsComplete(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, p := range All() {
		t.Run(p.Name, func(t *testing.T) {
			t.Parallel()
			if p.Name == "" || p.Adapter == nil || p.EventFromPayload == nil || p.SecretEnv == "" || p.SignatureHeader == "" || p.DeliveryKeyHeader == "" {
				t.Fatalf("incomplete descriptor: %+v", p)
			}
			if got := p.Adapter.Provider(); got != p.Name {
				t.Fatalf("adapter Provider() = %q, want %q", got, p.Name)
			}
			if got, ok := Lookup(p.Name); !ok || got.Name != p.Name {
				t.Fatalf("Lookup(%q) = %+v, %v", p.Name, got, ok)
			}
			if p.ZeroConfigHost(func(string) (string, bool) { return "", false }) == "" {
				t.Fatal("no zero-config host")
			}

			if p.EventHeader == "" {
				// No event header: the adapter names the event itself.
				if p.Adapter.EventName(http.Header{}) == "" {
					t.Fatal("no event header and no fixed event name")
				}
			} else {
				h := http.Header{}
				h.Set(p.EventHeader, "some-event")
				if got := p.Adapter.EventName(h); got != "some-event" {
					t.Fatalf("EventName with %s set = %q", p.EventHeader, got)
				}
			}

			h := http.Header{}
			h.Set(p.DeliveryKeyHeader, "delivery-1")
			if got := p.Adapter.DeliveryKey(h, []byte("{}")); got != "delivery-1" {
				t.Fatalf("DeliveryKey with %s set = %q", p.DeliveryKeyHeader, got)
			}

			body := []byte("{}")
			if r, ok := p.Adapter.(connectors.Restamper); ok {
				// The provider signs a timestamp inside the body.
				var err error
				if body, err = r.Restamp(body, time.Now()); err != nil {
					t.Fatalf("Restamp: %v", err)
				}
			}
			signed := http.Header{}
			p.Adapter.Sign(signed, body, []byte("secret"))
			if signed.Get(p.SignatureHeader) == "" {
				t.Fatalf("Sign does not set %s", p.SignatureHeader)
			}
			if !slices.Contains(p.Adapter.SecretHeaders(), p.SignatureHeader) {
				t.Fatalf("secret headers %v omit the signature header %s", p.Adapter.SecretHeaders(), p.SignatureHeader)
			}
			if err := p.Adapter.Verify(signed, body, [][]byte{[]byte("secret")}); err != nil {
				t.Fatalf("Verify of a signed request: %v", err)
			}

			if p.Projection != nil && (p.Projection.Table == "" || p.Projection.ContributionKind == "") {
				t.Fatalf("incomplete projection: %+v", *p.Projection)
			}
		})
		if seen[p.Name] {
			t.Fatalf("provider %q registered twice", p.Name)
		}
		seen[p.Name] = true
	}
}

func TestLookup(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, table string
		found       bool
	}{
		{"github", "github_task_prs", true},
		{"gitlab", "gitlab_task_mrs", true},
		{"jira", "", true},
		{"gitea", "gitea_task_prs", true},
		{"linear", "", true},
		{"GitHub", "", false},
		{"bitbucket", "", false},
		{"", "", false},
	} {
		p, ok := Lookup(tc.name)
		if ok != tc.found {
			t.Fatalf("Lookup(%q) found = %v, want %v", tc.name, ok, tc.found)
		}
		var table string
		if p.Projection != nil {
			table = p.Projection.Table
		}
		if table != tc.table {
			t.Fatalf("Lookup(%q) projection table = %q, want %q", tc.name, table, tc.table)
		}
	}
}

// ContributionKinds names every provider with a projection, and only those.
func TestContributionKinds(t *testing.T) {
	t.Parallel()
	got := ContributionKinds()
	want := map[string]string{"github": "pull_request", "gitlab": "merge_request", "gitea": "pull_request"}
	if len(got) != len(want) {
		t.Fatalf("ContributionKinds() = %v, want %v", got, want)
	}
	for name, kind := range want {
		if got[name] != kind {
			t.Fatalf("ContributionKinds()[%q] = %q, want %q", name, got[name], kind)
		}
	}
}

func TestZeroConfigHost(t *testing.T) {
	t.Parallel()
	env := func(vals map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := vals[k]; return v, ok }
	}
	for _, tc := range []struct {
		provider string
		env      map[string]string
		want     string
	}{
		{"github", nil, "github.com"},
		{"github", map[string]string{"GATEWAY_JIRA_SITE": "x.atlassian.net"}, "github.com"},
		{"gitlab", nil, "gitlab.com"},
		{"jira", nil, "jira.example.com"},
		{"jira", map[string]string{"GATEWAY_JIRA_SITE": ""}, "jira.example.com"},
		{"jira", map[string]string{"GATEWAY_JIRA_SITE": "acme.atlassian.net"}, "acme.atlassian.net"},
		{"gitea", nil, "gitea.example.com"},
		{"gitea", map[string]string{"GATEWAY_GITEA_HOST": "codeberg.org"}, "codeberg.org"},
		{"linear", nil, "linear-workspace"},
		{"linear", map[string]string{"GATEWAY_LINEAR_ORG": "acme"}, "acme"},
	} {
		p, _ := Lookup(tc.provider)
		if got := p.ZeroConfigHost(env(tc.env)); got != tc.want {
			t.Fatalf("%s with %v: host %q, want %q", tc.provider, tc.env, got, tc.want)
		}
	}
}

func TestAdaptersAreTheRegistrys(t *testing.T) {
	t.Parallel()
	ads := Adapters()
	if len(ads) != len(All()) {
		t.Fatalf("%d adapters for %d providers", len(ads), len(All()))
	}
	for _, p := range All() {
		if a := ads[p.Name]; a == nil || a.Provider() != p.Name {
			t.Fatalf("adapter of %s = %v", p.Name, a)
		}
	}
}

// TestEveryProviderDescribesItsHeaders: the receiver tells a provider's
// deliveries from another's by the headers each adapter describes.
func TestEveryProviderDescribesItsHeaders(t *testing.T) {
	t.Parallel()
	titles := map[string]bool{}
	for _, p := range All() {
		d, ok := p.Adapter.(connectors.HeaderDescriber)
		if !ok {
			t.Fatalf("%s: the adapter does not describe its delivery headers", p.Name)
		}
		h := d.DeliveryHeaders()
		if h.Title == "" || titles[h.Title] || len(h.Identifying) == 0 {
			t.Errorf("%s: DeliveryHeaders = %+v, want a title of its own and identifying headers", p.Name, h)
		}
		titles[h.Title] = true
		for _, imitated := range h.Imitates {
			if _, ok := Lookup(imitated); !ok {
				t.Errorf("%s imitates %q, which is no provider", p.Name, imitated)
			}
		}
	}
}
