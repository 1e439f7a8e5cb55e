package providerapi

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trackergateway/gateway/internal/config"
	"github.com/trackergateway/gateway/internal/providerapi/githubapptest"
)

func pkcs8PEM(t *testing.T, k any) string {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
}

// fakeGitHubApp is GitHub's side of an App: it checks every JWT (RS256,
// signed by the App's key, iss = the App ID, expiring within ten minutes)
// and exchanges it for installation tokens, which the repository routes
// then require.
type fakeGitHubApp struct {
	t         *testing.T
	appID     int64
	tokenLife time.Duration

	mu        sync.Mutex
	exchanges map[int64]int // installation → tokens issued
	badJWTs   []string
}

func newFakeGitHubApp(t *testing.T, appID int64) (*fakeGitHubApp, *httptest.Server) {
	f := &fakeGitHubApp{t: t, appID: appID, tokenLife: time.Hour, exchanges: map[int64]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /app", func(w http.ResponseWriter, r *http.Request) {
		if !f.checkJWT(w, r) {
			return
		}
		fmt.Fprintf(w, `{"id": %d, "slug": "tracker-gateway"}`, f.appID)
	})
	mux.HandleFunc("GET /repos/{owner}/{repo}/installation", func(w http.ResponseWriter, r *http.Request) {
		if !f.checkJWT(w, r) {
			return
		}
		fmt.Fprint(w, `{"id": 7, "account": {"login": "acme"}}`)
	})
	mux.HandleFunc("POST /app/installations/{id}/access_tokens", func(w http.ResponseWriter, r *http.Request) {
		if !f.checkJWT(w, r) {
			return
		}
		id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
		f.mu.Lock()
		f.exchanges[id]++
		n := f.exchanges[id]
		f.mu.Unlock()
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"token": "ghs_inst%d_%d", "expires_at": %q}`, id, n, time.Now().Add(f.tokenLife).UTC().Format(time.RFC3339))
	})
	mux.HandleFunc("GET /repos/{owner}/{repo}/pulls/{n}", func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.Header.Get("Authorization"), "token ghs_inst7_") {
			http.Error(w, `{"message": "Bad credentials"}`, http.StatusUnauthorized)
			return
		}
		fmt.Fprint(w, `{"id": 99, "number": 1, "title": "Fix it"}`)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return f, srv
}

func (f *fakeGitHubApp) checkJWT(w http.ResponseWriter, r *http.Request) bool {
	if err := githubapptest.CheckJWT(r.Header.Get("Authorization"), f.appID); err != nil {
		f.mu.Lock()
		f.badJWTs = append(f.badJWTs, err.Error())
		f.mu.Unlock()
		http.Error(w, `{"message": "A JSON web token could not be decoded"}`, http.StatusUnauthorized)
		return false
	}
	return true
}

func (f *fakeGitHubApp) exchangesOf(id int64) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.exchanges[id]
}

func appConnection(apiURL string, app config.App) config.Connection {
	return config.Connection{ID: "gh-app", Provider: "github", Host: "github.com", APIURL: apiURL, App: &app}
}

func loadApp(t *testing.T, conn config.Connection) *GitHubApp {
	t.Helper()
	apps, err := LoadGitHubApps([]config.Connection{conn}, http.DefaultClient, nil, os.ReadFile)
	if err != nil {
		t.Fatalf("LoadGitHubApps: %v", err)
	}
	return apps.For(conn.ID)
}

// The App signs a JWT GitHub accepts, exchanges it for an installation
// token per installation, and calls the repository API with that token.
func TestGitHubAppJWTAndInstallationToken(t *testing.T) {
	t.Parallel()
	fake, srv := newFakeGitHubApp(t, 42)
	app := loadApp(t, appConnection(srv.URL+"/", config.App{ID: 42, PrivateKey: githubapptest.KeyPEM()}))
	ctx := context.Background()

	slug, err := app.Check(ctx)
	if err != nil || slug != "tracker-gateway" {
		t.Fatalf("Check = %q, %v; want tracker-gateway (bad JWTs: %v)", slug, err, fake.badJWTs)
	}
	for range 3 {
		client, _, err := app.RepositoryClient(ctx, "acme", "api", time.Now())
		if err != nil {
			t.Fatalf("RepositoryClient: %v (bad JWTs: %v)", err, fake.badJWTs)
		}
		pr, _, err := client.PullRequests.Get(ctx, "acme", "api", 1)
		if err != nil || pr.GetID() != 99 {
			t.Fatalf("PullRequests.Get = %v, %v", pr, err)
		}
	}
	if got := fake.exchangesOf(7); got != 1 {
		t.Errorf("installation tokens issued = %d, want 1 (a token is reused until a minute before it expires)", got)
	}
	if len(fake.badJWTs) > 0 {
		t.Errorf("GitHub refused JWTs: %v", fake.badJWTs)
	}
}

// A token that expires within a minute is exchanged again before use.
func TestGitHubAppRefreshesTokensBeforeExpiry(t *testing.T) {
	t.Parallel()
	fake, srv := newFakeGitHubApp(t, 42)
	fake.tokenLife = 30 * time.Second
	app := loadApp(t, appConnection(srv.URL, config.App{ID: 42, PrivateKey: githubapptest.KeyPEM()}))
	ctx := context.Background()
	for range 2 {
		if _, _, err := app.InstallationClient(7).PullRequests.Get(ctx, "acme", "api", 1); err != nil {
			t.Fatalf("PullRequests.Get: %v", err)
		}
	}
	if got := fake.exchangesOf(7); got != 2 {
		t.Errorf("installation tokens issued = %d, want 2 (each expired within the refresh margin)", got)
	}
}

// An App ID GitHub does not know (or a key that is not the App's) is an
// error naming the App, at the check and at the token exchange.
func TestGitHubAppRefused(t *testing.T) {
	t.Parallel()
	_, srv := newFakeGitHubApp(t, 42)
	app := loadApp(t, appConnection(srv.URL, config.App{ID: 43, PrivateKey: githubapptest.KeyPEM()}))
	ctx := context.Background()
	if _, err := app.Check(ctx); err == nil || !strings.Contains(err.Error(), "GitHub refused App 43's credentials") {
		t.Errorf("Check error = %v, want the App refused", err)
	}
	if _, _, err := app.RepositoryClient(ctx, "acme", "api", time.Now()); err == nil || !strings.Contains(err.Error(), "GitHub refused App 43's credentials") {
		t.Errorf("RepositoryClient error = %v, want the App refused", err)
	}
	if _, _, err := app.InstallationClient(7).PullRequests.Get(ctx, "acme", "api", 1); err == nil {
		t.Error("a call as an installation of a refused App succeeded")
	}
}

// Keys in every form GitHub hands out or a deployment passes them load;
// anything else is an error that names the problem and never the key.
func TestLoadAppKey(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pkcs1 := githubapptest.KeyPEM()
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// The body of the key, which no error may quote.
	secretPart := strings.Split(pkcs1, "\n")[5]
	tests := []struct {
		name    string
		app     config.App
		wantErr []string // nil: loads
	}{
		{name: "PKCS #1 file", app: config.App{ID: 1, PrivateKeyFile: write("app.pem", pkcs1)}},
		{name: "PKCS #8 inline", app: config.App{ID: 1, PrivateKey: pkcs8PEM(t, githubapptest.Key())}},
		{name: "line breaks folded into spaces", app: config.App{ID: 1, PrivateKey: strings.Join(strings.Fields(strings.ReplaceAll(pkcs1, "-----\n", "----- ")), " ")}},
		{name: "literal \\n", app: config.App{ID: 1, PrivateKey: strings.ReplaceAll(pkcs1, "\n", `\n`)}},
		{name: "missing file", app: config.App{ID: 1, PrivateKeyFile: filepath.Join(dir, "absent.pem")},
			wantErr: []string{"private_key_file", "no such file"}},
		{name: "directory", app: config.App{ID: 1, PrivateKeyFile: dir}, wantErr: []string{"private_key_file", "is a directory"}},
		{name: "not PEM", app: config.App{ID: 1, PrivateKey: "ghp_0123456789"}, wantErr: []string{"private_key", "not a PEM private key"}},
		{name: "a certificate", app: config.App{ID: 1, PrivateKey: "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"},
			wantErr: []string{"not a private key"}},
		{name: "EC key", app: config.App{ID: 1, PrivateKey: pkcs8PEM(t, ec)}, wantErr: []string{"ECDSA key, not RSA"}},
		{name: "damaged body", app: config.App{ID: 1, PrivateKey: strings.Replace(pkcs1, secretPart, secretPart[:20]+"!!"+secretPart[22:], 1)},
			wantErr: []string{"private_key"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			conn := appConnection("", tc.app)
			_, err := LoadGitHubApps([]config.Connection{conn}, http.DefaultClient, nil, os.ReadFile)
			if tc.wantErr == nil {
				if err != nil {
					t.Fatalf("LoadGitHubApps: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("LoadGitHubApps succeeded, want an error containing %q", tc.wantErr)
			}
			for _, w := range append(tc.wantErr, `connection "gh-app"`) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if strings.Contains(err.Error(), secretPart[:16]) {
				t.Errorf("error quotes the key: %q", err)
			}
		})
	}
}

// A fake whose JSON the tests read must be valid JSON: a guard for the
// handlers above.
func TestFakeGitHubAppAnswersJSON(t *testing.T) {
	t.Parallel()
	_, srv := newFakeGitHubApp(t, 42)
	resp, err := http.Get(srv.URL + "/repos/acme/api/pulls/1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("unauthenticated pull request read = %d, %v; want 401 with a JSON message", resp.StatusCode, err)
	}
}

// Neither the App's JWT nor an installation token is sent to another host
// than the API's: a redirect there is refused before anything is sent.
func TestGitHubAppRedirectToAnotherHostIsRefused(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var foreign []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		foreign = append(foreign, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization"))
		mu.Unlock()
	}))
	t.Cleanup(other.Close)
	fake, srv := newFakeGitHubApp(t, 42)
	_ = fake
	redirecting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/app" || strings.HasPrefix(r.URL.Path, "/repos/acme/api/pulls/") {
			http.Redirect(w, r, other.URL+r.URL.Path, http.StatusTemporaryRedirect)
			return
		}
		// The rest (the token exchange) is the App's real API.
		req, _ := http.NewRequestWithContext(r.Context(), r.Method, srv.URL+r.URL.Path, r.Body)
		req.Header = r.Header.Clone()
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	}))
	t.Cleanup(redirecting.Close)
	app := loadApp(t, appConnection(redirecting.URL, config.App{ID: 42, PrivateKey: githubapptest.KeyPEM()}))
	ctx := context.Background()
	if _, err := app.Check(ctx); !errors.Is(err, ErrForeignHost) {
		t.Errorf("Check error = %v, want ErrForeignHost", err)
	}
	if _, _, err := app.InstallationClient(7).PullRequests.Get(ctx, "acme", "api", 1); !errors.Is(err, ErrForeignHost) {
		t.Errorf("PullRequests.Get error = %v, want ErrForeignHost", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(foreign) > 0 {
		t.Errorf("the other host received %q", foreign)
	}
}
