package github

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
	body := []byte(`{"zen":"x"}`)
	good := "sha256=" + connectors.HMACSHA256Hex(secret, body)
	forged := "sha256=" + connectors.HMACSHA256Hex([]byte("forged"), body)
	verify := func(h http.Header) error { return Adapter{}.Verify(h, body, [][]byte{secret}) }
	adaptertest.CheckEveryValueVerified(t, verify, HeaderSignature256, good, forged)
}
