package gitea

import (
	"net/http"
	"testing"

	"github.com/trackergateway/gateway/connectors"
	"github.com/trackergateway/gateway/connectors/adaptertest"
)

// TestVerifyEveryValue: a forged signature cannot ride along with a good
// one, whether in a second value of the header or before it.
func TestVerifyEveryValue(t *testing.T) {
	t.Parallel()
	secret := []byte("current-secret")
	body := []byte(`{"action":"opened"}`)
	good := connectors.HMACSHA256Hex(secret, body)
	forged := connectors.HMACSHA256Hex([]byte("forged"), body)
	verify := func(h http.Header) error { return Adapter{}.Verify(h, body, [][]byte{secret}) }
	adaptertest.CheckEveryValueVerified(t, verify, HeaderSignature, good, forged)
	adaptertest.CheckEveryValueVerified(t, verify, HeaderForgejoSignature, good, forged)
	// A good X-Gitea-Signature beside a forged X-Forgejo-Signature, and the
	// forged one as a second value of X-Forgejo-Signature after an empty one.
	for _, forgejo := range [][]string{{forged}, {"", forged}, {good, forged}} {
		h := http.Header{}
		h.Set(HeaderSignature, good)
		for _, v := range forgejo {
			h.Add(HeaderForgejoSignature, v)
		}
		if err := verify(h); err == nil {
			t.Errorf("Verify with X-Forgejo-Signature %q beside a good X-Gitea-Signature = nil, want an error", forgejo)
		}
	}
}
