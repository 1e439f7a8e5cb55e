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

// Authenticate requires a bearer token; missing or unknown tokens are 401.
// Only the token's hash is ever looked up, logged never.
func Authenticate(tokens TokenFinder, logger *slog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			auth := r.Header.Get("Authorization")
			token, ok := strings.CutPrefix(auth, "Bearer ")
			if !ok || token == "" {
				WriteError(w, r, logger, failure.New(failure.Unauthorized, "missing bearer token"))
				return
			}
			tok, err := tokens.GetTokenBySHA256(r.Context(), HashToken(token))
			if err != nil {
				if errors.Is(err, store.ErrNotFound) {
					err = failure.New(failure.Unauthorized, "unknown token")
				}
				WriteError(w, r, logger, err)
				return
			}
			p := Principal{Name: tok.Name, Admin: tok.Admin, Workspaces: tok.Workspaces}
			next.ServeHTTP(w, r.WithContext(WithPrincipal(r.Context(), p)))
		})
	}
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
