package linear

import (
	"slices"
	"testing"

	"github.com/trackergateway/gateway/connectors"
)

func TestPullRequestLinks(t *testing.T) {
	t.Parallel()
	gh := func(ref string) connectors.Reference {
		return connectors.Reference{Provider: connectors.ProviderGitHub, Ref: ref}
	}
	gl := func(ref string) connectors.Reference {
		return connectors.Reference{Provider: connectors.ProviderGitLab, Ref: ref}
	}
	tests := []struct {
		name string
		urls []string
		want []connectors.Reference
	}{
		{"github pull request", []string{"https://github.com/acme/api/pull/42"}, []connectors.Reference{gh("acme/api#42")}},
		{"github enterprise, trailing parts", []string{"https://ghe.example.com/acme/api/pull/7/files#diff-1"}, []connectors.Reference{gh("acme/api#7")}},
		{"gitlab merge request, subgroup", []string{"https://gitlab.com/acme/platform/infra/-/merge_requests/9"}, []connectors.Reference{gl("acme/platform/infra!9")}},
		{"gitlab, trailing parts", []string{"https://gitlab.example.com/acme/infra/-/merge_requests/9/diffs?commit_id=1"}, []connectors.Reference{gl("acme/infra!9")}},
		{"duplicates and order", []string{"https://gitlab.com/a/b/-/merge_requests/2", "https://github.com/a/b/pull/1", "https://github.com/a/b/pull/1/"},
			[]connectors.Reference{gl("a/b!2"), gh("a/b#1")}},
		{"leading zeros", []string{"https://github.com/a/b/pull/007"}, []connectors.Reference{gh("a/b#7")}},
		{"not pull requests", []string{
			"https://github.com/acme/api/issues/42",
			"https://github.com/acme/api/pull/",
			"https://github.com/acme/api/pull/0",
			"https://github.com/acme/api/pull/x",
			"https://github.com/acme/pull/42",
			"https://gitlab.com/acme/infra/-/issues/9",
			"https://gitlab.com/-/merge_requests/9",
			"https://gitlab.com/acme/infra/-/merge_requests/-1",
			"ftp://github.com/a/b/pull/1",
			"github.com/a/b/pull/1",
			"https://github.com//b/pull/1",
			"https://docs.example.com/spec",
			"",
			"%zz",
		}, nil},
	}
	for _, tt := range tests {
		if got := PullRequestLinks(tt.urls); !slices.Equal(got, tt.want) {
			t.Errorf("%s: PullRequestLinks(%q) = %v, want %v", tt.name, tt.urls, got, tt.want)
		}
	}
}
