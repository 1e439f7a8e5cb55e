package httpapi

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/store/storetest"
)

const goodToken = "a-good-admin-token-0123456789"

type tokenTable map[string]store.Token

func (t tokenTable) GetTokenBySHA256(_ context.Context, sha string) (store.Token, error) {
	if tok, ok := t[sha]; ok {
		return tok, nil
	}
	return store.Token{}, store.ErrNotFound
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newTestAuth(t *testing.T) (http.Handler, *storetest.Clock, *syncBuffer) {
	t.Helper()
	clock := storetest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), 0)
	logs := &syncBuffer{}
	tokens := tokenTable{HashToken(goodToken): {Name: "admin", Admin: true}}
	a := NewAuthenticator(tokens, slog.New(slog.NewTextHandler(logs, nil)), clock.Now)
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, _ := PrincipalFrom(r.Context())
		WriteJSON(w, http.StatusOK, map[string]string{"name": p.Name})
	})
	return a.Middleware(ok), clock, logs
}

func call(h http.Handler, addr, authorization string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodGet, "/api/v1/workspaces", nil)
	req.RemoteAddr = addr
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestBearerSchemeIsCaseInsensitive(t *testing.T) {
	t.Parallel()
	h, _, _ := newTestAuth(t)
	tests := []struct {
		header string
		want   int
	}{
		{"Bearer " + goodToken, http.StatusOK},
		{"bearer " + goodToken, http.StatusOK},
		{"BEARER " + goodToken, http.StatusOK},
		{"Bearer  " + goodToken + " ", http.StatusOK},
		{"Basic " + goodToken, http.StatusUnauthorized},
		{"Bearer", http.StatusUnauthorized},
		{"Bearer ", http.StatusUnauthorized},
		{goodToken, http.StatusUnauthorized},
		{"", http.StatusUnauthorized},
	}
	for _, tt := range tests {
		if rec := call(h, "192.0.2.1:1234", tt.header); rec.Code != tt.want {
			t.Errorf("Authorization %q: status %d, want %d", tt.header, rec.Code, tt.want)
		}
	}
}

func TestAuthenticationFailuresAreThrottledPerAddress(t *testing.T) {
	t.Parallel()
	h, clock, logs := newTestAuth(t)
	attacker, other := "198.51.100.7:5555", "203.0.113.9:6666"

	for i := range DefaultFailureBurst {
		if rec := call(h, attacker, "Bearer wrong-"+string(rune('a'+i))); rec.Code != http.StatusUnauthorized {
			t.Fatalf("failure %d: status %d, want 401", i, rec.Code)
		}
	}
	// Budget spent: failures are refused, missing and unknown tokens alike.
	for _, auth := range []string{"Bearer wrong", ""} {
		rec := call(h, attacker, auth)
		if rec.Code != http.StatusTooManyRequests {
			t.Fatalf("%q after %d failures: status %d, want 429", auth, DefaultFailureBurst, rec.Code)
		}
		if rec.Header().Get("Retry-After") == "" {
			t.Error("429 without Retry-After")
		}
	}
	// Another address is not affected.
	if rec := call(h, other, "Bearer wrong"); rec.Code != http.StatusUnauthorized {
		t.Errorf("other address: status %d, want 401", rec.Code)
	}
	// The bucket refills at the failure rate, and the next failure spends
	// it again: an address that keeps failing stays throttled.
	clock.Advance(time.Duration(float64(time.Second) / float64(DefaultFailureRate)))
	if rec := call(h, attacker, "Bearer wrong"); rec.Code != http.StatusUnauthorized {
		t.Errorf("after the refill interval: status %d, want 401", rec.Code)
	}
	if rec := call(h, attacker, "Bearer wrong"); rec.Code != http.StatusTooManyRequests {
		t.Errorf("failing again at once: status %d, want 429", rec.Code)
	}
	// One summary line for the whole burst, never the token.
	if n := strings.Count(logs.String(), "client_address=198.51.100.7 "); n != 1 {
		t.Errorf("%d log lines for one address's failures within a minute, want 1\n%s", n, logs)
	}
	if strings.Contains(logs.String(), "wrong") || strings.Contains(logs.String(), goodToken) {
		t.Errorf("log carries a token: %s", logs)
	}
}

// Anonymous and wrong requests from an address never lock out a valid
// token presented from it: only failures are throttled.
func TestValidTokenPassesAThrottledAddress(t *testing.T) {
	t.Parallel()
	h, _, _ := newTestAuth(t)
	const addr = "198.51.100.7:5555"
	for range DefaultFailureBurst + 5 {
		call(h, addr, "")
	}
	if rec := call(h, addr, ""); rec.Code != http.StatusTooManyRequests {
		t.Fatalf("anonymous request after %d: status %d, want 429", DefaultFailureBurst+5, rec.Code)
	}
	for _, auth := range []string{"Bearer " + goodToken, "bearer " + goodToken} {
		if rec := call(h, addr, auth); rec.Code != http.StatusOK {
			t.Errorf("%q from the throttled address: status %d, want 200", auth, rec.Code)
		}
	}
}

func TestClientAddressAggregatesIPv6(t *testing.T) {
	t.Parallel()
	tests := []struct{ remote, want string }{
		{"192.0.2.1:1234", "192.0.2.1"},
		{"[2001:db8:1:2:3:4:5:6]:443", "2001:db8:1:2::/64"},
		{"[2001:db8:1:2:ffff::1]:443", "2001:db8:1:2::/64"},
		{"[::ffff:192.0.2.1]:80", "192.0.2.1"},
		{"not-an-address", "not-an-address"},
	}
	for _, tt := range tests {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.RemoteAddr = tt.remote
		if got := ClientAddress(req); got != tt.want {
			t.Errorf("ClientAddress(%q) = %q, want %q", tt.remote, got, tt.want)
		}
	}
}
