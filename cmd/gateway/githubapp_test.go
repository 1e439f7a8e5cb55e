package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// testAppID is the GitHub App of the App connection in the tests.
const testAppID = 4242

// testAppKey is the App's private key (2048-bit RSA, generated once).
var testAppKey = sync.OnceValue(func() *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	return k
})

func testAppKeyPEM() string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(testAppKey())}))
}

// appConfig is the test configuration plus a GitHub App connection "gh-app"
// in the same workspace as the github connection, its API at apiURL, its
// key in keyFile.
func appConfig(t *testing.T, apiURL, keyFile string) string {
	t.Helper()
	cfg := testConfig + fmt.Sprintf(`  - id: gh-app
    provider: github
    host: github.com
    workspace: eng
    step: backlog
    secrets: ["%s"]
    api_url: %s/
    app: {id: %d, private_key_file: %s}
`, githubAppSecret, apiURL, testAppID, keyFile)
	path := filepath.Join(t.TempDir(), "app.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// githubAppSecret is the App's webhook secret.
const githubAppSecret = "e2e-github-app-webhook-secret"

func writeKeyFile(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "app.pem")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// A key that does not load stops the start before anything is generated,
// with an error that names the connection and the problem, never the key.
func TestAppKeyErrorsStopTheStart(t *testing.T) {
	t.Parallel()
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ecDER, err := x509.MarshalPKCS8PrivateKey(ec)
	if err != nil {
		t.Fatal(err)
	}
	ecPEM := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: ecDER}))
	tests := []struct {
		name, keyFile string
		want          string
	}{
		{"missing", filepath.Join(t.TempDir(), "absent.pem"), "no such file or directory"},
		{"not PEM", writeKeyFile(t, "ghp_not_a_key\n"), "not a PEM private key"},
		{"not RSA", writeKeyFile(t, ecPEM), "ECDSA key, not RSA"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out, errOut bytes.Buffer
			code := Main(context.Background(), []string{"serve", "--listen", "127.0.0.1:0", "--database-url", newDatabaseURL(t, "sqlite"),
				"--config", appConfig(t, "http://127.0.0.1:1", tc.keyFile)}, noEnv, &out, &errOut)
			if code == 0 {
				t.Fatalf("serve started with a bad App key; stdout %q", out.String())
			}
			for _, want := range []string{`connection "gh-app"`, "private_key_file", tc.want} {
				if !strings.Contains(errOut.String(), want) {
					t.Errorf("stderr %q does not contain %q", errOut.String(), want)
				}
			}
			if strings.Contains(out.String(), "generated") {
				t.Errorf("a start refused for its App key printed one-time secrets: %q", out.String())
			}
			if strings.Contains(errOut.String(), "MII") {
				t.Errorf("stderr quotes key material: %q", errOut.String())
			}
		})
	}
}

// An App GitHub refuses is logged at start-up, naming the connection; the
// key is never logged.
func TestRefusedAppIsLoggedAtStart(t *testing.T) {
	t.Parallel()
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"message": "Integration not found"}`)
	}))
	t.Cleanup(api.Close)
	keyPEM := testAppKeyPEM()
	cfg := appConfig(t, api.URL, writeKeyFile(t, keyPEM))
	logs := startGateway(t, newDatabaseURL(t, "sqlite"), "--config", cfg).logs
	poll(t, "the refused App's log line", waitTimeout, func() bool {
		s := logs.String()
		return strings.Contains(s, `"msg":"github app not usable"`) && strings.Contains(s, `"connection":"gh-app"`) &&
			strings.Contains(s, "GitHub refused App 4242")
	})
	body := strings.Split(keyPEM, "\n")[3]
	if strings.Contains(logs.String(), body) {
		t.Error("the logs quote the App's private key")
	}
}
