package console

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/http"
	"time"

	"github.com/trackergateway/gateway/internal/failure"
	"github.com/trackergateway/gateway/internal/httpapi"
	"github.com/trackergateway/gateway/internal/store"
)

// Sessions are server-side (store.ConsoleSession), so any replica serves
// any session and signing out ends it everywhere. The cookie carries only
// a random session ID; the table keeps its SHA-256, the SHA-256 of the
// token that signed in (looked up again on every request, so a removed or
// rotated token ends its sessions) and the CSRF secret of the session's
// forms. The token itself is stored nowhere.
const (
	cookieName = "gateway_console"
	cookiePath = "/ui/"
	// SessionLifetime is how long a session lasts after sign-in.
	SessionLifetime = 12 * time.Hour
	// maxFormBytes bounds a console form's body.
	maxFormBytes = 64 << 10
	loginPath    = "/ui/login"
)

// session is the signed-in caller of a request.
type session struct {
	idSHA256  string
	principal httpapi.Principal
	csrf      string
}

type sessionKey struct{}

func sessionFrom(ctx context.Context) (session, bool) {
	s, ok := ctx.Value(sessionKey{}).(session)
	return s, ok
}

// crossOrigin refuses state-changing requests a browser marks as sent from
// another site (Sec-Fetch-Site, Origin): the sign-in form carries no CSRF
// token, as no session exists yet, and this keeps other sites from posting
// it too.
var crossOrigin = http.NewCrossOriginProtection()

var (
	errCSRF       = failure.New(failure.Forbidden, "this form has expired or did not come from the console; reload the page and try again")
	errCrossSite  = failure.New(failure.Forbidden, "cross-origin requests are refused")
	errNoSession  = failure.New(failure.Forbidden, "not signed in; sign in and try again")
	errNotVisible = failure.New(failure.NotFound, "page not found")
)

func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b)
}

func hashID(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:])
}

// secure reports whether the client reached the gateway over TLS, directly
// or through a proxy that says so: the cookie is then Secure.
func secure(r *http.Request) bool {
	return r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https"
}

// setCookie sets the session cookie until expires; a zero expires deletes
// it.
func setCookie(w http.ResponseWriter, r *http.Request, value string, expires, now time.Time) {
	c := &http.Cookie{Name: cookieName, Value: value, Path: cookiePath, MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: secure(r)}
	if !expires.IsZero() {
		c.Expires, c.MaxAge = expires, int(expires.Sub(now)/time.Second)
	}
	http.SetCookie(w, c)
}

// readForm parses a form post of the console's own pages: one a browser
// says came from another site is refused, and the body is bounded.
func readForm(w http.ResponseWriter, r *http.Request) error {
	if err := crossOrigin.Check(r); err != nil {
		return errCrossSite
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		return failure.Wrap(failure.Invalid, err, "malformed form")
	}
	return nil
}

// LoginPage shows the sign-in form.
func (c *Console) LoginPage(w http.ResponseWriter, r *http.Request) {
	c.render(w, r, http.StatusOK, "login", "Sign in", loginPage{})
}

type loginPage struct{ Error string }

// Login signs in with the form's token: the token is checked as a bearer
// token is (the same failure throttle per client address); a wrong one
// shows the form again.
func (c *Console) Login(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	if err := readForm(w, r); err != nil {
		c.fail(w, r, err)
		return
	}
	p, err := c.d.Authenticator.Authenticate(ctx, httpapi.ClientAddress(r), r.PostForm.Get("token"), r.URL.Path)
	if err != nil {
		status, message := httpapi.ErrorResponse(w, r, c.logger, err)
		if status == http.StatusUnauthorized {
			message = "That token is not valid."
		}
		c.render(w, r, status, "login", "Sign in", loginPage{Error: message})
		return
	}
	now := c.now()
	// Sign-ins prune the sessions that expired, so the table holds about
	// one lifetime of sign-ins.
	if _, err := c.d.Sessions.DeleteExpiredConsoleSessions(ctx, now); err != nil {
		c.logger.WarnContext(ctx, "prune expired console sessions", "error", err)
	}
	id, expires := randomToken(), now.Add(SessionLifetime)
	err = c.d.Sessions.InsertConsoleSession(ctx, store.ConsoleSession{IDSHA256: hashID(id),
		TokenSHA256: httpapi.HashToken(r.PostForm.Get("token")), CSRFSecret: randomToken(),
		CreatedAt: now, ExpiresAt: expires})
	if err != nil {
		c.fail(w, r, err)
		return
	}
	setCookie(w, r, id, expires, now)
	c.logger.InfoContext(ctx, "console sign-in", "principal", p.Name, "client_address", httpapi.ClientAddress(r))
	http.Redirect(w, r, "/ui/", http.StatusSeeOther)
}

// Logout ends the session and clears its cookie.
func (c *Console) Logout(w http.ResponseWriter, r *http.Request) {
	s, _ := sessionFrom(r.Context())
	if err := c.d.Sessions.DeleteConsoleSession(r.Context(), s.idSHA256); err != nil {
		c.fail(w, r, err)
		return
	}
	setCookie(w, r, "", time.Time{}, c.now())
	http.Redirect(w, r, loginPath, http.StatusSeeOther)
}

// RequireSession lets through requests of a live session, with its
// principal in the context as the API's authentication leaves it. Without
// one a page redirects to the sign-in form and a form post is refused.
// Every request that is not a GET or HEAD must carry the session's CSRF
// token in its form field csrf (403 otherwise), so no form handler can
// forget to check it.
func (c *Console) RequireSession(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		reading := r.Method == http.MethodGet || r.Method == http.MethodHead
		s, err := c.session(ctx, r)
		switch {
		case errors.Is(err, store.ErrNotFound) && reading:
			http.Redirect(w, r, loginPath, http.StatusSeeOther)
			return
		case errors.Is(err, store.ErrNotFound):
			c.fail(w, r, errNoSession)
			return
		case err != nil:
			c.fail(w, r, err)
			return
		}
		ctx = context.WithValue(httpapi.WithPrincipal(ctx, s.principal), sessionKey{}, s)
		r = r.WithContext(ctx)
		if !reading {
			if err := readForm(w, r); err != nil {
				c.fail(w, r, err)
				return
			}
			if subtle.ConstantTimeCompare([]byte(r.PostForm.Get("csrf")), []byte(s.csrf)) != 1 {
				c.fail(w, r, errCSRF)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// session reads the request's session; store.ErrNotFound when it has none
// that is live and whose token still exists.
func (c *Console) session(ctx context.Context, r *http.Request) (session, error) {
	cookie, err := r.Cookie(cookieName)
	if err != nil || cookie.Value == "" {
		return session{}, store.ErrNotFound
	}
	idSHA := hashID(cookie.Value)
	stored, err := c.d.Sessions.GetConsoleSession(ctx, idSHA, c.now())
	if err != nil {
		return session{}, err
	}
	p, err := c.d.Authenticator.PrincipalBySHA256(ctx, stored.TokenSHA256)
	if errors.Is(err, store.ErrNotFound) {
		// The token is gone: so is every session it opened.
		if err := c.d.Sessions.DeleteConsoleSession(ctx, idSHA); err != nil {
			c.logger.WarnContext(ctx, "delete console session of a removed token", "error", err)
		}
		return session{}, store.ErrNotFound
	}
	if err != nil {
		return session{}, err
	}
	return session{idSHA256: idSHA, principal: p, csrf: stored.CSRFSecret}, nil
}

// RequireAdmin answers the operator pages to the admin only; anyone else
// gets the 404 of a page that does not exist, as the API answers.
func (c *Console) RequireAdmin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s, ok := sessionFrom(r.Context()); !ok || !s.principal.Admin {
			c.fail(w, r, errNotVisible)
			return
		}
		next.ServeHTTP(w, r)
	})
}
