package tasks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/trackergateway/gateway/connectors"
	"github.com/trackergateway/gateway/connectors/providers"
	"github.com/trackergateway/gateway/internal/events"
	"github.com/trackergateway/gateway/internal/store"
)

// A task's contributions (the PRs/MRs it shows, its projection rows) are
// part of what consumers follow: a PR/MR appearing on a task, changing its
// title, state (merged included) or draft flag, and leaving it are events
// of the task (task.contribution_linked, _updated, _unlinked). Each advances
// the task's revision, so every event of a task has a revision of its own
// (the outbox holds one event per task and revision); the task's fields and
// updated_at do not change.
//
// The row and its event are written in one transaction under the task's
// row lock (lock order: task, then the projection rows, then the outbox),
// which every writer of a task's projection rows takes here, so the row
// read before the write is the row the write replaces.

// ShowContribution writes the projection row p on its task and appends the
// event it makes, with the cause ctx carries.
func (s *Service) ShowContribution(ctx context.Context, p store.Projection) error {
	return ShowContribution(ctx, s.st, p, s.now())
}

// HideContribution deletes the projection row of p's key from its task and
// appends task.contribution_unlinked; removed says whether there was one.
func (s *Service) HideContribution(ctx context.Context, p store.Projection) (removed bool, err error) {
	return HideContribution(ctx, s.st, p, s.now())
}

// ShowContribution is Service.ShowContribution on st at now: the row is
// written as store.UpsertProjection writes it (never over a newer one), and
// the event is task.contribution_linked when the task did not show the
// PR/MR, task.contribution_updated when the written row changes what
// ContributionChanges compares, none otherwise (a resent payload, a
// refresh that finds nothing new). A task still being created gets its row
// and no event: its task.created comes later, at the first revision.
func ShowContribution(ctx context.Context, st store.Store, p store.Projection, now time.Time) error {
	err := st.InTx(ctx, func(tx store.Queries) error {
		t, err := tx.LockTask(ctx, p.TaskID)
		if err != nil {
			return err
		}
		before, err := tx.GetProjection(ctx, p)
		found := err == nil
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if err := tx.UpsertProjection(ctx, p); err != nil {
			return err
		}
		if t.CreationState != store.CreationComplete {
			return nil
		}
		after := ContributionOf(p)
		typ, changes := events.TypeContributionLinked, events.Changes(nil)
		if found {
			if !projectionApplies(before, p) {
				return nil
			}
			if changes = events.ContributionChanges(ContributionOf(before), after); len(changes) == 0 {
				return nil
			}
			typ = events.TypeContributionUpdated
		}
		return appendContributionEvent(ctx, tx, t, typ, changes, after, now)
	})
	if err != nil {
		return fmt.Errorf("show contribution: %w", err)
	}
	return nil
}

// HideContribution is Service.HideContribution on st at now.
func HideContribution(ctx context.Context, st store.Store, p store.Projection, now time.Time) (removed bool, err error) {
	err = st.InTx(ctx, func(tx store.Queries) error {
		removed = false
		t, err := tx.LockTask(ctx, p.TaskID)
		if errors.Is(err, store.ErrNotFound) {
			return nil // its rows went with it
		}
		if err != nil {
			return err
		}
		before, err := tx.GetProjection(ctx, p)
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		if removed, err = tx.DeleteProjection(ctx, p); err != nil || !removed || t.CreationState != store.CreationComplete {
			return err
		}
		return appendContributionEvent(ctx, tx, t, events.TypeContributionUnlinked, nil, ContributionOf(before), now)
	})
	if err != nil {
		return false, fmt.Errorf("hide contribution: %w", err)
	}
	return removed, nil
}

// projectionApplies is store.UpsertProjection's rule: a row is replaced
// unless it is newer than the payload.
func projectionApplies(stored, p store.Projection) bool {
	return stored.ProviderUpdatedAt == nil || p.ProviderUpdatedAt == nil || !p.ProviderUpdatedAt.Before(*stored.ProviderUpdatedAt)
}

// appendContributionEvent advances the locked task t's revision and
// appends its contribution event.
func appendContributionEvent(ctx context.Context, tx store.Queries, t store.Task, typ string, changes events.Changes,
	c events.Contribution, now time.Time) error {
	t.Revision++
	if err := tx.UpdateTask(ctx, t); err != nil {
		return err
	}
	return events.Append(ctx, tx, typ, t, changes, &c, events.CauseFrom(ctx), now)
}

// ContributionOf is the contributions JSON item of a projection row, of
// the kind its provider's projection holds.
func ContributionOf(r store.Projection) Contribution {
	kind := connectors.KindPullRequest
	if p, ok := providers.Lookup(r.Provider); ok && p.Projection != nil {
		kind = p.Projection.ContributionKind
	}
	return events.ContributionOf(r, kind)
}
