package gitlab

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trackergateway/gateway/connectors"
)

// addFixtures adds every fixture body to the fuzz corpus.
func addFixtures(f *testing.F) {
	f.Helper()
	files, err := filepath.Glob(filepath.Join(fixtureDir, "*.json"))
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

// FuzzParse: Parse never panics, fails only with ErrMalformedPayload, and
// every mapped event names its entity.
func FuzzParse(f *testing.F) {
	addFixtures(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, event := range []string{"Issue Hook", "Merge Request Hook", ""} {
			e, err := Adapter{}.Parse(host, headerFor(event), body)
			if err != nil {
				if !errors.Is(err, connectors.ErrMalformedPayload) {
					t.Fatalf("Parse(%q) error %v does not wrap ErrMalformedPayload", event, err)
				}
				continue
			}
			if e.Provider != connectors.ProviderGitLab {
				t.Fatalf("Parse(%q).Provider = %q", event, e.Provider)
			}
			if e.Action == connectors.ActionIgnore {
				continue
			}
			if !strings.HasPrefix(e.ExternalID, "gitlab:"+host+":"+e.Kind+":") {
				t.Fatalf("Parse(%q).ExternalID = %q, Kind %q", event, e.ExternalID, e.Kind)
			}
			if e.EntityKey == "" || e.Source.Ref == "" || e.Repository == "" {
				t.Fatalf("Parse(%q) = %+v: missing EntityKey, Source.Ref or Repository", event, e)
			}
			if e.Action == connectors.ActionTransfer && e.PreviousExternalID == "" {
				t.Fatalf("Parse(%q): transfer without PreviousExternalID: %+v", event, e)
			}
			if (e.Kind == connectors.KindMergeRequest) != (e.Contribution != nil) {
				t.Fatalf("Parse(%q): Kind %q with Contribution %v", event, e.Kind, e.Contribution)
			}
		}
	})
}

var fuzzSecrets = [][]byte{[]byte("current-secret"), []byte("previous-secret")}

// FuzzVerify: Verify never panics and accepts exactly the secrets.
func FuzzVerify(f *testing.F) {
	f.Add("current-secret")
	f.Add("previous-secret")
	f.Add("current-secre")
	f.Add("")
	f.Fuzz(func(t *testing.T, token string) {
		h := http.Header{}
		h.Set(HeaderToken, token)
		err := Adapter{}.Verify(h, nil, fuzzSecrets)
		valid := token == "current-secret" || token == "previous-secret"
		switch {
		case err == nil && !valid:
			t.Fatalf("Verify accepted %q", token)
		case err != nil && valid:
			t.Fatalf("Verify(%q) = %v, want nil", token, err)
		case token == "" && !errors.Is(err, connectors.ErrMissingSignature):
			t.Fatalf("Verify(empty) = %v, want %v", err, connectors.ErrMissingSignature)
		case token != "" && !valid && !errors.Is(err, connectors.ErrBadSignature):
			t.Fatalf("Verify(%q) = %v, want %v", token, err, connectors.ErrBadSignature)
		}
	})
}
