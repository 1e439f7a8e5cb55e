package connectors

import (
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
		"https://gitlab.com/group/sub/project/-/merge_requests/3/diffs", "https://docs.example.com/spec"} {
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
	})
}
