package connectors

import (
	"regexp"
	"strconv"
	"strings"
)

// This file holds the extraction of issue references from pull/merge request
// text: GitHub (and Gitea) and GitLab closing keywords ("Fixes #12") and Jira issue keys
// ("PROJ-12"). References are always fully qualified so that they can be
// matched against task sources (Source.Ref) without further context.

var (
	// GitHub: close, closes, closed, fix, fixes, fixed, resolve, resolves,
	// resolved; case-insensitive, optionally followed by a colon. The keyword
	// must start a word ("prefixes #1" is not "fixes #1"): closingReferences
	// checks the byte before it.
	githubKeyword = regexp.MustCompile(`(?i)(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?):?[ \t]+`)
	// GitLab's default closing pattern: close/closes/closed/closing,
	// fix/fixes/fixed/fixing, resolve/resolves/resolved/resolving,
	// implement/implements/implemented/implementing; case-insensitive.
	gitlabKeyword = regexp.MustCompile(`(?i)(?:clos(?:e[sd]?|ing)|fix(?:e[sd]|ing)?|resolv(?:e[sd]?|ing)|implement(?:s|ed|ing)?):?[ \t]+`)

	// A GitHub issue reference right after a keyword: #N, owner/repo#N or
	// https://<host>/owner/repo/issues/N.
	githubRef = regexp.MustCompile(`^(?:https?://([^/\s]+)/([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)/issues/([0-9]+)|(?:([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+))?#([0-9]+))\b`)
	// A GitLab issue reference: #N, project#N (same namespace),
	// group/sub/project#N or https://<host>/group/project/-/issues/N (also
	// the legacy URL without "/-").
	gitlabRef = regexp.MustCompile(`^(?:https?://([^/\s]+)/([A-Za-z0-9_.\-/]+?)(?:/-)?/issues/([0-9]+)|([A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)*)?#([0-9]+))\b`)
	// Between the references of one GitLab keyword: "#1, #2 and #3".
	gitlabSeparator = regexp.MustCompile(`^(?: *,? +and +| *,? *)`)
	// GitLab accepts "Closes issue #1" / "Closes issues #1 and #2".
	gitlabIssueWord = regexp.MustCompile(`(?i)^issues? +`)

	jiraKey = regexp.MustCompile(`[A-Z][A-Z0-9]+-[0-9]+`)
)

// GitHubClosingReferences returns the issues that text closes with GitHub's
// closing keywords ("Fixes #12", "closes: owner/repo#3",
// "resolves https://github.com/owner/repo/issues/4"), qualified as
// "owner/repo#N". repo is the pull request's own "owner/repo", used for
// unqualified references and as the spelling of references to the same
// repository written in another case; host is the connection's host, the only
// one accepted in URLs.
func GitHubClosingReferences(text, host, repo string) []Reference {
	return OwnerRepoClosingReferences(ProviderGitHub, text, host, repo)
}

// OwnerRepoClosingReferences is GitHubClosingReferences for any provider
// whose issues are "owner/repo#N" with GitHub's keywords and issue URLs:
// GitHub itself, and Gitea and Forgejo, whose default closing keywords and
// https://<host>/owner/repo/issues/N URLs are the same. The references name
// provider.
func OwnerRepoClosingReferences(provider, text, host, repo string) []Reference {
	return closingReferences(text, githubKeyword, func(rest string) (string, int, bool) {
		m := githubRef.FindStringSubmatch(rest)
		if m == nil {
			return "", 0, false
		}
		var target, number string
		switch {
		case m[3] != "": // URL
			if !strings.EqualFold(m[1], host) {
				return "", len(m[0]), true
			}
			target, number = m[2], m[3]
		case m[4] != "":
			target, number = m[4], m[5]
		default:
			target, number = repo, m[5]
		}
		ref, ok := qualify(target, number, repo)
		if !ok {
			return "", len(m[0]), true
		}
		return ref, len(m[0]), true
	}, provider, false)
}

// GitLabClosingReferences returns the issues that text closes with GitLab's
// closing keywords ("Closes #4", "Fixes group/project#4, #5 and #6",
// "Implements https://gitlab.example.com/group/project/-/issues/4"),
// qualified as "path#N". project is the merge request's own
// path_with_namespace, used for unqualified references ("#4"), for references
// within its namespace ("other#4") and as the spelling of references to the
// same project; host is the connection's host, the only one accepted in URLs.
func GitLabClosingReferences(text, host, project string) []Reference {
	return closingReferences(text, gitlabKeyword, func(rest string) (string, int, bool) {
		skip := 0
		if w := gitlabIssueWord.FindString(rest); w != "" {
			skip = len(w)
			rest = rest[skip:]
		}
		m := gitlabRef.FindStringSubmatch(rest)
		if m == nil {
			return "", 0, false
		}
		var target, number string
		switch {
		case m[3] != "": // URL
			if !strings.EqualFold(m[1], host) {
				return "", skip + len(m[0]), true
			}
			target, number = m[2], m[3]
		case m[4] != "":
			target, number = m[4], m[5]
			if !strings.Contains(target, "/") {
				// "project#4": a project in the same namespace.
				if i := strings.LastIndexByte(project, '/'); i >= 0 {
					target = project[:i+1] + target
				}
			}
		default:
			target, number = project, m[5]
		}
		ref, ok := qualify(target, number, project)
		if !ok {
			return "", skip + len(m[0]), true
		}
		return ref, skip + len(m[0]), true
	}, ProviderGitLab, true)
}

// closingReferences finds every keyword in text and parses the references
// after it with next, which returns the qualified reference ("" to skip it),
// how many bytes it consumed, and whether there was a reference at all. With
// multi, a keyword may be followed by a list of references (GitLab).
func closingReferences(text string, keyword *regexp.Regexp, next func(string) (string, int, bool), provider string, multi bool) []Reference {
	var refs []Reference
	for _, loc := range keyword.FindAllStringIndex(text, -1) {
		if loc[0] > 0 && (isAlnum(text[loc[0]-1]) || text[loc[0]-1] == '_') {
			continue
		}
		rest := text[loc[1]:]
		for {
			ref, n, ok := next(rest)
			if !ok {
				break
			}
			if ref != "" {
				refs = append(refs, Reference{Provider: provider, Ref: ref})
			}
			rest = rest[n:]
			if !multi {
				break
			}
			rest = rest[len(gitlabSeparator.FindString(rest)):]
		}
	}
	return MergeReferences(refs)
}

// qualify returns "target#number", spelling target as own when they differ
// only in case (GitHub and GitLab paths are case-insensitive, task sources
// use the canonical spelling from the payload). Invalid targets and numbers
// that are not positive are refused.
func qualify(target, number, own string) (string, bool) {
	n, err := strconv.ParseInt(number, 10, 64)
	if err != nil || n <= 0 {
		return "", false
	}
	if target == "" || strings.HasPrefix(target, "/") || strings.HasSuffix(target, "/") || strings.Contains(target, "//") {
		return "", false
	}
	if strings.EqualFold(target, own) {
		target = own
	}
	return target + "#" + strconv.FormatInt(n, 10), true
}

// JiraKeyReferences returns the Jira issue keys ("PROJ-12": an upper-case
// project key of at least two characters, a dash and a number) found in texts
// (a title, a branch name, a body), in order of appearance, without
// duplicates. A key must not be glued to other letters or digits
// ("xPROJ-1", "PROJ-1a" are not keys); "feature/PROJ-12-login" holds PROJ-12.
func JiraKeyReferences(texts ...string) []Reference {
	var refs []Reference
	for _, text := range texts {
		for _, loc := range jiraKey.FindAllStringIndex(text, -1) {
			if loc[0] > 0 && isAlnum(text[loc[0]-1]) {
				continue
			}
			if loc[1] < len(text) && isAlnum(text[loc[1]]) {
				continue
			}
			refs = append(refs, Reference{Provider: ProviderJira, Ref: text[loc[0]:loc[1]]})
		}
	}
	return MergeReferences(refs)
}

func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// MergeReferences concatenates lists, keeping the first occurrence of each
// (Provider, Ref). It returns nil when there is none.
func MergeReferences(lists ...[]Reference) []Reference {
	var out []Reference
	seen := make(map[Reference]bool)
	for _, list := range lists {
		for _, r := range list {
			if seen[r] {
				continue
			}
			seen[r] = true
			out = append(out, r)
		}
	}
	return out
}
