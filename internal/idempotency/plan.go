package idempotency

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
)

// Hash domains (docs/design.md, "Begin, the handle and the hashes").
const (
	manifestDomain = "kandev/task-creation-plan/v1"
	actorDomain    = "kandev/task-creation-actor/v1"
	requestDomain  = "kandev/task-creation-step-request/v1"
	evidenceDomain = "kandev/task-creation-step-evidence/v1"
	markerDomain   = "tracker-gateway/task-creation-ownership/v1"
)

// Step kinds: the spec's closed set. Only StepRemoteContributionAssociate has
// an executor in the gateway.
const (
	StepWorkspaceAttachment         = "workspace_attachment"
	StepAttachmentClaim             = "attachment_claim"
	StepFreshBranchPrepare          = "fresh_branch_prepare"
	StepRemoteContributionAssociate = "remote_contribution_associate"
	StepSessionPrepare              = "session_prepare"
	StepLaunchIntent                = "launch_intent"
)

var knownStepKinds = map[string]bool{
	StepWorkspaceAttachment: true, StepAttachmentClaim: true, StepFreshBranchPrepare: true,
	StepRemoteContributionAssociate: true, StepSessionPrepare: true, StepLaunchIntent: true,
}

// RemoteContributionRequest is the complete request object of a
// remote_contribution_associate step (no extra fields are valid).
type RemoteContributionRequest struct {
	Provider         string `json:"provider"`
	WorkspaceID      string `json:"workspace_id"`
	RepositoryID     string `json:"repository_id"`
	ContributionKind string `json:"contribution_kind"`
	ContributionID   string `json:"contribution_id"`
	ConnectionID     string `json:"connection_id"`
	TaskID           string `json:"task_id"`
}

// StepKey is the canonical key provider:connection:contribution-kind:contribution-id.
func (r RemoteContributionRequest) StepKey() string {
	return r.Provider + ":" + r.ConnectionID + ":" + r.ContributionKind + ":" + r.ContributionID
}

// PlanStep is one planned step of a CreationPlan.
type PlanStep struct {
	Kind    string          `json:"kind"`
	StepKey string          `json:"step_key"`
	Request json.RawMessage `json:"request"`
}

// DatabaseRow names a row Begin writes, with the hash of its content.
type DatabaseRow struct {
	Table     string `json:"table"`
	Key       string `json:"key"`
	RowSHA256 string `json:"row_sha256"`
}

// CreationPlan is what Begin commits to; its RFC 8785 form is hashed into
// the manifest hash.
type CreationPlan struct {
	Version        int           `json:"version"`
	TaskID         string        `json:"task_id"`
	WorkspaceID    string        `json:"workspace_id"`
	WorkflowStepID string        `json:"workflow_step_id"`
	ParentID       *string       `json:"parent_id"`
	RequestSHA256  string        `json:"request_sha256"`
	DatabaseRows   []DatabaseRow `json:"database_rows"`
	Steps          []PlanStep    `json:"steps"`
}

// ActorBindingDocument binds an operation to who began it.
type ActorBindingDocument struct {
	Version           int     `json:"version"`
	Actor             string  `json:"actor"`
	PrincipalID       string  `json:"principal_id"`
	WorkspaceID       string  `json:"workspace_id"`
	AuthMode          string  `json:"auth_mode"`
	AuthorityKind     string  `json:"authority_kind"`
	AuthorityID       string  `json:"authority_id"`
	AuthorityRevision uint64  `json:"authority_revision"`
	LeaseGeneration   *uint64 `json:"lease_generation"`
}

// Canonical returns the RFC 8785 JSON of v.
func Canonical(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("marshal: %w", err)
	}
	// jsontext (encoding/json/v2's text layer) rewrites the value in place
	// per RFC 8785: a third of the time and a fiftieth of the allocations
	// of parsing it into maps and writing them out again.
	out := jsontext.Value(raw)
	if err := out.Canonicalize(); err != nil {
		return nil, fmt.Errorf("canonicalize: %w", err)
	}
	return out, nil
}

// domainHash is lowercase hex SHA-256(ASCII(domain) || 0x00 || data).
func domainHash(domain string, data []byte) string {
	h := sha256.New()
	h.Write([]byte(domain))
	h.Write([]byte{0})
	h.Write(data)
	return hex.EncodeToString(h.Sum(nil))
}

func sha256Hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// sortPlan orders lists by their canonical keys.
func sortPlan(p *CreationPlan) {
	sort.Slice(p.Steps, func(i, j int) bool {
		if p.Steps[i].Kind != p.Steps[j].Kind {
			return p.Steps[i].Kind < p.Steps[j].Kind
		}
		return p.Steps[i].StepKey < p.Steps[j].StepKey
	})
	sort.Slice(p.DatabaseRows, func(i, j int) bool {
		if p.DatabaseRows[i].Table != p.DatabaseRows[j].Table {
			return p.DatabaseRows[i].Table < p.DatabaseRows[j].Table
		}
		return p.DatabaseRows[i].Key < p.DatabaseRows[j].Key
	})
}

// ManifestHash hashes canonical plan JSON.
func ManifestHash(canonicalPlan []byte) string { return domainHash(manifestDomain, canonicalPlan) }

// ActorBindingHash hashes a canonical actor document.
func ActorBindingHash(canonicalActor []byte) string { return domainHash(actorDomain, canonicalActor) }

// RequestHash hashes a canonical step request.
func RequestHash(canonicalRequest []byte) string { return domainHash(requestDomain, canonicalRequest) }

// IdempotencyKey is SHA-256 over operation, kind, canonical step key and
// request hash.
func IdempotencyKey(operationID, kind, stepKey, requestHash string) string {
	h := sha256.New()
	for _, part := range []string{operationID, kind, stepKey, requestHash} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// OwnershipMarker is what an operation writes into the effect rows it owns:
// derived from the operation, the step and the completion-token hash, so it
// cannot be forged without the stored token hash and is checked on every use.
func OwnershipMarker(operationID, kind, stepKey, tokenHash string) string {
	h := sha256.New()
	h.Write([]byte(markerDomain))
	for _, part := range []string{operationID, kind, stepKey, tokenHash} {
		h.Write([]byte{0})
		h.Write([]byte(part))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// decodeStrict decodes canonical JSON refusing unknown fields.
func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// canonicalPlans memoizes parseCanonicalPlan: a pure function of the plan's
// bytes, called under the operation lock by every ledger call, whose JSON
// round trip is most of the cost of re-verifying a handle.
var canonicalPlans = struct {
	sync.Mutex
	byJSON map[string]CreationPlan
	order  []string
}{byJSON: map[string]CreationPlan{}}

const canonicalPlanMemo = 1024

// parseCanonicalPlan decodes stored plan JSON strictly and requires it to be
// its own RFC 8785 form.
func parseCanonicalPlan(planJSON string) (CreationPlan, error) {
	canonicalPlans.Lock()
	plan, ok := canonicalPlans.byJSON[planJSON]
	canonicalPlans.Unlock()
	if ok {
		return clonePlan(plan), nil
	}
	plan, err := decodeCanonicalPlan(planJSON)
	if err != nil {
		return plan, err
	}
	rememberCanonicalPlan(planJSON, plan)
	return plan, nil
}

// decodeCanonicalPlan is parseCanonicalPlan without the memo.
func decodeCanonicalPlan(planJSON string) (CreationPlan, error) {
	var plan CreationPlan
	if err := decodeStrict([]byte(planJSON), &plan); err != nil {
		return plan, fmt.Errorf("%w: plan: %v", ErrHandleMismatch, err)
	}
	if canon, err := Canonical(plan); err != nil || string(canon) != planJSON {
		return plan, fmt.Errorf("%w: plan is not canonical", ErrHandleMismatch)
	}
	return plan, nil
}

// rememberCanonicalPlan records that planJSON is the canonical form of
// plan. Begin calls it with the plan it built and Canonical(plan), which is
// what parsing planJSON would find (TestRememberedPlanIsTheParsedPlan), so
// the verification under the operation lock needs no decode.
func rememberCanonicalPlan(planJSON string, plan CreationPlan) {
	canonicalPlans.Lock()
	defer canonicalPlans.Unlock()
	if _, ok := canonicalPlans.byJSON[planJSON]; ok {
		return
	}
	if len(canonicalPlans.order) >= canonicalPlanMemo {
		delete(canonicalPlans.byJSON, canonicalPlans.order[0])
		canonicalPlans.order = canonicalPlans.order[1:]
	}
	canonicalPlans.byJSON[planJSON] = clonePlan(plan)
	canonicalPlans.order = append(canonicalPlans.order, planJSON)
}

// clonePlan copies the slices a caller could modify.
func clonePlan(p CreationPlan) CreationPlan {
	p.DatabaseRows = append([]DatabaseRow(nil), p.DatabaseRows...)
	p.Steps = append([]PlanStep(nil), p.Steps...)
	return p
}
