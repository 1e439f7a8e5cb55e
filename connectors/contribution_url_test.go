package connectors

import (
	"net"
	"net/url"
	"strings"
	"testing"
)

func TestParseContributionURL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		url  string
		want ContributionLink
		ok   bool
	}{
		{"https://github.com/Acme/API/pull/42", ContributionLink{Provider: ProviderGitHub, Kind: KindPullRequest,
			Host: "github.com", Repository: "acme/api", Number: 42, URL: "https://github.com/Acme/API/pull/42"}, true},
		{"https://github.com/acme/api/pull/42/files?w=1#diff", ContributionLink{Provider: ProviderGitHub, Kind: KindPullRequest,
			Host: "github.com", Repository: "acme/api", Number: 42, URL: "https://github.com/acme/api/pull/42/files?w=1#diff"}, true},
		{"https://GHE.example.com:8443/acme/api/pull/7", ContributionLink{Provider: ProviderGitHub, Kind: KindPullRequest,
			Host: "ghe.example.com:8443", Repository: "acme/api", Number: 7, URL: "https://GHE.example.com:8443/acme/api/pull/7"}, true},
		{"http://localhost:3000/test/repo/pulls/12", ContributionLink{Provider: ProviderGitea, Kind: KindPullRequest,
			Host: "localhost:3000", Repository: "test/repo", Number: 12, URL: "http://localhost:3000/test/repo/pulls/12"}, true},
		{"https://gitlab.example.com/acme/Infra/-/merge_requests/9", ContributionLink{Provider: ProviderGitLab, Kind: KindMergeRequest,
			Host: "gitlab.example.com", Repository: "acme/infra", Number: 9, URL: "https://gitlab.example.com/acme/Infra/-/merge_requests/9"}, true},
		{"https://gitlab.com/group/sub/project/-/merge_requests/3/diffs", ContributionLink{Provider: ProviderGitLab, Kind: KindMergeRequest,
			Host: "gitlab.com", Repository: "group/sub/project", Number: 3, URL: "https://gitlab.com/group/sub/project/-/merge_requests/3/diffs"}, true},
		// The scheme's default port and the host's case are not part of
		// the host a connection names.
		{"https://GitHub.com:443/acme/api/pull/42", ContributionLink{Provider: ProviderGitHub, Kind: KindPullRequest,
			Host: "github.com", Repository: "acme/api", Number: 42, URL: "https://GitHub.com:443/acme/api/pull/42"}, true},
		{"http://gitea.example.com:80/test/repo/pulls/12", ContributionLink{Provider: ProviderGitea, Kind: KindPullRequest,
			Host: "gitea.example.com", Repository: "test/repo", Number: 12, URL: "http://gitea.example.com:80/test/repo/pulls/12"}, true},
		{"https://gitlab.com:/group/project/-/merge_requests/3", ContributionLink{Provider: ProviderGitLab, Kind: KindMergeRequest,
			Host: "gitlab.com", Repository: "group/project", Number: 3, URL: "https://gitlab.com:/group/project/-/merge_requests/3"}, true},
		{"https://ghe.example.com:0443/acme/api/pull/7", ContributionLink{Provider: ProviderGitHub, Kind: KindPullRequest,
			Host: "ghe.example.com", Repository: "acme/api", Number: 7, URL: "https://ghe.example.com:0443/acme/api/pull/7"}, true},
		{"http://ghe.example.com:443/acme/api/pull/7", ContributionLink{Provider: ProviderGitHub, Kind: KindPullRequest,
			Host: "ghe.example.com:443", Repository: "acme/api", Number: 7, URL: "http://ghe.example.com:443/acme/api/pull/7"}, true},
		{"https://[2001:DB8::1]:443/acme/api/pull/7", ContributionLink{Provider: ProviderGitHub, Kind: KindPullRequest,
			Host: "[2001:db8::1]", Repository: "acme/api", Number: 7, URL: "https://[2001:DB8::1]:443/acme/api/pull/7"}, true},
		{"https://[2001:db8::1]:8443/acme/api/pull/7", ContributionLink{Provider: ProviderGitHub, Kind: KindPullRequest,
			Host: "[2001:db8::1]:8443", Repository: "acme/api", Number: 7, URL: "https://[2001:db8::1]:8443/acme/api/pull/7"}, true},
		// Not a contribution, or not one that can be matched safely.
		{"https://github.com/acme/api/issues/42", ContributionLink{}, false},
		{"https://github.com/acme/api/commit/abc123", ContributionLink{}, false},
		{"https://github.com/acme/api/pull/0", ContributionLink{}, false},
		{"https://github.com/acme/api/pull/042", ContributionLink{}, false},
		{"https://github.com/acme/api/pull/-1", ContributionLink{}, false},
		{"https://github.com/acme/api/pull/99999999999999999999", ContributionLink{}, false},
		{"https://github.com/acme/api/pull/", ContributionLink{}, false},
		{"https://github.com/acme/pull/1", ContributionLink{}, false},
		{"https://github.com/org/acme/api/pull/1", ContributionLink{}, false},
		{"https://github.com/acme/../api/pull/1", ContributionLink{}, false},
		{"https://github.com/ac%2Fme/api/pull/1", ContributionLink{}, false},
		{"https://gitlab.com/project/-/merge_requests/3", ContributionLink{}, false},
		{"https://gitlab.com/group/project/merge_requests/3", ContributionLink{}, false},
		{"https://user:pw@github.com/acme/api/pull/1", ContributionLink{}, false},
		{"ftp://github.com/acme/api/pull/1", ContributionLink{}, false},
		{"github.com/acme/api/pull/1", ContributionLink{}, false},
		{"https://docs.example.com/spec", ContributionLink{}, false},
		{"", ContributionLink{}, false},
		{"://", ContributionLink{}, false},
	}
	for _, tt := range tests {
		got, ok := ParseContributionURL(tt.url)
		if ok != tt.ok || got != tt.want {
			t.Errorf("ParseContributionURL(%q) = %+v, %v; want %+v, %v", tt.url, got, ok, tt.want, tt.ok)
		}
	}
}

// FuzzParseContributionURL: whatever the URL, an accepted link is complete,
// lower-case and within bounds.
func FuzzParseContributionURL(f *testing.F) {
	for _, s := range []string{"https://github.com/acme/api/pull/42", "http://localhost:3000/test/repo/pulls/12",
		"https://gitlab.com/group/sub/project/-/merge_requests/3/diffs", "https://docs.example.com/spec",
		"https://github.com:443/acme/api/pull/42", "http://[::1]:80/o/r/pulls/1", "https://HOST:0443/o/r/pull/1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		l, ok := ParseContributionURL(raw)
		if !ok {
			if l != (ContributionLink{}) {
				t.Fatalf("refused %q with %+v", raw, l)
			}
			return
		}
		if l.Provider == "" || l.Kind == "" || l.Host == "" || l.Repository == "" || l.Number < 1 || l.Number > maxContributionNumber {
			t.Fatalf("ParseContributionURL(%q) = %+v: incomplete", raw, l)
		}
		if l.Host != strings.ToLower(l.Host) || l.Repository != strings.ToLower(l.Repository) {
			t.Fatalf("ParseContributionURL(%q) = %+v: not lower-case", raw, l)
		}
		// The host is as a connection names it: no default or empty port.
		u, err := url.Parse(strings.TrimSpace(raw))
		if err != nil {
			t.Fatalf("ParseContributionURL(%q) accepted a URL url.Parse refuses: %v", raw, err)
		}
		defaultPort := map[string]string{"https": "443", "http": "80"}[u.Scheme]
		if _, port, err := net.SplitHostPort(l.Host); err == nil && (port == "" || port == defaultPort || port[0] == '0') {
			t.Fatalf("ParseContributionURL(%q).Host = %q: a port a connection would not name", raw, l.Host)
		}
		if strings.HasSuffix(l.Host, ":") {
			t.Fatalf("ParseContributionURL(%q).Host = %q ends with a colon", raw, l.Host)
		}
	})
}
