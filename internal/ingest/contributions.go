package ingest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/trackergateway/gateway/connectors"
	"github.com/trackergateway/gateway/connectors/providers"
	"github.com/trackergateway/gateway/internal/config"
	"github.com/trackergateway/gateway/internal/idempotency"
	"github.com/trackergateway/gateway/internal/inbox"
	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/tasks"
)

// applyContribution applies a pull/merge request event: an existing
// association is kept current; otherwise the PR/MR links to the task of an
// issue that links to it by URL (linkedTasks) or that it references, or (link_or_create)
// creates a task for itself whose creation includes the
// remote_contribution_associate step. Either way the provider projection
// row is written from the payload, on its task and on every task of an
// issue linking to it.
func (a *Applier) applyContribution(ctx context.Context, conn config.Connection, ev connectors.Event, out inbox.Outcome) (inbox.Outcome, error) {
	c := ev.Contribution
	req := idempotency.RemoteContributionRequest{Provider: conn.Provider, RepositoryID: c.Repository,
		ContributionKind: c.Kind, ContributionID: strconv.FormatInt(c.ID, 10), ConnectionID: conn.ID}
	assoc, err := a.st.GetAssociation(ctx, req.Provider, req.ConnectionID, req.ContributionID)
	associated := err == nil
	switch {
	case err != nil && !errors.Is(err, store.ErrNotFound):
		return out, err
	case !associated && conn.PullRequests == config.PullRequestsIgnore:
		out.Status, out.Result = store.DeliveryIgnored, "pull_requests: ignore"
		return out, nil
	}
	linked, err := a.linkedTasks(ctx, conn, c)
	if err != nil {
		return out, err
	}
	if associated {
		out, err = a.followAssociation(ctx, conn, ev, assoc, out)
	} else {
		out, err = a.associate(ctx, conn, ev, req, linked, out)
	}
	if err != nil {
		return out, err
	}
	shown := 0
	for _, task := range linked {
		if task.ID == out.TaskID {
			continue
		}
		if err := a.project(ctx, conn, c, task.ID); err != nil {
			return out, err
		}
		if _, err := a.archiveOnMerge(ctx, conn, c, task); err != nil {
			return out, err
		}
		shown++
	}
	if shown > 0 {
		out.Result += "; shown on " + strconv.Itoa(shown) + " task(s) of issues linking to it"
	}
	return out, nil
}

// linkedTasks are the tasks of the issues that link to c by URL (through
// conn's provider and host), in the order the links were made; tasks of
// suppressed or absent issues are left out.
func (a *Applier) linkedTasks(ctx context.Context, conn config.Connection, c *connectors.Contribution) ([]store.Task, error) {
	links, err := a.st.ContributionLinksTo(ctx, conn.Workspace, conn.Provider, strings.ToLower(conn.Host),
		strings.ToLower(c.Repository), c.Number)
	if err != nil {
		return nil, fmt.Errorf("find links to the contribution: %w", err)
	}
	var out []store.Task
	for _, l := range links {
		e, err := a.st.LookupSourceEntity(ctx, conn.Workspace, l.ExternalID)
		if err != nil {
			return nil, err
		}
		if e.Suppressed {
			continue
		}
		task, ok, err := a.resolve(ctx, e)
		if err != nil {
			return nil, err
		}
		if ok && task.CreationState == store.CreationComplete &&
			!slices.ContainsFunc(out, func(t store.Task) bool { return t.ID == task.ID }) {
			out = append(out, task)
		}
	}
	return out, nil
}

// followAssociation applies the event to the task the PR/MR is associated
// with and writes the projection.
func (a *Applier) followAssociation(ctx context.Context, conn config.Connection, ev connectors.Event, assoc store.Association, out inbox.Outcome) (inbox.Outcome, error) {
	task, err := a.st.GetTask(ctx, assoc.TaskID)
	if errors.Is(err, store.ErrNotFound) {
		out.Status, out.Result = store.DeliveryIgnored, "the associated task no longer exists"
		return out, nil
	}
	if err != nil {
		return out, err
	}
	out, err = a.followContribution(ctx, conn, ev, task, out)
	if err != nil {
		return out, err
	}
	return out, a.project(ctx, conn, ev.Contribution, task.ID)
}

// followContribution updates the task a contribution is associated with: a
// task the PR/MR created mirrors it; a linked issue's task only follows the
// merge (on_merge).
func (a *Applier) followContribution(ctx context.Context, conn config.Connection, ev connectors.Event, task store.Task, out inbox.Outcome) (inbox.Outcome, error) {
	if task.ExternalID == ev.ExternalID {
		return a.update(ctx, conn, ev, task, out)
	}
	out.TaskID, out.Action, out.Result = task.ID, "link", "already linked"
	archived, err := a.archiveOnMerge(ctx, conn, ev.Contribution, task)
	if err != nil {
		return out, err
	}
	if archived {
		out.Action, out.Result = "archive", "archived on merge"
	}
	return out, nil
}

// associate links a PR/MR without an association to a task: that of the
// first issue linking to it (linked), else of the first issue it
// references, else (link_or_create) a task of its own.
func (a *Applier) associate(ctx context.Context, conn config.Connection, ev connectors.Event, req idempotency.RemoteContributionRequest,
	linked []store.Task, out inbox.Outcome) (inbox.Outcome, error) {
	c := ev.Contribution
	if len(linked) > 0 {
		return a.linkTo(ctx, conn, c, req, linked[0], "linked to "+sourceRef(linked[0])+", which links to it", out)
	}
	for _, ref := range c.References {
		task, err := a.referencedTask(ctx, conn, ref)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return out, err
		}
		return a.linkTo(ctx, conn, c, req, task, "linked to "+ref.Ref, out)
	}
	if conn.PullRequests != config.PullRequestsLinkOrCreate {
		out.Status, out.Result = store.DeliveryIgnored, "no referenced task to link (pull_requests: link)"
		return out, nil
	}
	if !filtersMatch(conn, ev) {
		out.Status, out.Result = store.DeliveryIgnored, "connection filters do not match"
		return out, nil
	}
	out, err := a.create(ctx, conn, ev, []idempotency.RemoteContributionRequest{req}, false, out)
	if errors.Is(err, idempotency.ErrStepFailed) {
		// The PR/MR was linked to another task (an issue's) while its own
		// creation ran: that creation was aborted, and the delivery follows
		// the existing association instead.
		if assoc, gerr := a.st.GetAssociation(ctx, req.Provider, req.ConnectionID, req.ContributionID); gerr == nil {
			return a.followAssociation(ctx, conn, ev, assoc, inbox.Outcome{ExternalID: out.ExternalID, Action: out.Action})
		}
	}
	if err != nil {
		return out, err
	}
	if ev.Closed || (c.Merged && conn.OnMerge == config.OnCloseArchive) {
		task, err := a.st.GetTask(ctx, out.TaskID)
		if err == nil {
			if _, err := a.update(ctx, conn, ev, task, inbox.Outcome{}); err != nil {
				return out, err
			}
		}
	}
	return out, a.project(ctx, conn, c, out.TaskID)
}

// linkTo associates the PR/MR with task (why says what found it) and
// writes its projection there; when another task holds the association
// (one task per PR/MR), the projection goes to that task.
func (a *Applier) linkTo(ctx context.Context, conn config.Connection, c *connectors.Contribution, req idempotency.RemoteContributionRequest,
	task store.Task, why string, out inbox.Outcome) (inbox.Outcome, error) {
	linked, err := a.coord.AssociateContribution(ctx, task, req)
	if err != nil {
		return out, fmt.Errorf("associate contribution: %w", err)
	}
	out.TaskID, out.Action, out.Result = linked.TaskID, "link", why
	if linked.TaskID != task.ID {
		// Another task holds the association; a later delivery follows it
		// through the association.
		out.Result = "already associated with another task"
		return out, a.project(ctx, conn, c, linked.TaskID)
	}
	if archived, err := a.archiveOnMerge(ctx, conn, c, task); err != nil {
		return out, err
	} else if archived {
		out.Result += "; archived on merge"
	}
	return out, a.project(ctx, conn, c, linked.TaskID)
}

// sourceRef names a task in an outcome by its source reference, else its
// identifier.
func sourceRef(t store.Task) string {
	if t.Source != nil && t.Source.Ref != "" {
		return t.Source.Ref
	}
	return t.Identifier
}

// referencedTask is the task of the issue ref names, among the tasks of
// every provider the reference may name (an issue key: Jira's or
// Linear's).
func (a *Applier) referencedTask(ctx context.Context, conn config.Connection, ref connectors.Reference) (store.Task, error) {
	for _, provider := range providers.ReferenceProviders(ref) {
		task, err := a.st.FindTaskBySourceRef(ctx, conn.Workspace, provider, ref.Ref)
		if !errors.Is(err, store.ErrNotFound) {
			return task, err
		}
	}
	return store.Task{}, store.ErrNotFound
}

// archiveOnMerge archives a linked task (one the PR/MR did not create) when
// the contribution is merged and the connection says on_merge: archive. It
// changes nothing else: the task mirrors its issue, not the PR's title,
// description, labels or source.
func (a *Applier) archiveOnMerge(ctx context.Context, conn config.Connection, c *connectors.Contribution, task store.Task) (bool, error) {
	if !c.Merged || conn.OnMerge != config.OnCloseArchive || task.ArchivedAt != nil {
		return false, nil
	}
	archive := true
	if _, err := a.tasks.Update(ctx, task.ID, tasks.Patch{Archived: &archive}, nil); err != nil {
		return false, fmt.Errorf("archive on merge: %w", err)
	}
	return true, nil
}

// project writes the projection row from the payload; with an API token it
// is marked for a refresh through the provider API.
func (a *Applier) project(ctx context.Context, conn config.Connection, c *connectors.Contribution, taskID string) error {
	p := store.Projection{Provider: conn.Provider, TaskID: taskID, ConnectionID: conn.ID, ProviderID: c.ID,
		Repository: c.Repository, Number: c.Number, URL: c.URL, Title: c.Title, State: c.State, Draft: c.Draft,
		Merged: c.Merged, HeadBranch: c.HeadBranch, BaseBranch: c.BaseBranch, HeadSHA: c.HeadSHA, Author: c.Author}
	if !c.MergedAt.IsZero() {
		m := c.MergedAt.UTC()
		p.MergedAt = &m
	}
	if !c.UpdatedAt.IsZero() {
		u := c.UpdatedAt.UTC()
		p.ProviderUpdatedAt = &u
	}
	if conn.HasAPIAccess() {
		due := a.now()
		p.NextSyncAt = &due
		// A refresh waiting out a provider-imposed delay (Retry-After, a
		// rate-limit reset, backoff) keeps its schedule: a webhook must not
		// make the projector call the API again before it may.
		rows, err := a.st.ListProjectionsForTasks(ctx, taskID)
		if err != nil {
			return fmt.Errorf("project contribution: %w", err)
		}
		for _, r := range rows {
			if r.Provider == p.Provider && r.ConnectionID == p.ConnectionID && r.ProviderID == p.ProviderID &&
				r.SyncAttempts > 0 && r.NextSyncAt != nil && r.NextSyncAt.After(due) {
				p.SyncAttempts, p.NextSyncAt, p.SyncError = r.SyncAttempts, r.NextSyncAt, r.SyncError
			}
		}
	}
	if err := a.tasks.ShowContribution(ctx, p); err != nil {
		return fmt.Errorf("project contribution: %w", err)
	}
	return nil
}
