package idempotency

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/store/sqlstore"
	"github.com/trackergateway/gateway/internal/store/storetest"
)

// The Complete and Abort predicates of the creation protocol, and the step
// claim's fence, each against the state that should refuse it.

// stepKeyOf is the step key of a contribution of createRequest.
func stepKeyOf(t testing.TB, st *sqlstore.Store, opID, contributionID string) string {
	t.Helper()
	steps, err := st.ListCreationSteps(context.Background(), opID)
	if err != nil {
		t.Fatalf("list steps: %v", err)
	}
	for _, s := range steps {
		if strings.HasSuffix(s.StepKey, ":"+contributionID) {
			return s.StepKey
		}
	}
	t.Fatalf("no step for contribution %s among %+v", contributionID, steps)
	return ""
}

// twoStepCreation begins a create with two contributions and runs the
// first step (ordered first, as steps are: kind, then key) to success; the
// second is left to the caller.
func twoStepCreation(t *testing.T, st *sqlstore.Store, c *Coordinator) (*CreationHandle, string) {
	t.Helper()
	ctx := context.Background()
	begun, err := c.BeginTaskCreation(ctx, createRequest("ext-1", contribution("101"), contribution("102")))
	if err != nil {
		t.Fatalf("Begin: %v", err)
	}
	h := begun.Handle
	first := stepKeyOf(t, st, h.OperationID, "101")
	if err := c.executeStep(ctx, h.OperationID, StepRemoteContributionAssociate, first, fence{h: h}); err != nil {
		t.Fatalf("first step: %v", err)
	}
	steps, err := st.ListCreationSteps(ctx, h.OperationID)
	if err != nil || len(steps) != 2 || steps[0].StepKey != first || steps[0].State != store.StepSucceeded {
		t.Fatalf("steps = %+v, %v; want the succeeded step first of two", steps, err)
	}
	return h, stepKeyOf(t, st, h.OperationID, "102")
}

// crashAfterClaim leaves the step running under the caller's claim, as a
// caller that died right after claiming it does.
func crashAfterClaim(t *testing.T, st *sqlstore.Store, clock *storetest.Clock, h *CreationHandle, key string) {
	t.Helper()
	crashed := New(st, discardLogger(), clock.Now, testContributionKinds)
	crashed.Failpoint = crashAt(FailAfterStepClaim)
	if err := crashed.executeStep(context.Background(), h.OperationID, StepRemoteContributionAssociate, key, fence{h: h}); !errors.Is(err, errCrash) {
		t.Fatalf("step claim = %v, want the simulated crash", err)
	}
}

// Complete requires every step to have succeeded: with one still planned,
// running or waiting to retry (behind a succeeded one, so a check of the
// first step alone passes) it is a state conflict that leaves the task
// preparing and writes nothing, task.created least of all.
func TestCompleteRefusesAnUnfinishedStep(t *testing.T) {
	t.Parallel()
	tests := []struct {
		state string
		leave func(t *testing.T, st *sqlstore.Store, clock *storetest.Clock, h *CreationHandle, key string)
	}{
		{store.StepPlanned, func(*testing.T, *sqlstore.Store, *storetest.Clock, *CreationHandle, string) {}},
		{store.StepRunning, crashAfterClaim},
		{store.StepRetryWait, func(t *testing.T, st *sqlstore.Store, clock *storetest.Clock, h *CreationHandle, key string) {
			// The claim's lease runs out and recovery proves the effect
			// absent: retry_wait, as a transient failure leaves it.
			crashAfterClaim(t, st, clock, h, key)
			r := New(st, discardLogger(), clock.Now, testContributionKinds)
			clock.Advance(r.leaseTTL + 1e9)
			action, gen, err := r.claimRecovery(context.Background(), h.OperationID, "r1")
			if err != nil || action != ActionReconcileUnknownStep {
				t.Fatalf("claimRecovery = %q, %v; want %q", action, err, ActionReconcileUnknownStep)
			}
			if err := r.runRecovery(context.Background(), h.OperationID, action, fence{owner: "r1", generation: gen}); err != nil {
				t.Fatalf("reconcile: %v", err)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.state, func(t *testing.T) {
			t.Parallel()
			forEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
				ctx := context.Background()
				clock := newTestClock()
				c := New(st, discardLogger(), clock.Now, testContributionKinds)
				h, second := twoStepCreation(t, st, c)
				tc.leave(t, st, clock, h, second)
				steps, _ := st.ListCreationSteps(ctx, h.OperationID)
				if steps[1].StepKey != second || steps[1].State != tc.state {
					t.Fatalf("second step = %s %s, want %s %s", steps[1].StepKey, steps[1].State, second, tc.state)
				}
				before := takeSnapshot(t, st)
				if _, err := c.CompleteTaskCreation(ctx, h); !errors.Is(err, ErrCreationStateConflict) {
					t.Errorf("Complete with a step %s = %v, want ErrCreationStateConflict", tc.state, err)
				}
				assertUnchanged(t, before, takeSnapshot(t, st), "refused Complete")
				task, err := st.GetTask(ctx, h.TaskID)
				if err != nil || task.CreationState != store.CreationPreparing {
					t.Errorf("task = %q, %v; want it still %q", task.CreationState, err, store.CreationPreparing)
				}
				if events := eventsOfTask(t, st, h.TaskID); len(events) != 0 {
					t.Errorf("events of the task = %+v, want no task.created", events)
				}
			})
		})
	}
}

// Abort may not decide for a step whose effect is in flight (running) or
// undecided (unknown): it is refused and writes nothing, neither the abort
// intent nor a compensation of the step that already succeeded.
func TestAbortRefusesARunningOrUnknownStep(t *testing.T) {
	t.Parallel()
	tests := []struct {
		state string
		leave func(t *testing.T, st *sqlstore.Store, clock *storetest.Clock, h *CreationHandle, key string)
	}{
		{store.StepRunning, crashAfterClaim},
		{store.StepUnknown, func(t *testing.T, st *sqlstore.Store, clock *storetest.Clock, h *CreationHandle, key string) {
			// The claim's lease runs out; recovery's claim marks the step
			// unknown and has not reconciled it yet.
			crashAfterClaim(t, st, clock, h, key)
			r := New(st, discardLogger(), clock.Now, testContributionKinds)
			clock.Advance(r.leaseTTL + 1e9)
			if action, _, err := r.claimRecovery(context.Background(), h.OperationID, "r1"); err != nil || action != ActionReconcileUnknownStep {
				t.Fatalf("claimRecovery = %q, %v; want %q", action, err, ActionReconcileUnknownStep)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.state, func(t *testing.T) {
			t.Parallel()
			forEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
				ctx := context.Background()
				clock := newTestClock()
				c := New(st, discardLogger(), clock.Now, testContributionKinds)
				h, second := twoStepCreation(t, st, c)
				tc.leave(t, st, clock, h, second)
				steps, _ := st.ListCreationSteps(ctx, h.OperationID)
				if steps[1].State != tc.state {
					t.Fatalf("second step = %s, want %s", steps[1].State, tc.state)
				}
				before := takeSnapshot(t, st)
				if err := c.AbortTaskCreation(ctx, h, "caller gave up"); !errors.Is(err, ErrCreationStateConflict) {
					t.Errorf("Abort with a step %s = %v, want ErrCreationStateConflict", tc.state, err)
				}
				assertUnchanged(t, before, takeSnapshot(t, st), "refused Abort")
			})
		})
	}
}

// A step claim is fenced by its generation: once recovery has taken over a
// caller's expired claim (the step's claim generation + 1), the caller that
// wakes up finds its claim lost and writes nothing, neither the effect nor
// the step's completion; the recoverer then finishes the creation.
func TestStepClaimLostToRecovery(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		clock := newTestClock()
		caller := New(st, discardLogger(), clock.Now, testContributionKinds)
		begun, err := caller.BeginTaskCreation(ctx, createRequest("ext-1", contribution("101")))
		if err != nil {
			t.Fatalf("Begin: %v", err)
		}
		opID := begun.Handle.OperationID
		callerAt, callerGo := make(chan struct{}), make(chan struct{})
		caller.Failpoint = blockAt(FailAfterStepClaim, callerAt, callerGo)
		callerDone := make(chan error, 1)
		go func() { callerDone <- caller.ExecuteSteps(ctx, begun.Handle) }()
		waitFor(t, callerAt, "the caller's step claim")

		// The caller stalls past its lease; recovery reconciles the step
		// (no effect row: retry_wait) and claims it again.
		recoverer := New(st, discardLogger(), clock.Now, testContributionKinds)
		clock.Advance(recoverer.leaseTTL + 1e9)
		recovererAt, recovererGo := make(chan struct{}), make(chan struct{})
		recoverer.Failpoint = blockAt(FailAfterStepClaim, recovererAt, recovererGo)
		type result struct {
			actions []RecoveryAction
			err     error
		}
		recovered := make(chan result, 1)
		go func() {
			a, err := recoverer.RecoverTaskCreation(ctx, opID, "r1")
			recovered <- result{a, err}
		}()
		waitFor(t, recovererAt, "the recoverer's step claim")
		steps, _ := st.ListCreationSteps(ctx, opID)
		if s := steps[0]; s.State != store.StepRunning || s.ClaimGeneration != 2 || s.ClaimOwner != "r1" {
			t.Fatalf("step after the takeover = %s generation %d owner %q, want running generation 2 owner r1",
				s.State, s.ClaimGeneration, s.ClaimOwner)
		}

		before := takeSnapshot(t, st)
		close(callerGo)
		err = <-callerDone
		if !errors.Is(err, ErrCreationStateConflict) || !strings.Contains(err.Error(), "claim lost") {
			t.Errorf("the caller's step after the takeover = %v, want ErrCreationStateConflict (claim lost)", err)
		}
		assertUnchanged(t, before, takeSnapshot(t, st), "the caller whose claim was lost")

		close(recovererGo)
		res := <-recovered
		if res.err != nil {
			t.Fatalf("recovery: %v (actions %v)", res.err, res.actions)
		}
		assertCompleted(t, st, opID, "ext-1", 1)
	})
}
