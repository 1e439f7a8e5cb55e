package httpapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/trackergateway/gateway/internal/failure"
	"github.com/trackergateway/gateway/internal/store"
)

// Principal is the authenticated caller.
type Principal struct {
	Name       string
	Admin      bool
	Workspaces []string
}

// CanSee reports whether the principal may act in the workspace.
func (p Principal) CanSee(workspaceID string) bool {
	return p.Admin || slices.Contains(p.Workspaces, workspaceID)
}

type principalKey struct{}

// PrincipalFrom returns the principal Authenticate stored in ctx.
func PrincipalFrom(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}

// WithPrincipal returns ctx carrying p (tests, internal callers).
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// TokenFinder looks tokens up by the SHA-256 of their secret.
type TokenFinder interface {
	GetTokenBySHA256(ctx context.Context, sha string) (store.Token, error)
}

// HashToken is how tokens are stored: hex SHA-256.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// Authenticator checks bearer tokens. Only a token's hash is ever looked
// up; the token itself is logged never. Repeated failures from one client
// address are throttled (429 with Retry-After; a valid token still passes)
// and logged as one summary line per address per minute.
type Authenticator struct {
	tokens   TokenFinder
	logger   *slog.Logger
	throttle *FailureThrottle
	failures *LogSampler
}

// authFailureLogInterval is how often repeated failures from one address
// are summarised in the log.
const authFailureLogInterval = time.Minute

// NewAuthenticator returns an Authenticator; now may be nil (time.Now).
func NewAuthenticator(tokens TokenFinder, logger *slog.Logger, now func() time.Time) *Authenticator {
	return &Authenticator{tokens: tokens, logger: logger, throttle: NewFailureThrottle(now),
		failures: NewLogSampler(authFailureLogInterval, now)}
}

// Middleware authenticates every request and stores the Principal in its
// context.
func (a *Authenticator) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		addr := ClientAddress(r)
		token, _ := bearerToken(r.Header.Get("Authorization"))
		p, err := a.Authenticate(r.Context(), addr, token, r.URL.Path)
		if err != nil {
			WriteError(w, r, a.logger, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(WithPrincipal(r.Context(), p)))
	})
}

// Authenticate checks a token presented from the client address addr (an
// empty token is a missing one) for the request to path. A valid token
// always passes: the throttle only ever refuses failures, so anonymous
// requests from an address cannot lock out its valid credentials. A
// missing or unknown token is a failure of addr (401), refused with 429
// once addr has spent its failure budget. The bearer middleware, the
// console's sign-in and /mcp all use it, so they share the one budget.
//
// The token is looked up even from a throttled address: the lookup is one
// indexed read of its SHA-256, and tokens are random secrets far beyond
// guessing, so the throttle is there to hold a flood of failures to a
// trickle (and its log to a line a minute), not to stop a guess.
func (a *Authenticator) Authenticate(ctx context.Context, addr, token, path string) (Principal, error) {
	if token == "" {
		return Principal{}, a.fail(ctx, addr, path, failure.New(failure.Unauthorized, "missing bearer token"))
	}
	p, err := a.PrincipalBySHA256(ctx, HashToken(token))
	if errors.Is(err, store.ErrNotFound) {
		return Principal{}, a.fail(ctx, addr, path, failure.New(failure.Unauthorized, "unknown token"))
	}
	return p, err
}

// PrincipalBySHA256 returns the principal of the token whose hash is sha
// (store.ErrNotFound when no token has it): a console session names its
// token this way, never by the token itself.
func (a *Authenticator) PrincipalBySHA256(ctx context.Context, sha string) (Principal, error) {
	tok, err := a.tokens.GetTokenBySHA256(ctx, sha)
	if err != nil {
		return Principal{}, err
	}
	return Principal{Name: tok.Name, Admin: tok.Admin, Workspaces: tok.Workspaces}, nil
}

// fail answers a failed attempt from addr: err while addr's budget lasts,
// then 429 until it refills. Each failure spends the budget, so an address
// that keeps failing stays throttled.
func (a *Authenticator) fail(ctx context.Context, addr, path string, err *failure.Error) error {
	if wait, blocked := a.throttle.Blocked(addr); blocked {
		a.logFailure(ctx, addr, "throttled", path)
		return failure.New(failure.TooManyRequests, "too many failed authentication attempts").WithRetryAfter(wait)
	}
	a.throttle.Failed(addr)
	a.logFailure(ctx, addr, err.Message, path)
	return err
}

func (a *Authenticator) logFailure(ctx context.Context, addr, reason, path string) {
	if suppressed, log := a.failures.Observe(addr); log {
		a.logger.WarnContext(ctx, "api authentication failed", "client_address", addr,
			"reason", reason, "path", path, "suppressed_since_last_line", suppressed)
	}
}

// bearerToken returns the credentials of an "Authorization: Bearer <token>"
// header; the scheme is case-insensitive (RFC 9110, section 11.1).
func bearerToken(header string) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// RequireAdmin refuses non-admin principals with 404, like any resource the
// caller cannot see.
func RequireAdmin(logger *slog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if p, ok := PrincipalFrom(r.Context()); !ok || !p.Admin {
				WriteError(w, r, logger, failure.New(failure.NotFound, "not found"))
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}
