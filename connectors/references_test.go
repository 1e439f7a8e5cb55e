package connectors

import (
	"slices"
	"testing"
)

func refs(provider string, names ...string) []Reference {
	var out []Reference
	for _, n := range names {
		out = append(out, Reference{Provider: provider, Ref: n})
	}
	return out
}

func TestGitHubClosingReferences(t *testing.T) {
	t.Parallel()
	const host, repo = "github.com", "Codertocat/Hello-World"
	tests := []struct {
		name string
		text string
		want []string
	}{
		{"plain", "Fixes #1", []string{"Codertocat/Hello-World#1"}},
		{"end of sentence", "This fixes #1.", []string{"Codertocat/Hello-World#1"}},
		{"every keyword", "close #1 closes #2 closed #3 fix #4 fixes #5 fixed #6 resolve #7 resolves #8 resolved #9",
			[]string{"Codertocat/Hello-World#1", "Codertocat/Hello-World#2", "Codertocat/Hello-World#3",
				"Codertocat/Hello-World#4", "Codertocat/Hello-World#5", "Codertocat/Hello-World#6",
				"Codertocat/Hello-World#7", "Codertocat/Hello-World#8", "Codertocat/Hello-World#9"}},
		{"upper case and colon", "FIXES: #3", []string{"Codertocat/Hello-World#3"}},
		{"other repository", "Resolved octo-org/octo-repo#4", []string{"octo-org/octo-repo#4"}},
		{"same repository in another case", "Fixes codertocat/hello-world#7", []string{"Codertocat/Hello-World#7"}},
		{"issue URL", "closes https://github.com/octo-org/octo-repo/issues/5", []string{"octo-org/octo-repo#5"}},
		{"issue URL with comment anchor", "closes https://github.com/octo-org/octo-repo/issues/5#issuecomment-1", []string{"octo-org/octo-repo#5"}},
		{"URL of another host", "closes https://github.example.com/octo-org/octo-repo/issues/5", nil},
		{"pull request URL", "closes https://github.com/octo-org/octo-repo/pull/5", nil},
		{"keyword inside a word", "prefixes #1 and unfixed #2", nil},
		{"one reference per keyword", "Fixes #1, #2", []string{"Codertocat/Hello-World#1"}},
		{"two keywords", "Fixes #1, fixes #2", []string{"Codertocat/Hello-World#1", "Codertocat/Hello-World#2"}},
		{"duplicates", "Fixes #1\nCloses #1", []string{"Codertocat/Hello-World#1"}},
		{"zero", "fix #0", nil},
		{"overflow", "fix #99999999999999999999", nil},
		{"glued letters", "Fixes #12abc", nil},
		{"newline between", "fixed\n#1", nil},
		{"no keyword", "see #1", nil},
		{"repo without owner", "fixes repo#1", nil},
		{"empty", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := GitHubClosingReferences(tt.text, host, repo)
			want := refs(ProviderGitHub, tt.want...)
			if !slices.Equal(got, want) {
				t.Errorf("GitHubClosingReferences(%q) = %v, want %v", tt.text, got, want)
			}
		})
	}
}

// Gitea and Forgejo close issues with GitHub's keywords and issue URLs; the
// references name the provider they were parsed for.
func TestOwnerRepoClosingReferencesNamesTheProvider(t *testing.T) {
	t.Parallel()
	const host, repo = "gitea.example.com", "test/repo"
	tests := []struct {
		name     string
		provider string
		text     string
		want     []string
	}{
		{"gitea", ProviderGitea, "fixes #2, Closes other/repo#3 resolves https://gitea.example.com/test/repo/issues/4",
			[]string{"test/repo#2", "other/repo#3", "test/repo#4"}},
		{"gitea URL of another host", ProviderGitea, "closes https://codeberg.org/test/repo/issues/4", nil},
		{"github", ProviderGitHub, "Fixes #1", []string{"test/repo#1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := OwnerRepoClosingReferences(tt.provider, tt.text, host, repo)
			want := refs(tt.provider, tt.want...)
			if !slices.Equal(got, want) {
				t.Errorf("OwnerRepoClosingReferences(%q, %q) = %v, want %v", tt.provider, tt.text, got, want)
			}
		})
	}
}

func TestGitLabClosingReferences(t *testing.T) {
	t.Parallel()
	const host, project = "gitlab.example.com", "group/sub/project"
	tests := []struct {
		name string
		text string
		want []string
	}{
		{"plain", "Closes #4", []string{"group/sub/project#4"}},
		{"every keyword", "close #1, closing #2, fixing #3, resolving #4, implements #5, Implemented #6, fixed #7, Resolve #8",
			[]string{"group/sub/project#1", "group/sub/project#2", "group/sub/project#3", "group/sub/project#4",
				"group/sub/project#5", "group/sub/project#6", "group/sub/project#7", "group/sub/project#8"}},
		{"other project", "Fixes group/other#4", []string{"group/other#4"}},
		{"project in the same namespace", "Closes other#3", []string{"group/sub/other#3"}},
		{"same project in another case", "Closes Group/Sub/Project#3", []string{"group/sub/project#3"}},
		{"list", "Closes #1, #2 and #3", []string{"group/sub/project#1", "group/sub/project#2", "group/sub/project#3"}},
		{"issue word", "Closes issues #5 and #6", []string{"group/sub/project#5", "group/sub/project#6"}},
		{"colon", "implementing: #8", []string{"group/sub/project#8"}},
		{"issue URL", "Implements https://gitlab.example.com/group/sub/project/-/issues/9", []string{"group/sub/project#9"}},
		{"legacy issue URL", "Resolves https://gitlab.example.com/group/p/issues/9", []string{"group/p#9"}},
		{"URL of another host", "Closes https://gitlab.com/group/p/-/issues/9", nil},
		{"two lines", "Closes #4\nFixes #5", []string{"group/sub/project#4", "group/sub/project#5"}},
		{"no keyword", "Related to #4", nil},
		{"keyword inside a word", "Encloses #4", nil},
		{"merge request reference", "Closes !4", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := GitLabClosingReferences(tt.text, host, project)
			want := refs(ProviderGitLab, tt.want...)
			if !slices.Equal(got, want) {
				t.Errorf("GitLabClosingReferences(%q) = %v, want %v", tt.text, got, want)
			}
		})
	}
}

func TestJiraKeyReferences(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		texts []string
		want  []string
	}{
		{"title", []string{"PROJ-12 fix login"}, []string{"PROJ-12"}},
		{"branch", []string{"feature/PROJ-12-login"}, []string{"PROJ-12"}},
		{"digits in project key", []string{"A1-3"}, []string{"A1-3"}},
		{"several texts, duplicates", []string{"TES-41: readme", "TES-41-readme", "see ABC-2 and TES-41"}, []string{"TES-41", "ABC-2"}},
		{"one-letter project", []string{"P-1"}, nil},
		{"lower case", []string{"proj-1"}, nil},
		{"glued before", []string{"xPROJ-1"}, nil},
		{"glued after", []string{"PROJ-1a"}, nil},
		{"punctuation around", []string{"(PROJ-7)."}, []string{"PROJ-7"}},
		{"none", []string{"", "nothing here"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := JiraKeyReferences(tt.texts...)
			want := refs(ProviderJira, tt.want...)
			if !slices.Equal(got, want) {
				t.Errorf("JiraKeyReferences(%q) = %v, want %v", tt.texts, got, want)
			}
		})
	}
}

func TestMergeReferences(t *testing.T) {
	t.Parallel()
	a := []Reference{{ProviderGitHub, "o/r#1"}, {ProviderJira, "P-1"}}
	b := []Reference{{ProviderGitHub, "o/r#1"}, {ProviderGitHub, "o/r#2"}}
	got := MergeReferences(a, nil, b)
	want := []Reference{{ProviderGitHub, "o/r#1"}, {ProviderJira, "P-1"}, {ProviderGitHub, "o/r#2"}}
	if !slices.Equal(got, want) {
		t.Errorf("MergeReferences = %v, want %v", got, want)
	}
	if got := MergeReferences(); got != nil {
		t.Errorf("MergeReferences() = %v, want nil", got)
	}
}
