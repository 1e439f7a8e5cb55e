package outbound

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/trackergateway/gateway/internal/store"
)

// secretPrefix starts every subscription secret (Standard Webhooks).
const secretPrefix = "whsec_"

// RotationOverlap is how long the previous secret keeps signing beside the
// new one after a rotation, so receivers can switch without a gap.
const RotationOverlap = 24 * time.Hour

// NewSecret returns a new subscription secret: "whsec_" and the base64 of
// 32 random bytes.
func NewSecret() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // never fails since Go 1.24
	return secretPrefix + base64.StdEncoding.EncodeToString(b[:])
}

// Signed are the Standard Webhooks headers of one attempt.
type Signed struct {
	ID        string // webhook-id: the event id, the same on every attempt
	Timestamp string // webhook-timestamp: this attempt's unix seconds
	Signature string // webhook-signature: "v1,<base64>", one per secret, space-separated
}

// Sign signs body for an attempt at now with the subscription's secret and,
// until it expires, the previous one (a rotation).
func Sign(sub store.Subscription, id string, now time.Time, body []byte) (Signed, error) {
	secrets := []string{sub.Secret}
	if sub.PreviousSecret != "" && sub.PreviousSecretExpiresAt != nil && now.Before(*sub.PreviousSecretExpiresAt) {
		secrets = append(secrets, sub.PreviousSecret)
	}
	sigs := make([]string, 0, len(secrets))
	for _, secret := range secrets {
		wh, err := standardwebhooks.NewWebhook(secret)
		if err != nil {
			// Never the secret itself in an error.
			return Signed{}, fmt.Errorf("subscription %s: a signing secret is not whsec_ and base64", sub.ID)
		}
		sig, err := wh.Sign(id, now, body)
		if err != nil {
			return Signed{}, fmt.Errorf("sign: %w", err)
		}
		sigs = append(sigs, sig)
	}
	return Signed{ID: id, Timestamp: strconv.FormatInt(now.Unix(), 10), Signature: strings.Join(sigs, " ")}, nil
}
