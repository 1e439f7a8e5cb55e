package outbound

import (
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/trackergateway/gateway/internal/store"
)

func TestNewSecret(t *testing.T) {
	t.Parallel()
	a, b := NewSecret(), NewSecret()
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(a, "whsec_"))
	if !strings.HasPrefix(a, "whsec_") || err != nil || len(raw) != 32 {
		t.Errorf("secret %q: want whsec_ and the base64 of 32 bytes (%d bytes, %v)", a, len(raw), err)
	}
	if a == b {
		t.Error("two secrets are equal")
	}
}

// verify checks a signed request with the Standard Webhooks library, as a
// receiver holding secret would.
func verify(t *testing.T, secret string, s Signed, body []byte) error {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{}
	h.Set("webhook-id", s.ID)
	h.Set("webhook-timestamp", s.Timestamp)
	h.Set("webhook-signature", s.Signature)
	return wh.Verify(body, h)
}

func TestSignAndRotation(t *testing.T) {
	t.Parallel()
	old, current := NewSecret(), NewSecret()
	now := time.Now().UTC()
	expires := now.Add(RotationOverlap)
	sub := store.Subscription{ID: "sub_1", Secret: current, PreviousSecret: old, PreviousSecretExpiresAt: &expires}
	body := []byte(`{"id":"evt_0000000000000001"}`)

	during, err := Sign(sub, "evt_0000000000000001", now, body)
	if err != nil {
		t.Fatal(err)
	}
	if during.ID != "evt_0000000000000001" || len(strings.Fields(during.Signature)) != 2 {
		t.Fatalf("signed during the overlap = %+v, want two signatures", during)
	}
	for name, secret := range map[string]string{"new": current, "old": old} {
		if err := verify(t, secret, during, body); err != nil {
			t.Errorf("during the overlap the %s secret does not verify: %v", name, err)
		}
	}
	if err := verify(t, NewSecret(), during, body); !errors.Is(err, standardwebhooks.ErrNoMatchingSignature) {
		t.Errorf("another secret verifies: %v", err)
	}
	if err := verify(t, current, during, []byte(`{"id":"tampered"}`)); err == nil {
		t.Error("a changed body verifies")
	}

	// Once the overlap is over, only the new secret signs. (The library
	// checks the timestamp against the wall clock, so this attempt is
	// signed now, with the overlap ended an hour ago.)
	ended := now.Add(-time.Hour)
	sub.PreviousSecretExpiresAt = &ended
	after, err := Sign(sub, "evt_0000000000000001", now, body)
	if err != nil {
		t.Fatal(err)
	}
	if len(strings.Fields(after.Signature)) != 1 {
		t.Errorf("after the overlap: %q, want one signature", after.Signature)
	}
	if err := verify(t, current, after, body); err != nil {
		t.Errorf("after the overlap the new secret does not verify: %v", err)
	}
	if err := verify(t, old, after, body); !errors.Is(err, standardwebhooks.ErrNoMatchingSignature) {
		t.Errorf("after the overlap the old secret verifies: %v", err)
	}
	if _, err := Sign(store.Subscription{ID: "sub_2", Secret: "whsec_!!"}, "evt_1", now, body); err == nil || strings.Contains(err.Error(), "!!") {
		t.Errorf("a malformed secret = %v, want an error that does not show it", err)
	}
}

func TestNextRetry(t *testing.T) {
	t.Parallel()
	schedule := []time.Duration{5 * time.Second, 5 * time.Minute, 30 * time.Minute}
	for attempts, want := range schedule {
		for range 50 {
			got, ok := nextRetry(schedule, attempts+1, 0)
			if !ok || got < want*9/10 || got > want*11/10 {
				t.Fatalf("after attempt %d: %v, %t; want %v ± 10%%", attempts+1, got, ok, want)
			}
		}
	}
	if _, ok := nextRetry(schedule, 4, 0); ok {
		t.Error("a retry after the last scheduled attempt")
	}
	if got, ok := nextRetry(schedule, 1, 90*time.Second); !ok || got != 90*time.Second {
		t.Errorf("with Retry-After 90s: %v, %t", got, ok)
	}
	if got, _ := nextRetry(schedule, 1, 5*time.Hour); got != time.Hour {
		t.Errorf("with Retry-After 5h: %v, want the 1h cap", got)
	}
}

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		header string
		want   time.Duration
	}{
		{"", 0},
		{"120", 2 * time.Minute},
		{"0", 0},
		{"-5", 0},
		{"7200", time.Hour},
		{now.Add(10 * time.Minute).Format(http.TimeFormat), 10 * time.Minute},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0},
		{"soon", 0},
	}
	for _, tc := range tests {
		if got := parseRetryAfter(tc.header, now); got != tc.want {
			t.Errorf("parseRetryAfter(%q) = %v, want %v", tc.header, got, tc.want)
		}
	}
}
