package projection

import (
	"testing"

	"github.com/trackergateway/gateway/connectors/providers"
)

// TestAPIFetchersAreTheRegistrys: every registered provider with a
// projection has an API fetch, and there is none for any other.
func TestAPIFetchersAreTheRegistrys(t *testing.T) {
	t.Parallel()
	projected := 0
	for _, p := range providers.All() {
		_, ok := apiFetchers[p.Name]
		if want := p.Projection != nil; ok != want {
			t.Errorf("provider %s: API fetch present = %v, projection registered = %v", p.Name, ok, want)
		}
		if ok {
			projected++
		}
	}
	if projected != len(apiFetchers) {
		t.Errorf("%d API fetchers, %d of them for registered providers with a projection", len(apiFetchers), projected)
	}
}
