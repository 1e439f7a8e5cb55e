package gitlab

import (
	"net/http"
	"testing"

	"github.com/trackergateway/gateway/connectors/adaptertest"
)

// TestVerifyEveryValue: a forged signature cannot ride along with a good
// one, whether in a second value of the header or before it.
func TestVerifyEveryValue(t *testing.T) {
	t.Parallel()
	secret := []byte("current-secret")
	verify := func(h http.Header) error { return Adapter{}.Verify(h, nil, [][]byte{secret}) }
	adaptertest.CheckEveryValueVerified(t, verify, HeaderToken, string(secret), "forged")
}
