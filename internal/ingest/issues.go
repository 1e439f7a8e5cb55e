package ingest

import (
	"context"
	"fmt"

	"github.com/trackergateway/gateway/connectors"
	"github.com/trackergateway/gateway/internal/config"
	"github.com/trackergateway/gateway/internal/idempotency"
	"github.com/trackergateway/gateway/internal/inbox"
	"github.com/trackergateway/gateway/internal/store"
)

// applyIssue applies an issue change. An issue event may carry links
// (recovery reads an issue with its attachments): recorded first, so a
// create shows them with the others its issue has (issue); otherwise they
// are shown once the task has changed.
func (a *Applier) applyIssue(ctx context.Context, conn config.Connection, ev connectors.Event, current, previous store.SourceEntity,
	out inbox.Outcome) (inbox.Outcome, error) {
	var links []connectors.ContributionLink
	if ev.Action != connectors.ActionDelete {
		var err error
		if links, err = a.recordLinks(ctx, conn, ev.ExternalID, ev.Links, false); err != nil {
			return out, err
		}
	}
	out, err := a.issue(ctx, conn, ev, current, previous, out)
	if err != nil || out.TaskID == "" || out.Action == "create" {
		return out, err
	}
	for _, l := range links {
		if _, err := a.showContribution(ctx, conn.Workspace, out.TaskID, l); err != nil {
			return out, err
		}
	}
	return out, nil
}

// issue applies the change to the entity's task: a delete, a transfer, an
// update of the task it has, else a create.
func (a *Applier) issue(ctx context.Context, conn config.Connection, ev connectors.Event, current, previous store.SourceEntity, out inbox.Outcome) (inbox.Outcome, error) {
	task, found, err := a.resolve(ctx, current)
	if err != nil {
		return out, err
	}
	switch ev.Action {
	case connectors.ActionDelete:
		return a.deleteEntity(ctx, conn, ev, task, found, out)
	case connectors.ActionTransfer:
		prev, ok, err := a.followPrevious(ctx, conn, ev, previous)
		if err != nil {
			return out, err
		}
		if !ok {
			out.Status, out.Result = store.DeliveryIgnored, "no task follows the transferred entity"
			return out, nil
		}
		// The source (reference, URL) is kept current: after a GitHub
		// transfer it names the new issue, so pull requests referencing the
		// new repository's issue find the task.
		updated, err := a.update(ctx, conn, ev, prev, inbox.Outcome{})
		if err != nil {
			return out, err
		}
		out.TaskID, out.Action = prev.ID, "alias"
		out.Result = "task follows the entity to " + ev.ExternalID + "; " + updated.Result
		return out, nil
	}
	if !found && ev.PreviousExternalID != "" {
		if task, found, err = a.followPrevious(ctx, conn, ev, previous); err != nil {
			return out, err
		}
	}
	if found {
		return a.update(ctx, conn, ev, task, out)
	}
	if !filtersMatch(conn, ev) {
		out.Status, out.Result = store.DeliveryIgnored, "connection filters do not match"
		return out, nil
	}
	// Nothing holds the external ID: LookupSourceEntity has just read it.
	out, err = a.create(ctx, conn, ev, nil, true, out)
	if err != nil {
		return out, err
	}
	// A new task takes the issue's former references and the links to
	// pull and merge requests recorded before it existed; also when the
	// create found the task (a retry after a crash right after creating).
	if err := a.recordFormerRefs(ctx, conn.Workspace, ev, store.Task{ID: out.TaskID}); err != nil {
		return out, err
	}
	if err := a.showIssueLinks(ctx, conn.Workspace, ev.ExternalID, out.TaskID); err != nil {
		return out, err
	}
	if !(ev.Action == connectors.ActionClose || ev.Closed) || out.Result != idempotency.Created.String() {
		return out, nil
	}
	// A close seen before its open (providers do not order deliveries): the
	// task mirrors the closed entity, so the older "opened" that arrives
	// later is stale and cannot reopen it.
	created, err := a.st.GetTask(ctx, out.TaskID)
	if err != nil {
		return out, err
	}
	closed, err := a.update(ctx, conn, ev, created, inbox.Outcome{})
	if err != nil {
		return out, err
	}
	out.Action = "create"
	if closed.Action == "archive" {
		out.Result = idempotency.Created.String() + "; archived (closed at source)"
	}
	return out, nil
}

// followPrevious finds the task of the external ID ev replaces (previous)
// and, when there is one, records ev's external ID as its alias: the task
// follows the entity.
func (a *Applier) followPrevious(ctx context.Context, conn config.Connection, ev connectors.Event, previous store.SourceEntity) (store.Task, bool, error) {
	prev, ok, err := a.resolve(ctx, previous)
	if err != nil || !ok {
		return store.Task{}, false, err
	}
	if err := a.st.InsertAlias(ctx, conn.Workspace, ev.ExternalID, prev.ID, a.now()); err != nil {
		return store.Task{}, false, err
	}
	return prev, true, nil
}

// deleteEntity deletes the entity's task, if it has one, and records the
// suppression of the delivered external ID (an alias after a transfer, as
// well as a task's own) in the same transaction (tasks.DeleteAtSource): a
// delete that arrives before its create must suppress the create.
func (a *Applier) deleteEntity(ctx context.Context, conn config.Connection, ev connectors.Event, task store.Task, found bool, out inbox.Outcome) (inbox.Outcome, error) {
	out.Action = "delete"
	if !found {
		task = store.Task{}
	}
	_, deleted, err := a.tasks.DeleteAtSource(ctx, conn.Workspace, ev.ExternalID, task.ID)
	if err != nil {
		return out, fmt.Errorf("delete task: %w", err)
	}
	if err := a.failpoint(FailAfterDelete); err != nil {
		return out, err
	}
	switch {
	case !found:
		out.Result = "no task; suppression recorded"
	case !deleted:
		out.TaskID, out.Result = task.ID, "task already deleted; suppression recorded"
	default:
		out.TaskID, out.Result = task.ID, "task deleted; suppression recorded"
	}
	return out, nil
}
