package jira

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/trackergateway/gateway/connectors"
	"github.com/trackergateway/gateway/connectors/adaptertest"
)

// FuzzParse: Parse never panics and keeps the adapter contract
// (adaptertest.CheckParsed); a Jira issue's entity is its external ID.
func FuzzParse(f *testing.F) {
	adaptertest.AddFixtures(f, fixtureDir)
	f.Fuzz(func(t *testing.T, body []byte) {
		e, err := Adapter{}.Parse(site, http.Header{}, body)
		adaptertest.CheckParsed(t, connectors.ProviderJira, site, "jira", e, err)
		if err == nil && e.Action != connectors.ActionIgnore && e.EntityKey != e.ExternalID {
			t.Fatalf("Parse: ExternalID %q, EntityKey %q", e.ExternalID, e.EntityKey)
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
