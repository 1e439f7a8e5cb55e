package github

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
		for _, event := range []string{"issues", "pull_request", "ping"} {
			e, err := Adapter{}.Parse(host, headerFor(event), body)
			if err != nil {
				if !errors.Is(err, connectors.ErrMalformedPayload) {
					t.Fatalf("Parse(%s) error %v does not wrap ErrMalformedPayload", event, err)
				}
				continue
			}
			if e.Provider != connectors.ProviderGitHub {
				t.Fatalf("Parse(%s).Provider = %q", event, e.Provider)
			}
			if e.Action == connectors.ActionIgnore {
				continue
			}
			if !strings.HasPrefix(e.ExternalID, "github:"+host+":"+e.Kind+":") {
				t.Fatalf("Parse(%s).ExternalID = %q, Kind %q", event, e.ExternalID, e.Kind)
			}
			if e.EntityKey == "" || e.Source.Ref == "" || e.Repository == "" {
				t.Fatalf("Parse(%s) = %+v: missing EntityKey, Source.Ref or Repository", event, e)
			}
			if e.Action == connectors.ActionTransfer && e.PreviousExternalID == "" {
				t.Fatalf("Parse(%s): transfer without PreviousExternalID: %+v", event, e)
			}
			if (e.Kind == connectors.KindPullRequest) != (e.Contribution != nil) {
				t.Fatalf("Parse(%s): Kind %q with Contribution %v", event, e.Kind, e.Contribution)
			}
		}
	})
}

var fuzzSecrets = [][]byte{[]byte("current-secret"), []byte("previous-secret")}

// FuzzVerify: Verify never panics, answers only the verification errors,
// and accepts exactly the SHA-256 signatures of the body under a secret.
func FuzzVerify(f *testing.F) {
	body := []byte(`{"zen":"Design for failure."}`)
	f.Add("sha256="+connectors.HMACSHA256Hex(fuzzSecrets[0], body), "", body)
	f.Add("sha256="+connectors.HMACSHA256Hex(fuzzSecrets[1], body), "", body)
	f.Add("", "sha1=0000000000000000000000000000000000000000", body)
	f.Add("sha256=zz", "", []byte{})
	f.Fuzz(func(t *testing.T, sig256, sig1 string, body []byte) {
		h := http.Header{}
		h.Set(HeaderSignature256, sig256)
		h.Set(HeaderSignature, sig1)
		err := Adapter{}.Verify(h, body, fuzzSecrets)
		valid := false
		for _, s := range fuzzSecrets {
			if strings.EqualFold(strings.TrimSpace(sig256), "sha256="+connectors.HMACSHA256Hex(s, body)) {
				valid = true
			}
		}
		switch {
		case err == nil && !valid:
			t.Fatalf("Verify accepted %q", sig256)
		case err != nil && valid && strings.HasPrefix(strings.TrimSpace(sig256), "sha256="):
			t.Fatalf("Verify(%q) = %v, want nil", sig256, err)
		case err != nil && !errors.Is(err, connectors.ErrBadSignature) && !errors.Is(err, connectors.ErrMissingSignature) && !errors.Is(err, connectors.ErrUnsupportedSignature):
			t.Fatalf("Verify = %v, not a verification error", err)
		}
	})
}
