package providerapi

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	gh "github.com/google/go-github/v62/github"
	"github.com/prometheus/client_golang/prometheus"
	gitlab "gitlab.com/gitlab-org/api/client-go"

	"github.com/trackergateway/gateway/internal/config"
	"github.com/trackergateway/gateway/internal/metrics"
)

// WaitHeader reads Retry-After, then the rate-limit reset of a refusal.
func TestWaitHeader(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		status int
		header map[string]string
		want   time.Duration
	}{
		{"seconds", 429, map[string]string{"Retry-After": "120"}, 120 * time.Second},
		{"http date", 503, map[string]string{"Retry-After": now.Add(45 * time.Second).Format(http.TimeFormat)}, 45 * time.Second},
		{"date in the past", 503, map[string]string{"Retry-After": now.Add(-time.Minute).Format(http.TimeFormat)}, -time.Minute},
		{"zero", 429, map[string]string{"Retry-After": "0"}, 0},
		{"garbage", 429, map[string]string{"Retry-After": "soon"}, 0},
		{"huge", 429, map[string]string{"Retry-After": "999999999999"}, MaxWait},
		{"github reset", 403, map[string]string{"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": strconv.FormatInt(now.Add(5*time.Minute).Unix(), 10)}, 5 * time.Minute},
		{"gitlab reset", 429, map[string]string{"RateLimit-Remaining": "0", "RateLimit-Reset": strconv.FormatInt(now.Add(time.Minute).Unix(), 10)}, time.Minute},
		{"reset with requests left", 403, map[string]string{"X-RateLimit-Remaining": "10", "X-RateLimit-Reset": strconv.FormatInt(now.Add(time.Hour).Unix(), 10)}, 0},
		{"reset on a 502", 502, map[string]string{"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": strconv.FormatInt(now.Add(time.Hour).Unix(), 10)}, 0},
		{"retry-after wins", 429, map[string]string{"Retry-After": "30", "RateLimit-Remaining": "0", "RateLimit-Reset": strconv.FormatInt(now.Add(time.Hour).Unix(), 10)}, 30 * time.Second},
	}
	for _, tc := range tests {
		h := http.Header{}
		for k, v := range tc.header {
			h.Set(k, v)
		}
		if got := WaitHeader(h, tc.status, now); got != tc.want {
			t.Errorf("%s: WaitHeader = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// GitHubClient uses api_url as given, else the host's API.
func TestGitHubClientBaseURL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		host, apiBaseURL, want string
	}{
		{"github.com", "", "https://api.github.com/"},
		{"GitHub.com", "", "https://api.github.com/"},
		{"ghe.example.com", "", "https://ghe.example.com/api/v3/"},
		{"ghe.example.com", "https://ghe.example.com/api/v3", "https://ghe.example.com/api/v3/"},
		{"github.com", "http://127.0.0.1:8080/", "http://127.0.0.1:8080/"},
	}
	for _, tc := range tests {
		c, err := GitHubClient(http.DefaultClient, nil, config.Connection{Host: tc.host, APIURL: tc.apiBaseURL, APIToken: "x"})
		if err != nil {
			t.Fatalf("GitHubClient(%q, %q): %v", tc.host, tc.apiBaseURL, err)
		}
		if got := c.BaseURL.String(); got != tc.want {
			t.Errorf("GitHubClient(%q, %q) base = %v, want %v", tc.host, tc.apiBaseURL, got, tc.want)
		}
	}
}

// credentialTrap is a server on another host than the API: it records
// every request it gets and whether one carried a credential.
type credentialTrap struct {
	srv         *httptest.Server
	requests    atomic.Int32
	credentials atomic.Int32
}

func newCredentialTrap(t *testing.T) *credentialTrap {
	t.Helper()
	trap := &credentialTrap{}
	trap.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		trap.requests.Add(1)
		if r.Header.Get("Authorization") != "" || r.Header.Get("Private-Token") != "" {
			trap.credentials.Add(1)
		}
		_, _ = io.WriteString(w, `{}`)
	}))
	t.Cleanup(trap.srv.Close)
	return trap
}

// redirecting is an API that answers every request with a 307 to target
// (the same path on it).
func redirecting(t *testing.T, target func() string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target()+r.URL.RequestURI(), http.StatusTemporaryRedirect)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// A redirect to another host is not followed by either client: the other
// host gets no request, so no token, and the call fails with
// ErrForeignHost. The API's 307 is counted.
func TestRedirectToAnotherHostIsRefused(t *testing.T) {
	t.Parallel()
	for _, provider := range []string{"github", "gitlab"} {
		t.Run(provider, func(t *testing.T) {
			t.Parallel()
			trap := newCredentialTrap(t)
			// 127.0.0.1 and localhost: one machine, two hosts.
			other := strings.Replace(trap.srv.URL, "127.0.0.1", "localhost", 1)
			api := redirecting(t, func() string { return other })
			reg := prometheus.NewRegistry()
			m := metrics.New(reg)
			conn := config.Connection{Host: "example.com", APIURL: api.URL + "/", APIToken: "secret-token"}
			var err error
			switch provider {
			case "github":
				var c *gh.Client
				if c, err = GitHubClient(http.DefaultClient, m, conn); err != nil {
					t.Fatal(err)
				}
				_, _, err = c.PullRequests.Get(t.Context(), "acme", "api", 1)
			case "gitlab":
				var c *gitlab.Client
				if c, err = GitLabClient(http.DefaultClient, m, conn); err != nil {
					t.Fatal(err)
				}
				_, _, err = c.MergeRequests.GetMergeRequest("acme/api", 1, nil, gitlab.WithContext(t.Context()))
			}
			if !errors.Is(err, ErrForeignHost) {
				t.Errorf("error = %v, want ErrForeignHost", err)
			}
			if err != nil && strings.Contains(err.Error(), "secret-token") {
				t.Errorf("error %q carries the token", err)
			}
			if n, cred := trap.requests.Load(), trap.credentials.Load(); n != 0 || cred != 0 {
				t.Errorf("the other host got %d requests, %d with a credential; want none", n, cred)
			}
			if got := counted(t, reg, provider, "307"); got != 1 {
				t.Errorf("counted 307s = %v, want 1", got)
			}
		})
	}
}

// counted is gateway_provider_api_requests_total{provider, code} in reg.
func counted(t *testing.T, reg *prometheus.Registry, provider, code string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "gateway_provider_api_requests_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["provider"] == provider && labels["code"] == code {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// The transport refuses another host on its own, whatever follows the
// redirect: the request never leaves.
func TestGuardRefusesAnotherHost(t *testing.T) {
	t.Parallel()
	trap := newCredentialTrap(t)
	other := strings.Replace(trap.srv.URL, "127.0.0.1", "localhost", 1)
	api := redirecting(t, func() string { return other })
	base, err := apiBase(api.URL)
	if err != nil {
		t.Fatal(err)
	}
	c := guarded(http.DefaultClient, nil, "github", base)
	c.CheckRedirect = nil // Go's own: follows any host
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, api.URL+"/x", nil)
	req.Header.Set("Private-Token", "secret-token")
	resp, err := c.Do(req)
	if err == nil {
		_ = resp.Body.Close()
	}
	if !errors.Is(err, ErrForeignHost) {
		t.Errorf("error = %v, want ErrForeignHost", err)
	}
	if n := trap.requests.Load(); n != 0 {
		t.Errorf("the other host got %d requests, want none", n)
	}
}

// Redirects within the API's origin are followed, at most MaxRedirects.
func TestRedirectsWithinTheAPI(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		hops    int
		wantErr error
	}{
		{"one", 1, nil},
		{"the most", MaxRedirects, nil},
		{"one too many", MaxRedirects + 1, ErrTooManyRedirects},
	}
	for _, tc := range tests {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hop, _ := strconv.Atoi(r.URL.Query().Get("hop"))
			if r.Header.Get("Authorization") != "Bearer secret-token" {
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			if hop < tc.hops {
				http.Redirect(w, r, r.URL.Path+"?hop="+strconv.Itoa(hop+1), http.StatusFound)
				return
			}
			_, _ = io.WriteString(w, `{"id": 7, "number": 1}`)
		}))
		c, err := GitHubClient(http.DefaultClient, nil, config.Connection{APIURL: srv.URL, APIToken: "secret-token"})
		if err != nil {
			t.Fatal(err)
		}
		pr, _, err := c.PullRequests.Get(t.Context(), "acme", "api", 1)
		srv.Close()
		switch {
		case tc.wantErr == nil && (err != nil || pr.GetID() != 7):
			t.Errorf("%s: pull request %v, %v; want id 7", tc.name, pr.GetID(), err)
		case tc.wantErr != nil && !errors.Is(err, tc.wantErr):
			t.Errorf("%s: error = %v, want %v", tc.name, err, tc.wantErr)
		}
	}
}

// An answer larger than MaxResponseBody is an error once the limit is
// read, announced or streamed; one of exactly the limit reads whole.
func TestResponseBodyLimit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		size     int64
		announce bool
		wantErr  bool
	}{
		{"at the limit", MaxResponseBody, false, false},
		{"streamed past the limit", MaxResponseBody + 3<<20, false, true},
		{"announced past the limit", MaxResponseBody + 3<<20, true, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tc.announce {
					w.Header().Set("Content-Length", strconv.FormatInt(tc.size, 10))
				}
				chunk := []byte(strings.Repeat(" ", 32<<10))
				for n := int64(0); n < tc.size; n += int64(len(chunk)) {
					if _, err := w.Write(chunk[:min(int64(len(chunk)), tc.size-n)]); err != nil {
						return
					}
				}
			}))
			defer srv.Close()
			base, _ := apiBase(srv.URL)
			resp, err := guarded(http.DefaultClient, nil, "gitlab", base).Get(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			n, err := io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if tc.wantErr {
				if !errors.Is(err, ErrResponseTooLarge) || n > MaxResponseBody {
					t.Errorf("read %d bytes, error %v; want at most %d and ErrResponseTooLarge", n, err, MaxResponseBody)
				}
				return
			}
			if err != nil || n != tc.size {
				t.Errorf("read %d bytes, error %v; want %d, none", n, err, tc.size)
			}
		})
	}
}
