// Package adaptertest holds what every provider adapter's tests share: the
// fixture seed corpus and the invariants a parsed event must satisfy, so the
// three fuzz targets check one contract.
package adaptertest

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trackergateway/gateway/connectors"
)

// AddFixtures adds every *.json body in dir to the fuzz corpus.
func AddFixtures(f *testing.F, dir string) {
	f.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		f.Fatal(err)
	}
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

// CheckParsed asserts the Adapter.Parse contract for one result: errors wrap
// ErrMalformedPayload; a mapped event has the provider, an external ID of the
// form provider:host:kind:id, an entity key, a source reference and a
// repository; a transfer names its previous entity; contributions come
// exactly with the contribution kind.
func CheckParsed(t *testing.T, provider, host, event string, e connectors.Event, err error) {
	t.Helper()
	if err != nil {
		if !errors.Is(err, connectors.ErrMalformedPayload) {
			t.Fatalf("Parse(%q) error %v does not wrap ErrMalformedPayload", event, err)
		}
		return
	}
	if e.Provider != provider || e.EventName == "" {
		t.Fatalf("Parse(%q) = provider %q, event name %q", event, e.Provider, e.EventName)
	}
	if e.Action == connectors.ActionIgnore {
		return
	}
	if !strings.HasPrefix(e.ExternalID, provider+":"+host+":"+e.Kind+":") {
		t.Fatalf("Parse(%q).ExternalID = %q, Kind %q", event, e.ExternalID, e.Kind)
	}
	if e.EntityKey == "" || e.Source.Ref == "" || e.Repository == "" {
		t.Fatalf("Parse(%q) = %+v: missing EntityKey, Source.Ref or Repository", event, e)
	}
	if e.Action == connectors.ActionTransfer && e.PreviousExternalID == "" {
		t.Fatalf("Parse(%q): transfer without PreviousExternalID: %+v", event, e)
	}
	isContribution := e.Kind == connectors.KindPullRequest || e.Kind == connectors.KindMergeRequest
	if isContribution != (e.Contribution != nil) {
		t.Fatalf("Parse(%q): Kind %q with Contribution %v", event, e.Kind, e.Contribution)
	}
}
