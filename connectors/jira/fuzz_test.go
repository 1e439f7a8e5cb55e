package jira

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
		e, err := Adapter{}.Parse(site, http.Header{}, body)
		if err != nil {
			if !errors.Is(err, connectors.ErrMalformedPayload) {
				t.Fatalf("Parse error %v does not wrap ErrMalformedPayload", err)
			}
			return
		}
		if e.Provider != connectors.ProviderJira || e.EventName == "" {
			t.Fatalf("Parse = %+v: Provider or EventName wrong", e)
		}
		if e.Action == connectors.ActionIgnore {
			return
		}
		if !strings.HasPrefix(e.ExternalID, "jira:"+site+":issue:") || e.EntityKey != e.ExternalID {
			t.Fatalf("Parse: ExternalID %q, EntityKey %q", e.ExternalID, e.EntityKey)
		}
		if e.Source.Ref == "" || e.Repository == "" {
			t.Fatalf("Parse = %+v: missing Source.Ref or Repository", e)
		}
	})
}

var fuzzSecrets = [][]byte{[]byte("current-secret"), []byte("previous-secret")}

// FuzzVerify: Verify never panics, answers only the verification errors,
// and accepts exactly the SHA-256 signatures of the body under a secret.
func FuzzVerify(f *testing.F) {
	body := []byte(`{"webhookEvent":"jira:issue_created"}`)
	f.Add("sha256="+connectors.HMACSHA256Hex(fuzzSecrets[0], body), body)
	f.Add("sha256="+connectors.HMACSHA256Hex(fuzzSecrets[1], body), body)
	f.Add("sha1=0000000000000000000000000000000000000000", body)
	f.Add("", []byte{})
	f.Fuzz(func(t *testing.T, sig string, body []byte) {
		h := http.Header{}
		h.Set(HeaderSignature, sig)
		err := Adapter{}.Verify(h, body, fuzzSecrets)
		method, hexSig, _ := strings.Cut(strings.TrimSpace(sig), "=")
		valid := false
		if strings.EqualFold(strings.TrimSpace(method), "sha256") {
			for _, s := range fuzzSecrets {
				if strings.EqualFold(strings.TrimSpace(hexSig), connectors.HMACSHA256Hex(s, body)) {
					valid = true
				}
			}
		}
		switch {
		case err == nil && !valid:
			t.Fatalf("Verify accepted %q", sig)
		case err != nil && valid:
			t.Fatalf("Verify(%q) = %v, want nil", sig, err)
		case err != nil && !errors.Is(err, connectors.ErrBadSignature) && !errors.Is(err, connectors.ErrMissingSignature) && !errors.Is(err, connectors.ErrUnsupportedSignature):
			t.Fatalf("Verify = %v, not a verification error", err)
		}
	})
}
