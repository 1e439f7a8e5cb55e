package providerapi

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/trackergateway/gateway/internal/config"
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
