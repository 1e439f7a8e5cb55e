package providerapi

import (
	"context"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	gh "github.com/google/go-github/v62/github"

	"github.com/trackergateway/gateway/connectors"
	"github.com/trackergateway/gateway/internal/config"
	"github.com/trackergateway/gateway/internal/metrics"
)

// GitHubApps holds the credentials of every GitHub App connection, loaded
// once at start-up: the App's private key signs the JWT (RS256, iss = App
// ID, valid two minutes) that GitHub's /app endpoints take, and the
// installation tokens the other endpoints take are exchanged with it per
// installation and refreshed a minute before they expire
// (ghinstallation). Nothing here ever prints the key.
type GitHubApps struct {
	apps map[string]*GitHubApp // by connection ID
}

// LoadGitHubApps reads and checks the private key of each App connection
// (readFile reads private_key_file). The error names the connection and
// what is wrong with its key, never the key.
func LoadGitHubApps(conns []config.Connection, hc *http.Client, m *metrics.Metrics, readFile func(string) ([]byte, error)) (*GitHubApps, error) {
	out := &GitHubApps{apps: map[string]*GitHubApp{}}
	for _, conn := range conns {
		if conn.App == nil {
			continue
		}
		key, err := loadAppKey(*conn.App, readFile)
		if err != nil {
			return nil, fmt.Errorf("connection %q: app: %w", conn.ID, err)
		}
		app, err := newGitHubApp(conn, key, hc, m)
		if err != nil {
			return nil, fmt.Errorf("connection %q: app: %w", conn.ID, err)
		}
		out.apps[conn.ID] = app
	}
	return out, nil
}

// For is the App of connection id; nil when it is not an App connection
// (or a is nil).
func (a *GitHubApps) For(id string) *GitHubApp {
	if a == nil {
		return nil
	}
	return a.apps[id]
}

// Check asks GitHub about each App once and logs the answer, so that an
// App ID or key GitHub refuses shows at start-up, naming its connection,
// rather than at the first projection or recovery.
func (a *GitHubApps) Check(ctx context.Context, logger *slog.Logger) {
	if a == nil {
		return
	}
	for _, app := range a.apps {
		checkCtx, cancel := context.WithTimeout(ctx, checkTimeout)
		slug, err := app.Check(checkCtx)
		cancel()
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			logger.Warn("github app not usable", "connection", app.connection, "app_id", app.appID, "error", err)
		default:
			logger.Info("github app verified", "connection", app.connection, "app_id", app.appID, "app_slug", slug)
		}
	}
}

// checkTimeout bounds the start-up check of one App.
const checkTimeout = 30 * time.Second

// GitHubApp is one App connection's credentials and clients.
type GitHubApp struct {
	connection string
	appID      int64
	// api is the guarded client (guarded) every client of the App is
	// made from: counted, held to the API's origin, answers bounded.
	api  *http.Client
	base *url.URL // the API base URL (githubAPIBase)
	jwt  *ghinstallation.AppsTransport

	mu            sync.Mutex
	installations map[int64]*ghinstallation.Transport
	repositories  map[string]installationLookup // "owner/repo" (lower case) → its installation
}

// installationLookup is a repository's installation as last found.
type installationLookup struct {
	id      int64
	foundAt time.Time
}

// installationTTL is how long a repository's installation is remembered: an
// App can be uninstalled and installed again (a new installation ID), and
// a failed call forgets the repository at once anyway.
const installationTTL = time.Hour

func newGitHubApp(conn config.Connection, key *rsa.PrivateKey, hc *http.Client, m *metrics.Metrics) (*GitHubApp, error) {
	base, err := githubAPIBase(conn)
	if err != nil {
		return nil, err
	}
	// The JWT and the installation tokens are set by transports above the
	// guard, as a token connection's token is: the token exchange and every
	// call stay on the API's origin, and answers are bounded.
	api := guarded(hc, m, connectors.ProviderGitHub, base)
	jwt := ghinstallation.NewAppsTransportFromPrivateKey(api.Transport, conn.App.ID, key)
	jwt.BaseURL = strings.TrimSuffix(base.String(), "/")
	return &GitHubApp{connection: conn.ID, appID: conn.App.ID, api: api, base: base, jwt: jwt,
		installations: map[int64]*ghinstallation.Transport{}, repositories: map[string]installationLookup{}}, nil
}

// ID is the App's ID.
func (a *GitHubApp) ID() int64 { return a.appID }

// client is go-github's client over rt (which sets the credentials and
// sends through the guard), at the App's API base URL, following
// redirects as the guarded client does.
func (a *GitHubApp) client(rt http.RoundTripper) *gh.Client {
	hc := *a.api
	hc.Transport = rt
	c := gh.NewClient(&hc)
	c.BaseURL = a.base
	return c
}

// AppClient calls GitHub as the App itself (JWT): /app, /app/hook/…,
// /repos/{owner}/{repo}/installation.
func (a *GitHubApp) AppClient() *gh.Client { return a.client(a.jwt) }

// InstallationClient calls GitHub as installation id, with its token.
func (a *GitHubApp) InstallationClient(id int64) *gh.Client {
	a.mu.Lock()
	defer a.mu.Unlock()
	tr, ok := a.installations[id]
	if !ok {
		tr = ghinstallation.NewFromAppsTransport(a.jwt, id)
		a.installations[id] = tr
	}
	return a.client(tr)
}

// RepositoryClient calls GitHub as the installation that covers
// owner/repo, found through the App (and remembered for an hour).
func (a *GitHubApp) RepositoryClient(ctx context.Context, owner, repo string, now time.Time) (*gh.Client, *gh.Response, error) {
	key := strings.ToLower(owner + "/" + repo)
	a.mu.Lock()
	found, ok := a.repositories[key]
	a.mu.Unlock()
	if !ok || now.Sub(found.foundAt) > installationTTL {
		inst, resp, err := a.AppClient().Apps.FindRepositoryInstallation(ctx, owner, repo)
		if err != nil {
			return nil, resp, fmt.Errorf("find the App's installation on %s/%s: %w", owner, repo, a.explain(err, resp))
		}
		found = installationLookup{id: inst.GetID(), foundAt: now}
		a.mu.Lock()
		a.repositories[key] = found
		a.mu.Unlock()
	}
	return a.InstallationClient(found.id), nil, nil
}

// Forget drops what is remembered of owner/repo's installation, after a
// call made as it failed (the App may have been uninstalled there).
func (a *GitHubApp) Forget(owner, repo string) {
	a.mu.Lock()
	delete(a.repositories, strings.ToLower(owner+"/"+repo))
	a.mu.Unlock()
}

// Check asks GitHub who the App is (GET /app): a refused App ID or key
// answers 401, which the error names.
func (a *GitHubApp) Check(ctx context.Context) (slug string, err error) {
	app, resp, err := a.AppClient().Apps.Get(ctx, "")
	if err != nil {
		return "", a.explain(err, resp)
	}
	return app.GetSlug(), nil
}

// explain adds what a refusal of the App's credentials means.
func (a *GitHubApp) explain(err error, resp *gh.Response) error {
	if resp != nil && resp.Response != nil && resp.StatusCode == http.StatusUnauthorized {
		return fmt.Errorf("GitHub refused App %d's credentials (is the App ID right, and the private key the App's current one?): %w", a.appID, err)
	}
	var he *ghinstallation.HTTPError
	if errors.As(err, &he) && he.Response != nil {
		he.Response.Body.Close()
		if he.Response.StatusCode == http.StatusUnauthorized {
			return fmt.Errorf("GitHub refused App %d's credentials for an installation token: %w", a.appID, err)
		}
	}
	return err
}

// pemMarkers finds a PEM private key's armour and body in text whose line
// breaks may have been folded into spaces (a ${VAR} expanded into a YAML
// string) or written as literal \n.
var pemMarkers = regexp.MustCompile(`-----BEGIN ([A-Z ]*PRIVATE KEY)-----([\s\S]*?)-----END ([A-Z ]*PRIVATE KEY)-----`)

// loadAppKey reads the App's private key: private_key_file or private_key,
// PEM, PKCS #1 or PKCS #8, and RSA (GitHub App keys are RSA; RS256 needs
// one). Errors say what is wrong without quoting the key.
func loadAppKey(app config.App, readFile func(string) ([]byte, error)) (*rsa.PrivateKey, error) {
	text, field := app.PrivateKey, "private_key"
	if app.PrivateKeyFile != "" {
		field = "private_key_file"
		raw, err := readFile(app.PrivateKeyFile)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", field, err)
		}
		text = string(raw)
	}
	der, err := pemBody(strings.ReplaceAll(text, `\n`, "\n"))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", field, err)
	}
	if k, err := x509.ParsePKCS1PrivateKey(der); err == nil {
		return k, nil
	}
	parsed, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, fmt.Errorf("%s: not a PKCS #1 or PKCS #8 private key", field)
	}
	k, ok := parsed.(*rsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("%s: a %s key, not RSA (GitHub App private keys are RSA)", field, keyKind(parsed))
	}
	return k, nil
}

// pemBody is the DER of the one PEM private key in text.
func pemBody(text string) ([]byte, error) {
	if block, _ := pem.Decode([]byte(strings.TrimSpace(text))); block != nil {
		if !strings.HasSuffix(block.Type, "PRIVATE KEY") {
			return nil, fmt.Errorf("a PEM %q block, not a private key", block.Type)
		}
		return block.Bytes, nil
	}
	m := pemMarkers.FindStringSubmatch(text)
	if m == nil {
		return nil, errors.New("not a PEM private key (-----BEGIN … PRIVATE KEY-----)")
	}
	der, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(m[2]), ""))
	if err != nil {
		return nil, errors.New("the PEM private key's body is not base64")
	}
	return der, nil
}

// keyKind names a parsed key's algorithm for an error.
func keyKind(k any) string {
	name := fmt.Sprintf("%T", k) // *ecdsa.PrivateKey, ed25519.PrivateKey
	name = strings.TrimPrefix(name, "*")
	name, _, _ = strings.Cut(name, ".")
	return strings.ToUpper(name)
}
