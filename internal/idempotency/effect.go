package idempotency

import (
	"context"
	"errors"
	"fmt"

	"github.com/trackergateway/gateway/internal/store"
)

// Evidence effects (the closed set of the step evidence document).
const (
	effectPresentExact = "present_exact"
	effectAbsentProven = "absent_proven"
	effectConflictName = "conflict"
)

// effectVerdict is what the effect authority says about one step's effect.
type effectVerdict int

const (
	// effectAbsent: no row holds the step's (provider, connection,
	// contribution).
	effectAbsent effectVerdict = iota + 1
	// effectOurs: the row is exactly this operation's effect.
	effectOurs
	// effectForeignProven: the row is the exact effect of another recorded,
	// unaborted operation. The key is unique, so this step's own effect
	// cannot exist: that proves it absent.
	effectForeignProven
	// effectConflict: a row nobody provably owns (no such operation, or a
	// marker, key or task that does not match it). Nothing is proven; the
	// step stays unknown until an operator resolves it.
	effectConflict
)

// effectObservation is one reading of a step's effect authority row.
type effectObservation struct {
	verdict effectVerdict
	row     *store.Association
	owner   *store.Operation // the recorded owner of a foreign row, if any
}

func (o effectObservation) reason() string {
	switch o.verdict {
	case effectForeignProven:
		return fmt.Sprintf("%s %s is already associated with task %s", o.row.ContributionKind, o.row.ContributionID, o.row.TaskID)
	case effectConflict:
		return fmt.Sprintf("conflict: effect row claims operation %s (task %s), which does not provably own it", o.row.OperationID, o.row.TaskID)
	}
	return ""
}

// effect is the evidence effect the observation proves for the step.
func (o effectObservation) effect() string {
	switch o.verdict {
	case effectOurs:
		return effectPresentExact
	case effectAbsent, effectForeignProven:
		return effectAbsentProven
	}
	return effectConflictName
}

// observation is the evidence observation document of o.
func (o effectObservation) observation() map[string]any {
	switch o.verdict {
	case effectAbsent:
		return observeAssociation(nil)
	case effectOurs:
		return observeOwned(*o.row)
	}
	m := observeAssociation(o.row)
	if o.owner != nil {
		m["owner_operation"] = map[string]any{"id": o.owner.ID, "state": o.owner.State, "task_id": o.owner.TaskID}
	} else {
		m["owner_operation"] = nil
	}
	return m
}

// observeEffect reads the step's effect authority row (locked) and classifies
// it. The live step executor and recovery both decide from this one reading,
// so a foreign row means the same thing on either path.
func observeEffect(ctx context.Context, tx store.Queries, op store.Operation, s store.CreationStep) (effectObservation, error) {
	want, err := associationFor(op, s)
	if err != nil {
		return effectObservation{}, err
	}
	got, err := tx.GetAssociation(ctx, want.Provider, want.ConnectionID, want.ContributionID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return effectObservation{verdict: effectAbsent}, nil
	case err != nil:
		return effectObservation{}, err
	case ownedBy(got, op, s):
		return effectObservation{verdict: effectOurs, row: &got}, nil
	}
	obs := effectObservation{verdict: effectConflict, row: &got}
	if got.OperationID == op.ID {
		return obs, nil // our operation's name on a row that is not our effect
	}
	owner, err := tx.GetOperation(ctx, got.OperationID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return obs, nil
	case err != nil:
		return effectObservation{}, err
	}
	obs.owner = &owner
	if ownsEffect(owner, got, s) {
		obs.verdict = effectForeignProven
	}
	return obs, nil
}

// ownsEffect reports whether row is exactly the effect of owner's step with
// the same kind and key: owner is unaborted, its plan verifies and names
// that step for row's task, and row carries the idempotency key and the
// ownership marker only owner can derive.
func ownsEffect(owner store.Operation, row store.Association, s store.CreationStep) bool {
	if owner.State == store.OpAborted || owner.TaskID != row.TaskID || owner.WorkspaceID != row.WorkspaceID {
		return false
	}
	if ManifestHash([]byte(owner.PlanJSON)) != owner.ManifestSHA256 {
		return false
	}
	plan, err := parseCanonicalPlan(owner.PlanJSON)
	if err != nil || plan.TaskID != owner.TaskID {
		return false
	}
	for _, p := range plan.Steps {
		if p.Kind != s.Kind || p.StepKey != s.StepKey {
			continue
		}
		var req RemoteContributionRequest
		if err := decodeStrict(p.Request, &req); err != nil || req.TaskID != row.TaskID || req.RepositoryID != row.RepositoryID ||
			req.ContributionKind != row.ContributionKind {
			return false
		}
		return row.IdempotencyKey == IdempotencyKey(owner.ID, p.Kind, p.StepKey, RequestHash(p.Request)) &&
			row.OwnershipMarker == OwnershipMarker(owner.ID, p.Kind, p.StepKey, owner.CompletionTokenSHA256)
	}
	return false
}

// applyObservation records obs on a step that is running under the caller's
// claim or unknown: our row → succeeded (present_exact); no row →
// retry_wait (absent_proven); another operation's proven row → failed
// (absent_proven, the foreign row as the observation), so the creation
// aborts; an unowned row → unknown with conflict evidence.
func (c *Coordinator) applyObservation(ctx context.Context, tx store.Queries, op store.Operation, s store.CreationStep, obs effectObservation) error {
	if obs.verdict == effectOurs {
		return c.succeedFromAuthority(ctx, tx, op, s)
	}
	now := c.now()
	evidence, err := evidenceFor(s, obs.effect(), obs.observation(), now)
	if err != nil {
		return err
	}
	s.EvidenceJSON, s.EvidenceSHA256, s.LeaseExpiresAt, s.UpdatedAt = evidence, sha256Hex([]byte(evidence)), nil, now
	switch obs.verdict {
	case effectAbsent:
		s.State, s.Error = store.StepRetryWait, ""
	case effectForeignProven:
		s.State, s.Error = store.StepFailed, obs.reason()
	default:
		s.State, s.Error = store.StepUnknown, obs.reason()
	}
	return tx.UpdateCreationStep(ctx, s)
}

// providerHandle is the handle of an association, bound into the step's
// evidence and re-checked by every verification of the step.
func providerHandle(a store.Association) string {
	return a.Provider + ":" + a.ConnectionID + ":" + a.ContributionID
}

// observeOwned is the success observation: the row and the provider handle.
func observeOwned(a store.Association) map[string]any {
	m := observeAssociation(&a)
	m["provider_handle"] = providerHandle(a)
	return m
}
