package recovery

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	gitlab "gitlab.com/gitlab-org/api/client-go"

	"github.com/trackergateway/gateway/connectors"
	"github.com/trackergateway/gateway/internal/config"
	"github.com/trackergateway/gateway/internal/providerapi"
)

// gitlabAPI reads and resends GitLab project and group hook events:
// client-go's typed call where it has one (ResendGroupHookEvent), its
// request builder for the rest (the event lists, a project event's resend,
// the hooks' state).
type gitlabAPI struct {
	r      *Recoverer
	client *gitlab.Client
}

func newGitLabAPI(r *Recoverer, conn config.Connection) (hookAPI, error) {
	client, err := providerapi.GitLabClient(r.HTTPClient, r.Metrics, conn)
	if err != nil {
		return nil, err
	}
	return &gitlabAPI{r: r, client: client}, nil
}

// gitlabHookEvent is one entry of GET …/hooks/:hook_id/events.
type gitlabHookEvent struct {
	ID             int64             `json:"id"`
	Trigger        string            `json:"trigger"`
	RequestHeaders map[string]string `json:"request_headers"`
	RequestData    string            `json:"request_data"`
	// ResponseStatus is the receiver's status code as text, or what went
	// wrong ("internal error").
	ResponseStatus string    `json:"response_status"`
	CreatedAt      time.Time `json:"created_at"`
}

// call runs one client-go request through the recoverer's retries;
// idempotent (a read) may also be retried after a server error.
func (g *gitlabAPI) call(ctx context.Context, idempotent bool, request func() (*gitlab.Response, error)) error {
	return g.r.retrying(ctx, idempotent, func() (answer, error) {
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

// hookPath is the API path of the hook: projects/:id/hooks/:hook_id or
// groups/:id/hooks/:hook_id.
func hookPath(hook config.Hook) string {
	if hook.Group != "" {
		return fmt.Sprintf("groups/%s/hooks/%d", gitlab.PathEscape(hook.Group), hook.ID)
	}
	return fmt.Sprintf("projects/%s/hooks/%d", gitlab.PathEscape(hook.Project), hook.ID)
}

// gitlabPageSize is the most events GitLab lists a page.
const gitlabPageSize = 100

// page: GitLab's pages are numbered, from 1; the cursor is the number
// ("" the first).
func (g *gitlabAPI) page(ctx context.Context, hook config.Hook, cursor string) ([]attempt, string, error) {
	opts := gitlab.ListOptions{Page: 1, PerPage: gitlabPageSize}
	if cursor != "" {
		n, err := strconv.ParseInt(cursor, 10, 64)
		if err != nil {
			return nil, "", fmt.Errorf("page %q: %w", cursor, err)
		}
		opts.Page = n
	}
	var page []gitlabHookEvent
	var resp *gitlab.Response
	err := g.call(ctx, true, func() (*gitlab.Response, error) {
		req, err := g.client.NewRequest(http.MethodGet, hookPath(hook)+"/events", &opts, []gitlab.RequestOptionFunc{gitlab.WithContext(ctx)})
		if err != nil {
			return nil, err
		}
		page = nil
		resp, err = g.client.Do(req, &page)
		return resp, err
	})
	if err != nil {
		return nil, "", err
	}
	out := make([]attempt, 0, len(page))
	for _, e := range page {
		code, _ := strconv.Atoi(strings.TrimSpace(e.ResponseStatus))
		out = append(out, attempt{id: e.ID, guid: gitlabGUID(e), deliveredAt: e.CreatedAt.UTC(),
			statusCode: code, event: e.Trigger})
	}
	next := ""
	if resp != nil && resp.NextPage > 0 {
		next = strconv.FormatInt(resp.NextPage, 10)
	}
	return out, next, nil
}

// gitlabGUID is what identifies an event's delivery across GitLab's
// resends: its Idempotency-Key (the receiver's delivery key), else the
// SHA-256 of the body it sent, which is the receiver's key then.
func gitlabGUID(e gitlabHookEvent) string {
	for k, v := range e.RequestHeaders {
		if strings.EqualFold(k, "Idempotency-Key") && strings.TrimSpace(v) != "" {
			return strings.TrimSpace(v)
		}
	}
	return connectors.BodyDeliveryKey([]byte(e.RequestData))
}

func (g *gitlabAPI) redeliver(ctx context.Context, hook config.Hook, a attempt) error {
	return g.call(ctx, false, func() (*gitlab.Response, error) {
		if hook.Group != "" {
			return g.client.Groups.ResendGroupHookEvent(hook.Group, hook.ID, a.id, gitlab.WithContext(ctx))
		}
		req, err := g.client.NewRequest(http.MethodPost, fmt.Sprintf("%s/events/%d/resend", hookPath(hook), a.id), nil,
			[]gitlab.RequestOptionFunc{gitlab.WithContext(ctx)})
		if err != nil {
			return nil, err
		}
		return g.client.Do(req, nil)
	})
}

// inboxKeys: the receiver keys a GitLab delivery by its Idempotency-Key,
// unique per connection, which is the GUID here.
func (g *gitlabAPI) inboxKeys(_ config.Hook, guid string) []string { return []string{guid} }

// gitlabHook is GET projects/:id/hooks/:hook_id (or the group's) as
// hook health reads it. Read through the request builder for both kinds:
// client-go's typed GroupHook has no disabled_until.
type gitlabHook struct {
	AlertStatus   string     `json:"alert_status"`
	DisabledUntil *time.Time `json:"disabled_until"`
}

// gitlabEventFlags are a hook's event subscriptions, by their API names.
var gitlabEventFlags = []string{"push_events", "tag_push_events", "issues_events", "confidential_issues_events",
	"merge_requests_events", "note_events", "confidential_note_events", "pipeline_events", "job_events",
	"wiki_page_events", "deployment_events", "releases_events"}

func (g *gitlabAPI) state(ctx context.Context, hook config.Hook) (HookState, error) {
	var raw json.RawMessage
	err := g.call(ctx, true, func() (*gitlab.Response, error) {
		req, err := g.client.NewRequest(http.MethodGet, hookPath(hook), nil, []gitlab.RequestOptionFunc{gitlab.WithContext(ctx)})
		if err != nil {
			return nil, err
		}
		return g.client.Do(req, &raw)
	})
	if err != nil {
		return HookState{}, err
	}
	var h gitlabHook
	var flags map[string]any
	if err := json.Unmarshal(raw, &h); err != nil {
		return HookState{}, fmt.Errorf("decode hook: %w", err)
	}
	if err := json.Unmarshal(raw, &flags); err != nil {
		return HookState{}, fmt.Errorf("decode hook: %w", err)
	}
	st := HookState{AlertStatus: h.AlertStatus, DisabledUntil: h.DisabledUntil, Events: []string{},
		// alert_status: executable, disabled (after failing too often),
		// temporarily_disabled (until disabled_until).
		Active: h.AlertStatus == "" || h.AlertStatus == "executable"}
	for _, name := range gitlabEventFlags {
		if on, _ := flags[name].(bool); on {
			st.Events = append(st.Events, name)
		}
	}
	return st, nil
}
