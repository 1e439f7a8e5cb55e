package ingest

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/trackergateway/gateway/connectors"
	"github.com/trackergateway/gateway/internal/config"
	"github.com/trackergateway/gateway/internal/idempotency"
	"github.com/trackergateway/gateway/internal/inbox"
	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/tasks"
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
		prev, ok, err := a.resolve(ctx, previous)
		if err != nil {
			return out, err
		}
		if !ok {
			out.Status, out.Result = store.DeliveryIgnored, "no task follows the transferred entity"
			return out, nil
		}
		if err := a.st.InsertAlias(ctx, conn.Workspace, ev.ExternalID, prev.ID, a.now()); err != nil {
			return out, err
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
		prev, ok, err := a.resolve(ctx, previous)
		if err != nil {
			return out, err
		}
		if ok {
			if err := a.st.InsertAlias(ctx, conn.Workspace, ev.ExternalID, prev.ID, a.now()); err != nil {
				return out, err
			}
			task, found = prev, true
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

// StaleUpdateSkipped is the result of a delivery whose update was older than
// the last one applied to its task: it succeeded, and its action was not
// applied.
const StaleUpdateSkipped = "stale update skipped (older than the last applied event)"

// UnchangedSkipped is the result of a delivery whose update carried the
// state its task already has (a resend under a new delivery ID): it
// succeeded, and nothing was written.
const UnchangedSkipped = "unchanged (the task already has this state)"

func (a *Applier) update(ctx context.Context, conn config.Connection, ev connectors.Event, task store.Task, out inbox.Outcome) (inbox.Outcome, error) {
	out.TaskID = task.ID
	if task.CreationState != store.CreationComplete {
		return out, fmt.Errorf("task %s is still being created", task.ID)
	}
	if err := a.recordFormerRefs(ctx, conn.Workspace, ev, task); err != nil {
		return out, err
	}
	p := tasks.Patch{Source: &store.Source{Provider: ev.Source.Provider, Kind: ev.Source.Kind, Ref: ev.Source.Ref, URL: ev.Source.URL}}
	if title := cleanTitle(ev.Title); title != "" {
		p.Title = &title
	}
	desc := cleanDescription(ev.Description)
	p.Description = &desc
	labels := cleanLabels(ev.Labels)
	p.Labels = &labels
	if !ev.UpdatedAt.IsZero() {
		u := ev.UpdatedAt.UTC()
		p.SourceUpdatedAt = &u
	}
	action := "update"
	switch {
	case ev.Action == connectors.ActionReopen || (!ev.Closed && task.ArchivedAt != nil && conn.OnClose == config.OnCloseArchive):
		f := false
		p.Archived, action = &f, "unarchive"
	case (ev.Action == connectors.ActionClose || ev.Closed) && conn.OnClose == config.OnCloseArchive:
		t := true
		p.Archived, action = &t, "archive"
	}
	if ev.Contribution != nil && ev.Contribution.Merged && conn.OnMerge == config.OnCloseArchive {
		t := true
		p.Archived, action = &t, "archive"
	}
	updated, err := a.tasks.Update(ctx, task.ID, p, nil)
	if errors.Is(err, tasks.ErrStale) {
		out.Action, out.Result = action, StaleUpdateSkipped
		return out, nil
	}
	if errors.Is(err, tasks.ErrUnchanged) {
		if out.Action != "create" {
			out.Action = action
		}
		if out.Result == "" {
			out.Result = UnchangedSkipped
		}
		return out, nil
	}
	if err != nil {
		return out, fmt.Errorf("update task: %w", err)
	}
	if out.Action != "create" {
		out.Action = action
	}
	if out.Result == "" {
		out.Result = "updated to revision " + strconv.FormatInt(updated.Revision, 10)
	}
	return out, nil
}

// recordFormerRefs records the references task had before ev: the one ev
// replaces (a Linear team move, a Jira project move, a GitHub transfer)
// and those ev names (Linear's previousIdentifiers), so a pull request
// naming an old one still finds the task. It runs before the update: a
// stale ev may record the task's current reference, which names the same
// task and which the current match finds first anyway.
func (a *Applier) recordFormerRefs(ctx context.Context, workspaceID string, ev connectors.Event, task store.Task) error {
	provider := ev.Source.Provider
	refs := ev.FormerRefs
	if s := task.Source; s != nil && s.Provider == provider && s.Ref != "" && s.Ref != ev.Source.Ref {
		refs = append(slices.Clip(refs), s.Ref)
	}
	for _, ref := range refs {
		if err := a.st.InsertRefAlias(ctx, workspaceID, provider, ref, task.ID, a.now()); err != nil {
			return fmt.Errorf("record former reference: %w", err)
		}
	}
	return nil
}

// filtersMatch applies the connection's repositories (path.Match glob, "*"
// does not cross "/") and labels filters to entities that would create a
// task. Both compare case-insensitively, as GitHub and GitLab treat
// repository paths and label names.
func filtersMatch(conn config.Connection, ev connectors.Event) bool {
	if len(conn.Repositories) > 0 {
		repo := strings.ToLower(ev.Repository)
		ok := false
		for _, pattern := range conn.Repositories {
			pattern = strings.ToLower(pattern)
			if m, _ := path.Match(pattern, repo); m || pattern == repo {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	if len(conn.Labels) > 0 {
		return slices.ContainsFunc(ev.Labels, func(l string) bool {
			return slices.ContainsFunc(conn.Labels, func(want string) bool { return strings.EqualFold(want, l) })
		})
	}
	return true
}

// create creates the task of ev; absent says the caller has just found no
// task holding its external ID (idempotency.CreateRequest.KnownAbsent).
func (a *Applier) create(ctx context.Context, conn config.Connection, ev connectors.Event, contributions []idempotency.RemoteContributionRequest,
	absent bool, out inbox.Outcome) (inbox.Outcome, error) {
	title := cleanTitle(ev.Title)
	if title == "" {
		title = cleanTitle(ev.Source.Ref)
	}
	if title == "" {
		title = ev.ExternalID
	}
	desc := cleanDescription(ev.Description)
	labels := cleanLabels(ev.Labels)
	src := &store.Source{Provider: ev.Source.Provider, Kind: ev.Source.Kind, Ref: ev.Source.Ref, URL: ev.Source.URL}
	var updated *time.Time
	if !ev.UpdatedAt.IsZero() {
		u := ev.UpdatedAt.UTC()
		updated = &u
	}
	res, err := a.coord.Create(ctx, idempotency.CreateRequest{WorkspaceID: conn.Workspace, ExternalID: ev.ExternalID,
		Title: title, Description: desc, WorkflowStepID: conn.Step, Labels: labels, Source: src, SourceUpdatedAt: updated,
		OwnerConnection: conn.ID, Contributions: contributions, KnownAbsent: absent,
		Actor: idempotency.Actor{Kind: "connection", ID: conn.ID, AuthMode: "webhook_signature"}})
	if err != nil {
		return out, fmt.Errorf("create task: %w", err)
	}
	out.TaskID, out.Action = res.Task.ID, "create"
	out.Result = res.Outcome.String()
	if res.Outcome.Deduplicated() {
		return a.update(ctx, conn, ev, res.Task, out)
	}
	return out, nil
}

// Provider text is made to fit the task limits rather than refused: a
// webhook cannot be corrected and resent, and a refusal would fail every
// later delivery of the entity too.

// cleanTitle turns control characters (tabs, newlines) into spaces, trims,
// and cuts the title to tasks.MaxTitleRunes; "" when nothing is left.
func cleanTitle(title string) string {
	title = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(title, "\uFFFD"))
	title = strings.TrimSpace(title)
	if utf8.RuneCountInString(title) > tasks.MaxTitleRunes {
		title = strings.TrimSpace(string([]rune(title)[:tasks.MaxTitleRunes]))
	}
	return title
}

// cleanDescription drops NUL bytes (PostgreSQL text refuses them) and cuts
// the description to tasks.MaxDescriptionBytes at a character boundary, so
// the result is always valid UTF-8.
func cleanDescription(d string) string {
	d = strings.ToValidUTF8(strings.ReplaceAll(d, "\x00", ""), "\uFFFD")
	if len(d) <= tasks.MaxDescriptionBytes {
		return d
	}
	cut := tasks.MaxDescriptionBytes
	for cut > 0 && !utf8.RuneStart(d[cut]) {
		cut--
	}
	return d[:cut]
}

// cleanLabels keeps the labels tasks.ValidateLabels accepts (trimmed,
// non-empty, short enough, no control characters, no duplicates), at most
// tasks.MaxLabels of them; it never returns nil.
func cleanLabels(labels []string) []string {
	out := make([]string, 0, len(labels))
	for _, l := range labels {
		if len(out) == tasks.MaxLabels {
			break
		}
		if valid, err := tasks.ValidateLabels([]string{l}); err == nil && len(valid) == 1 && !slices.Contains(out, valid[0]) {
			out = append(out, valid[0])
		}
	}
	return out
}
