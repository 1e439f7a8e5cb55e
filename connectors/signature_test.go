package connectors

import (
	"errors"
	"regexp"
	"testing"
)

func TestHMACSHA256Hex(t *testing.T) {
	t.Parallel()
	// RFC 4231, test case 2.
	got := HMACSHA256Hex([]byte("Jefe"), []byte("what do ya want for nothing?"))
	want := "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
	if got != want {
		t.Errorf("HMACSHA256Hex = %v, want %v", got, want)
	}
}

func TestVerifyHMACSHA256(t *testing.T) {
	t.Parallel()
	body := []byte(`{"hello":"world"}`)
	good := HMACSHA256Hex([]byte("current"), body)
	tests := []struct {
		name    string
		sig     string
		secrets [][]byte
		want    error
	}{
		{"good", good, [][]byte{[]byte("current")}, nil},
		{"upper-case hex", upper(good), [][]byte{[]byte("current")}, nil},
		{"rotation: second secret", good, [][]byte{[]byte("next"), []byte("current")}, nil},
		{"wrong secret", good, [][]byte{[]byte("other")}, ErrBadSignature},
		{"no secrets", good, nil, ErrBadSignature},
		{"empty secret never matches", HMACSHA256Hex(nil, body), [][]byte{{}}, ErrBadSignature},
		{"not hex", "zz" + good[2:], [][]byte{[]byte("current")}, ErrBadSignature},
		{"truncated", good[:40], [][]byte{[]byte("current")}, ErrBadSignature},
		{"empty", "", [][]byte{[]byte("current")}, ErrBadSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := VerifyHMACSHA256(tt.sig, body, tt.secrets); !errors.Is(got, tt.want) || (got == nil) != (tt.want == nil) {
				t.Errorf("VerifyHMACSHA256 = %v, want %v", got, tt.want)
			}
		})
	}
}

func upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'f' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

func TestEqualToken(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		token   string
		secrets [][]byte
		want    bool
	}{
		{"match", "s3cret", [][]byte{[]byte("s3cret")}, true},
		{"rotation", "old", [][]byte{[]byte("new"), []byte("old")}, true},
		{"mismatch", "s3cret", [][]byte{[]byte("other")}, false},
		{"prefix", "s3c", [][]byte{[]byte("s3cret")}, false},
		{"empty token", "", [][]byte{[]byte("s3cret")}, false},
		{"empty secret", "", [][]byte{{}}, false},
		{"no secrets", "s3cret", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := EqualToken(tt.token, tt.secrets); got != tt.want {
				t.Errorf("EqualToken(%q) = %v, want %v", tt.token, got, tt.want)
			}
		})
	}
}

func TestBodyDeliveryKey(t *testing.T) {
	t.Parallel()
	got := BodyDeliveryKey(nil)
	want := "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	if got != want {
		t.Errorf("BodyDeliveryKey(nil) = %v, want %v", got, want)
	}
	if a, b := BodyDeliveryKey([]byte("a")), BodyDeliveryKey([]byte("b")); a == b {
		t.Errorf("BodyDeliveryKey(a) = BodyDeliveryKey(b) = %v", a)
	}
}

func TestNewUUID(t *testing.T) {
	t.Parallel()
	re := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	seen := make(map[string]bool)
	for range 100 {
		u := NewUUID()
		if !re.MatchString(u) {
			t.Fatalf("NewUUID() = %q, not a version 4 UUID", u)
		}
		if seen[u] {
			t.Fatalf("NewUUID() repeated %q", u)
		}
		seen[u] = true
	}
}
