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
// address are throttled (429 with Retry-After, before any lookup) and
// logged as one summary line per address per minute.
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
		if wait, blocked := a.throttle.Blocked(addr); blocked {
			a.logFailure(r, addr, "throttled")
			WriteError(w, r, a.logger, failure.New(failure.TooManyRequests,
				"too many failed authentication attempts").WithRetryAfter(wait))
			return
		}
		token, ok := bearerToken(r.Header.Get("Authorization"))
		if !ok {
			a.fail(w, r, addr, failure.New(failure.Unauthorized, "missing bearer token"))
			return
		}
		tok, err := a.tokens.GetTokenBySHA256(r.Context(), HashToken(token))
		if err != nil {
			if errors.Is(err, store.ErrNotFound) {
				a.fail(w, r, addr, failure.New(failure.Unauthorized, "unknown token"))
				return
			}
			WriteError(w, r, a.logger, err)
			return
		}
		p := Principal{Name: tok.Name, Admin: tok.Admin, Workspaces: tok.Workspaces}
		next.ServeHTTP(w, r.WithContext(WithPrincipal(r.Context(), p)))
	})
}

func (a *Authenticator) fail(w http.ResponseWriter, r *http.Request, addr string, err *failure.Error) {
	a.throttle.Failed(addr)
	a.logFailure(r, addr, err.Message)
	WriteError(w, r, a.logger, err)
}

func (a *Authenticator) logFailure(r *http.Request, addr, reason string) {
	if suppressed, log := a.failures.Observe(addr); log {
		a.logger.WarnContext(r.Context(), "api authentication failed", "client_address", addr,
			"reason", reason, "path", r.URL.Path, "suppressed_since_last_line", suppressed)
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
