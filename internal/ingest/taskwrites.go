package ingest

// The task writes a delivery's kind decides on: an update of the task an
// entity has, or its creation through the coordinator, with the
// connection's filters and the text rules they share. An issue change
// (issues.go) and a pull or merge request's own task (contributions.go)
// both end here.

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
	p := tasks.Patch{Source: sourceOf(ev), SourceUpdatedAt: sourceUpdatedAt(ev)}
	if title := cleanTitle(ev.Title); title != "" {
		p.Title = &title
	}
	desc := cleanDescription(ev.Description)
	p.Description = &desc
	labels := cleanLabels(ev.Labels)
	p.Labels = &labels
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
	res, err := a.coord.Create(ctx, idempotency.CreateRequest{WorkspaceID: conn.Workspace, ExternalID: ev.ExternalID,
		Title: title, Description: cleanDescription(ev.Description), WorkflowStepID: conn.Step, Labels: cleanLabels(ev.Labels),
		Source: sourceOf(ev), SourceUpdatedAt: sourceUpdatedAt(ev),
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

// sourceOf is the task source ev describes.
func sourceOf(ev connectors.Event) *store.Source {
	return &store.Source{Provider: ev.Source.Provider, Kind: ev.Source.Kind, Ref: ev.Source.Ref, URL: ev.Source.URL}
}

// sourceUpdatedAt is when the provider last changed ev's entity, nil when
// ev does not say.
func sourceUpdatedAt(ev connectors.Event) *time.Time {
	if ev.UpdatedAt.IsZero() {
		return nil
	}
	u := ev.UpdatedAt.UTC()
	return &u
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
