// Package providerapi builds the API clients of a connection's provider
// (go-github, GitLab's client-go) from its configuration and reads the
// waits providers impose (Retry-After, rate-limit resets). Each client
// counts its requests in gateway_provider_api_requests_total, never sends
// one to another origin than the connection's API (the clients put the
// token on every request, redirected ones too) and reads at most
// MaxResponseBody of an answer. The projection and missed-delivery
// recovery both call the provider APIs through it.
package providerapi

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	gh "github.com/google/go-github/v62/github"
	gitlab "gitlab.com/gitlab-org/api/client-go"

	"github.com/trackergateway/gateway/connectors"
	"github.com/trackergateway/gateway/internal/config"
	"github.com/trackergateway/gateway/internal/metrics"
)

// MaxWait bounds a provider-imposed wait (a garbled Retry-After must not
// park work for years).
const MaxWait = 24 * time.Hour

// GitHubClient is go-github's client for conn over hc, its requests
// counted in m and guarded (guarded), at githubAPIBase.
func GitHubClient(hc *http.Client, m *metrics.Metrics, conn config.Connection) (*gh.Client, error) {
	base, err := githubAPIBase(conn)
	if err != nil {
		return nil, err
	}
	client := gh.NewClient(guarded(hc, m, connectors.ProviderGitHub, base)).WithAuthToken(conn.APIToken)
	raw := base.String()
	if client.BaseURL.String() == raw {
		return client, nil
	}
	if client, err = client.WithEnterpriseURLs(raw, raw); err != nil {
		return nil, err
	}
	// As given: WithEnterpriseURLs would add /api/v3/ to an api_url
	// without it.
	client.BaseURL = base
	return client, nil
}

// githubAPIBase is conn's REST API base URL, with its trailing slash:
// api_url when set (used as given), else GitHub Enterprise Server's
// https://<host>/api/v3/ for a host other than github.com, else
// https://api.github.com/.
func githubAPIBase(conn config.Connection) (*url.URL, error) {
	raw := "https://api.github.com/"
	switch {
	case conn.APIURL != "":
		raw = strings.TrimSuffix(conn.APIURL, "/") + "/"
	case conn.Host != "" && !strings.EqualFold(conn.Host, "github.com"):
		// GitHub Enterprise Server.
		raw = "https://" + conn.Host + "/api/v3/"
	}
	return apiBase(raw)
}

// GitLabClient is client-go's client for conn over hc, its requests
// counted in m and guarded (guarded): api_url when set, else
// https://<host>/api/v4. Its own retries are off: callers wait as the
// provider asks, with their own backoff.
func GitLabClient(hc *http.Client, m *metrics.Metrics, conn config.Connection) (*gitlab.Client, error) {
	raw := conn.APIURL
	if raw == "" {
		raw = "https://" + conn.Host + "/api/v4"
	}
	base, err := apiBase(raw)
	if err != nil {
		return nil, err
	}
	return gitlab.NewClient(conn.APIToken, gitlab.WithHTTPClient(guarded(hc, m, connectors.ProviderGitLab, base)),
		gitlab.WithoutRetries(), gitlab.WithBaseURL(raw))
}

// WaitHeader is the wait a provider asked for: Retry-After (seconds or an
// HTTP date), else, on a refusal with no requests remaining, the
// rate-limit reset (GitHub X-RateLimit-Reset, GitLab RateLimit-Reset: Unix
// seconds). now is the caller's clock.
func WaitHeader(h http.Header, status int, now time.Time) time.Duration {
	if v := strings.TrimSpace(h.Get("Retry-After")); v != "" {
		if sec, err := strconv.ParseInt(v, 10, 64); err == nil {
			if sec <= 0 {
				return 0
			}
			return time.Duration(min(sec, int64(MaxWait/time.Second))) * time.Second
		}
		if t, err := http.ParseTime(v); err == nil {
			return t.Sub(now)
		}
	}
	if status != http.StatusForbidden && status != http.StatusTooManyRequests {
		return 0
	}
	for _, prefix := range []string{"X-RateLimit-", "RateLimit-"} {
		if h.Get(prefix+"Remaining") != "0" {
			continue
		}
		if sec, err := strconv.ParseInt(strings.TrimSpace(h.Get(prefix+"Reset")), 10, 64); err == nil && sec > 0 {
			return time.Unix(sec, 0).Sub(now)
		}
	}
	return 0
}

// GitHubWait is the wait a failed go-github call asks for: from the
// response's headers, else from go-github's own rate-limit errors (which
// it also returns without a request while it knows the limit is spent);
// 0 when the failure is not a rate limit.
func GitHubWait(err error, resp *gh.Response, now time.Time) time.Duration {
	if resp != nil && resp.Response != nil {
		if d := WaitHeader(resp.Header, resp.StatusCode, now); d > 0 {
			return d
		}
	}
	var rl *gh.RateLimitError
	var abuse *gh.AbuseRateLimitError
	switch {
	case errors.As(err, &rl) && !rl.Rate.Reset.IsZero():
		return max(rl.Rate.Reset.Sub(now), 0)
	case errors.As(err, &abuse) && abuse.RetryAfter != nil && *abuse.RetryAfter > 0:
		return *abuse.RetryAfter
	}
	return 0
}
