package recovery

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	gh "github.com/google/go-github/v62/github"

	"github.com/trackergateway/gateway/internal/config"
	"github.com/trackergateway/gateway/internal/providerapi"
)

// githubAppAPI reads and redelivers a GitHub App's own hook deliveries
// (GET /app/hook/deliveries, POST …/attempts), as the App (JWT). They are
// the deliveries of every installation; their GUIDs and hook ID key the
// inbox as a repository hook's do.
type githubAppAPI struct {
	*githubAPI
	app *providerapi.GitHubApp
	// newest is the hook's newest delivery once read (the API is built for
	// one run or one hooks request): ownHook's, which state reuses.
	newest *gh.HookDelivery
}

func newGitHubAppAPI(r *Recoverer, app *providerapi.GitHubApp) *githubAppAPI {
	return &githubAppAPI{githubAPI: &githubAPI{r: r, client: app.AppClient()}, app: app}
}

// ownHook is the App's hook with its ID, which GitHub's API does not list
// but sends with every delivery: it is read from the request headers of
// the newest delivery (X-GitHub-Hook-ID). An App with no delivery in
// GitHub's three days has nothing to recover; its hook is returned
// without an ID.
func (g *githubAppAPI) ownHook(ctx context.Context) (config.Hook, error) {
	hook := config.Hook{App: g.app.ID()}
	newest, err := g.newestDelivery(ctx)
	if err != nil || newest == nil {
		return hook, err
	}
	var d *gh.HookDelivery
	err = g.call(ctx, true, func() (*gh.Response, error) {
		var resp *gh.Response
		var err error
		d, resp, err = g.client.Apps.GetHookDelivery(ctx, newest.GetID())
		return resp, err
	})
	if err != nil {
		return hook, err
	}
	if d.Request != nil {
		for name, v := range d.Request.Headers {
			if strings.EqualFold(name, "X-GitHub-Hook-ID") {
				if id, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil && id > 0 {
					hook.ID = id
					return hook, nil
				}
			}
		}
	}
	return hook, fmt.Errorf("GitHub's delivery %d of App %d names no X-GitHub-Hook-ID", newest.GetID(), g.app.ID())
}

// newestDelivery is the App hook's newest delivery, nil when GitHub holds
// none; read once.
func (g *githubAppAPI) newestDelivery(ctx context.Context) (*gh.HookDelivery, error) {
	if g.newest != nil {
		return g.newest, nil
	}
	var page []*gh.HookDelivery
	err := g.call(ctx, true, func() (*gh.Response, error) {
		var resp *gh.Response
		var err error
		page, resp, err = g.client.Apps.ListHookDeliveries(ctx, &gh.ListCursorOptions{PerPage: 1})
		return resp, err
	})
	if err != nil || len(page) == 0 {
		return nil, err
	}
	g.newest = page[0]
	return g.newest, nil
}

func (g *githubAppAPI) page(ctx context.Context, hook config.Hook, cursor string) ([]attempt, string, error) {
	opts := &gh.ListCursorOptions{PerPage: githubPageSize, Cursor: cursor}
	var page []*gh.HookDelivery
	var resp *gh.Response
	err := g.call(ctx, true, func() (*gh.Response, error) {
		var err error
		page, resp, err = g.client.Apps.ListHookDeliveries(ctx, opts)
		return resp, err
	})
	if err != nil {
		return nil, "", err
	}
	return attemptsOf(page), nextCursor(resp), nil
}

func (g *githubAppAPI) redeliver(ctx context.Context, hook config.Hook, a attempt) error {
	return g.call(ctx, false, func() (*gh.Response, error) {
		_, resp, err := g.client.Apps.RedeliverHookDelivery(ctx, a.id)
		return resp, err
	})
}

// state is the App's hook as GitHub shows it: subscribed to the App's
// events, active while it has a URL (GitHub's API does not say whether an
// App's webhook is switched off), and the answer its newest delivery got.
func (g *githubAppAPI) state(ctx context.Context, hook config.Hook) (HookState, error) {
	var cfg *gh.HookConfig
	var app *gh.App
	err := g.call(ctx, true, func() (*gh.Response, error) {
		var resp *gh.Response
		var err error
		cfg, resp, err = g.client.Apps.GetHookConfig(ctx)
		return resp, err
	})
	if err == nil {
		err = g.call(ctx, true, func() (*gh.Response, error) {
			var resp *gh.Response
			var err error
			app, resp, err = g.client.Apps.Get(ctx, "")
			return resp, err
		})
	}
	var newest *gh.HookDelivery
	if err == nil {
		newest, err = g.newestDelivery(ctx)
	}
	if err != nil {
		return HookState{}, err
	}
	st := HookState{Active: cfg.GetURL() != "", Events: app.Events}
	if st.Events == nil {
		st.Events = []string{}
	}
	if newest != nil {
		code := newest.GetStatusCode()
		st.LastResponse = &LastResponse{Code: &code, Status: newest.GetStatus()}
	}
	return st, nil
}
