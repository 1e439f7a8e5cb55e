package idempotency

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/store/sqlstore"
)

// countingStore counts the write transactions the coordinator opens.
type countingStore struct {
	store.Store
	txs            atomic.Int64
	workspaceReads atomic.Int64
	lookups        atomic.Int64
}

func (s *countingStore) LookupTaskByExternalID(ctx context.Context, workspaceID, externalID string) (store.Task, error) {
	s.lookups.Add(1)
	return s.Store.LookupTaskByExternalID(ctx, workspaceID, externalID)
}

func (s *countingStore) GetWorkspace(ctx context.Context, id string) (store.Workspace, error) {
	s.workspaceReads.Add(1)
	return s.Store.GetWorkspace(ctx, id)
}

func (s *countingStore) InTx(ctx context.Context, fn func(tx store.Queries) error) error {
	s.txs.Add(1)
	return s.Store.InTx(ctx, fn)
}

// A Found outcome is answered from the lookup alone: no validation, no
// write transaction, no task sequence number — for a valid request too,
// which (unlike an invalid one) would otherwise reach Begin's insert.
func TestFoundOpensNoTransaction(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		setup := New(st, discardLogger(), newTestClock().Now, testContributionKinds)
		if _, err := setup.Create(ctx, createRequest("ext-1", contribution("101"))); err != nil {
			t.Fatalf("Create: %v", err)
		}
		if _, err := setup.BeginTaskCreation(ctx, createRequest("ext-2")); err != nil {
			t.Fatalf("Begin: %v", err)
		}
		counted := &countingStore{Store: st}
		c := New(counted, discardLogger(), newTestClock().Now, testContributionKinds)
		for _, tc := range []struct {
			ext  string
			want Outcome
		}{{"ext-1", FoundSettled}, {"ext-2", FoundUnsettled}} {
			for _, call := range []string{"Begin", "Create"} {
				before := takeSnapshot(t, st)
				validated := 0
				req := createRequest(tc.ext, contribution("101"))
				req.Validate = func(*CreateRequest) error { validated++; return nil }
				var got Outcome
				var err error
				if call == "Begin" {
					var b BeginResult
					b, err = c.BeginTaskCreation(ctx, req)
					got = b.Outcome
				} else {
					var r Result
					r, err = c.Create(ctx, req)
					got = r.Outcome
				}
				if err != nil || got != tc.want {
					t.Fatalf("%s(%s) = %v, %v; want %v", call, tc.ext, got, err, tc.want)
				}
				if n := counted.txs.Swap(0); n != 0 {
					t.Errorf("%s(%s) opened %d write transactions, want 0", call, tc.ext, n)
				}
				if validated != 0 {
					t.Errorf("%s(%s) ran create-time validation %d times, want 0", call, tc.ext, validated)
				}
				after := takeSnapshot(t, st)
				if after.Seq != before.Seq {
					t.Errorf("%s(%s) moved the task sequence %d → %d", call, tc.ext, before.Seq, after.Seq)
				}
				assertUnchanged(t, before, after, call+" of a held identity")
			}
		}
	})
}

// The recovery fence checks the generation, not only the owner: the same
// recoverer identity reclaiming (a restarted replica reusing its name, or a
// second pass) fences off its own earlier, stalled claim.
func TestFenceRefusesSameOwnerStaleGeneration(t *testing.T) {
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
		waitFor(t, reached, "the first claim's phase A")
		// The same owner claims again (a new generation) and has not yet
		// run its action: only the generation tells the two claims apart.
		second := New(st, discardLogger(), clock.Now, testContributionKinds)
		action, gen, err := second.claimRecovery(ctx, opID, "r1")
		if err != nil || action != ActionCompleteCompleting {
			t.Fatalf("second claim by r1 = %q, %v; want %q", action, err, ActionCompleteCompleting)
		}
		before := takeSnapshot(t, st)
		close(release)
		if err := <-done; !errors.Is(err, ErrCreationStateConflict) {
			t.Errorf("stale claim of the same owner = %v, want ErrCreationStateConflict", err)
		}
		assertUnchanged(t, before, takeSnapshot(t, st), "the stale claim")
		// The current claim finishes the creation.
		if err := second.runRecovery(ctx, opID, action, fence{owner: "r1", generation: gen}); err != nil {
			t.Fatalf("current claim: %v", err)
		}
		assertCompleted(t, st, opID, "ext-1", 1)
	})
}

// Phase B re-proves every step against its effect row: a row changed after
// phase A committed blocks the completion, writing nothing.
func TestPhaseBRechecksStepEvidence(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		column string
		value  string
	}{
		{"association repository", "repository_id", "acme/evil"},
		{"association ownership marker", "ownership_marker", "forged"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			forEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
				ctx := context.Background()
				crashed := New(st, discardLogger(), newTestClock().Now, testContributionKinds)
				crashed.Failpoint = crashAt(FailAfterPhaseA)
				begun, err := crashed.BeginTaskCreation(ctx, createRequest("ext-1", contribution("101")))
				if err != nil {
					t.Fatalf("Begin: %v", err)
				}
				if err := crashed.ExecuteSteps(ctx, begun.Handle); err != nil {
					t.Fatalf("ExecuteSteps: %v", err)
				}
				if _, err := crashed.CompleteTaskCreation(ctx, begun.Handle); !errors.Is(err, errCrash) {
					t.Fatalf("Complete = %v, want the simulated crash after phase A", err)
				}
				if op, _ := st.GetOperation(ctx, begun.Handle.OperationID); op.State != store.OpCompleting {
					t.Fatalf("operation = %s, want completing", op.State)
				}
				rawExec(t, st, `UPDATE task_remote_contribution_associations SET `+tc.column+` = $1 WHERE contribution_id = $2`, tc.value, "101")
				before := takeSnapshot(t, st)
				c := New(st, discardLogger(), newTestClock().Now, testContributionKinds)
				if _, err := c.CompleteTaskCreation(ctx, begun.Handle); !errors.Is(err, ErrHandleMismatch) {
					t.Errorf("phase B over a changed effect row = %v, want ErrHandleMismatch", err)
				}
				assertUnchanged(t, before, takeSnapshot(t, st), "refused phase B")
			})
		})
	}
}

// The live step executor and recovery decide a foreign effect row the same
// way: another recorded operation's exact row (a link) proves the step's
// effect absent — failed with absent_proven evidence, and the creation
// aborts; a row no recorded operation owns is conflict evidence and the
// step stays unknown, the operation preparing.
func TestForeignRowSameDecisionOnBothPaths(t *testing.T) {
	t.Parallel()
	type path string
	const live, recovery path = "live", "recovery"
	tests := []struct {
		path      path
		linked    bool // the row is a recorded link's; otherwise unowned
		wantState string
		wantEff   string
	}{
		{live, true, store.StepFailed, effectAbsentProven},
		{recovery, true, store.StepFailed, effectAbsentProven},
		{live, false, store.StepUnknown, effectConflictName},
		{recovery, false, store.StepUnknown, effectConflictName},
	}
	for _, tc := range tests {
		name := string(tc.path) + "/unowned row"
		if tc.linked {
			name = string(tc.path) + "/linked row"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			forEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
				ctx := context.Background()
				clock := newTestClock()
				c := New(st, discardLogger(), clock.Now, testContributionKinds)
				var other store.Task
				foreign := func() {
					if tc.linked {
						other = linkedElsewhere(t, New(st, discardLogger(), clock.Now, testContributionKinds))
					} else {
						unownedRow(t, st, clock)
					}
				}
				var fired atomic.Bool
				c.Failpoint = func(name string) error {
					if name != FailAfterStepClaim || !fired.CompareAndSwap(false, true) {
						return nil
					}
					if tc.path == recovery {
						return errCrash
					}
					foreign() // lands between the claim and the effect write
					return nil
				}
				_, err := c.Create(ctx, createRequest("ext-1", contribution("101")))
				opID := queryStrings(t, st, `SELECT id FROM task_creation_operations WHERE external_id = $1`, "ext-1")[0]
				if tc.path == recovery {
					if !errors.Is(err, errCrash) {
						t.Fatalf("Create = %v, want the simulated crash", err)
					}
					foreign()
					r := NewRecoverer(c, st, discardLogger())
					pastGraceAndLease(clock, c, r)
					_, err = c.RecoverTaskCreation(ctx, opID, "r1")
				}
				switch {
				case tc.linked && tc.path == live && !errors.Is(err, ErrStepFailed):
					t.Errorf("live Create over a linked row = %v, want ErrStepFailed", err)
				case tc.linked && tc.path == recovery && err != nil:
					t.Errorf("recovery over a linked row = %v, want it to abort cleanly", err)
				case !tc.linked && !errors.Is(err, ErrCreationStateConflict):
					t.Errorf("%s over an unowned row = %v, want ErrCreationStateConflict", tc.path, err)
				}
				steps, _ := st.ListCreationSteps(ctx, opID)
				if len(steps) != 1 || steps[0].State != tc.wantState || EvidenceEffect(steps[0]) != tc.wantEff {
					t.Fatalf("step = %+v, want %s with %s evidence", steps, tc.wantState, tc.wantEff)
				}
				if steps[0].EvidenceSHA256 != sha256Hex([]byte(steps[0].EvidenceJSON)) {
					t.Errorf("evidence hash does not match the evidence")
				}
				a, err := st.GetAssociation(ctx, "github", "gh-main", "101")
				if err != nil {
					t.Fatalf("foreign row: %v", err)
				}
				if !strings.Contains(steps[0].EvidenceJSON, `"operation_id":"`+a.OperationID+`"`) {
					t.Errorf("evidence = %s, want the observed foreign row", steps[0].EvidenceJSON)
				}
				if tc.linked {
					assertAbortedKeepingLink(t, st, opID, other.ID)
					return
				}
				if op, _ := st.GetOperation(ctx, opID); op.State != store.OpPreparing {
					t.Errorf("operation = %s, want preparing until an operator resolves the step", op.State)
				}
			})
		})
	}
}

// assertAbortedKeepingLink: the creation aborted (no task, no event) and the
// link's row is intact.
func assertAbortedKeepingLink(t *testing.T, st *sqlstore.Store, opID, linkedTask string) {
	t.Helper()
	ctx := context.Background()
	op, _ := st.GetOperation(ctx, opID)
	if op.State != store.OpAborted {
		t.Fatalf("operation = %s, want aborted", op.State)
	}
	if _, err := st.GetTask(ctx, op.TaskID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("aborted creation's task: %v, want it removed", err)
	}
	if events := eventsOfTask(t, st, op.TaskID); len(events) != 0 {
		t.Errorf("events of the aborted task = %+v, want none", events)
	}
	a, err := st.GetAssociation(ctx, "github", "gh-main", "101")
	if err != nil || a.TaskID != linkedTask {
		t.Errorf("link = %+v, %v; want it on task %s", a, err, linkedTask)
	}
}

// A link is a recorded ledger operation: its row carries the idempotency key
// and ownership marker of a completed operation whose bindings verify;
// repeating the link, or linking a contribution another task holds, writes
// nothing.
func TestLinkIsARecordedOperation(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		c := New(st, discardLogger(), newTestClock().Now, testContributionKinds)
		task := linkedElsewhere(t, c)
		a, err := st.GetAssociation(ctx, "github", "gh-main", "101")
		if err != nil {
			t.Fatal(err)
		}
		op, steps, err := st.LockOperationAndSteps(ctx, a.OperationID)
		if err != nil {
			t.Fatalf("link operation %s: %v", a.OperationID, err)
		}
		if _, err := verifyStored(op, steps, nil); err != nil {
			t.Errorf("link operation bindings: %v", err)
		}
		if op.State != store.OpCompleted || op.Outcome != OutcomeLinked || op.TaskID != task.ID {
			t.Errorf("link operation = %s/%s task %s, want completed/%s task %s", op.State, op.Outcome, op.TaskID, OutcomeLinked, task.ID)
		}
		if len(steps) != 1 || steps[0].State != store.StepSucceeded || !ownedBy(a, op, steps[0]) {
			t.Fatalf("link step = %+v, want one succeeded step owning the row", steps)
		}
		if err := verifyEvidence(ctx, st, op, steps[0]); err != nil {
			t.Errorf("link evidence: %v", err)
		}
		if steps[0].OwnershipMarker == OwnershipMarker(op.ID, steps[0].Kind, steps[0].StepKey, "") {
			t.Errorf("link marker derives from an empty token")
		}
		before := takeSnapshot(t, st)
		again, err := c.AssociateContribution(ctx, task, contribution("101"))
		if err != nil || again != a {
			t.Errorf("repeated link = %+v, %v; want the same row", again, err)
		}
		assertUnchanged(t, before, takeSnapshot(t, st), "repeated link")
		second, err := c.Create(ctx, createRequest("ext-second"))
		if err != nil {
			t.Fatal(err)
		}
		before = takeSnapshot(t, st)
		held, err := c.AssociateContribution(ctx, second.Task, contribution("101"))
		if err != nil || held.TaskID != task.ID {
			t.Errorf("link of a held contribution = %+v, %v; want the holder %s", held, err, task.ID)
		}
		assertUnchanged(t, before, takeSnapshot(t, st), "link of a held contribution")
	})
}

// A caller that has just found no task holding the external ID says so
// (KnownAbsent), and Create does not look it up again; when the caller was
// wrong the unique index still refuses the second task and Create answers
// Found from its re-read. An ID that normalization changes is looked up.
func TestKnownAbsentSkipsTheLookup(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		counted := &countingStore{Store: st}
		c := New(counted, discardLogger(), newTestClock().Now, testContributionKinds)
		absent := func(ext string) CreateRequest {
			req := createRequest(ext)
			req.KnownAbsent = true
			return req
		}
		first, err := c.Create(ctx, absent("ext-1"))
		if err != nil || first.Outcome != Created {
			t.Fatalf("first Create = %v, %v; want Created", first.Outcome, err)
		}
		steps := []struct {
			name        string
			req         CreateRequest
			wantOutcome Outcome
			wantLookups int64
		}{
			{"the caller's miss is trusted", absent("ext-2"), Created, 0},
			{"a wrong caller still gets the task that holds the ID", absent("ext-1"), FoundSettled, 1},
			{"an ID normalization changes is looked up", absent(" ext-3 "), Created, 2},
			{"without the hint the ID is looked up", createRequest("ext-4"), Created, 3},
		}
		for _, step := range steps {
			res, err := c.Create(ctx, step.req)
			if err != nil {
				t.Fatalf("%s: Create: %v", step.name, err)
			}
			if res.Outcome != step.wantOutcome {
				t.Errorf("%s: outcome = %v, want %v", step.name, res.Outcome, step.wantOutcome)
			}
			if got := counted.lookups.Load(); got != step.wantLookups {
				t.Errorf("%s: lookups = %d, want %d", step.name, got, step.wantLookups)
			}
		}
		if n := count(t, st, `SELECT COUNT(*) FROM tasks WHERE external_id = 'ext-1'`); n != 1 {
			t.Errorf("tasks holding ext-1 = %d, want 1", n)
		}
	})
}
