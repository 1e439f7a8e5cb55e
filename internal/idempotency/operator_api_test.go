package idempotency

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/gorilla/mux"

	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/store/sqlstore"
	"github.com/trackergateway/gateway/internal/store/storetest"
)

const stepKey101 = "github:gh-main:pull_request:101"

// unknownStepOperation crashes a create at failpoint, lets every lease
// expire and has a recoverer claim it (its running step becomes unknown)
// without reconciling: the state an operator resolves.
func unknownStepOperation(t *testing.T, st *sqlstore.Store, clock *storetest.Clock, failpoint string) (*Coordinator, string) {
	t.Helper()
	ctx := context.Background()
	crashed := New(st, discardLogger(), clock.Now, testContributionKinds)
	crashed.Failpoint = crashAt(failpoint)
	if _, err := crashed.Create(ctx, createRequest("ext-1", contribution("101"))); !errors.Is(err, errCrash) {
		t.Fatalf("Create = %v, want the simulated crash", err)
	}
	op := onlyOperation(t, st)
	c := New(st, discardLogger(), clock.Now, testContributionKinds)
	clock.Advance(c.leaseTTL + 1e9)
	if action, _, err := c.claimRecovery(ctx, op.ID, "r1"); err != nil || action != ActionReconcileUnknownStep {
		t.Fatalf("claimRecovery = %q, %v; want %q", action, err, ActionReconcileUnknownStep)
	}
	if got := stepStates(t, st, op.ID); !slices.Equal(got, []string{store.StepUnknown}) {
		t.Fatalf("steps = %v, want [unknown]", got)
	}
	return c, op.ID
}

// linkedElsewhere completes another task and links contribution 101 to it
// (a recorded link operation owns the row).
func linkedElsewhere(t *testing.T, c *Coordinator) store.Task {
	t.Helper()
	ctx := context.Background()
	other, err := c.Create(ctx, createRequest("ext-other"))
	if err != nil {
		t.Fatalf("Create other: %v", err)
	}
	a, err := c.AssociateContribution(ctx, other.Task, contribution("101"))
	if err != nil || a.TaskID != other.Task.ID {
		t.Fatalf("AssociateContribution = %+v, %v; want the other task", a, err)
	}
	return other.Task
}

func unownedRow(t *testing.T, st *sqlstore.Store, clock *storetest.Clock) {
	t.Helper()
	if _, err := st.InsertAssociation(context.Background(), store.Association{Provider: "github", ConnectionID: "gh-main",
		ContributionID: "101", ContributionKind: "pull_request", TaskID: "33333333-3333-4333-8333-333333333333",
		WorkspaceID: testWS, RepositoryID: "acme/app", OperationID: "44444444-4444-4444-8444-444444444444",
		IdempotencyKey: "k", OwnershipMarker: "m", ClaimedAt: clock.Now()}); err != nil {
		t.Fatal(err)
	}
}

func serveOperator(t *testing.T, c *Coordinator, method, path, body string) (int, map[string]any) {
	t.Helper()
	// Mounted where internal/server mounts them (it imports this package).
	o := NewOperators(c, discardLogger())
	r := mux.NewRouter()
	r.HandleFunc("/api/v1/creations/{operation_id}", o.InspectCreation).Methods(http.MethodGet)
	r.HandleFunc("/api/v1/creations/{operation_id}/steps/resolve", o.ResolveStep).Methods(http.MethodPost)
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	rec := httptest.NewRecorder()
	r.ServeHTTP(rec, req)
	var out map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
		t.Fatalf("%s %s: body %q: %v", method, path, rec.Body.String(), err)
	}
	return rec.Code, out
}

func TestResolveTaskCreationStep(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		failpoint string
		setup     func(t *testing.T, st *sqlstore.Store, c *Coordinator, clock *storetest.Clock)
		effect    string
		wantCode  int
		wantState string // the step after a 200
		wantOp    string // the operation after recovery runs on
	}{
		{"our row proves present_exact", FailAfterEffectWrite, nil, "present_exact", 200, store.StepSucceeded, store.OpCompleted},
		{"our row does not prove absent", FailAfterEffectWrite, nil, "absent_proven", 409, "", ""},
		{"no row proves absent_proven", FailAfterStepClaim, nil, "absent_proven", 200, store.StepFailed, store.OpAborted},
		{"no row does not prove present", FailAfterStepClaim, nil, "present_exact", 409, "", ""},
		{"a link operation's row proves absent_proven", FailAfterStepClaim,
			func(t *testing.T, st *sqlstore.Store, c *Coordinator, clock *storetest.Clock) { linkedElsewhere(t, c) },
			"absent_proven", 200, store.StepFailed, store.OpAborted},
		{"a link operation's row does not prove present", FailAfterStepClaim,
			func(t *testing.T, st *sqlstore.Store, c *Coordinator, clock *storetest.Clock) { linkedElsewhere(t, c) },
			"present_exact", 409, "", ""},
		{"an unowned row proves nothing (absent)", FailAfterStepClaim,
			func(t *testing.T, st *sqlstore.Store, c *Coordinator, clock *storetest.Clock) {
				unownedRow(t, st, clock)
			},
			"absent_proven", 409, "", ""},
		{"an unowned row proves nothing (present)", FailAfterStepClaim,
			func(t *testing.T, st *sqlstore.Store, c *Coordinator, clock *storetest.Clock) {
				unownedRow(t, st, clock)
			},
			"present_exact", 409, "", ""},
		{"unknown effect", FailAfterStepClaim, nil, "conflict", 400, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			forEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
				ctx := context.Background()
				clock := newTestClock()
				c, opID := unknownStepOperation(t, st, clock, tc.failpoint)
				if tc.setup != nil {
					tc.setup(t, st, c, clock)
				}
				before := takeSnapshot(t, st)
				code, body := serveOperator(t, c, http.MethodPost, "/api/v1/creations/"+opID+"/steps/resolve",
					`{"kind":"remote_contribution_associate","step_key":"`+stepKey101+`","effect":"`+tc.effect+`"}`)
				if code != tc.wantCode {
					t.Fatalf("resolve = %d %v, want %d", code, body, tc.wantCode)
				}
				if code != http.StatusOK {
					assertUnchanged(t, before, takeSnapshot(t, st), "refused resolution")
					return
				}
				steps, _ := st.ListCreationSteps(ctx, opID)
				if steps[0].State != tc.wantState || EvidenceEffect(steps[0]) != tc.effect {
					t.Errorf("resolved step = %s with %q evidence, want %s with %q", steps[0].State, EvidenceEffect(steps[0]),
						tc.wantState, tc.effect)
				}
				if steps[0].EvidenceSHA256 != sha256Hex([]byte(steps[0].EvidenceJSON)) {
					t.Errorf("evidence hash does not match the evidence")
				}
				shown := body["steps"].([]any)[0].(map[string]any)
				if shown["state"] != tc.wantState || shown["evidence_effect"] != tc.effect {
					t.Errorf("response step = %v, want %s/%s", shown, tc.wantState, tc.effect)
				}
				// The operation is unblocked: recovery converges it.
				if _, err := c.RecoverTaskCreation(ctx, opID, "r2"); err != nil {
					t.Fatalf("RecoverTaskCreation after the resolution: %v", err)
				}
				switch tc.wantOp {
				case store.OpCompleted:
					assertCompleted(t, st, opID, "ext-1", 1)
				case store.OpAborted:
					assertAborted(t, st, opID)
				}
			})
		})
	}
}

// Every resolution the ledger does not allow is a typed conflict (or not
// found) that writes nothing.
func TestResolveRefusals(t *testing.T) {
	t.Parallel()
	stale := int64(0)
	tests := []struct {
		name     string
		prepare  func(t *testing.T, st *sqlstore.Store, c *Coordinator, opID string) StepResolution
		wantCode int
	}{
		{"step not unknown", func(t *testing.T, st *sqlstore.Store, c *Coordinator, opID string) StepResolution {
			if err := c.reconcileUnknown(context.Background(), opID, fence{owner: "r1", generation: onlyOperation(t, st).Generation}); err != nil {
				t.Fatalf("reconcile: %v", err)
			}
			return StepResolution{OperationID: opID, Kind: StepRemoteContributionAssociate, StepKey: stepKey101, Effect: "present_exact"}
		}, 409},
		{"stale generation", func(t *testing.T, st *sqlstore.Store, c *Coordinator, opID string) StepResolution {
			return StepResolution{OperationID: opID, Kind: StepRemoteContributionAssociate, StepKey: stepKey101, Effect: "present_exact", Generation: &stale}
		}, 409},
		{"tampered ledger", func(t *testing.T, st *sqlstore.Store, c *Coordinator, opID string) StepResolution {
			rawExec(t, st, `UPDATE task_creation_steps SET provider_handle = $1 WHERE operation_id = $2`, "forged", opID)
			rawExec(t, st, `UPDATE task_creation_operations SET manifest_sha256 = $1 WHERE id = $2`, strings.Repeat("0", 64), opID)
			return StepResolution{OperationID: opID, Kind: StepRemoteContributionAssociate, StepKey: stepKey101, Effect: "present_exact"}
		}, 409},
		{"no such step", func(t *testing.T, st *sqlstore.Store, c *Coordinator, opID string) StepResolution {
			return StepResolution{OperationID: opID, Kind: StepRemoteContributionAssociate, StepKey: "github:gh-main:pull_request:999", Effect: "present_exact"}
		}, 404},
		{"no such operation", func(t *testing.T, st *sqlstore.Store, c *Coordinator, opID string) StepResolution {
			return StepResolution{OperationID: "55555555-5555-4555-8555-555555555555", Kind: StepRemoteContributionAssociate, StepKey: stepKey101, Effect: "present_exact"}
		}, 404},
		{"unsupported kind", func(t *testing.T, st *sqlstore.Store, c *Coordinator, opID string) StepResolution {
			return StepResolution{OperationID: opID, Kind: StepSessionPrepare, StepKey: stepKey101, Effect: "present_exact"}
		}, 400},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			forEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
				clock := newTestClock()
				c, opID := unknownStepOperation(t, st, clock, FailAfterEffectWrite)
				r := tc.prepare(t, st, c, opID)
				before := takeSnapshot(t, st)
				body, _ := json.Marshal(map[string]any{"kind": r.Kind, "step_key": r.StepKey, "effect": r.Effect, "generation": r.Generation})
				code, resp := serveOperator(t, c, http.MethodPost, "/api/v1/creations/"+r.OperationID+"/steps/resolve", string(body))
				if code != tc.wantCode {
					t.Errorf("resolve = %d %v, want %d", code, resp, tc.wantCode)
				}
				assertUnchanged(t, before, takeSnapshot(t, st), "refused resolution")
			})
		})
	}
}

// A resolution advances the generation: a recoverer that claimed the
// operation before it is fenced off and writes nothing.
func TestResolutionFencesAnEarlierRecoveryClaim(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		clock := newTestClock()
		c, opID := unknownStepOperation(t, st, clock, FailAfterEffectWrite)
		claimed := onlyOperation(t, st).Generation
		if _, err := c.ResolveTaskCreationStep(ctx, StepResolution{OperationID: opID, Kind: StepRemoteContributionAssociate,
			StepKey: stepKey101, Effect: "present_exact"}); err != nil {
			t.Fatalf("resolve: %v", err)
		}
		if got := onlyOperation(t, st).Generation; got != claimed+1 {
			t.Errorf("generation after the resolution = %d, want %d", got, claimed+1)
		}
		before := takeSnapshot(t, st)
		if _, err := c.complete(ctx, opID, fence{owner: "r1", generation: claimed}); !errors.Is(err, ErrCreationStateConflict) {
			t.Errorf("complete under the pre-resolution claim = %v, want ErrCreationStateConflict", err)
		}
		assertUnchanged(t, before, takeSnapshot(t, st), "fenced recoverer")
	})
}

func TestInspectCreationRoute(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		clock := newTestClock()
		c, opID := unknownStepOperation(t, st, clock, FailAfterStepClaim)
		unownedRow(t, st, clock)
		// Recovery records the conflict evidence and stops.
		if _, err := c.RecoverTaskCreation(context.Background(), opID, "r1"); !errors.Is(err, ErrCreationStateConflict) {
			t.Fatalf("recovery over an unowned row = %v, want ErrCreationStateConflict", err)
		}
		code, body := serveOperator(t, c, http.MethodGet, "/api/v1/creations/"+opID, "")
		if code != http.StatusOK {
			t.Fatalf("GET = %d %v", code, body)
		}
		if body["id"] != opID || body["state"] != store.OpPreparing || body["next_action"] != string(ActionReconcileUnknownStep) {
			t.Errorf("operation = %v, want %s preparing with next action %s", body, opID, ActionReconcileUnknownStep)
		}
		steps := body["steps"].([]any)
		if len(steps) != 1 {
			t.Fatalf("steps = %v, want 1", steps)
		}
		s := steps[0].(map[string]any)
		want := map[string]any{"kind": StepRemoteContributionAssociate, "step_key": stepKey101, "state": store.StepUnknown,
			"evidence_effect": "conflict"}
		for k, v := range want {
			if s[k] != v {
				t.Errorf("step %s = %v, want %v", k, s[k], v)
			}
		}
		if !strings.Contains(s["error"].(string), "conflict") {
			t.Errorf("step error = %v, want the conflict", s["error"])
		}
		// Unknown, and ids that can name no operation, are 404 on both
		// dialects (PostgreSQL's uuid column would fail the cast).
		for _, id := range []string{"55555555-5555-4555-8555-555555555555", "not-a-uuid", "%FF", "a%00b",
			"55555555-5555-4555-8555-55555555555A"} {
			if code, body := serveOperator(t, c, http.MethodGet, "/api/v1/creations/"+id, ""); code != http.StatusNotFound {
				t.Errorf("GET /api/v1/creations/%s = %d %s, want 404", id, code, body)
			}
			if code, body := serveOperator(t, c, http.MethodPost, "/api/v1/creations/"+id+"/steps/resolve",
				`{"kind":"remote_contribution_associate","step_key":"k","effect":"present_exact"}`); code != http.StatusNotFound {
				t.Errorf("POST /api/v1/creations/%s/steps/resolve = %d %s, want 404", id, code, body)
			}
		}
	})
}
