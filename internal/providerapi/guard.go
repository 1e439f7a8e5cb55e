package providerapi

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/trackergateway/gateway/internal/metrics"
)

// Bounds of what the gateway does for a provider's API, which it treats
// as untrusted input.
const (
	// MaxResponseBody is the most the gateway reads of one API answer:
	// GitHub's and GitLab's largest pages (100 hook deliveries or events,
	// with their request bodies) are far smaller, so only a broken or
	// hostile API reaches it, and the gateway stops reading there instead
	// of holding the body in memory.
	MaxResponseBody = 8 << 20
	// MaxRedirects is how many redirects within the API's own origin one
	// request follows.
	MaxRedirects = 5
)

var (
	// ErrForeignHost: the request (a redirect) went to another origin
	// than the connection's API (scheme, host and port). It is refused
	// before anything is sent: the clients put the API token on every
	// request they send, redirected ones too.
	ErrForeignHost = errors.New("not the connection's API host; refused")
	// ErrTooManyRedirects: the API redirected more than MaxRedirects
	// times.
	ErrTooManyRedirects = fmt.Errorf("more than %d redirects", MaxRedirects)
	// ErrResponseTooLarge: an answer's body is larger than
	// MaxResponseBody.
	ErrResponseTooLarge = fmt.Errorf("provider API answer larger than %d bytes", MaxResponseBody)
)

// Refused says whether err is one of the guard's refusals: final, as
// asking again gets the same answer.
func Refused(err error) bool {
	return errors.Is(err, ErrForeignHost) || errors.Is(err, ErrTooManyRedirects) || errors.Is(err, ErrResponseTooLarge)
}

// apiBase parses a connection's API base URL, which must be absolute
// http(s).
func apiBase(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("api url: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("api url %q is not an absolute http or https URL", raw)
	}
	return u, nil
}

// origin is u's scheme, host and port (the scheme's default when none),
// lower case.
func origin(u *url.URL) string {
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[scheme]
	}
	return scheme + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

// guarded is hc for a provider API at base: each request counted in m
// under provider, no request sent to another origin than base's (a
// redirect elsewhere is not followed; at most MaxRedirects within it),
// each answer's body read up to MaxResponseBody.
func guarded(hc *http.Client, m *metrics.Metrics, provider string, base *url.URL) *http.Client {
	allowed := origin(base)
	c := *hc
	next := m.ProviderTransport(provider, c.Transport)
	if next == nil {
		next = http.DefaultTransport
	}
	c.Transport = &guard{allowed: allowed, next: traced{provider: provider, next: next}}
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if origin(req.URL) != allowed {
			return fmt.Errorf("redirect to %s: %w", req.URL.Host, ErrForeignHost)
		}
		if len(via) > MaxRedirects {
			return ErrTooManyRedirects
		}
		return nil
	}
	return &c
}

// guard sends only to its origin and bounds what is read of an answer.
// It sits below the clients' own transports, which add the token, so it
// sees the request as it would leave.
type guard struct {
	allowed string
	next    http.RoundTripper
}

func (g *guard) RoundTrip(req *http.Request) (*http.Response, error) {
	if origin(req.URL) != g.allowed {
		if req.Body != nil {
			_ = req.Body.Close()
		}
		return nil, fmt.Errorf("request to %s: %w", req.URL.Host, ErrForeignHost)
	}
	resp, err := g.next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	resp.Body = &limitedBody{body: resp.Body, left: MaxResponseBody, tooLarge: resp.ContentLength > MaxResponseBody}
	return resp, nil
}

// limitedBody reads body up to left bytes; a byte more is
// ErrResponseTooLarge (so a body of exactly the limit still reads).
type limitedBody struct {
	body     io.ReadCloser
	left     int64
	tooLarge bool // the announced length is over the limit already
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.tooLarge {
		return 0, ErrResponseTooLarge
	}
	if b.left <= 0 {
		var one [1]byte
		n, err := b.body.Read(one[:])
		if n > 0 {
			b.tooLarge = true
			return 0, ErrResponseTooLarge
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.body.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *limitedBody) Close() error { return b.body.Close() }
