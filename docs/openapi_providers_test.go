package docs_test

import (
	"slices"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/trackergateway/gateway/connectors/providers"
	"github.com/trackergateway/gateway/docs"
)

// TestOpenAPIProvidersAreTheRegistrys: the document's provider enums are
// the registry's: every provider for a task source, the providers with a
// PR/MR projection for a contribution. A provider added to the registry
// must appear in the API's contract too.
func TestOpenAPIProvidersAreTheRegistrys(t *testing.T) {
	t.Parallel()
	var doc struct {
		Components struct {
			Schemas struct {
				Provider struct {
					Enum []string `yaml:"enum"`
				} `yaml:"Provider"`
				Contribution struct {
					Properties struct {
						Provider struct {
							Enum []string `yaml:"enum"`
						} `yaml:"provider"`
					} `yaml:"properties"`
				} `yaml:"Contribution"`
			} `yaml:"schemas"`
		} `yaml:"components"`
	}
	if err := yaml.Unmarshal(docs.OpenAPI, &doc); err != nil {
		t.Fatalf("parse openapi.yaml: %v", err)
	}
	var projected []string
	for _, p := range providers.All() {
		if p.Projection != nil {
			projected = append(projected, p.Name)
		}
	}
	schemas := doc.Components.Schemas
	if got, want := schemas.Provider.Enum, providers.Names(); !slices.Equal(got, want) {
		t.Errorf("Provider enum = %v, want the registry's %v", got, want)
	}
	if got := schemas.Contribution.Properties.Provider.Enum; !slices.Equal(got, projected) {
		t.Errorf("Contribution provider enum = %v, want the providers with a projection %v", got, projected)
	}
}
