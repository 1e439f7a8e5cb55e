package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/trackergateway/gateway/internal/console"
	"github.com/trackergateway/gateway/internal/httpapi"
	"github.com/trackergateway/gateway/internal/store/sqlstore"
	"github.com/trackergateway/gateway/internal/store/storetest"
)

// pages are the console's session pages (GET) and forms (POST).
var (
	sessionPages = []string{"/ui/", "/ui/deliveries", "/ui/deliveries/some-id", "/ui/replay", "/ui/suppressions",
		"/ui/workspaces/eng/tasks", "/ui/tasks/some-id"}
	forms = []string{"/ui/logout", "/ui/deliveries/some-id/replay", "/ui/replay", "/ui/suppressions/clear"}
)

// Without a session every page redirects to the sign-in form and every
// form post is refused; the sign-in form and the stylesheet need none.
func TestPagesNeedASession(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		e := newEnv(t, st)
		for _, path := range sessionPages {
			// A bearer token is no session: the console is for browsers.
			res := e.do(t, nil, http.MethodGet, path, nil, http.Header{"Authorization": {"Bearer " + adminToken}})
			if res.status != http.StatusSeeOther || res.location != "/ui/login" {
				t.Errorf("GET %s without a session = %d Location %q, want 303 to /ui/login", path, res.status, res.location)
			}
		}
		for _, path := range forms {
			res := e.do(t, nil, http.MethodPost, path, url.Values{"csrf": {"guess"}}, nil)
			if res.status != http.StatusForbidden {
				t.Errorf("POST %s without a session = %d, want 403", path, res.status)
			}
		}
		for path, want := range map[string]string{"/ui/login": `name="token"`, "/ui/console.css": "--failed"} {
			res := e.do(t, nil, http.MethodGet, path, nil, nil)
			if res.status != http.StatusOK || !strings.Contains(res.body, want) {
				t.Errorf("GET %s = %d, want 200 with %q", path, res.status, want)
			}
		}
		if res := e.do(t, nil, http.MethodGet, "/ui", nil, nil); res.status != http.StatusMovedPermanently || res.location != "/ui/" {
			t.Errorf("GET /ui = %d Location %q, want a redirect to /ui/", res.status, res.location)
		}
	})
}

func TestSignIn(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		e := newEnv(t, st)
		for _, tc := range []struct{ name, token string }{{"a wrong token", "wrong-token-0123456789"}, {"no token", ""}} {
			res := e.do(t, nil, http.MethodPost, "/ui/login", url.Values{"token": {tc.token}}, nil)
			if res.status != http.StatusUnauthorized || !strings.Contains(res.body, "That token is not valid.") ||
				!strings.Contains(res.body, `name="token"`) || res.header.Get("Set-Cookie") != "" {
				t.Errorf("sign in with %s = %d (Set-Cookie %q), want 401 and the form again", tc.name, res.status, res.header.Get("Set-Cookie"))
			}
		}

		res := e.do(t, nil, http.MethodPost, "/ui/login", url.Values{"token": {adminToken}}, nil)
		cookies := (&http.Response{Header: res.header}).Cookies()
		if res.status != http.StatusSeeOther || len(cookies) != 1 {
			t.Fatalf("sign in = %d with cookies %v, want 303 and one cookie", res.status, cookies)
		}
		c := cookies[0]
		if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Secure || c.Path != "/ui/" ||
			c.MaxAge != int(console.SessionLifetime/time.Second) || !c.Expires.Equal(start.Add(console.SessionLifetime).Truncate(time.Second)) {
			t.Errorf("session cookie = %+v, want HttpOnly, SameSite=Strict, not Secure over plain HTTP, Path /ui/, expiring with the session", c)
		}
		if strings.Contains(c.Value, adminToken) || c.Value == httpapi.HashToken(adminToken) {
			t.Errorf("the session cookie carries the token")
		}
		// The session row names the token by its hash, and not by the
		// cookie's value either.
		if _, err := st.GetConsoleSession(context.Background(), c.Value, start); err == nil {
			t.Errorf("the session is stored under the cookie's value, want its hash")
		}

		// Behind a TLS-terminating proxy the cookie is Secure.
		res = e.do(t, nil, http.MethodPost, "/ui/login", url.Values{"token": {adminToken}}, http.Header{"X-Forwarded-Proto": {"https"}})
		if cs := (&http.Response{Header: res.header}).Cookies(); len(cs) != 1 || !cs[0].Secure {
			t.Errorf("sign in behind TLS set cookies %v, want one Secure cookie", cs)
		}
	})
}

// Sign-in failures count against the same per-address budget as bearer
// tokens: past it, failures are refused for a while, but the right token
// still signs in.
func TestSignInIsThrottled(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		e := newEnv(t, st)
		for range httpapi.DefaultFailureBurst {
			e.do(t, nil, http.MethodPost, "/ui/login", url.Values{"token": {"wrong-token-0123456789"}}, nil)
		}
		for _, token := range []string{"wrong-token-0123456789", ""} {
			res := e.do(t, nil, http.MethodPost, "/ui/login", url.Values{"token": {token}}, nil)
			if res.status != http.StatusTooManyRequests || res.header.Get("Retry-After") == "" || res.header.Get("Set-Cookie") != "" {
				t.Errorf("sign in with %q after %d failures = %d (Retry-After %q), want 429 and no session", token,
					httpapi.DefaultFailureBurst, res.status, res.header.Get("Retry-After"))
			}
		}
		// The API shares the budget.
		api := e.do(t, nil, http.MethodGet, "/api/v1/workspaces", nil, http.Header{"Authorization": {"Bearer wrong-token-0123456789"}})
		if api.status != http.StatusTooManyRequests {
			t.Errorf("API after the console's failures = %d, want 429", api.status)
		}
		// A valid token is never refused by the throttle.
		res := e.do(t, nil, http.MethodPost, "/ui/login", url.Values{"token": {adminToken}}, nil)
		if res.status != http.StatusSeeOther || res.header.Get("Set-Cookie") == "" {
			t.Errorf("sign in with the right token from the throttled address = %d, want 303 and a session", res.status)
		}
		api = e.do(t, nil, http.MethodGet, "/api/v1/workspaces", nil, http.Header{"Authorization": {"Bearer " + adminToken}})
		if api.status != http.StatusOK {
			t.Errorf("API with the right token from the throttled address = %d, want 200", api.status)
		}
	})
}

func TestSessionEnds(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		e := newEnv(t, st)

		// Sign out ends the session on the server, not just the cookie.
		b := e.login(t, adminToken)
		res := b.post(t, "/ui/logout", nil)
		if res.status != http.StatusSeeOther || res.location != "/ui/login" || !strings.Contains(res.header.Get("Set-Cookie"), "Max-Age=0") {
			t.Errorf("sign out = %d Location %q Set-Cookie %q, want 303 to /ui/login clearing the cookie", res.status, res.location, res.header.Get("Set-Cookie"))
		}
		if res := b.get(t, "/ui/"); res.status != http.StatusSeeOther {
			t.Errorf("GET /ui/ with the signed-out cookie = %d, want 303 to sign in", res.status)
		}

		// A session expires, and the next sign-in prunes it.
		b = e.login(t, adminToken)
		e.clock.Advance(console.SessionLifetime)
		if res := b.get(t, "/ui/"); res.status != http.StatusSeeOther {
			t.Errorf("GET /ui/ after the session's lifetime = %d, want 303 to sign in", res.status)
		}
		e.login(t, adminToken)
		if n, err := st.DeleteExpiredConsoleSessions(context.Background(), e.clock.Now()); err != nil || n != 0 {
			t.Errorf("expired sessions left after a sign-in: %d (%v), want 0", n, err)
		}

		// A session ends with its token: rotating the token signs it out.
		b = e.login(t, engToken)
		tok, err := st.GetTokenByName(context.Background(), "eng-bot")
		if err != nil {
			t.Fatal(err)
		}
		tok.TokenSHA256 = httpapi.HashToken("eng-token-rotated-0123456789")
		if err := st.UpsertToken(context.Background(), tok); err != nil {
			t.Fatal(err)
		}
		if res := b.get(t, "/ui/"); res.status != http.StatusSeeOther {
			t.Errorf("GET /ui/ after the token was rotated = %d, want 303 to sign in", res.status)
		}
	})
}

// Every form post needs the session's CSRF token and a same-origin
// request; the check comes before the handler, so nothing changes.
func TestFormsNeedTheCSRFToken(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		e := newEnv(t, st)
		failed := e.seedDelivery(t, "gh", "failed-1", time.Minute, "failed", "boom")
		b := e.login(t, adminToken)
		other := e.login(t, adminToken)
		for _, path := range []string{"/ui/logout", "/ui/deliveries/" + failed.ID + "/replay", "/ui/replay", "/ui/suppressions/clear"} {
			form := url.Values{"status": {"failed"}, "workspace_id": {"eng"}, "external_id": {"x"}}
			for _, tc := range []struct {
				name   string
				csrf   string
				header http.Header
			}{
				{"without the token", "", nil},
				{"with another session's token", other.csrf, nil},
				{"from another site", b.csrf, http.Header{"Sec-Fetch-Site": {"cross-site"}}},
			} {
				f := url.Values{}
				for k, v := range form {
					f[k] = v
				}
				if tc.csrf != "" {
					f.Set("csrf", tc.csrf)
				}
				res := e.do(t, b, http.MethodPost, path, f, tc.header)
				if res.status != http.StatusForbidden {
					t.Errorf("POST %s %s = %d, want 403", path, tc.name, res.status)
				}
			}
		}
		if d, err := st.GetDelivery(context.Background(), failed.ID); err != nil || d.Status != "failed" {
			t.Errorf("the delivery after refused replays: %s (%v), want still failed", d.Status, err)
		}
		if res := b.get(t, "/ui/"); res.status != http.StatusOK {
			t.Errorf("the session after a refused sign-out: GET /ui/ = %d, want 200", res.status)
		}
	})
}
