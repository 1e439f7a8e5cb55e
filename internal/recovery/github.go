package recovery

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	gh "github.com/google/go-github/v62/github"

	"github.com/trackergateway/gateway/internal/config"
	"github.com/trackergateway/gateway/internal/providerapi"
)

// githubAPI reads and redelivers GitHub repository and organization hook
// deliveries through go-github.
type githubAPI struct {
	r      *Recoverer
	client *gh.Client
}

func newGitHubAPI(r *Recoverer, conn config.Connection) (hookAPI, error) {
	if app := r.Apps.For(conn.ID); app != nil {
		return newGitHubAppAPI(r, app), nil
	}
	if conn.App != nil {
		return nil, fmt.Errorf("its GitHub App's credentials are not loaded")
	}
	client, err := providerapi.GitHubClient(r.HTTPClient, r.Metrics, conn)
	if err != nil {
		return nil, err
	}
	return &githubAPI{r: r, client: client}, nil
}

// call runs one go-github request through the recoverer's retries;
// idempotent (a read) may also be retried after a server error.
func (g *githubAPI) call(ctx context.Context, idempotent bool, request func() (*gh.Response, error)) error {
	return g.r.retrying(ctx, idempotent, func() (answer, error) {
		resp, err := request()
		var accepted *gh.AcceptedError
		if errors.As(err, &accepted) {
			// 202: GitHub took the request and acts on it later.
			return answer{}, nil
		}
		if err == nil {
			return answer{}, nil
		}
		ans := answer{wait: providerapi.GitHubWait(err, resp, g.r.now())}
		if resp != nil && resp.Response != nil {
			ans.status = resp.StatusCode
		}
		return ans, err
	})
}

// githubPageSize is the most deliveries GitHub lists a page.
const githubPageSize = 100

func (g *githubAPI) page(ctx context.Context, hook config.Hook, cursor string) ([]attempt, string, error) {
	opts := &gh.ListCursorOptions{PerPage: githubPageSize, Cursor: cursor}
	var page []*gh.HookDelivery
	var resp *gh.Response
	err := g.call(ctx, true, func() (*gh.Response, error) {
		var err error
		if hook.Organization != "" {
			page, resp, err = g.client.Organizations.ListHookDeliveries(ctx, hook.Organization, hook.ID, opts)
		} else {
			owner, repo, _ := strings.Cut(hook.Repository, "/")
			page, resp, err = g.client.Repositories.ListHookDeliveries(ctx, owner, repo, hook.ID, opts)
		}
		return resp, err
	})
	if err != nil {
		return nil, "", err
	}
	return attemptsOf(page), nextCursor(resp), nil
}

// attemptsOf are GitHub's hook deliveries as attempts.
func attemptsOf(page []*gh.HookDelivery) []attempt {
	out := make([]attempt, 0, len(page))
	for _, d := range page {
		out = append(out, attempt{id: d.GetID(), guid: d.GetGUID(), deliveredAt: d.GetDeliveredAt().Time.UTC(),
			statusCode: d.GetStatusCode(), event: d.GetEvent(), action: d.GetAction()})
	}
	return out
}

// nextCursor is the cursor of the page after resp's, "" when none.
func nextCursor(resp *gh.Response) string {
	if resp == nil {
		return ""
	}
	return resp.Cursor
}

func (g *githubAPI) redeliver(ctx context.Context, hook config.Hook, a attempt) error {
	return g.call(ctx, false, func() (*gh.Response, error) {
		if hook.Organization != "" {
			_, resp, err := g.client.Organizations.RedeliverHookDelivery(ctx, hook.Organization, hook.ID, a.id)
			return resp, err
		}
		owner, repo, _ := strings.Cut(hook.Repository, "/")
		_, resp, err := g.client.Repositories.RedeliverHookDelivery(ctx, owner, repo, hook.ID, a.id)
		return resp, err
	})
}

// inboxKeys: the receiver keys a GitHub delivery X-GitHub-Hook-ID ":"
// X-GitHub-Delivery (the GUID alone when it came without a hook ID), and a
// redelivery keeps the GUID. Both keys are looked up in
// uniq_deliveries_key (connection_id, delivery_key), the unique index
// every receipt writes anyway, so "the inbox holds hook ID + GUID" needs
// no index of its own.
func (g *githubAPI) inboxKeys(hook config.Hook, guid string) []string {
	return []string{strconv.FormatInt(hook.ID, 10) + ":" + guid, guid}
}

func (g *githubAPI) state(ctx context.Context, hook config.Hook) (HookState, error) {
	var h *gh.Hook
	err := g.call(ctx, true, func() (*gh.Response, error) {
		var resp *gh.Response
		var err error
		if hook.Organization != "" {
			h, resp, err = g.client.Organizations.GetHook(ctx, hook.Organization, hook.ID)
		} else {
			owner, repo, _ := strings.Cut(hook.Repository, "/")
			h, resp, err = g.client.Repositories.GetHook(ctx, owner, repo, hook.ID)
		}
		return resp, err
	})
	if err != nil {
		return HookState{}, err
	}
	st := HookState{Active: h.GetActive(), Events: h.Events}
	if lr := h.LastResponse; lr != nil {
		last := &LastResponse{}
		if code, ok := lr["code"].(float64); ok {
			c := int(code)
			last.Code = &c
		}
		last.Status, _ = lr["status"].(string)
		last.Message, _ = lr["message"].(string)
		st.LastResponse = last
	}
	if st.Events == nil {
		st.Events = []string{}
	}
	return st, nil
}
