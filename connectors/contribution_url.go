package connectors

import (
	"net"
	"net/url"
	"strconv"
	"strings"
)

// maxContributionNumber bounds a PR/MR number read from a URL: far above
// any real one, and exact in every JSON number and database column.
const maxContributionNumber = 1 << 53

// ParseContributionURL reads a pull or merge request's web URL, as an issue
// tracker stores a link to it (a Linear attachment):
//
//   - https://HOST/OWNER/REPO/pull/N: a GitHub (or GitHub Enterprise)
//     pull request;
//   - https://HOST/OWNER/REPO/pulls/N: a Gitea or Forgejo pull request;
//   - https://HOST/GROUP/…/PROJECT/-/merge_requests/N: a GitLab merge
//     request.
//
// Anything after the number (/files, /diffs, a query, a fragment) is
// allowed, as browsers copy such URLs. Host and repository come back in
// lower case, as the providers treat them, and the host without its
// scheme's default port (https://github.com:443/… is github.com); a PR/MR
// is matched on them, the provider and the number. ok is false for any other URL (a document, an
// issue, a commit), which is no contribution.
func ParseContributionURL(raw string) (link ContributionLink, ok bool) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Hostname() == "" || u.User != nil {
		return ContributionLink{}, false
	}
	segs := strings.Split(strings.Trim(u.EscapedPath(), "/"), "/")
	for _, s := range segs {
		if s == "" || s == "." || s == ".." || strings.Contains(s, "%") {
			return ContributionLink{}, false
		}
	}
	link = ContributionLink{Host: linkHost(u), URL: u.String()}
	for i := range segs {
		if i+1 >= len(segs) {
			break
		}
		n, err := strconv.ParseInt(segs[i+1], 10, 64)
		if err != nil || n < 1 || n > maxContributionNumber || segs[i+1][0] == '0' {
			continue
		}
		switch segs[i] {
		case "pull", "pulls":
			// Exactly OWNER/REPO before it: GitHub and Gitea have no
			// deeper repository paths.
			if i != 2 {
				continue
			}
			link.Provider, link.Kind = ProviderGitHub, KindPullRequest
			if segs[i] == "pulls" {
				link.Provider = ProviderGitea
			}
		case "merge_requests":
			// GROUP[/SUBGROUP…]/PROJECT/-/merge_requests/N.
			if i < 3 || segs[i-1] != "-" {
				continue
			}
			link.Provider, link.Kind = ProviderGitLab, KindMergeRequest
			segs = append(segs[:i-1:i-1], segs[i:]...)
			i--
		default:
			continue
		}
		link.Repository = strings.ToLower(strings.Join(segs[:i], "/"))
		link.Number = n
		return link, true
	}
	return ContributionLink{}, false
}

// linkHost is u's host as a connection names it: lower case, without the
// scheme's default port (443 for https, 80 for http) or an empty one, and
// a port written with leading zeros as its number.
func linkHost(u *url.URL) string {
	host := strings.ToLower(u.Hostname())
	port := u.Port()
	if n, err := strconv.Atoi(port); err == nil {
		port = strconv.Itoa(n)
	}
	if port == "" || (u.Scheme == "https" && port == "443") || (u.Scheme == "http" && port == "80") {
		if strings.Contains(host, ":") {
			return "[" + host + "]" // an IPv6 address
		}
		return host
	}
	return net.JoinHostPort(host, port)
}
