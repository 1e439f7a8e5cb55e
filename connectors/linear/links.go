package linear

import (
	"net/url"
	"strconv"
	"strings"

	"github.com/trackergateway/gateway/connectors"
)

// PullRequestLinks returns the GitHub pull requests
// (https://HOST/owner/repo/pull/N, "owner/repo#N") and GitLab merge requests
// (https://HOST/group/sub/project/-/merge_requests/N, "group/sub/project!N")
// among urls, as Linear issues link them in their attachments, in order,
// without duplicates; other URLs are skipped. Trailing parts of a link
// ("/files", "#discussion_r1") are ignored. The host is not checked: it
// names a GitHub or GitLab instance whose connection may or may not exist.
func PullRequestLinks(urls []string) []connectors.Reference {
	var refs []connectors.Reference
	for _, raw := range urls {
		if r, ok := pullRequestLink(raw); ok {
			refs = append(refs, r)
		}
	}
	return connectors.MergeReferences(refs)
}

func pullRequestLink(raw string) (connectors.Reference, bool) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return connectors.Reference{}, false
	}
	segs := strings.Split(strings.Trim(u.Path, "/"), "/")
	for _, s := range segs {
		if s == "" {
			return connectors.Reference{}, false
		}
	}
	// GitLab: group/…/project/-/merge_requests/N[/…]
	for i := 1; i+2 < len(segs); i++ {
		if segs[i] == "-" && segs[i+1] == "merge_requests" {
			if n, ok := positive(segs[i+2]); ok {
				return connectors.Reference{Provider: connectors.ProviderGitLab, Ref: strings.Join(segs[:i], "/") + "!" + n}, true
			}
			return connectors.Reference{}, false
		}
	}
	// GitHub: owner/repo/pull/N[/…]
	if len(segs) >= 4 && segs[2] == "pull" {
		if n, ok := positive(segs[3]); ok {
			return connectors.Reference{Provider: connectors.ProviderGitHub, Ref: segs[0] + "/" + segs[1] + "#" + n}, true
		}
	}
	return connectors.Reference{}, false
}

// positive returns s as a canonical positive decimal number.
func positive(s string) (string, bool) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return "", false
	}
	return strconv.FormatInt(n, 10), true
}
