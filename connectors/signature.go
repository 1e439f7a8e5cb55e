package connectors

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"strings"
)

// This file holds what the provider adapters share for webhook
// authentication and delivery identity: HMAC signatures, plain-token
// comparison, body hashing and random delivery identifiers.

// HMACSHA256Hex returns the lowercase hex HMAC-SHA256 of body keyed by secret,
// the signature format GitHub and Jira put after "sha256=".
func HMACSHA256Hex(secret, body []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	return hex.EncodeToString(mac.Sum(nil))
}

// VerifyHMACSHA256 checks that sigHex is the hex HMAC-SHA256 of body under one
// of secrets. Every secret is tried (no early exit) and each comparison is
// constant time (hmac.Equal). Empty secrets never match: a key of length zero
// is public knowledge. A signature that is not valid hex, or has the wrong
// length, is ErrBadSignature.
func VerifyHMACSHA256(sigHex string, body []byte, secrets [][]byte) error {
	got, err := hex.DecodeString(sigHex)
	if err != nil || len(got) != sha256.Size {
		return ErrBadSignature
	}
	matched := false
	for _, secret := range secrets {
		if len(secret) == 0 {
			continue
		}
		mac := hmac.New(sha256.New, secret)
		mac.Write(body)
		if hmac.Equal(got, mac.Sum(nil)) {
			matched = true
		}
	}
	if !matched {
		return ErrBadSignature
	}
	return nil
}

// EqualToken reports whether token equals one of secrets (GitLab's plain
// X-Gitlab-Token). It compares the SHA-256 digests of both sides with
// subtle.ConstantTimeCompare, so neither the content nor the length of a
// secret leaks through timing. Empty tokens and empty secrets never match.
func EqualToken(token string, secrets [][]byte) bool {
	if token == "" {
		return false
	}
	got := sha256.Sum256([]byte(token))
	matched := false
	for _, secret := range secrets {
		if len(secret) == 0 {
			continue
		}
		want := sha256.Sum256(secret)
		if subtle.ConstantTimeCompare(got[:], want[:]) == 1 {
			matched = true
		}
	}
	return matched
}

// BodyDeliveryKey is the delivery key used when the provider sends no
// delivery identity: "sha256:" and the hex SHA-256 of the raw body, so that a
// byte-identical resend is recognized as a duplicate.
func BodyDeliveryKey(body []byte) string {
	sum := sha256.Sum256(body)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// NewUUID returns a random (version 4) UUID in its canonical textual form,
// the shape of GitHub's X-GitHub-Delivery GUIDs and of GitLab's and
// Atlassian's delivery identifiers. Used by the adapters' Sign.
func NewUUID() string {
	var b [16]byte
	// Since Go 1.24 crypto/rand.Read never returns an error (it crashes the
	// program if the system's randomness source fails).
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40 // version 4
	b[8] = b[8]&0x3f | 0x80 // RFC 4122 variant
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// VerifyError is a failed verification as the sender is told it: which
// header or member failed and how. Its Reason is built from header names
// and fixed words only, never a secret, an expected value or the value
// received, so the receiver can answer it in the 401.
type VerifyError struct {
	// Err is ErrMissingSignature, ErrBadSignature, ErrUnsupportedSignature
	// or ErrStaleTimestamp.
	Err    error
	Reason string
}

func (e *VerifyError) Error() string { return e.Reason }

func (e *VerifyError) Unwrap() error { return e.Err }

// MissingSignature: none of headers (the ones the provider signs in) was
// sent, or only empty.
func MissingSignature(headers ...string) error {
	return &VerifyError{Err: ErrMissingSignature, Reason: "missing signature: no " + strings.Join(headers, " or ") + " header"}
}

// SignatureMismatch: header was sent, but is not the signature (or token)
// of the body under any of the connection's secrets.
func SignatureMismatch(header string) error {
	return &VerifyError{Err: ErrBadSignature, Reason: "signature mismatch: " + header + " does not match the body under the connection's secrets"}
}

// UnsupportedSignature: the request is signed only in header, with a method
// the gateway does not accept; want is the header it needs.
func UnsupportedSignature(header, want string) error {
	return &VerifyError{Err: ErrUnsupportedSignature, Reason: "unsupported signature: " + header + " is not accepted; " + want + " is required"}
}

// SignatureValues returns every non-empty value of header, trimmed, one per
// field line: a request may repeat a header, and every signature it carries
// must verify, so that a good one cannot carry a forged other.
func SignatureValues(header http.Header, name string) []string {
	var out []string
	for _, v := range header.Values(name) {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}
