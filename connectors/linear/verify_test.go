package linear

import (
	"net/http"
	"testing"
	"time"

	"github.com/trackergateway/gateway/connectors"
	"github.com/trackergateway/gateway/connectors/adaptertest"
)

// TestVerifyEveryValue: a forged signature cannot ride along with a good
// one, whether in a second value of the header or before it.
func TestVerifyEveryValue(t *testing.T) {
	t.Parallel()
	secret := []byte("current-secret")
	body := []byte(`{"type":"Issue","webhookTimestamp":1772442000123}`)
	good := connectors.HMACSHA256Hex(secret, body)
	forged := connectors.HMACSHA256Hex([]byte("forged"), body)
	verify := func(h http.Header) error {
		return Adapter{Now: func() time.Time { return fixedClock }}.Verify(h, body, [][]byte{secret})
	}
	adaptertest.CheckEveryValueVerified(t, verify, HeaderSignature, good, forged)
}
