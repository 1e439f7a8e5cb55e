package recovery

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"code.gitea.io/sdk/gitea"

	giteaconn "github.com/trackergateway/gateway/connectors/gitea"
	"github.com/trackergateway/gateway/internal/config"
	"github.com/trackergateway/gateway/internal/providerapi"
)

// giteaLister lists the issues and pull requests a Gitea or Forgejo
// connection's token sees that were updated in the window (GET
// /repos/issues/search, through the Gitea SDK), reading each pull request
// whole (GET /repos/{owner}/{repo}/pulls/{index}), since the search
// answers only its issue side.
type giteaLister struct {
	r      *Recoverer
	client *gitea.Client
	base   string
}

func newGiteaLister(r *Recoverer, conn config.Connection) (changeLister, error) {
	client, err := providerapi.GiteaClient(r.HTTPClient, r.Metrics, conn)
	if err != nil {
		return nil, err
	}
	base := conn.APIURL
	if base == "" {
		base = "https://" + conn.Host
	}
	return &giteaLister{r: r, client: client, base: base}, nil
}

// giteaPageSize is the issues a page asks for; Gitea answers at most its
// configured maximum (50 by default).
const giteaPageSize = 50

func (g *giteaLister) source() string { return "issues and pull requests at " + g.base }

// call runs one SDK request (a read) through the recoverer's retries.
func (g *giteaLister) call(ctx context.Context, request func() (*gitea.Response, error)) error {
	return g.r.retrying(ctx, true, func() (answer, error) {
		resp, err := request()
		if err == nil {
			return answer{}, nil
		}
		var ans answer
		if resp != nil && resp.Response != nil {
			ans.status = resp.StatusCode
			ans.wait = providerapi.WaitHeader(resp.Header, resp.StatusCode, g.r.now())
		}
		return ans, err
	})
}

// changes: Gitea's pages are numbered, from 1; the cursor is the number
// ("" the first).
func (g *giteaLister) changes(ctx context.Context, since time.Time, cursor string) ([]itemState, string, error) {
	page := 1
	if cursor != "" {
		n, err := strconv.Atoi(cursor)
		if err != nil {
			return nil, "", fmt.Errorf("page %q: %w", cursor, err)
		}
		page = n
	}
	g.client.SetContext(ctx)
	var issues []*gitea.Issue
	var resp *gitea.Response
	err := g.call(ctx, func() (*gitea.Response, error) {
		var err error
		issues, resp, err = g.client.ListIssues(gitea.ListIssueOption{
			ListOptions: gitea.ListOptions{Page: page, PageSize: giteaPageSize},
			State:       gitea.StateAll, Since: since})
		return resp, err
	})
	if err != nil {
		return nil, "", fmt.Errorf("search issues: %w", err)
	}
	out := make([]itemState, 0, len(issues))
	for _, issue := range issues {
		if issue == nil {
			continue
		}
		st, err := g.state(ctx, issue)
		if err != nil {
			return out, "", err
		}
		st.name = g.itemName(issue)
		out = append(out, st)
	}
	next := ""
	if resp != nil && resp.NextPage > 0 {
		next = strconv.Itoa(resp.NextPage)
	}
	return out, next, nil
}

// state is the delivery describing issue as it is now: a pull request
// read whole, an issue as listed. An item that cannot be described (no
// repository, a pull request the API no longer has) is unreadable, and
// skipped; an error is the run's to stop at.
func (g *giteaLister) state(ctx context.Context, issue *gitea.Issue) (itemState, error) {
	var st itemState
	var err error
	if issue.PullRequest == nil {
		if st.header, st.body, err = giteaconn.IssueDelivery(issue); err != nil {
			st.unreadable = err.Error()
		}
		return st, nil
	}
	repo := issue.Repository
	if repo == nil || repo.Owner == "" || repo.Name == "" {
		st.unreadable = "the listed pull request names no repository"
		return st, nil
	}
	var pr *gitea.PullRequest
	var status int
	err = g.call(ctx, func() (*gitea.Response, error) {
		var resp *gitea.Response
		var err error
		pr, resp, err = g.client.GetPullRequest(repo.Owner, repo.Name, issue.Index)
		if resp != nil && resp.Response != nil {
			status = resp.StatusCode
		}
		return resp, err
	})
	switch {
	case err != nil && status == http.StatusNotFound:
		// Listed, then gone (deleted, or its repository made private).
		st.unreadable = fmt.Sprintf("reading it answered %d Not Found", status)
		return st, nil
	case err != nil:
		return st, fmt.Errorf("read pull request %s#%d: %w", repo.FullName, issue.Index, err)
	}
	if st.header, st.body, err = giteaconn.PullRequestDelivery(pr); err != nil {
		st.unreadable = err.Error()
	}
	return st, nil
}

// itemName names a listed issue or pull request in a run's answer:
// "issue acme/api#3", else by its ID at the server.
func (g *giteaLister) itemName(issue *gitea.Issue) string {
	kind := "issue"
	if issue.PullRequest != nil {
		kind = "pull request"
	}
	if repo := issue.Repository; repo != nil && repo.FullName != "" {
		return fmt.Sprintf("%s %s#%d", kind, repo.FullName, issue.Index)
	}
	return fmt.Sprintf("%s %d (number %d) at %s", kind, issue.ID, issue.Index, g.base)
}
