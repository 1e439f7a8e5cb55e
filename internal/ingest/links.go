package ingest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/trackergateway/gateway/connectors"
	"github.com/trackergateway/gateway/internal/config"
	"github.com/trackergateway/gateway/internal/inbox"
	"github.com/trackergateway/gateway/internal/store"
)

// This file applies the links an issue makes to pull and merge requests by
// URL (a Linear attachment of a GitHub pull request), and shows them on
// tasks for the issue changes that carry links too (issues.go).
//
// A link is recorded under the issue's external ID, not its task, so that
// it holds whatever order the deliveries come in: the attachment before
// the issue's create, or before the pull request's first delivery. A
// pull or merge request links through the creation coordinator to at most
// one task (its association); a link makes it
//   - link to the issue's task when it has no association yet, in
//     preference to the issues its text references;
//   - show on the issue's task, with its projection kept current by its
//     deliveries, when it is associated with another task (the task it
//     created, or another issue's).

// applyLinks applies a link or unlink event (ActionLink, ActionUnlink):
// each link is recorded (a removal as a tombstone, so an older create
// arriving late is not applied), then shown on or taken off the issue's
// task when it has one.
func (a *Applier) applyLinks(ctx context.Context, conn config.Connection, ev connectors.Event, current store.SourceEntity,
	out inbox.Outcome) (inbox.Outcome, error) {
	task, found, err := a.resolve(ctx, current)
	if err != nil {
		return out, err
	}
	removed := ev.Action == connectors.ActionUnlink
	applied, err := a.recordLinks(ctx, conn, ev.ExternalID, ev.Links, removed)
	if err != nil {
		return out, err
	}
	if found {
		out.TaskID = task.ID
	}
	if len(applied) == 0 {
		out.Result = StaleUpdateSkipped
		return out, nil
	}
	var results []string
	for _, l := range applied {
		name := linkName(l)
		switch {
		case !found:
			results = append(results, name+" recorded; the issue has no task yet")
		case removed:
			kept, err := a.hideContribution(ctx, conn.Workspace, task.ID, l)
			if err != nil {
				return out, err
			}
			if kept {
				results = append(results, name+" unlinked; it stays on the task, which it linked to itself")
			} else {
				results = append(results, name+" unlinked")
			}
		default:
			shown, err := a.showContribution(ctx, conn.Workspace, task.ID, l)
			if err != nil {
				return out, err
			}
			if shown {
				results = append(results, name+" linked")
			} else {
				results = append(results, name+" recorded; it links when the gateway receives it")
			}
		}
	}
	out.Result = strings.Join(results, "; ")
	return out, nil
}

// recordLinks records an issue's links (removed: their removal), under
// the connection that received them, and returns those written: a link
// whose stored row is later is left as it is.
func (a *Applier) recordLinks(ctx context.Context, conn config.Connection, externalID string, links []connectors.ContributionLink,
	removed bool) ([]connectors.ContributionLink, error) {
	var applied []connectors.ContributionLink
	for _, l := range links {
		ok, err := a.st.UpsertContributionLink(ctx, linkRow(conn, externalID, l, removed))
		if err != nil {
			return nil, fmt.Errorf("record link: %w", err)
		}
		if ok {
			applied = append(applied, l)
		}
	}
	return applied, nil
}

func linkRow(conn config.Connection, externalID string, l connectors.ContributionLink, removed bool) store.ContributionLink {
	return store.ContributionLink{WorkspaceID: conn.Workspace, ConnectionID: conn.ID, LinkID: l.ID, ExternalID: externalID, Provider: l.Provider,
		Host: l.Host, Repository: l.Repository, Number: l.Number, URL: l.URL, Removed: removed, UpdatedAt: l.UpdatedAt.UTC()}
}

// linkName is how an outcome names a link's PR/MR: "pull request
// acme/api#42", "merge request acme/infra!9".
func linkName(l connectors.ContributionLink) string {
	if l.Kind == connectors.KindMergeRequest {
		return "merge request " + l.Repository + "!" + strconv.FormatInt(l.Number, 10)
	}
	return "pull request " + l.Repository + "#" + strconv.FormatInt(l.Number, 10)
}

// hideContribution takes l's PR/MR off the task, unless the PR/MR is
// associated with the task (it linked to it, through the coordinator, and
// that is never undone): kept says so.
func (a *Applier) hideContribution(ctx context.Context, workspaceID, taskID string, l connectors.ContributionLink) (kept bool, err error) {
	rows, err := a.linkedProjections(ctx, workspaceID, l)
	if err != nil {
		return false, err
	}
	for _, p := range rows {
		if p.TaskID != taskID {
			continue
		}
		assoc, err := a.st.GetAssociation(ctx, p.Provider, p.ConnectionID, strconv.FormatInt(p.ProviderID, 10))
		switch {
		case err == nil && assoc.TaskID == taskID:
			kept = true
			continue
		case err != nil && !errors.Is(err, store.ErrNotFound):
			return kept, err
		}
		if _, err := a.tasks.HideContribution(ctx, p); err != nil {
			return kept, fmt.Errorf("hide linked contribution: %w", err)
		}
	}
	return kept, nil
}

// linkedProjections are the projection rows of l's PR/MR the gateway holds
// in the workspace: rows of a connection of l's provider and host (in
// any task), which is where a PR/MR the gateway has received is described.
func (a *Applier) linkedProjections(ctx context.Context, workspaceID string, l connectors.ContributionLink) ([]store.Projection, error) {
	rows, err := a.st.ListProjectionsOfContribution(ctx, l.Provider, l.Repository, l.Number)
	if err != nil {
		return nil, fmt.Errorf("find linked contribution: %w", err)
	}
	return slices.DeleteFunc(rows, func(p store.Projection) bool {
		c, ok := a.conns(p.ConnectionID)
		return !ok || c.Workspace != workspaceID || c.Provider != l.Provider || !strings.EqualFold(c.Host, l.Host)
	}), nil
}

// showContribution puts l's PR/MR on the task when the gateway has received
// it: the newest row it holds of each (connection, PR/MR) is copied to the
// task. shown is false when the gateway has not received the PR/MR yet;
// its first delivery links it then.
func (a *Applier) showContribution(ctx context.Context, workspaceID, taskID string, l connectors.ContributionLink) (shown bool, err error) {
	rows, err := a.linkedProjections(ctx, workspaceID, l)
	if err != nil || len(rows) == 0 {
		return false, err
	}
	// The newest row of each (connection, PR/MR) held by another task; the
	// upsert keeps the task's own row when that one is newer.
	newest := map[string]store.Projection{}
	for _, p := range rows {
		key := p.ConnectionID + "|" + strconv.FormatInt(p.ProviderID, 10)
		if have, ok := newest[key]; p.TaskID != taskID && (!ok || newer(p, have)) {
			newest[key] = p
		}
	}
	for _, p := range newest {
		// The copy describes the PR/MR as the newest row does; the PR/MR's
		// next delivery brings every row up to date, so it is not
		// refreshed through the API on its own.
		p.TaskID, p.SyncAttempts, p.NextSyncAt, p.SyncError = taskID, 0, nil, ""
		if err := a.tasks.ShowContribution(ctx, p); err != nil {
			return false, fmt.Errorf("show linked contribution: %w", err)
		}
	}
	return true, nil
}

func newer(p, than store.Projection) bool {
	switch {
	case p.ProviderUpdatedAt == nil:
		return false
	case than.ProviderUpdatedAt == nil:
		return true
	}
	return p.ProviderUpdatedAt.After(*than.ProviderUpdatedAt)
}

// showIssueLinks shows on a new task every live link its issue has: links
// recorded before the task existed, or with the delivery that created it.
func (a *Applier) showIssueLinks(ctx context.Context, workspaceID, externalID, taskID string) error {
	links, err := a.st.ContributionLinksFrom(ctx, workspaceID, externalID)
	if err != nil {
		return err
	}
	for _, l := range links {
		if _, err := a.showContribution(ctx, workspaceID, taskID, connectors.ContributionLink{Provider: l.Provider, Host: l.Host,
			Repository: l.Repository, Number: l.Number}); err != nil {
			return err
		}
	}
	return nil
}
