// Package githubapptest holds what tests of GitHub App connections share:
// one App private key per test binary, and GitHub's check of the JWT an
// App signs with it.
package githubapptest

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v4"
)

// Key is the App's private key: 2048-bit RSA, generated once per test
// binary (it takes a moment).
var Key = sync.OnceValue(func() *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	return k
})

// KeyPEM is Key as GitHub hands it out: PKCS #1 PEM.
func KeyPEM() string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(Key())}))
}

// CheckJWT checks an Authorization header as GitHub does for App appID: a
// bearer JWT signed RS256 with Key, issued by the App ID, not issued in
// the future and expiring within ten minutes.
func CheckJWT(authorization string, appID int64) error {
	raw, ok := strings.CutPrefix(authorization, "Bearer ")
	if !ok {
		return errors.New("no bearer JWT")
	}
	var claims jwt.RegisteredClaims
	if _, err := jwt.ParseWithClaims(raw, &claims, func(tok *jwt.Token) (any, error) {
		if tok.Method != jwt.SigningMethodRS256 {
			return nil, fmt.Errorf("alg %v, want RS256", tok.Header["alg"])
		}
		return &Key().PublicKey, nil
	}); err != nil {
		return err
	}
	switch {
	case claims.Issuer != strconv.FormatInt(appID, 10):
		return fmt.Errorf("iss %q, want %d", claims.Issuer, appID)
	case claims.ExpiresAt == nil || time.Until(claims.ExpiresAt.Time) > 10*time.Minute:
		return fmt.Errorf("exp %v is more than ten minutes away", claims.ExpiresAt)
	case claims.IssuedAt == nil || claims.IssuedAt.After(time.Now().Add(time.Minute)):
		return fmt.Errorf("iat %v is in the future", claims.IssuedAt)
	}
	return nil
}
