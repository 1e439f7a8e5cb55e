package idempotency

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trackergateway/gateway/internal/failure"
	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/store/sqlstore"
	"github.com/trackergateway/gateway/internal/store/storetest"
)

// pastGraceAndLease moves the clock beyond every lease and the recoverer's
// grace, as if the crashed process were long gone.
func pastGraceAndLease(clock *storetest.Clock, c *Coordinator, r *Recoverer) {
	clock.Advance(r.Grace + c.leaseTTL + 1e9)
}

func TestGoldenCreateWithContribution(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		clock := newTestClock()
		c := New(st, discardLogger(), clock.Now, testContributionKinds)
		res, err := c.Create(ctx, createRequest("ext-1", contribution("101")))
		if err != nil {
			t.Fatalf("Create: %v", err)
		}
		if res.Outcome != Created {
			t.Errorf("outcome = %v, want %v", res.Outcome, Created)
		}
		op := onlyOperation(t, st)
		task := assertCompleted(t, st, op.ID, "ext-1", 1)
		if res.Task.ID != task.ID || res.Task.Identifier != "WS-1" {
			t.Errorf("result task = %s %s, want %s WS-1", res.Task.ID, res.Task.Identifier, task.ID)
		}
		if got := stepStates(t, st, op.ID); !slices.Equal(got, []string{store.StepSucceeded}) {
			t.Errorf("step states = %v, want [succeeded]", got)
		}
		events := eventsOfTask(t, st, task.ID)
		if !strings.Contains(events[0].Payload, `"external_id":"ext-1"`) {
			t.Errorf("task.created payload = %s, want the external id", events[0].Payload)
		}
		// The same handle completes idempotently: the stored outcome, no
		// second event.
		again, err := c.Create(ctx, createRequest("ext-1", contribution("101")))
		if err != nil {
			t.Fatalf("repeat Create: %v", err)
		}
		if again.Outcome != FoundSettled || again.Task.ID != task.ID {
			t.Errorf("repeat = %v %s, want %v %s", again.Outcome, again.Task.ID, FoundSettled, task.ID)
		}
		assertCompleted(t, st, op.ID, "ext-1", 1)
	})
}

func TestCompleteReplaysForTheSameHandle(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		c := New(st, discardLogger(), newTestClock().Now, testContributionKinds)
		begun, err := c.BeginTaskCreation(ctx, createRequest("ext-1", contribution("101")))
		if err != nil {
			t.Fatalf("Begin: %v", err)
		}
		if err := c.ExecuteSteps(ctx, begun.Handle); err != nil {
			t.Fatalf("ExecuteSteps: %v", err)
		}
		first, err := c.CompleteTaskCreation(ctx, begun.Handle)
		if err != nil {
			t.Fatalf("Complete: %v", err)
		}
		before := takeSnapshot(t, st)
		second, err := c.CompleteTaskCreation(ctx, begun.Handle)
		if err != nil {
			t.Fatalf("second Complete: %v", err)
		}
		if second.Outcome != first.Outcome || second.Task.ID != first.Task.ID {
			t.Errorf("replay = %v %s, want %v %s", second.Outcome, second.Task.ID, first.Outcome, first.Task.ID)
		}
		assertUnchanged(t, before, takeSnapshot(t, st), "Complete replay")
		if err := c.AbortTaskCreation(ctx, begun.Handle, "too late"); !errors.Is(err, ErrCreationStateConflict) {
			t.Errorf("Abort after Complete = %v, want ErrCreationStateConflict", err)
		}
		assertUnchanged(t, before, takeSnapshot(t, st), "Abort after Complete")
	})
}

// A crash at every durable boundary, then a new process's recovery: the end
// state is exactly one completed task with its association and one
// task.created, or (abort path) an aborted operation with no live effect.
func TestFailpointThenRecovery(t *testing.T) {
	t.Parallel()
	tests := []struct {
		failpoint string
		abort     bool // the crash happens inside Abort
	}{
		{FailAfterBegin, false},
		{FailAfterStepClaim, false},
		{FailAfterEffectWrite, false},
		{FailAfterPhaseA, false},
		{FailAfterPhaseB, false},
		{FailInsideAbortCompensate, true},
	}
	for _, tc := range tests {
		t.Run(tc.failpoint, func(t *testing.T) {
			t.Parallel()
			forEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
				ctx := context.Background()
				clock := newTestClock()
				crashed := New(st, discardLogger(), clock.Now, testContributionKinds)
				crashed.Failpoint = crashAt(tc.failpoint)
				req := createRequest("ext-1", contribution("101"))
				if tc.abort {
					begun, err := crashed.BeginTaskCreation(ctx, req)
					if err != nil {
						t.Fatalf("Begin: %v", err)
					}
					if err := crashed.ExecuteSteps(ctx, begun.Handle); err != nil {
						t.Fatalf("ExecuteSteps: %v", err)
					}
					if err := crashed.AbortTaskCreation(ctx, begun.Handle, "caller gave up"); !errors.Is(err, errCrash) {
						t.Fatalf("Abort = %v, want the simulated crash", err)
					}
					// The crash rolled the compensation back: the effect is
					// still there and still owed.
					if n := count(t, st, `SELECT COUNT(*) FROM task_remote_contribution_associations`); n != 1 {
						t.Fatalf("associations after crashed compensation = %d, want 1", n)
					}
				} else if _, err := crashed.Create(ctx, req); !errors.Is(err, errCrash) {
					t.Fatalf("Create = %v, want the simulated crash", err)
				}
				op := onlyOperation(t, st)

				// The process is gone; a new one recovers.
				c := New(st, discardLogger(), clock.Now, testContributionKinds)
				r := NewRecoverer(c, st, discardLogger())
				pastGraceAndLease(clock, c, r)
				n, err := r.RunOnce(ctx)
				if err != nil {
					t.Fatalf("RunOnce: %v", err)
				}
				wantRecovered := 1
				if tc.failpoint == FailAfterPhaseB {
					wantRecovered = 0 // already complete: nothing open
				}
				if n != wantRecovered {
					t.Errorf("RunOnce recovered %d operations, want %d", n, wantRecovered)
				}
				if tc.abort {
					assertAborted(t, st, op.ID)
				} else {
					assertCompleted(t, st, op.ID, "ext-1", 1)
				}
				// Recovery is idempotent: a second pass changes nothing.
				before := takeSnapshot(t, st)
				clock.Advance(r.Grace + c.leaseTTL)
				if n, err := r.RunOnce(ctx); err != nil || n != 0 {
					t.Errorf("second RunOnce = %d, %v; want 0, nil", n, err)
				}
				assertUnchanged(t, before, takeSnapshot(t, st), "second recovery pass")
				if !tc.abort {
					// And the identity is settled: a retry is Found.
					res, err := c.Create(ctx, req)
					if err != nil || res.Outcome != FoundSettled {
						t.Errorf("retry after recovery = %v, %v; want %v", res.Outcome, err, FoundSettled)
					}
				}
			})
		})
	}
}

func TestRecoveryLeavesInFlightCreatesAlone(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		clock := newTestClock()
		crashed := New(st, discardLogger(), clock.Now, testContributionKinds)
		crashed.Failpoint = crashAt(FailAfterBegin)
		if _, err := crashed.Create(ctx, createRequest("ext-1", contribution("101"))); !errors.Is(err, errCrash) {
			t.Fatalf("Create = %v, want the simulated crash", err)
		}
		c := New(st, discardLogger(), clock.Now, testContributionKinds)
		r := NewRecoverer(c, st, discardLogger())
		before := takeSnapshot(t, st)
		// Within grace and the caller's lease, recovery does not touch it.
		if n, err := r.RunOnce(ctx); err != nil || n != 0 {
			t.Errorf("RunOnce within grace = %d, %v; want 0, nil", n, err)
		}
		assertUnchanged(t, before, takeSnapshot(t, st), "recovery within grace")
	})
}

// A gateway that owns its database alone (SQLite) takes back its dead
// predecessor's leases at start-up and recovers the creations it left
// without waiting out the grace or the leases: a step cut off while
// running, the caller's lease on the operation.
func TestRecoveryTakesAbandonedCreationsAtOnce(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		clock := newTestClock()
		crashed := New(st, discardLogger(), clock.Now, testContributionKinds)
		crashed.Failpoint = crashAt(FailAfterStepClaim)
		if _, err := crashed.Create(ctx, createRequest("ext-1", contribution("101"))); !errors.Is(err, errCrash) {
			t.Fatalf("Create = %v, want the simulated crash", err)
		}
		op := onlyOperation(t, st)

		// The next owner starts a second later, well within the grace and
		// the leases.
		clock.Advance(time.Second)
		start := clock.Now()
		if _, err := st.TakeBackLeases(ctx, start); err != nil {
			t.Fatalf("take back leases: %v", err)
		}
		c := New(st, discardLogger(), clock.Now, testContributionKinds)
		r := NewRecoverer(c, st, discardLogger())
		r.AbandonedBefore = start
		clock.Advance(time.Millisecond)
		if n, err := r.RunOnce(ctx); err != nil || n != 1 {
			t.Fatalf("RunOnce = %d, %v; want 1, nil", n, err)
		}
		assertCompleted(t, st, op.ID, "ext-1", 1)
	})
}

// An abort path without a crash: the step's contribution already belongs to
// another task's operation, so the step fails permanently and the create
// aborts cleanly, leaving the other task's association alone.
func TestForeignContributionAborts(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		c := New(st, discardLogger(), newTestClock().Now, testContributionKinds)
		first, err := c.Create(ctx, createRequest("ext-1", contribution("101")))
		if err != nil {
			t.Fatalf("first Create: %v", err)
		}
		_, err = c.Create(ctx, createRequest("ext-2", contribution("101")))
		if code := failure.CodeOf(err); code != failure.Conflict {
			t.Fatalf("second Create = %v (code %s), want a conflict", err, code)
		}
		if !strings.Contains(failure.MessageOf(err), first.Task.ID) {
			t.Errorf("conflict message = %q, want it to name the holding task %s", failure.MessageOf(err), first.Task.ID)
		}
		ids := queryStrings(t, st, `SELECT id FROM task_creation_operations WHERE task_id <> $1`, first.Task.ID)
		if len(ids) != 1 {
			t.Fatalf("operations of the second create = %d, want 1", len(ids))
		}
		assertAborted(t, st, ids[0])
		steps, _ := st.ListCreationSteps(ctx, ids[0])
		if len(steps) != 1 || steps[0].State != store.StepFailed || !strings.Contains(steps[0].EvidenceJSON, `"absent_proven"`) {
			t.Errorf("failed step = %+v, want failed with absent_proven evidence", steps)
		}
		a, err := st.GetAssociation(ctx, "github", "gh-main", "101")
		if err != nil || a.TaskID != first.Task.ID {
			t.Errorf("first task's association = %+v, %v; want it intact", a, err)
		}
		// The identity of the aborted create is free again.
		if _, _, err := c.Lookup(ctx, testWS, "ext-2"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Lookup(ext-2) after abort = %v, want ErrNotFound", err)
		}
	})
}

func TestAbortAfterStepSucceededCompensates(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		c := New(st, discardLogger(), newTestClock().Now, testContributionKinds)
		begun, err := c.BeginTaskCreation(ctx, createRequest("ext-1", contribution("101")))
		if err != nil {
			t.Fatalf("Begin: %v", err)
		}
		if err := c.ExecuteSteps(ctx, begun.Handle); err != nil {
			t.Fatalf("ExecuteSteps: %v", err)
		}
		if err := c.AbortTaskCreation(ctx, begun.Handle, "caller gave up"); err != nil {
			t.Fatalf("Abort: %v", err)
		}
		assertAborted(t, st, begun.Handle.OperationID)
		// Abort is idempotent; Complete after it is refused.
		before := takeSnapshot(t, st)
		if err := c.AbortTaskCreation(ctx, begun.Handle, "again"); err != nil {
			t.Errorf("second Abort = %v, want nil", err)
		}
		if _, err := c.CompleteTaskCreation(ctx, begun.Handle); !errors.Is(err, ErrCreationStateConflict) {
			t.Errorf("Complete after Abort = %v, want ErrCreationStateConflict", err)
		}
		assertUnchanged(t, before, takeSnapshot(t, st), "calls after Abort")
	})
}

// Tampering with any stored binding, the handle, a request or an ownership
// marker blocks Complete and Abort with ErrHandleMismatch, writing nothing.
func TestTamperingBlocksCompleteAndAbort(t *testing.T) {
	t.Parallel()
	const other = "0000000000000000000000000000000000000000000000000000000000000000"
	type tamperFn func(t *testing.T, st *sqlstore.Store, op store.Operation, step store.CreationStep, h *CreationHandle)
	sqlSet := func(table, column, value, where string) tamperFn {
		return func(t *testing.T, st *sqlstore.Store, op store.Operation, step store.CreationStep, h *CreationHandle) {
			key := op.ID
			if table == "task_remote_contribution_associations" {
				key = "101"
			}
			rawExec(t, st, `UPDATE `+table+` SET `+column+` = $1 WHERE `+where+` = $2`, value, key)
		}
	}
	replaceIn := func(table, column, old, new, where string) tamperFn {
		return func(t *testing.T, st *sqlstore.Store, op store.Operation, step store.CreationStep, h *CreationHandle) {
			var current string
			switch column {
			case "plan_json":
				current = op.PlanJSON
			case "actor_json":
				current = op.ActorJSON
			case "request_json":
				current = step.RequestJSON
			}
			if !strings.Contains(current, old) {
				t.Fatalf("%s does not contain %q: %s", column, old, current)
			}
			rawExec(t, st, `UPDATE `+table+` SET `+column+` = $1 WHERE `+where+` = $2`, strings.Replace(current, old, new, 1), op.ID)
		}
	}
	tests := []struct {
		name   string
		tamper tamperFn
	}{
		{"manifest hash", sqlSet("task_creation_operations", "manifest_sha256", other, "id")},
		{"plan json", replaceIn("task_creation_operations", "plan_json", `"workflow_step_id":"backlog"`, `"workflow_step_id":"doing"`, "id")},
		{"actor binding hash", sqlSet("task_creation_operations", "actor_binding_sha256", other, "id")},
		{"actor json", replaceIn("task_creation_operations", "actor_json", `"principal_id":"tester"`, `"principal_id":"mallory"`, "id")},
		{"completion token hash", sqlSet("task_creation_operations", "completion_token_sha256", other, "id")},
		{"step request sha", sqlSet("task_creation_steps", "request_sha256", other, "operation_id")},
		{"step request json", replaceIn("task_creation_steps", "request_json", `"repository_id":"acme/app"`, `"repository_id":"acme/evil"`, "operation_id")},
		{"step idempotency key", sqlSet("task_creation_steps", "idempotency_key", other, "operation_id")},
		{"step evidence json", func(t *testing.T, st *sqlstore.Store, op store.Operation, step store.CreationStep, h *CreationHandle) {
			step.EvidenceJSON = strings.Replace(step.EvidenceJSON, `"present_exact"`, `"absent_proven"`, 1)
			if err := st.UpdateCreationStep(context.Background(), step); err != nil {
				t.Fatal(err)
			}
		}},
		{"step evidence sha", func(t *testing.T, st *sqlstore.Store, op store.Operation, step store.CreationStep, h *CreationHandle) {
			step.EvidenceSHA256 = other
			if err := st.UpdateCreationStep(context.Background(), step); err != nil {
				t.Fatal(err)
			}
		}},
		{"step evidence rewritten with a matching sha", func(t *testing.T, st *sqlstore.Store, op store.Operation, step store.CreationStep, h *CreationHandle) {
			step.EvidenceJSON = strings.Replace(step.EvidenceJSON, `"repository_id":"acme/app"`, `"repository_id":"acme/evil"`, 1)
			step.EvidenceSHA256 = sha256Hex([]byte(step.EvidenceJSON))
			if err := st.UpdateCreationStep(context.Background(), step); err != nil {
				t.Fatal(err)
			}
		}},
		{"step ownership marker", sqlSet("task_creation_steps", "ownership_marker", other, "operation_id")},
		{"step provider handle", sqlSet("task_creation_steps", "provider_handle", "github:gh-main:999", "operation_id")},
		// Consistent forgeries: every other stored value is rewritten to
		// agree, so only recomputing the named binding catches them.
		{"step request sha with a matching key, row and evidence", forgeStep(func(s *store.CreationStep) {
			s.RequestSHA256 = other
			s.IdempotencyKey = IdempotencyKey(s.OperationID, s.Kind, s.StepKey, other)
		})},
		{"step idempotency key with a matching row and evidence", forgeStep(func(s *store.CreationStep) {
			s.IdempotencyKey = other
		})},
		{"association ownership marker", sqlSet("task_remote_contribution_associations", "ownership_marker", other, "contribution_id")},
		{"association operation", sqlSet("task_remote_contribution_associations", "operation_id", "11111111-1111-4111-8111-111111111111", "contribution_id")},
		{"association repository", sqlSet("task_remote_contribution_associations", "repository_id", "acme/evil", "contribution_id")},
		{"handle token", func(t *testing.T, st *sqlstore.Store, op store.Operation, step store.CreationStep, h *CreationHandle) {
			h.CompletionToken = []byte(strings.Repeat("x", 32))
		}},
		{"handle manifest hash", func(t *testing.T, st *sqlstore.Store, op store.Operation, step store.CreationStep, h *CreationHandle) {
			h.ManifestHash = other
		}},
		{"handle actor binding hash", func(t *testing.T, st *sqlstore.Store, op store.Operation, step store.CreationStep, h *CreationHandle) {
			h.ActorBindingHash = other
		}},
		{"handle task", func(t *testing.T, st *sqlstore.Store, op store.Operation, step store.CreationStep, h *CreationHandle) {
			h.TaskID = "22222222-2222-4222-8222-222222222222"
		}},
		{"handle workspace", func(t *testing.T, st *sqlstore.Store, op store.Operation, step store.CreationStep, h *CreationHandle) {
			h.WorkspaceID = "other"
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			forEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
				ctx := context.Background()
				c := New(st, discardLogger(), newTestClock().Now, testContributionKinds)
				begun, err := c.BeginTaskCreation(ctx, createRequest("ext-1", contribution("101")))
				if err != nil {
					t.Fatalf("Begin: %v", err)
				}
				if err := c.ExecuteSteps(ctx, begun.Handle); err != nil {
					t.Fatalf("ExecuteSteps: %v", err)
				}
				op, err := st.GetOperation(ctx, begun.Handle.OperationID)
				if err != nil {
					t.Fatal(err)
				}
				steps, err := st.ListCreationSteps(ctx, op.ID)
				if err != nil || len(steps) != 1 {
					t.Fatalf("steps = %v, %v", steps, err)
				}
				h := *begun.Handle
				tc.tamper(t, st, op, steps[0], &h)
				before := takeSnapshot(t, st)
				if _, err := c.CompleteTaskCreation(ctx, &h); !errors.Is(err, ErrHandleMismatch) {
					t.Errorf("Complete after tampering = %v, want ErrHandleMismatch", err)
				}
				assertUnchanged(t, before, takeSnapshot(t, st), "refused Complete")
				if err := c.AbortTaskCreation(ctx, &h, "cleanup"); !errors.Is(err, ErrHandleMismatch) {
					t.Errorf("Abort after tampering = %v, want ErrHandleMismatch", err)
				}
				assertUnchanged(t, before, takeSnapshot(t, st), "refused Abort")
			})
		})
	}
}

// forgeStep rewrites the step's request hash or idempotency key and makes the
// association row and the step's evidence (and its hash) agree with it.
func forgeStep(change func(s *store.CreationStep)) func(t *testing.T, st *sqlstore.Store, op store.Operation, step store.CreationStep, h *CreationHandle) {
	return func(t *testing.T, st *sqlstore.Store, op store.Operation, step store.CreationStep, h *CreationHandle) {
		ctx := context.Background()
		change(&step)
		a, err := st.GetAssociation(ctx, "github", "gh-main", "101")
		if err != nil {
			t.Fatal(err)
		}
		a.IdempotencyKey = step.IdempotencyKey
		evidence, err := evidenceFor(step, effectPresentExact, observeOwned(a), a.ClaimedAt)
		if err != nil {
			t.Fatal(err)
		}
		rawExec(t, st, `UPDATE task_remote_contribution_associations SET idempotency_key = $1 WHERE contribution_id = $2`, a.IdempotencyKey, "101")
		rawExec(t, st, `UPDATE task_creation_steps SET request_sha256 = $1, idempotency_key = $2, evidence_json = $3,
			evidence_sha256 = $4 WHERE operation_id = $5`, step.RequestSHA256, step.IdempotencyKey, evidence, sha256Hex([]byte(evidence)), op.ID)
	}
}

// The recovery path revalidates the retained bindings too: a tampered
// association cannot be compensated away by retry_compensation.
func TestTamperingBlocksCompensationRetry(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		clock := newTestClock()
		crashed := New(st, discardLogger(), clock.Now, testContributionKinds)
		crashed.Failpoint = crashAt(FailInsideAbortCompensate)
		begun, err := crashed.BeginTaskCreation(ctx, createRequest("ext-1", contribution("101")))
		if err != nil {
			t.Fatalf("Begin: %v", err)
		}
		if err := crashed.ExecuteSteps(ctx, begun.Handle); err != nil {
			t.Fatalf("ExecuteSteps: %v", err)
		}
		if err := crashed.AbortTaskCreation(ctx, begun.Handle, "give up"); !errors.Is(err, errCrash) {
			t.Fatalf("Abort = %v, want the simulated crash", err)
		}
		rawExec(t, st, `UPDATE task_remote_contribution_associations SET ownership_marker = $1 WHERE contribution_id = $2`, "forged", "101")
		c := New(st, discardLogger(), clock.Now, testContributionKinds)
		r := NewRecoverer(c, st, discardLogger())
		pastGraceAndLease(clock, c, r)
		if _, err := c.RecoverTaskCreation(ctx, begun.Handle.OperationID, "r1"); !errors.Is(err, ErrHandleMismatch) {
			t.Errorf("RecoverTaskCreation over a forged effect row = %v, want ErrHandleMismatch", err)
		}
		if n := count(t, st, `SELECT COUNT(*) FROM task_remote_contribution_associations`); n != 1 {
			t.Errorf("associations = %d, want the forged row left for an operator", n)
		}
		if op, _ := st.GetOperation(ctx, begun.Handle.OperationID); op.State == store.OpAborted {
			t.Errorf("operation aborted over a forged effect row, orphaning it")
		}
	})
}

func TestReleaseDuringPreparingGivesIdentityLost(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		c := New(st, discardLogger(), newTestClock().Now, testContributionKinds)
		begun, err := c.BeginTaskCreation(ctx, createRequest("ext-1", contribution("101")))
		if err != nil {
			t.Fatalf("Begin: %v", err)
		}
		if err := c.ExecuteSteps(ctx, begun.Handle); err != nil {
			t.Fatalf("ExecuteSteps: %v", err)
		}
		released, err := c.ReleaseExternalID(ctx, testWS, "ext-1")
		if err != nil {
			t.Fatalf("ReleaseExternalID: %v", err)
		}
		if released.ExternalID != "" || released.ID != begun.Task.ID {
			t.Errorf("released task = %s %q, want %s without external id", released.ID, released.ExternalID, begun.Task.ID)
		}
		op, _ := st.GetOperation(ctx, begun.Handle.OperationID)
		if op.State != store.OpPreparing || !op.ReleaseApplied {
			t.Errorf("operation after release = %s release_applied=%v, want preparing/true", op.State, op.ReleaseApplied)
		}
		if _, _, err := c.Lookup(ctx, testWS, "ext-1"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Lookup after release = %v, want ErrNotFound", err)
		}
		res, err := c.CompleteTaskCreation(ctx, begun.Handle)
		if err != nil {
			t.Fatalf("Complete: %v", err)
		}
		if res.Outcome != CreatedIdentityLost {
			t.Errorf("outcome = %v, want %v", res.Outcome, CreatedIdentityLost)
		}
		if res.Task.ExternalID != "" || res.Task.ExternalIDSettledAt != nil {
			t.Errorf("task = external_id %q settled %v, want neither", res.Task.ExternalID, res.Task.ExternalIDSettledAt)
		}
		assertCompletedAs(t, st, op.ID, "", 1, CreatedIdentityLost)
		events := eventsOfTask(t, st, res.Task.ID)
		if strings.Contains(events[0].Payload, "external_id") {
			t.Errorf("task.created payload = %s, want no external id", events[0].Payload)
		}
		// The identity is free: a new create makes a new task.
		again, err := c.Create(ctx, createRequest("ext-1"))
		if err != nil || again.Outcome != Created || again.Task.ID == res.Task.ID {
			t.Errorf("create after release = %v %s, %v; want a new Created task", again.Outcome, again.Task.ID, err)
		}
	})
}

func TestReleaseRefusedWhileAStepRuns(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		c := New(st, discardLogger(), newTestClock().Now, testContributionKinds)
		c.Failpoint = crashAt(FailAfterStepClaim)
		if _, err := c.Create(ctx, createRequest("ext-1", contribution("101"))); !errors.Is(err, errCrash) {
			t.Fatalf("Create = %v, want the simulated crash", err)
		}
		before := takeSnapshot(t, st)
		_, err := c.ReleaseExternalID(ctx, testWS, "ext-1")
		if code := failure.CodeOf(err); code != failure.Conflict {
			t.Errorf("release with a running step = %v (code %s), want a conflict", err, code)
		}
		assertUnchanged(t, before, takeSnapshot(t, st), "refused release")
	})
}

func TestRecoveryRetriesPreparingRelease(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		clock := newTestClock()
		crashed := New(st, discardLogger(), clock.Now, testContributionKinds)
		begun, err := crashed.BeginTaskCreation(ctx, createRequest("ext-1", contribution("101")))
		if err != nil {
			t.Fatalf("Begin: %v", err)
		}
		if err := crashed.ExecuteSteps(ctx, begun.Handle); err != nil {
			t.Fatalf("ExecuteSteps: %v", err)
		}
		// A release that crashed between its claim and its apply.
		op, _ := st.GetOperation(ctx, begun.Handle.OperationID)
		op.State = store.OpPreparingRelease
		if err := st.UpdateOperation(ctx, op); err != nil {
			t.Fatal(err)
		}
		c := New(st, discardLogger(), clock.Now, testContributionKinds)
		r := NewRecoverer(c, st, discardLogger())
		pastGraceAndLease(clock, c, r)
		actions, err := c.RecoverTaskCreation(ctx, op.ID, "r1")
		if err != nil {
			t.Fatalf("RecoverTaskCreation: %v", err)
		}
		want := []RecoveryAction{ActionRetryPreparingRelease, ActionCompletePreparing, ActionReplayTerminal}
		if !slices.Equal(actions, want) {
			t.Errorf("actions = %v, want %v", actions, want)
		}
		op, _ = st.GetOperation(ctx, op.ID)
		if op.State != store.OpCompleted || op.Outcome != CreatedIdentityLost.String() {
			t.Errorf("operation = %s/%s, want completed/%s", op.State, op.Outcome, CreatedIdentityLost)
		}
		task, _ := st.GetTask(ctx, op.TaskID)
		if task.ExternalID != "" {
			t.Errorf("task external id = %q, want released", task.ExternalID)
		}
	})
}

// A running step whose lease expired becomes unknown (never assumed failed)
// and is reconciled from the effect authority.
func TestLeaseExpiryReconcilesUnknownStep(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		failpoint string
		foreign   bool
		wantState string
		wantAfter []RecoveryAction
	}{
		{"our row exists", FailAfterEffectWrite, false, store.StepSucceeded, []RecoveryAction{ActionCompletePreparing, ActionReplayTerminal}},
		{"row proven absent", FailAfterStepClaim, false, store.StepRetryWait, []RecoveryAction{ActionResumePreparing, ActionCompletePreparing, ActionReplayTerminal}},
		{"foreign row", FailAfterStepClaim, true, store.StepUnknown, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			forEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
				ctx := context.Background()
				clock := newTestClock()
				crashed := New(st, discardLogger(), clock.Now, testContributionKinds)
				crashed.Failpoint = crashAt(tc.failpoint)
				if _, err := crashed.Create(ctx, createRequest("ext-1", contribution("101"))); !errors.Is(err, errCrash) {
					t.Fatalf("Create = %v, want the simulated crash", err)
				}
				op := onlyOperation(t, st)
				if tc.foreign {
					if _, err := st.InsertAssociation(ctx, store.Association{Provider: "github", ConnectionID: "gh-main",
						ContributionID: "101", ContributionKind: "pull_request", TaskID: "33333333-3333-4333-8333-333333333333",
						WorkspaceID: testWS, RepositoryID: "acme/app", OperationID: "44444444-4444-4444-8444-444444444444",
						IdempotencyKey: "k", OwnershipMarker: "m", ClaimedAt: clock.Now()}); err != nil {
						t.Fatal(err)
					}
				}
				c := New(st, discardLogger(), clock.Now, testContributionKinds)
				steps, _ := st.ListCreationSteps(ctx, op.ID)
				if steps[0].State != store.StepRunning {
					t.Fatalf("step after the crash = %s, want running", steps[0].State)
				}
				// Lease still live: no action is legal, and nothing is written.
				if got := DecideRecovery(op, steps, clock.Now()); got != ActionNone {
					t.Errorf("DecideRecovery with a live lease = %q, want none", got)
				}
				before := takeSnapshot(t, st)
				if _, err := c.RecoverTaskCreation(ctx, op.ID, "r1"); !errors.Is(err, ErrCreationStateConflict) {
					t.Errorf("recovery with a live lease = %v, want ErrCreationStateConflict", err)
				}
				assertUnchanged(t, before, takeSnapshot(t, st), "recovery with a live lease")

				clock.Advance(c.leaseTTL + 1e9)
				action, gen, err := c.claimRecovery(ctx, op.ID, "r1")
				if err != nil || action != ActionReconcileUnknownStep {
					t.Fatalf("claimRecovery = %q, %v; want %q", action, err, ActionReconcileUnknownStep)
				}
				if got := stepStates(t, st, op.ID); !slices.Equal(got, []string{store.StepUnknown}) {
					t.Errorf("expired running step = %v, want [unknown]", got)
				}
				err = c.runRecovery(ctx, op.ID, action, fence{owner: "r1", generation: gen})
				switch {
				case tc.foreign && !errors.Is(err, ErrCreationStateConflict):
					// A foreign owner ends the pass: claiming again cannot help.
					t.Fatalf("reconcile with a foreign row = %v, want ErrCreationStateConflict", err)
				case !tc.foreign && err != nil:
					t.Fatalf("reconcile: %v", err)
				}
				steps, _ = st.ListCreationSteps(ctx, op.ID)
				if steps[0].State != tc.wantState {
					t.Errorf("reconciled step = %s, want %s", steps[0].State, tc.wantState)
				}
				if tc.foreign {
					if !strings.Contains(steps[0].Error, "conflict") {
						t.Errorf("foreign step error = %q, want a conflict note", steps[0].Error)
					}
					if got, _ := st.GetOperation(ctx, op.ID); got.State != store.OpPreparing {
						t.Errorf("operation = %s, want preparing (an operator resolves the conflict)", got.State)
					}
					return
				}
				effect := map[string]string{store.StepSucceeded: `"present_exact"`, store.StepRetryWait: `"absent_proven"`}[tc.wantState]
				if !strings.Contains(steps[0].EvidenceJSON, effect) || steps[0].EvidenceSHA256 != sha256Hex([]byte(steps[0].EvidenceJSON)) {
					t.Errorf("evidence = %s (sha %s), want %s with its hash", steps[0].EvidenceJSON, steps[0].EvidenceSHA256, effect)
				}
				actions, err := c.RecoverTaskCreation(ctx, op.ID, "r1")
				if err != nil {
					t.Fatalf("RecoverTaskCreation: %v", err)
				}
				if !slices.Equal(actions, tc.wantAfter) {
					t.Errorf("actions = %v, want %v", actions, tc.wantAfter)
				}
				assertCompleted(t, st, op.ID, "ext-1", 1)
			})
		})
	}
}

// blockAt returns a Failpoint that, at name, signals reached and waits for
// release (a recoverer paused at a durable boundary).
func blockAt(name string, reached chan<- struct{}, release <-chan struct{}) func(string) error {
	return func(n string) error {
		if n == name {
			reached <- struct{}{}
			<-release
		}
		return nil
	}
}

func waitFor(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(time.Minute):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// preparedOperation begins a create and runs its step, then abandons it past
// every lease: an operation ready for complete_preparing.
func preparedOperation(t *testing.T, st *sqlstore.Store, clock *storetest.Clock) string {
	t.Helper()
	ctx := context.Background()
	c := New(st, discardLogger(), clock.Now, testContributionKinds)
	begun, err := c.BeginTaskCreation(ctx, createRequest("ext-1", contribution("101")))
	if err != nil {
		t.Fatalf("Begin: %v", err)
	}
	if err := c.ExecuteSteps(ctx, begun.Handle); err != nil {
		t.Fatalf("ExecuteSteps: %v", err)
	}
	clock.Advance(c.leaseTTL + 1e9)
	return begun.Handle.OperationID
}

func TestConcurrentRecoverers(t *testing.T) {
	t.Parallel()
	t.Run("live lease refuses the second", func(t *testing.T) {
		t.Parallel()
		forEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
			ctx := context.Background()
			clock := newTestClock()
			opID := preparedOperation(t, st, clock)
			reached, release := make(chan struct{}), make(chan struct{})
			first := New(st, discardLogger(), clock.Now, testContributionKinds)
			first.Failpoint = blockAt(FailAfterPhaseA, reached, release)
			type result struct {
				actions []RecoveryAction
				err     error
			}
			done := make(chan result, 1)
			go func() {
				a, err := first.RecoverTaskCreation(ctx, opID, "r1")
				done <- result{a, err}
			}()
			waitFor(t, reached, "the first recoverer's phase A")
			before := takeSnapshot(t, st)
			second := New(st, discardLogger(), clock.Now, testContributionKinds)
			if _, err := second.RecoverTaskCreation(ctx, opID, "r2"); !errors.Is(err, ErrCreationStateConflict) {
				t.Errorf("second recoverer = %v, want ErrCreationStateConflict", err)
			}
			assertUnchanged(t, before, takeSnapshot(t, st), "the refused recoverer")
			close(release)
			res := <-done
			if res.err != nil {
				t.Fatalf("first recoverer: %v", res.err)
			}
			if want := []RecoveryAction{ActionCompletePreparing, ActionReplayTerminal}; !slices.Equal(res.actions, want) {
				t.Errorf("first recoverer actions = %v, want %v", res.actions, want)
			}
			assertCompleted(t, st, opID, "ext-1", 1)
		})
	})
	t.Run("stale generation writes nothing after a takeover", func(t *testing.T) {
		t.Parallel()
		forEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
			ctx := context.Background()
			clock := newTestClock()
			opID := preparedOperation(t, st, clock)
			reached, release := make(chan struct{}), make(chan struct{})
			first := New(st, discardLogger(), clock.Now, testContributionKinds)
			first.Failpoint = blockAt(FailAfterPhaseA, reached, release)
			done := make(chan error, 1)
			go func() {
				_, err := first.RecoverTaskCreation(ctx, opID, "r1")
				done <- err
			}()
			waitFor(t, reached, "the first recoverer's phase A")
			// The first recoverer stalls past its lease; another takes over.
			second := New(st, discardLogger(), clock.Now, testContributionKinds)
			clock.Advance(second.leaseTTL + 1e9)
			actions, err := second.RecoverTaskCreation(ctx, opID, "r2")
			if err != nil {
				t.Fatalf("second recoverer: %v", err)
			}
			if want := []RecoveryAction{ActionCompleteCompleting, ActionReplayTerminal}; !slices.Equal(actions, want) {
				t.Errorf("second recoverer actions = %v, want %v", actions, want)
			}
			before := takeSnapshot(t, st)
			close(release)
			if err := <-done; !errors.Is(err, ErrCreationStateConflict) {
				t.Errorf("stale recoverer = %v, want ErrCreationStateConflict", err)
			}
			assertUnchanged(t, before, takeSnapshot(t, st), "the stale recoverer")
			assertCompleted(t, st, opID, "ext-1", 1)
		})
	})
	t.Run("free race", func(t *testing.T) {
		t.Parallel()
		forEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
			ctx := context.Background()
			clock := newTestClock()
			opID := preparedOperation(t, st, clock)
			start := make(chan struct{})
			errs := make(chan error, 2)
			for _, owner := range []string{"r1", "r2"} {
				c := New(st, discardLogger(), clock.Now, testContributionKinds)
				go func() {
					<-start
					_, err := c.RecoverTaskCreation(ctx, opID, owner)
					errs <- err
				}()
			}
			close(start)
			succeeded := 0
			for range 2 {
				switch err := <-errs; {
				case err == nil:
					succeeded++
				case !errors.Is(err, ErrCreationStateConflict):
					t.Errorf("racing recoverer = %v, want nil or ErrCreationStateConflict", err)
				}
			}
			if succeeded == 0 {
				t.Errorf("no racing recoverer succeeded")
			}
			assertCompleted(t, st, opID, "ext-1", 1)
		})
	})
}

func TestFoundNeverOpensAnOperation(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		c := New(st, discardLogger(), newTestClock().Now, testContributionKinds)
		if _, err := c.Create(ctx, createRequest("ext-1", contribution("101"))); err != nil {
			t.Fatalf("Create: %v", err)
		}
		// An unsettled holder too.
		if _, err := c.BeginTaskCreation(ctx, createRequest("ext-2")); err != nil {
			t.Fatalf("Begin: %v", err)
		}
		before := takeSnapshot(t, st)
		for _, tc := range []struct {
			ext  string
			want Outcome
		}{{"ext-1", FoundSettled}, {"  ext-1\u00a0", FoundSettled}, {"ext-2", FoundUnsettled}} {
			// Found wins over a different contribution and an invalid step:
			// no step, compensation or validation runs against the holder.
			req := createRequest(tc.ext, contribution("999"))
			req.WorkflowStepID = "no-such-step"
			begun, err := c.BeginTaskCreation(ctx, req)
			if err != nil {
				t.Fatalf("Begin(%q): %v", tc.ext, err)
			}
			if begun.Outcome != tc.want || begun.Handle != nil {
				t.Errorf("Begin(%q) = %v handle %v, want %v without a handle", tc.ext, begun.Outcome, begun.Handle, tc.want)
			}
			res, err := c.Create(ctx, req)
			if err != nil || res.Outcome != tc.want {
				t.Errorf("Create(%q) = %v, %v; want %v", tc.ext, res.Outcome, err, tc.want)
			}
		}
		assertUnchanged(t, before, takeSnapshot(t, st), "Found outcomes")
	})
}

// After a lookup miss, a pre-insert failure (the WIP limit) or the unique
// backstop re-reads, so the loser of a race returns Found.
func TestRaceLoserReturnsFound(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		step string
	}{
		{"capacity error re-reads", "doing"},    // WIP 1: the winner took the slot
		{"unique backstop re-reads", "backlog"}, // unlimited: the insert hits uniq_tasks_external_id
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			forEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
				ctx := context.Background()
				c := New(st, discardLogger(), newTestClock().Now, testContributionKinds)
				var winner Result
				loser := createRequest("ext-1")
				loser.WorkflowStepID = tc.step
				// Validate runs after the loser's lookup missed: the winner
				// completes right there.
				loser.Validate = func(*CreateRequest) error {
					w := createRequest("ext-1")
					w.WorkflowStepID = tc.step
					var err error
					if winner, err = c.Create(ctx, w); err != nil {
						t.Errorf("winner Create: %v", err)
					}
					return nil
				}
				res, err := c.Create(ctx, loser)
				if err != nil {
					t.Fatalf("loser Create = %v, want Found", err)
				}
				if res.Outcome != FoundSettled || res.Task.ID != winner.Task.ID {
					t.Errorf("loser = %v %s, want %v %s", res.Outcome, res.Task.ID, FoundSettled, winner.Task.ID)
				}
				if n := count(t, st, `SELECT COUNT(*) FROM task_creation_operations`); n != 1 {
					t.Errorf("operations = %d, want 1", n)
				}
				ws, _ := st.GetWorkspace(ctx, testWS)
				if ws.TaskSequence != 1 {
					t.Errorf("task sequence = %d, want 1 (the loser burnt none)", ws.TaskSequence)
				}
			})
		})
	}
}

func TestCapacityErrorSurfacesWhenNothingHoldsTheID(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		c := New(st, discardLogger(), newTestClock().Now, testContributionKinds)
		first := createRequest("ext-1")
		first.WorkflowStepID = "doing"
		if _, err := c.Create(ctx, first); err != nil {
			t.Fatalf("first Create: %v", err)
		}
		before := takeSnapshot(t, st)
		second := createRequest("ext-2")
		second.WorkflowStepID = "doing"
		_, err := c.Create(ctx, second)
		if code := failure.CodeOf(err); code != failure.Conflict {
			t.Fatalf("Create into a full step = %v (code %s), want a conflict", err, code)
		}
		if !strings.Contains(failure.MessageOf(err), "WIP limit") {
			t.Errorf("message = %q, want it to name the WIP limit", failure.MessageOf(err))
		}
		assertUnchanged(t, before, takeSnapshot(t, st), "refused create")
	})
}

// The settlement 0-row path when the task row was deleted underneath the
// create (bypassing the service, which refuses): Complete reports not-found,
// writes no event, and the operation converges to aborted.
func TestCompleteAfterTaskDeletedIsNotFound(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		clock := newTestClock()
		c := New(st, discardLogger(), clock.Now, testContributionKinds)
		begun, err := c.BeginTaskCreation(ctx, createRequest("ext-1", contribution("101")))
		if err != nil {
			t.Fatalf("Begin: %v", err)
		}
		if err := c.ExecuteSteps(ctx, begun.Handle); err != nil {
			t.Fatalf("ExecuteSteps: %v", err)
		}
		if err := st.DeleteTask(ctx, begun.Task.ID); err != nil {
			t.Fatal(err)
		}
		_, err = c.CompleteTaskCreation(ctx, begun.Handle)
		if code := failure.CodeOf(err); code != failure.NotFound {
			t.Fatalf("Complete of a deleted task = %v (code %s), want not found", err, code)
		}
		if got := failure.MessageOf(err); got != "task not found" {
			t.Errorf("message = %q, want %q", got, "task not found")
		}
		if events := eventsOfTask(t, st, begun.Task.ID); len(events) != 0 {
			t.Errorf("events = %+v, want none", events)
		}
		r := NewRecoverer(c, st, discardLogger())
		pastGraceAndLease(clock, c, r)
		if _, err := r.RunOnce(ctx); err != nil {
			t.Fatalf("RunOnce: %v", err)
		}
		assertAborted(t, st, begun.Handle.OperationID)
	})
}

func TestBeginRefusesUnsupportedSteps(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		c := New(st, discardLogger(), newTestClock().Now, testContributionKinds)
		cr := contribution("101")
		cr.Provider = "bitbucket"
		before := takeSnapshot(t, st)
		if _, err := c.BeginTaskCreation(ctx, createRequest("ext-1", cr)); !errors.Is(err, ErrUnsupportedStep) {
			t.Errorf("Begin with an unsupported provider = %v, want ErrUnsupportedStep", err)
		}
		assertUnchanged(t, before, takeSnapshot(t, st), "refused Begin")
	})
}

// TestFailpointInSharedCommits: creations whose transactions share commits
// with other entities' (store.WithSharedCommit, as the workers run them;
// SQLite shares, PostgreSQL runs each alone) keep every durable boundary.
// One creation crashes at each failpoint while others run beside it; the
// others complete, and recovery completes the crashed one: one task per
// identity, each with its association.
func TestFailpointInSharedCommits(t *testing.T) {
	t.Parallel()
	for _, failpoint := range []string{FailAfterBegin, FailAfterStepClaim, FailAfterEffectWrite, FailAfterPhaseA, FailAfterPhaseB} {
		t.Run(failpoint, func(t *testing.T) {
			t.Parallel()
			forEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
				ctx := store.WithSharedCommit(store.WithDeferredSync(context.Background()))
				clock := newTestClock()
				crashed := New(st, discardLogger(), clock.Now, testContributionKinds)
				crashed.Failpoint = crashAt(failpoint)
				healthy := New(st, discardLogger(), clock.Now, testContributionKinds)

				const others = 6
				errs := make([]error, others)
				var wg sync.WaitGroup
				for i := range others {
					wg.Go(func() {
						_, errs[i] = healthy.Create(ctx, createRequest(fmt.Sprint("ext-ok-", i), contribution(fmt.Sprint(200+i))))
					})
				}
				_, crashErr := crashed.Create(ctx, createRequest("ext-crash", contribution("101")))
				wg.Wait()
				if !errors.Is(crashErr, errCrash) {
					t.Fatalf("crashed Create = %v, want the simulated crash", crashErr)
				}
				for i, err := range errs {
					if err != nil {
						t.Errorf("create %d beside the crash: %v", i, err)
					}
				}

				c := New(st, discardLogger(), clock.Now, testContributionKinds)
				r := NewRecoverer(c, st, discardLogger())
				pastGraceAndLease(clock, c, r)
				if _, err := r.RunOnce(context.Background()); err != nil {
					t.Fatalf("RunOnce: %v", err)
				}
				for i := range others {
					ext := fmt.Sprint("ext-ok-", i)
					task, err := st.LookupTaskByExternalID(context.Background(), testWS, ext)
					if err != nil {
						t.Fatalf("lookup %s: %v", ext, err)
					}
					assertOperationCompleted(t, st, task.CreationOperationID, ext, 1, Created)
				}
				task, err := st.LookupTaskByExternalID(context.Background(), testWS, "ext-crash")
				if err != nil {
					t.Fatalf("lookup ext-crash: %v", err)
				}
				assertOperationCompleted(t, st, task.CreationOperationID, "ext-crash", 1, Created)
				if n := count(t, st, `SELECT COUNT(*) FROM tasks`); n != others+1 {
					t.Errorf("tasks = %d, want %d", n, others+1)
				}
				if n := count(t, st, `SELECT COUNT(*) FROM task_remote_contribution_associations`); n != others+1 {
					t.Errorf("association rows = %d, want %d", n, others+1)
				}
			})
		})
	}
}
