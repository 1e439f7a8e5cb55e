// Package ingest is the ingest service: it applies a provider event, parsed
// by the connection's adapter from a delivery the inbox hands over, to
// tasks — the docs/design.md "Events and actions" table, the connection's filters,
// suppression of post-deletion redeliveries, transfer aliasing and
// pull/merge request linking. It implements inbox.Processor; it holds no SQL
// and acts through the task service, the creation coordinator and a few
// store reads. It also serves the operator API of suppressions.
//
// A delivery is read down the page: this file parses it and decides once
// what it is (classify); then one file applies each kind: issues.go an
// issue change, links.go an issue's links to pull and merge requests,
// contributions.go a pull or merge request change, installations.go a
// GitHub App installation's change.
package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

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

// apply decides what the delivery is, reads the source entities a task
// change starts from, and hands it to the one place that applies its kind.
func (a *Applier) apply(ctx context.Context, d store.Delivery, pp parsed) (inbox.Outcome, error) {
	conn, ev := pp.conn, pp.ev
	// Every task event this delivery makes names it as the cause.
	ctx = events.WithCause(ctx, events.Cause{Connection: conn.ID, DeliveryID: d.ID, ProviderEvent: d.Event})
	out := inbox.Outcome{ExternalID: ev.ExternalID, Action: string(ev.Action)}
	kind := classify(ev)
	switch kind {
	case installationChange:
		return a.applyInstallation(ctx, d, conn, ev.Installation)
	case unmapped:
		out.Status, out.Result = store.DeliveryIgnored, "event not mapped to a task action"
		return out, nil
	}
	current, previous, suppressed, err := a.sourceEntities(ctx, conn.Workspace, ev)
	switch {
	case err != nil:
		return out, err
	case suppressed:
		out.Status, out.Result = store.DeliverySuppressed, "the gateway deleted this entity's task; cleared suppressions re-enable it"
		return out, nil
	}
	switch kind {
	case linkChange:
		return a.applyLinks(ctx, conn, ev, current, out)
	case contributionChange:
		return a.applyContribution(ctx, conn, ev, out)
	}
	return a.applyIssue(ctx, conn, ev, current, previous, out)
}

// deliveryKind is what a delivery is to the gateway, decided once from its
// parsed event; each kind has one place that applies it.
type deliveryKind int

const (
	// installationChange: a GitHub App installation changed
	// (installations.go).
	installationChange deliveryKind = iota
	// unmapped: the event maps to no task action.
	unmapped
	// linkChange: an issue linked or unlinked pull and merge requests by
	// URL (links.go).
	linkChange
	// contributionChange: a pull or merge request changed
	// (contributions.go).
	contributionChange
	// issueChange: an issue changed (issues.go).
	issueChange
)

// classify decides the kind of ev: the first that applies, in the order
// of the kinds.
func classify(ev connectors.Event) deliveryKind {
	switch {
	case ev.Installation != nil:
		return installationChange
	case ev.Action == connectors.ActionIgnore:
		return unmapped
	case ev.Action == connectors.ActionLink || ev.Action == connectors.ActionUnlink:
		return linkChange
	case ev.Contribution != nil:
		return contributionChange
	}
	return issueChange
}

// sourceEntities reads what the gateway holds of ev's external ID and of
// the one it replaces (suppression, task, alias): one read per external ID
// starts every delivery that changes tasks; the entity lease keeps it
// current while this one runs. suppressed says the gateway deleted the
// entity's task, and the delivery changes nothing.
func (a *Applier) sourceEntities(ctx context.Context, workspaceID string, ev connectors.Event) (current, previous store.SourceEntity,
	suppressed bool, err error) {
	for _, e := range []struct {
		ext string
		to  *store.SourceEntity
	}{{ev.ExternalID, &current}, {ev.PreviousExternalID, &previous}} {
		if e.ext == "" {
			continue
		}
		found, err := a.st.LookupSourceEntity(ctx, workspaceID, e.ext)
		if err != nil {
			return current, previous, false, err
		}
		if found.Suppressed && !unfinishedDelete(ev, e.ext, found) {
			return current, previous, true, nil
		}
		*e.to = found
	}
	return current, previous, false, nil
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
