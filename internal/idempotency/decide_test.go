package idempotency

import (
	"testing"
	"time"

	"github.com/trackergateway/gateway/internal/store"
)

func TestDecideRecovery(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	live, expired := now.Add(time.Minute), now.Add(-time.Second)
	step := func(state, compensation string, lease *time.Time) store.CreationStep {
		return store.CreationStep{State: state, Compensation: compensation, LeaseExpiresAt: lease}
	}
	succeeded := step(store.StepSucceeded, store.CompensationNone, nil)
	tests := []struct {
		name  string
		state string
		error string
		steps []store.CreationStep
		want  RecoveryAction
	}{
		// operation preparing, any step unknown → reconcile_unknown_step
		{"preparing, unknown step", store.OpPreparing, "", []store.CreationStep{step(store.StepUnknown, store.CompensationNone, nil)}, ActionReconcileUnknownStep},
		{"preparing, running step with expired lease counts as unknown", store.OpPreparing, "", []store.CreationStep{step(store.StepRunning, store.CompensationNone, &expired)}, ActionReconcileUnknownStep},
		{"preparing, running step without lease counts as unknown", store.OpPreparing, "", []store.CreationStep{step(store.StepRunning, store.CompensationNone, nil)}, ActionReconcileUnknownStep},
		{"preparing, unknown beats pending compensation", store.OpPreparing, "aborted", []store.CreationStep{step(store.StepUnknown, store.CompensationNone, nil), step(store.StepSucceeded, store.CompensationRequired, nil)}, ActionReconcileUnknownStep},
		{"preparing, unknown beats a failed step", store.OpPreparing, "", []store.CreationStep{step(store.StepUnknown, store.CompensationNone, nil), step(store.StepFailed, store.CompensationNone, nil)}, ActionReconcileUnknownStep},
		// no unknown/running, compensation pending → retry_compensation
		{"preparing, compensation pending", store.OpPreparing, "aborted: x", []store.CreationStep{step(store.StepSucceeded, store.CompensationRequired, nil)}, ActionRetryCompensation},
		{"preparing, compensation pending beats resumable", store.OpPreparing, "aborted: x", []store.CreationStep{step(store.StepSucceeded, store.CompensationRequired, nil), step(store.StepPlanned, store.CompensationNone, nil)}, ActionRetryCompensation},
		// no failures, resumable step, Complete predicate false → resume_preparing
		{"preparing, planned step", store.OpPreparing, "", []store.CreationStep{step(store.StepPlanned, store.CompensationNone, nil)}, ActionResumePreparing},
		{"preparing, retry_wait step", store.OpPreparing, "", []store.CreationStep{step(store.StepRetryWait, store.CompensationNone, nil)}, ActionResumePreparing},
		{"preparing, one done one planned", store.OpPreparing, "", []store.CreationStep{succeeded, step(store.StepPlanned, store.CompensationNone, nil)}, ActionResumePreparing},
		// all steps succeeded, nothing pending → complete_preparing
		{"preparing, all steps succeeded", store.OpPreparing, "", []store.CreationStep{succeeded, succeeded}, ActionCompletePreparing},
		{"preparing, no steps", store.OpPreparing, "", nil, ActionCompletePreparing},
		// preparing-release, no unknown/running → retry_preparing_release
		{"preparing-release", store.OpPreparingRelease, "", []store.CreationStep{succeeded}, ActionRetryPreparingRelease},
		{"preparing-release, no steps", store.OpPreparingRelease, "", nil, ActionRetryPreparingRelease},
		// completing → complete_completing
		{"completing", store.OpCompleting, "", []store.CreationStep{succeeded}, ActionCompleteCompleting},
		// permanent failure, every effect absent/compensated → abort_preparing
		{"preparing, failed step", store.OpPreparing, "", []store.CreationStep{step(store.StepFailed, store.CompensationNone, nil)}, ActionAbortPreparing},
		{"preparing, failed step and compensated effect", store.OpPreparing, "", []store.CreationStep{step(store.StepFailed, store.CompensationNone, nil), step(store.StepSucceeded, store.CompensationDone, nil)}, ActionAbortPreparing},
		{"preparing, failed step beats resumable", store.OpPreparing, "", []store.CreationStep{step(store.StepFailed, store.CompensationNone, nil), step(store.StepPlanned, store.CompensationNone, nil)}, ActionAbortPreparing},
		// Gateway adaptation: an abort already requested (error recorded)
		// resumes the abort, whose first step makes live effects' compensation
		// required.
		{"preparing, abort requested, effects compensated", store.OpPreparing, "aborted: x", []store.CreationStep{step(store.StepSucceeded, store.CompensationDone, nil)}, ActionAbortPreparing},
		{"preparing, abort requested, live effect", store.OpPreparing, "aborted: x", []store.CreationStep{succeeded}, ActionAbortPreparing},
		// completed|aborted → replay_terminal (read-only)
		{"completed", store.OpCompleted, "", []store.CreationStep{succeeded}, ActionReplayTerminal},
		{"aborted", store.OpAborted, "aborted: x", []store.CreationStep{step(store.StepFailed, store.CompensationNone, nil)}, ActionReplayTerminal},
		{"completed with a stale running step", store.OpCompleted, "", []store.CreationStep{step(store.StepRunning, store.CompensationNone, &expired)}, ActionReplayTerminal},
		// otherwise: no action
		{"preparing, running step with live lease", store.OpPreparing, "", []store.CreationStep{step(store.StepRunning, store.CompensationNone, &live)}, ActionNone},
		{"preparing, live running step beats pending compensation", store.OpPreparing, "aborted: x", []store.CreationStep{step(store.StepRunning, store.CompensationNone, &live), step(store.StepSucceeded, store.CompensationRequired, nil)}, ActionNone},
		{"preparing, live running step beats completion", store.OpPreparing, "", []store.CreationStep{step(store.StepRunning, store.CompensationNone, &live), succeeded}, ActionNone},
		{"preparing-release, unknown step", store.OpPreparingRelease, "", []store.CreationStep{step(store.StepUnknown, store.CompensationNone, nil)}, ActionNone},
		{"preparing-release, live running step", store.OpPreparingRelease, "", []store.CreationStep{step(store.StepRunning, store.CompensationNone, &live)}, ActionNone},
		{"preparing, armed step without launch support", store.OpPreparing, "", []store.CreationStep{step(store.StepArmed, store.CompensationNone, nil)}, ActionNone},
		{"preparing, cancelled step", store.OpPreparing, "", []store.CreationStep{step(store.StepCancelled, store.CompensationNone, nil)}, ActionNone},
		{"unknown operation state", "exploded", "", nil, ActionNone},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			op := store.Operation{State: tc.state, Error: tc.error}
			if got := DecideRecovery(op, tc.steps, now); got != tc.want {
				t.Errorf("DecideRecovery(%s) = %q, want %q", tc.name, got, tc.want)
			}
		})
	}
}

// The launch-dispatch actions are in the closed set but no locked condition
// selects them in the gateway (it never launches agents).
func TestDecideRecoveryNeverSelectsLaunchActions(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	states := []string{store.OpPreparing, store.OpPreparingRelease, store.OpCompleting, store.OpCompleted, store.OpAborted}
	stepStates := []string{store.StepPlanned, store.StepArmed, store.StepRunning, store.StepRetryWait, store.StepUnknown,
		store.StepFailed, store.StepSucceeded, store.StepCancelled}
	comps := []string{store.CompensationNone, store.CompensationRequired, store.CompensationDone}
	for _, os := range states {
		for _, ss := range stepStates {
			for _, cs := range comps {
				got := DecideRecovery(store.Operation{State: os}, []store.CreationStep{{State: ss, Compensation: cs}}, now)
				switch got {
				case ActionReconcileLaunch, ActionRetryLaunch, ActionTransferLaunch:
					t.Errorf("DecideRecovery(%s, step %s/%s) = %s, a launch action", os, ss, cs, got)
				}
			}
		}
	}
}
