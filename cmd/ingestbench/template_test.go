package main

import (
	"path/filepath"
	"testing"

	"github.com/trackergateway/gateway/connectors"
	"github.com/trackergateway/gateway/connectors/providers"
)

// TestTemplateDeliveries: a template of each provider's new-issue fixture
// makes deliveries its adapter verifies, keys apart and parses as a create
// of the issue the template names by externalID.
func TestTemplateDeliveries(t *testing.T) {
	t.Parallel()
	tests := []struct {
		fixture  string
		provider string
	}{
		{"github/issues.opened.json", "github"},
		{"gitlab/issue.json", "gitlab"},
		{"jira/webhook-issue-created.json", "jira"},
	}
	for _, tt := range tests {
		t.Run(tt.provider, func(t *testing.T) {
			t.Parallel()
			tmpl, err := newTemplate(filepath.Join("..", "..", "fixtures", tt.fixture))
			if err != nil {
				t.Fatalf("newTemplate: %v", err)
			}
			if tmpl.provider != tt.provider {
				t.Fatalf("provider = %q, want %q", tmpl.provider, tt.provider)
			}
			desc, ok := providers.Lookup(tt.provider)
			if !ok {
				t.Fatalf("no provider %q", tt.provider)
			}
			keys := map[string]bool{}
			for _, n := range []int64{1, 2} {
				body, header := tmpl.delivery(n)
				if err := desc.Adapter.Verify(header, body, [][]byte{[]byte(secret)}); err != nil {
					t.Fatalf("delivery %d: Verify: %v", n, err)
				}
				keys[desc.Adapter.DeliveryKey(header, body)] = true
				e, err := desc.Adapter.Parse(tmpl.host, header, body)
				if err != nil {
					t.Fatalf("delivery %d: Parse: %v", n, err)
				}
				if e.Action != connectors.ActionCreate || e.ExternalID != tmpl.externalID(n) {
					t.Errorf("delivery %d: %v of %q, want a create of %q", n, e.Action, e.ExternalID, tmpl.externalID(n))
				}
			}
			if len(keys) != 2 {
				t.Errorf("two deliveries share a delivery key: %v", keys)
			}
		})
	}
}
