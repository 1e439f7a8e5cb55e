package gitlab

import (
	"encoding/json"
	"errors"
	"net/http"
	"testing"

	"github.com/trackergateway/gateway/connectors"
	"github.com/trackergateway/gateway/connectors/adaptertest"
)

// FuzzParse: Parse never panics, keeps the adapter contract
// (adaptertest.CheckParsed) for every event type, and never maps a body to
// an entity of another kind than its header names.
func FuzzParse(f *testing.F) {
	adaptertest.AddFixtures(f, fixtureDir)
	f.Fuzz(func(t *testing.T, body []byte) {
		var probe struct {
			ObjectKind string `json:"object_kind"`
		}
		_ = json.Unmarshal(body, &probe)
		for _, event := range []string{"Issue Hook", "Merge Request Hook", "Note Hook", ""} {
			e, err := Adapter{}.Parse(host, headerFor(event), body)
			adaptertest.CheckParsed(t, connectors.ProviderGitLab, host, event, e, err)
			// The entity kinds are spelled as GitLab's object kinds.
			if err == nil && e.Action != connectors.ActionIgnore && e.Kind != probe.ObjectKind {
				t.Fatalf("Parse(%q) of an object_kind %q body = a %q event", event, probe.ObjectKind, e.Kind)
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
