// Package ingest is the ingest service: it applies a provider event, parsed
// by the connection's adapter from a delivery the inbox hands over, to
// tasks — the docs/design.md "Events and actions" table, the connection's filters,
// suppression of post-deletion redeliveries, transfer aliasing and
// pull/merge request linking. It implements inbox.Processor; it holds no SQL
// and acts through the task service, the creation coordinator and a few
// store reads. It also serves the operator API of suppressions.
package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/trackergateway/gateway/connectors"
	"github.com/trackergateway/gateway/internal/config"
	"github.com/trackergateway/gateway/internal/events"
	"github.com/trackergateway/gateway/internal/idempotency"
	"github.com/trackergateway/gateway/internal/inbox"
	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/tasks"
)

// Coordinator is what ingest needs of the creation coordinator.
type Coordinator interface {
	Create(ctx context.Context, req idempotency.CreateRequest) (idempotency.Result, error)
	AssociateContribution(ctx context.Context, task store.Task, req idempotency.RemoteContributionRequest) (store.Association, error)
}

// TaskService is what ingest needs of the task service.
type TaskService interface {
	Update(ctx context.Context, id string, p tasks.Patch, visible func(string) bool) (store.Task, error)
	// DeleteAtSource records the suppression of externalID and deletes
	// the task taskID ("" for none) in one transaction.
	DeleteAtSource(ctx context.Context, workspaceID, externalID, taskID string) (store.Task, bool, error)
	// ShowContribution and HideContribution write and delete a task's
	// projection rows with the contribution events they make.
	ShowContribution(ctx context.Context, p store.Projection) error
	HideContribution(ctx context.Context, p store.Projection) (bool, error)
}

// Reader is the store reads and small idempotent writes ingest needs.
type Reader interface {
	LookupSourceEntity(ctx context.Context, workspaceID, externalID string) (store.SourceEntity, error)
	GetTask(ctx context.Context, id string) (store.Task, error)
	InsertAlias(ctx context.Context, workspaceID, externalID, taskID string, at time.Time) error
	UpsertSuppression(ctx context.Context, s store.Suppression) error
	GetAssociation(ctx context.Context, provider, connectionID, contributionID string) (store.Association, error)
	FindTaskBySourceRef(ctx context.Context, workspaceID, provider, ref string) (store.Task, error)
	ListProjectionsForTasks(ctx context.Context, taskIDs ...string) ([]store.Projection, error)
	ApplyInstallationChange(ctx context.Context, c store.InstallationChange) error
	UpsertContributionLink(ctx context.Context, l store.ContributionLink) (bool, error)
	ContributionLinksTo(ctx context.Context, workspaceID, provider, host, repository string, number int64) ([]store.ContributionLink, error)
	ContributionLinksFrom(ctx context.Context, workspaceID, externalID string) ([]store.ContributionLink, error)
	InsertRefAlias(ctx context.Context, workspaceID, provider, ref, taskID string, at time.Time) error
	ListProjectionsOfContribution(ctx context.Context, provider, repository string, number int64) ([]store.Projection, error)
}

// Applier implements inbox.Processor.
type Applier struct {
	conns    func(id string) (config.Connection, bool)
	adapters map[string]connectors.Adapter
	coord    Coordinator
	tasks    TaskService
	st       Reader
	logger   *slog.Logger
	now      func() time.Time

	// Failpoint, when set, is called at the named points of processing
	// (FailAfterDelete); an error it returns ends the delivery's attempt
	// there. Crash tests use it to stop the process at a boundary.
	Failpoint func(name string) error
}

// Failpoints of processing (Applier.Failpoint).
const (
	// FailAfterDelete is reached once a delete delivery's first write has
	// committed.
	FailAfterDelete = "ingest.after_delete"
)

func (a *Applier) failpoint(name string) error {
	if a.Failpoint == nil {
		return nil
	}
	if err := a.Failpoint(name); err != nil {
		return fmt.Errorf("failpoint %s: %w", name, err)
	}
	return nil
}

// New returns an Applier.
func New(conns func(string) (config.Connection, bool), adapters map[string]connectors.Adapter, coord Coordinator,
	svc TaskService, st Reader, logger *slog.Logger, now func() time.Time) *Applier {
	return &Applier{conns: conns, adapters: adapters, coord: coord, tasks: svc, st: st, logger: logger,
		now: func() time.Time { return now().UTC() }}
}

var _ inbox.Processor = (*Applier)(nil)

func (a *Applier) parse(d store.Delivery) (config.Connection, connectors.Event, error) {
	conn, ok := a.conns(d.ConnectionID)
	if !ok {
		return conn, connectors.Event{}, fmt.Errorf("%w: connection %q is no longer configured", inbox.ErrPermanent, d.ConnectionID)
	}
	adapter, ok := a.adapters[conn.Provider]
	if !ok {
		return conn, connectors.Event{}, fmt.Errorf("%w: no adapter for provider %q", inbox.ErrPermanent, conn.Provider)
	}
	header, err := store.DecodeDeliveryHeaders(d.Headers)
	if err != nil {
		return conn, connectors.Event{}, fmt.Errorf("%w: %v", inbox.ErrPermanent, err)
	}
	ev, err := adapter.Parse(conn.Host, header, d.Body)
	return conn, ev, err
}

// Prepare parses the delivery and names its entity.
func (a *Applier) Prepare(_ context.Context, d store.Delivery) (inbox.Prepared, error) {
	conn, ev, err := a.parse(d)
	if err != nil {
		return inbox.Prepared{}, err
	}
	p := inbox.Prepared{Event: ev.EventName, Parsed: parsed{conn: conn, ev: ev}}
	if ev.EntityKey != "" {
		p.EntityKey = conn.Workspace + "|" + ev.EntityKey
	}
	return p, nil
}

// parsed is what Prepare hands to Process, so a delivery is parsed once.
type parsed struct {
	conn config.Connection
	ev   connectors.Event
}

// Process applies the event. Provider timestamps far ahead of the clock
// are taken as the receipt time first (timestamps.go), and the outcome
// says so.
func (a *Applier) Process(ctx context.Context, d store.Delivery, p inbox.Prepared) (inbox.Outcome, error) {
	pp, ok := p.Parsed.(parsed)
	if !ok {
		conn, ev, err := a.parse(d)
		if err != nil {
			return inbox.Outcome{}, err
		}
		pp = parsed{conn: conn, ev: ev}
	}
	var note string
	pp.ev, note = a.boundTimestamps(pp.ev, d.ReceivedAt)
	out, err := a.apply(ctx, d, pp)
	if err == nil && note != "" {
		if out.Result != "" {
			out.Result += "; "
		}
		out.Result += note
	}
	return out, err
}

// apply applies the parsed event.
func (a *Applier) apply(ctx context.Context, d store.Delivery, pp parsed) (inbox.Outcome, error) {
	conn, ev := pp.conn, pp.ev
	// Every task event this delivery makes names it as the cause.
	ctx = events.WithCause(ctx, events.Cause{Connection: conn.ID, DeliveryID: d.ID, ProviderEvent: d.Event})
	out := inbox.Outcome{ExternalID: ev.ExternalID, Action: string(ev.Action)}
	if ev.Installation != nil {
		return a.installation(ctx, d, conn, ev.Installation)
	}
	if ev.Action == connectors.ActionIgnore {
		out.Status, out.Result = store.DeliveryIgnored, "event not mapped to a task action"
		return out, nil
	}
	// One read per external ID (suppression, task, alias) starts every
	// delivery; the entity lease keeps it current while this one runs.
	var current, previous store.SourceEntity
	for _, e := range []struct {
		ext string
		to  *store.SourceEntity
	}{{ev.ExternalID, &current}, {ev.PreviousExternalID, &previous}} {
		if e.ext == "" {
			continue
		}
		found, err := a.st.LookupSourceEntity(ctx, conn.Workspace, e.ext)
		if err != nil {
			return out, err
		}
		if found.Suppressed && !unfinishedDelete(ev, e.ext, found) {
			out.Status, out.Result = store.DeliverySuppressed, "the gateway deleted this entity's task; cleared suppressions re-enable it"
			return out, nil
		}
		*e.to = found
	}
	switch {
	case ev.Action == connectors.ActionLink || ev.Action == connectors.ActionUnlink:
		return a.issueLinks(ctx, conn, ev, current, out)
	case ev.Contribution != nil:
		return a.contribution(ctx, conn, ev, out)
	}
	// An issue event may carry links (recovery reads an issue with its
	// attachments): recorded first, so a create shows them with the
	// others its issue has (issue); otherwise they are shown here.
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

// unfinishedDelete says whether a delete of ext that finds it suppressed
// must go on: a task still holds ext (or an alias of it does). Earlier
// builds recorded a delete's suppression and deleted its task in two
// transactions, and a crash, a timeout or an error between them left the
// task alive behind the suppression for good; the delete's retry, a
// redelivery or a replay finishes it.
func unfinishedDelete(ev connectors.Event, ext string, e store.SourceEntity) bool {
	return ev.Action == connectors.ActionDelete && ext == ev.ExternalID && (e.Task != nil || e.AliasTaskID != "")
}

// installation records a GitHub App installation's change. No task
// changes, so the delivery is ignored as far as tasks go (and counted so);
// its outcome names what was recorded, or why nothing was
// (installations.go).
func (a *Applier) installation(ctx context.Context, d store.Delivery, conn config.Connection, c *connectors.InstallationChange) (inbox.Outcome, error) {
	if why := foreignInstallation(conn, c); why != "" {
		return inbox.Outcome{Status: store.DeliveryIgnored, Action: InstallationAction, Result: "not recorded: " + why}, nil
	}
	at := c.At
	if at.IsZero() {
		at = d.ReceivedAt
	}
	change := store.InstallationChange{ConnectionID: conn.ID, InstallationID: c.ID, Action: c.Action,
		AccountLogin: c.Account, AccountType: c.AccountType, RepositorySelection: c.RepositorySelection,
		Repositories: c.Repositories, RemovedRepositories: c.RemovedRepositories,
		At: at.UTC(), DeliveryID: d.ID, ReceivedAt: d.ReceivedAt.UTC()}
	if !c.SuspendedAt.IsZero() {
		s := c.SuspendedAt.UTC()
		change.SuspendedAt = &s
	}
	if err := a.st.ApplyInstallationChange(ctx, change); err != nil {
		return inbox.Outcome{}, fmt.Errorf("record installation: %w", err)
	}
	return inbox.Outcome{Status: store.DeliveryIgnored, Action: InstallationAction,
		Result: "recorded: installation " + strconv.FormatInt(c.ID, 10) + " " + c.Action}, nil
}

// InstallationAction is the outcome action of a delivery that recorded a
// GitHub App installation's change.
const InstallationAction = "installation"

// resolve finds the task of an external ID directly or through an alias.
func (a *Applier) resolve(ctx context.Context, e store.SourceEntity) (store.Task, bool, error) {
	switch {
	case e.Task != nil:
		return *e.Task, true, nil
	case e.AliasTaskID == "":
		return store.Task{}, false, nil
	}
	t, err := a.st.GetTask(ctx, e.AliasTaskID)
	if errors.Is(err, store.ErrNotFound) {
		return store.Task{}, false, nil
	}
	return t, err == nil, err
}

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
