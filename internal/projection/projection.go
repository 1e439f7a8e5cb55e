// Package projection maintains the provider PR/MR projection
// (github_task_prs, gitlab_task_mrs): the optional provider_pr_association of
// docs/design.md ("The creation ledger"). It runs after Complete — it reads
// task.created from the outbox — and is retried with backoff that honours
// Retry-After and rate-limit resets; its failures are recorded on the row and
// never affect creation.
package projection

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"code.gitea.io/sdk/gitea"
	"github.com/cenkalti/backoff/v4"
	gh "github.com/google/go-github/v62/github"
	gitlab "gitlab.com/gitlab-org/api/client-go"

	"github.com/trackergateway/gateway/connectors"
	"github.com/trackergateway/gateway/internal/config"
	"github.com/trackergateway/gateway/internal/events"
	"github.com/trackergateway/gateway/internal/metrics"
	"github.com/trackergateway/gateway/internal/providerapi"
	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/tasks"
)

// Consumer is this projector's outbox cursor name.
const Consumer = "provider_pr_association"

// Projector refreshes projections and lists a task's contributions.
type Projector struct {
	st     store.Store
	conns  func(string) (config.Connection, bool)
	logger *slog.Logger
	now    func() time.Time
	// HTTPClient is used for provider API calls.
	HTTPClient *http.Client
	// Apps are the GitHub App connections' credentials: their pull
	// requests are read as the installation that covers the repository.
	Apps *providerapi.GitHubApps
	// Metrics, when set, counts the provider API requests.
	Metrics *metrics.Metrics
	// Interval is the idle poll period of Run.
	Interval time.Duration
}

// New returns a projector.
func New(st store.Store, conns func(string) (config.Connection, bool), logger *slog.Logger, now func() time.Time) *Projector {
	return &Projector{st: st, conns: conns, logger: logger, now: func() time.Time { return now().UTC() },
		HTTPClient: &http.Client{Timeout: 20 * time.Second}, Interval: 2 * time.Second}
}

// ContributionsOf returns the linked PRs/MRs of each of taskIDs, by task ID
// (a task with none is absent), in one read per provider table.
func (p *Projector) ContributionsOf(ctx context.Context, taskIDs []string) (map[string][]tasks.Contribution, error) {
	rows, err := p.st.ListProjectionsForTasks(ctx, taskIDs...)
	if err != nil {
		return nil, err
	}
	out := make(map[string][]tasks.Contribution, len(taskIDs))
	for _, r := range rows {
		out[r.TaskID] = append(out[r.TaskID], tasks.ContributionOf(r))
	}
	return out, nil
}

// Run consumes task.created events and refreshes due rows until ctx ends.
func (p *Projector) Run(ctx context.Context) {
	for {
		if err := p.RunOnce(ctx); err != nil && ctx.Err() == nil {
			p.logger.Warn("projection pass failed", "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(p.Interval):
		}
	}
}

// RunOnce marks the projections of newly created tasks for refresh, then
// refreshes every due row once.
func (p *Projector) RunOnce(ctx context.Context) error {
	if err := p.consumeOutbox(ctx); err != nil {
		return err
	}
	due, err := p.st.ListProjectionsDue(ctx, p.now(), 50)
	if err != nil {
		return err
	}
	for _, row := range due {
		p.refresh(ctx, row)
	}
	return nil
}

// outboxBatch is how many events one read of the outbox takes.
const outboxBatch = 200

// consumeOutbox reads the outbox up to its end, a batch at a time: a pass
// that stopped after one batch would fall behind whenever tasks are
// created faster than a batch per Interval.
func (p *Projector) consumeOutbox(ctx context.Context) error {
	for {
		n, err := p.consumeOutboxBatch(ctx)
		if err != nil || n < outboxBatch {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// consumeOutboxBatch: after task.created, a task's projection rows with an
// API token are due for a refresh (the payload may have been partial). It
// returns how many events it read.
func (p *Projector) consumeOutboxBatch(ctx context.Context) (int, error) {
	cursor, err := p.st.GetOutboxCursor(ctx, Consumer)
	if err != nil {
		return 0, err
	}
	events, err := p.st.ReadTaskEvents(ctx, cursor, outboxBatch)
	if err != nil {
		return 0, err
	}
	// One read of the projection rows for every task the batch created,
	// not one per event: most created tasks have none.
	var created []string
	for _, ev := range events {
		if ev.Type == store.EventTaskCreated {
			created = append(created, ev.TaskID)
		}
	}
	if len(created) > 0 {
		rows, err := p.st.ListProjectionsForTasks(ctx, created...)
		if err != nil {
			return 0, err
		}
		for _, r := range rows {
			if conn, ok := p.conns(r.ConnectionID); ok && conn.HasAPIAccess() && r.LastSyncedAt == nil && r.NextSyncAt == nil {
				due := p.now()
				r.NextSyncAt = &due
				if err := p.st.UpdateProjectionSync(ctx, r); err != nil {
					return 0, err
				}
			}
		}
	}
	if len(events) == 0 {
		return 0, nil
	}
	return len(events), p.st.SaveOutboxCursor(ctx, Consumer, events[len(events)-1].ID, p.now())
}

// retryAfter is a provider-imposed wait.
type retryAfter struct {
	wait time.Duration
	err  error
}

func (r *retryAfter) Error() string { return r.err.Error() }
func (r *retryAfter) Unwrap() error { return r.err }

func (p *Projector) refresh(ctx context.Context, row store.Projection) {
	conn, ok := p.conns(row.ConnectionID)
	if !ok || !conn.HasAPIAccess() {
		row.NextSyncAt = nil
		_ = p.st.UpdateProjectionSync(ctx, row)
		return
	}
	fresh, err := p.fetch(ctx, conn, row)
	now := p.now()
	if err != nil && ctx.Err() != nil {
		return // shutting down: not a provider failure, the row stays due
	}
	if err != nil {
		row.SyncAttempts++
		row.SyncError = syncError(err, conn.APIToken)
		next := now.Add(delay(row.SyncAttempts, err))
		row.NextSyncAt = &next
		p.logger.Info("projection refresh failed", "connection", row.ConnectionID, "task_id", row.TaskID,
			"attempts", row.SyncAttempts, "next_sync_at", next, "error", row.SyncError)
		if uerr := p.st.UpdateProjectionSync(ctx, row); uerr != nil {
			p.logger.Warn("record projection failure", "task_id", row.TaskID, "error", uerr)
		}
		return
	}
	fresh.LastSyncedAt, fresh.NextSyncAt, fresh.SyncAttempts, fresh.SyncError = &now, nil, 0, ""
	// What the refresh changes on the task is an event of the task, caused
	// by the connection (no delivery brought it).
	cctx := events.WithCause(ctx, events.Cause{Connection: row.ConnectionID})
	if err := tasks.ShowContribution(cctx, p.st, fresh, now); err != nil {
		p.logger.Warn("store projection", "task_id", row.TaskID, "error", err)
		return
	}
	// A stale API answer (older than the payload we hold) does not
	// overwrite; still record that the row was checked.
	row.LastSyncedAt, row.NextSyncAt, row.SyncAttempts, row.SyncError = &now, nil, 0, ""
	_ = p.st.UpdateProjectionSync(ctx, row)
}

// maxSyncError bounds the stored sync_error (an API error can carry a whole
// HTML error page).
const maxSyncError = 1000

// syncError is the message stored on the row: the API token never appears
// in it (an error could echo a URL or header), and it is bounded.
func syncError(err error, token string) string {
	msg := err.Error()
	if token != "" {
		msg = strings.ReplaceAll(msg, token, "[redacted]")
	}
	msg = strings.ToValidUTF8(strings.ReplaceAll(msg, "\x00", ""), "\uFFFD")
	if len(msg) > maxSyncError {
		cut := maxSyncError
		for cut > 0 && !utf8.RuneStart(msg[cut]) {
			cut--
		}
		msg = msg[:cut] + "…"
	}
	return msg
}

// delay is exponential backoff (cenkalti/backoff: 2s, ×1.5, at most 10
// minutes, no jitter) for the n-th consecutive failure, raised to what the
// provider asked for (Retry-After, rate-limit reset).
func delay(attempt int, err error) time.Duration {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval, b.MaxInterval, b.RandomizationFactor = 2*time.Second, 10*time.Minute, 0
	b.MaxElapsedTime = 0 // never Stop: the row is retried until it succeeds
	b.Reset()
	d := b.NextBackOff()
	for i := 1; i < attempt && d < b.MaxInterval; i++ {
		d = b.NextBackOff()
	}
	var ra *retryAfter
	if errors.As(err, &ra) && ra.wait > d {
		d = min(ra.wait, providerapi.MaxWait)
	}
	return d
}

// apiFetchers reads a PR/MR from its provider's API, keyed by the name of
// each registered provider that has a projection.
var apiFetchers = map[string]func(p *Projector, ctx context.Context, conn config.Connection, row store.Projection) (store.Projection, error){
	connectors.ProviderGitHub: (*Projector).fetchGitHub,
	connectors.ProviderGitLab: (*Projector).fetchGitLab,
	connectors.ProviderGitea:  (*Projector).fetchGitea,
}

func (p *Projector) fetch(ctx context.Context, conn config.Connection, row store.Projection) (store.Projection, error) {
	if fetch, ok := apiFetchers[conn.Provider]; ok {
		return fetch(p, ctx, conn, row)
	}
	return row, fmt.Errorf("no projection API for %s", conn.Provider)
}

func (p *Projector) fetchGitHub(ctx context.Context, conn config.Connection, row store.Projection) (store.Projection, error) {
	owner, repo, ok := strings.Cut(row.Repository, "/")
	if !ok {
		return row, fmt.Errorf("repository %q is not owner/repo", row.Repository)
	}
	client, resp, err := p.githubClient(ctx, conn, owner, repo)
	if err != nil {
		return row, githubFailure(err, resp, p.now())
	}
	pr, resp, err := client.PullRequests.Get(ctx, owner, repo, int(row.Number))
	if err != nil {
		if app := p.Apps.For(conn.ID); app != nil {
			// The App may have been uninstalled there, or installed anew.
			app.Forget(owner, repo)
		}
		return row, githubFailure(err, resp, p.now())
	}
	if pr.GetID() != row.ProviderID {
		// The row's key is the payload's pull_request.id; never write the
		// answer under another key (that would be a second row).
		return row, fmt.Errorf("GitHub answered pull request id %d for %s#%d, the row holds %d", pr.GetID(), row.Repository, row.Number, row.ProviderID)
	}
	out := row
	out.URL, out.Title = pr.GetHTMLURL(), pr.GetTitle()
	out.Draft, out.Merged = pr.GetDraft(), pr.GetMerged() || pr.MergedAt != nil
	out.State = "open"
	switch {
	case out.Merged:
		out.State = "merged"
	case pr.GetState() == "closed":
		out.State = "closed"
	}
	if pr.MergedAt != nil {
		t := pr.MergedAt.UTC()
		out.MergedAt = &t
	}
	out.HeadBranch, out.BaseBranch = pr.GetHead().GetRef(), pr.GetBase().GetRef()
	out.HeadSHA, out.Author = pr.GetHead().GetSHA(), pr.GetUser().GetLogin()
	if pr.UpdatedAt != nil {
		t := pr.UpdatedAt.UTC()
		out.ProviderUpdatedAt = &t
	}
	return out, nil
}

// githubClient is the client that reads owner/repo: the API token's, or
// for a GitHub App connection the installation's that covers the
// repository.
func (p *Projector) githubClient(ctx context.Context, conn config.Connection, owner, repo string) (*gh.Client, *gh.Response, error) {
	if app := p.Apps.For(conn.ID); app != nil {
		return app.RepositoryClient(ctx, owner, repo, p.now())
	}
	if conn.App != nil {
		return nil, nil, fmt.Errorf("connection %s: its GitHub App's credentials are not loaded", conn.ID)
	}
	client, err := providerapi.GitHubClient(p.HTTPClient, p.Metrics, conn)
	return client, nil, err
}

// githubFailure is err, carrying the wait GitHub asked for when it asked
// for one.
func githubFailure(err error, resp *gh.Response, now time.Time) error {
	if d := providerapi.GitHubWait(err, resp, now); d > 0 {
		return &retryAfter{wait: d, err: err}
	}
	return err
}

func (p *Projector) fetchGitLab(ctx context.Context, conn config.Connection, row store.Projection) (store.Projection, error) {
	client, err := providerapi.GitLabClient(p.HTTPClient, p.Metrics, conn)
	if err != nil {
		return row, err
	}
	mr, resp, err := client.MergeRequests.GetMergeRequest(row.Repository, row.Number, nil, gitlab.WithContext(ctx))
	if err != nil {
		if resp != nil && resp.Response != nil {
			if d := providerapi.WaitHeader(resp.Header, resp.StatusCode, p.now()); d > 0 {
				return row, &retryAfter{wait: d, err: err}
			}
		}
		return row, err
	}
	if mr.ID != row.ProviderID {
		return row, fmt.Errorf("GitLab answered merge request id %d for %s!%d, the row holds %d", mr.ID, row.Repository, row.Number, row.ProviderID)
	}
	out := row
	out.URL, out.Title, out.Draft = mr.WebURL, mr.Title, mr.Draft || mr.WorkInProgress
	// GitLab states: opened, closed, locked (being merged), merged.
	out.State, out.Merged = "open", mr.State == "merged"
	switch mr.State {
	case "merged":
		out.State = "merged"
	case "closed":
		out.State = "closed"
	}
	if mr.MergedAt != nil {
		t := mr.MergedAt.UTC()
		out.MergedAt = &t
	} else if !out.Merged {
		out.MergedAt = nil
	}
	out.HeadBranch, out.BaseBranch, out.HeadSHA = mr.SourceBranch, mr.TargetBranch, mr.SHA
	if mr.Author != nil {
		out.Author = mr.Author.Username
	}
	if mr.UpdatedAt != nil {
		t := mr.UpdatedAt.UTC()
		out.ProviderUpdatedAt = &t
	}
	return out, nil
}

func (p *Projector) fetchGitea(ctx context.Context, conn config.Connection, row store.Projection) (store.Projection, error) {
	owner, repo, ok := strings.Cut(row.Repository, "/")
	if !ok {
		return row, fmt.Errorf("repository %q is not owner/repo", row.Repository)
	}
	client, err := providerapi.GiteaClient(p.HTTPClient, p.Metrics, conn)
	if err != nil {
		return row, err
	}
	client.SetContext(ctx)
	pr, resp, err := client.GetPullRequest(owner, repo, row.Number)
	if err != nil {
		if resp != nil && resp.Response != nil {
			if d := providerapi.WaitHeader(resp.Header, resp.StatusCode, p.now()); d > 0 {
				return row, &retryAfter{wait: d, err: err}
			}
		}
		return row, err
	}
	if pr.ID != row.ProviderID {
		return row, fmt.Errorf("gitea answered pull request id %d for %s#%d, the row holds %d", pr.ID, row.Repository, row.Number, row.ProviderID)
	}
	out := row
	out.URL, out.Title, out.Draft = pr.HTMLURL, pr.Title, pr.Draft
	out.State, out.Merged = "open", pr.HasMerged
	switch {
	case pr.HasMerged:
		out.State = "merged"
	case pr.State == gitea.StateClosed:
		out.State = "closed"
	}
	out.MergedAt = nil
	if pr.Merged != nil {
		t := pr.Merged.UTC()
		out.MergedAt = &t
	}
	out.HeadBranch, out.BaseBranch, out.HeadSHA = "", "", ""
	if pr.Head != nil {
		out.HeadBranch, out.HeadSHA = pr.Head.Ref, pr.Head.Sha
	}
	if pr.Base != nil {
		out.BaseBranch = pr.Base.Ref
	}
	if pr.Poster != nil {
		out.Author = pr.Poster.UserName
	}
	if pr.Updated != nil {
		t := pr.Updated.UTC()
		out.ProviderUpdatedAt = &t
	}
	return out, nil
}
