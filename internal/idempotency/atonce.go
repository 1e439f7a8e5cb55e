package idempotency

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/trackergateway/gateway/internal/events"
	"github.com/trackergateway/gateway/internal/leadbatch"
	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/tasks/taskrules"
)

// createAtOnce is Create of a creation that plans no step: Begin and both
// phases of Complete are one transaction (writeCompleted), which writes the
// operation, the task and task.created as the three commits would leave
// them. With no step there is nothing between Begin and Complete to
// recover, and the one commit is a schedule the three allow: nothing runs
// between them, and a crash leaves none of them (as a crash before Begin's
// commit would) or all (as one after phase B's). With a step, the step's
// own transactions come between Begin and Complete; with a failpoint,
// every boundary commits apart.
//
// Creations of one workspace that arrive while such a transaction runs are
// written together in the next one (atOnceBatches): each kind of row is
// then one statement for all of them, and on PostgreSQL the creations wait
// for each other in the gateway rather than on the workspace row while
// each waits for the outbox lock (docs/benchmarks.md, "Creations written
// together").
func (c *Coordinator) createAtOnce(ctx context.Context, req CreateRequest) (Result, error) {
	ext, found, workspace, err := c.lookupFirst(ctx, req)
	if err != nil || found.Outcome != 0 {
		return found.result(), err
	}
	b, err := c.prepareBegin(ctx, req, ext, workspace)
	if err == nil {
		// task.created is built here, off the transaction, around the
		// identifier the transaction assigns.
		b.created.CreatedAt = b.op.CreatedAt
		cause := events.CauseFrom(ctx)
		if cause.IsZero() {
			cause = actorCause(req.Actor.Kind, req.Actor.ID)
		}
		b.created.PayloadBefore, b.created.PayloadAfter, err = events.CreatedPayload(b.task, cause)
	}
	if err == nil {
		if err = c.writeAtOnce(ctx, b); err == nil {
			return Result{Task: b.result.Task, Outcome: Created}, nil
		}
		err = fmt.Errorf("create task: %w", err)
	}
	r, err := c.beginFailed(ctx, req.WorkspaceID, ext, err)
	return r.result(), err
}

// writeCompleted is Begin, phase A and phase B of creations that plan no
// step, all of one workspace, as one transaction. It writes each row once,
// as phase B leaves it: each task complete at revision 1 and settled (its
// external ID is the creation's, which nothing in between could have
// released), its task.created event, and its operation completed with
// outcome Created pointing at that event. What the phases would verify
// under their locks (the handle, the stored plan's hashes, the task row
// still there) is what this transaction has just built and written itself.
// Admission and the task sequence are Begin's, in Begin's order (a
// creation into a WIP-limited step is written alone, so its admission
// counts every task before it); the operations come last, after the outbox
// lock, because their event_id is their event's: new rows, which no other
// transaction waits for, so the lock order holds. Each kind of row is one
// statement for all of bs.
func writeCompleted(ctx context.Context, tx store.Queries, bs []*beginning) error {
	tasks := make([]store.Task, len(bs))
	ops := make([]store.Operation, len(bs))
	created := make([]store.CreatedEvent, len(bs))
	for i, b := range bs {
		now := b.op.CreatedAt
		task := b.task
		task.CreationState, task.Revision = store.CreationComplete, 1
		if task.ExternalID != "" {
			task.ExternalIDSettledAt = &now
		}
		admitted, err := taskrules.Admit(ctx, tx, taskrules.Admission{Workspace: b.ws, Task: task})
		if err != nil {
			return err
		}
		b.result.Task, tasks[i] = admitted, admitted
		op := b.op
		op.State, op.Outcome, op.LeaseOwner, op.LeaseExpiresAt = store.OpCompleted, Created.String(), "", nil
		ops[i] = op
		created[i] = b.created
	}
	if err := tx.InsertNumberedTasks(ctx, tasks, func(identifiers []string) {
		for i, b := range bs {
			b.result.Task.Identifier = identifiers[i]
		}
	}); err != nil {
		return err
	}
	return tx.InsertCompletedOperations(ctx, ops, created)
}

// maxAtOnceBatch bounds the creations of one transaction (their statements'
// arguments stay far below both databases' limits), and maxLedAtOnce the
// batches one goroutine writes in a row before it hands the lead on and
// returns to its own caller.
const (
	maxAtOnceBatch = 64
	maxLedAtOnce   = 8
)

// atOnceBatches gathers creations written at once, one leadbatch.Queue per
// workspace: the first to arrive while no batch of its workspace runs is
// written at once, alone; those that arrive meanwhile are written together
// in the next batch (up to maxAtOnceBatch). A batch that fails is written
// again member by member, each alone in its own goroutine, so a failure
// (the unique backstop losing a race, a full step) reaches only its own
// caller.
type atOnceBatches struct {
	mu          sync.Mutex
	byWorkspace map[string]*leadbatch.Queue[atOnceMember, atOnceResult]
}

type atOnceMember struct {
	ctx context.Context
	b   *beginning
}

// atOnceResult is what a member is told: it was written (err nil) or its
// batch's commit failed as it did (err), or it must be written alone.
type atOnceResult struct {
	err   error
	alone bool
}

// writeAtOnce writes b's creation in the next batch of its workspace; a
// creation into a WIP-limited step is written alone.
func (c *Coordinator) writeAtOnce(ctx context.Context, b *beginning) error {
	if step, err := taskrules.Step(b.ws, b.task.WorkflowStepID); err != nil || taskrules.Limited(step) {
		return c.writeAlone(ctx, b)
	}
	r := c.batches.of(b.ws.ID, c.writeBatch).Do(atOnceMember{ctx: ctx, b: b})
	if r.alone {
		return c.writeAlone(ctx, b)
	}
	return r.err
}

// of is the workspace's queue, made on first use with run as its batch.
func (bt *atOnceBatches) of(workspaceID string, run func([]atOnceMember) []atOnceResult) *leadbatch.Queue[atOnceMember, atOnceResult] {
	bt.mu.Lock()
	defer bt.mu.Unlock()
	q := bt.byWorkspace[workspaceID]
	if q == nil {
		if bt.byWorkspace == nil {
			bt.byWorkspace = map[string]*leadbatch.Queue[atOnceMember, atOnceResult]{}
		}
		q = &leadbatch.Queue[atOnceMember, atOnceResult]{Max: maxAtOnceBatch, MaxLed: maxLedAtOnce, Run: run}
		bt.byWorkspace[workspaceID] = q
	}
	return q
}

// writeAlone writes one creation in a transaction of its own.
func (c *Coordinator) writeAlone(ctx context.Context, b *beginning) error {
	return c.st.InTx(ctx, func(tx store.Queries) error { return writeCompleted(ctx, tx, []*beginning{b}) })
}

// writeBatch writes the members whose callers still wait in one
// transaction and returns each member's result: a member whose caller has
// gone is written alone (it answers its own cancellation); a member left
// alone in its batch is written as it would be alone; a larger batch that
// the database refused (a statement failed, or a constraint at the COMMIT
// that PostgreSQL's deferred writes travel with) tells every member to be
// written alone, and any other failed COMMIT is every member's answer as
// it is, since whether it took effect is unknown (a creation without an
// external ID written again could be written twice). The transaction runs
// under no member's cancellation (each statement has its deadline) and
// syncs fully unless every member defers its sync.
func (c *Coordinator) writeBatch(batch []atOnceMember) []atOnceResult {
	results := make([]atOnceResult, len(batch))
	live := leadbatch.Waiting(batch, func(m atOnceMember) context.Context { return m.ctx },
		func(i int) { results[i] = atOnceResult{alone: true} })
	switch len(live) {
	case 0:
		return results
	case 1:
		m := batch[live[0]]
		results[live[0]] = atOnceResult{err: c.writeAlone(m.ctx, m.b)}
		return results
	}
	bs := make([]*beginning, len(live))
	for k, i := range live {
		bs[k] = batch[i].b
	}
	ctx := context.WithoutCancel(store.SyncingContext(live, func(i int) context.Context { return batch[i].ctx }))
	var failed error
	err := c.st.InTx(ctx, func(tx store.Queries) error {
		failed = writeCompleted(ctx, tx, bs)
		return failed
	})
	r := atOnceResult{err: err}
	if failed != nil || refused(err) {
		r = atOnceResult{alone: true}
	}
	for _, i := range live {
		results[i] = r
	}
	return results
}

// refused reports a failure with which the database refused the
// transaction's writes, so that nothing of it committed.
func refused(err error) bool {
	return errors.Is(err, store.ErrExternalIDTaken) || errors.Is(err, store.ErrConstraint) ||
		errors.Is(err, store.ErrInvalidText)
}
