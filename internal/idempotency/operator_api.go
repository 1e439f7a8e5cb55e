package idempotency

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/gorilla/mux"

	"github.com/trackergateway/gateway/internal/httpapi"
	"github.com/trackergateway/gateway/internal/store"
)

// Operators serves the creation ledger's operator routes: its exported
// methods are the handlers internal/server mounts behind authentication and
// the admin requirement. Both read the operation ID from the route's
// {operation_id}.
type Operators struct {
	c      *Coordinator
	logger *slog.Logger
}

// NewOperators returns the creation operator handlers; logger may be nil.
func NewOperators(c *Coordinator, logger *slog.Logger) *Operators {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Operators{c: c, logger: logger}
}

// InspectCreation shows an operation and its steps.
func (o *Operators) InspectCreation(w http.ResponseWriter, r *http.Request) {
	o.serve(w, r, func() error {
		view, err := o.c.InspectTaskCreation(r.Context(), mux.Vars(r)["operation_id"])
		if err != nil {
			return err
		}
		httpapi.WriteJSON(w, http.StatusOK, creationJSON(view))
		return nil
	})
}

// ResolveStep resolves an unknown step with the effect the operator claims
// and the server proves, then shows the operation.
func (o *Operators) ResolveStep(w http.ResponseWriter, r *http.Request) {
	o.serve(w, r, func() error {
		var body struct {
			Kind       string `json:"kind"`
			StepKey    string `json:"step_key"`
			Effect     string `json:"effect"`
			Generation *int64 `json:"generation"`
		}
		if err := httpapi.DecodeJSON(w, r, &body); err != nil {
			return err
		}
		opID := mux.Vars(r)["operation_id"]
		if _, err := o.c.ResolveTaskCreationStep(r.Context(), StepResolution{OperationID: opID, Kind: body.Kind,
			StepKey: body.StepKey, Effect: body.Effect, Generation: body.Generation}); err != nil {
			return err
		}
		o.logger.InfoContext(r.Context(), "creation step resolved", "operation_id", opID, "step_key", body.StepKey, "effect", body.Effect)
		view, err := o.c.InspectTaskCreation(r.Context(), opID)
		if err != nil {
			return err
		}
		httpapi.WriteJSON(w, http.StatusOK, creationJSON(view))
		return nil
	})
}

func (o *Operators) serve(w http.ResponseWriter, r *http.Request, fn func() error) {
	if err := fn(); err != nil {
		httpapi.WriteError(w, r, o.logger, err)
	}
}

// CreationJSON is a creation (or link) operation as operators see it.
type CreationJSON struct {
	ID             string     `json:"id"`
	WorkspaceID    string     `json:"workspace_id"`
	TaskID         string     `json:"task_id"`
	State          string     `json:"state"`
	Outcome        string     `json:"outcome,omitempty"`
	ExternalID     string     `json:"external_id,omitempty"`
	ReleaseApplied bool       `json:"release_applied"`
	Generation     int64      `json:"generation"`
	RecoveryAction string     `json:"recovery_action,omitempty"`
	NextAction     string     `json:"next_action,omitempty"`
	LeaseOwner     string     `json:"lease_owner,omitempty"`
	LeaseExpiresAt *string    `json:"lease_expires_at"`
	Error          string     `json:"error,omitempty"`
	CreatedAt      string     `json:"created_at"`
	UpdatedAt      string     `json:"updated_at"`
	Steps          []StepJSON `json:"steps"`
}

// StepJSON is one step of a creation as operators see it.
type StepJSON struct {
	Kind           string `json:"kind"`
	StepKey        string `json:"step_key"`
	State          string `json:"state"`
	Attempt        int    `json:"attempt"`
	Error          string `json:"error,omitempty"`
	EvidenceEffect string `json:"evidence_effect,omitempty"`
	ProviderHandle string `json:"provider_handle,omitempty"`
	Compensation   string `json:"compensation"`
}

func creationJSON(v CreationView) CreationJSON {
	op := v.Operation
	out := CreationJSON{ID: op.ID, WorkspaceID: op.WorkspaceID, TaskID: op.TaskID, State: op.State, Outcome: op.Outcome,
		ExternalID: op.ExternalID, ReleaseApplied: op.ReleaseApplied, Generation: op.Generation,
		RecoveryAction: op.RecoveryAction, NextAction: string(v.NextAction), LeaseOwner: op.LeaseOwner,
		LeaseExpiresAt: timeOrNil(op.LeaseExpiresAt), Error: op.Error,
		CreatedAt: op.CreatedAt.UTC().Format(time.RFC3339Nano), UpdatedAt: op.UpdatedAt.UTC().Format(time.RFC3339Nano),
		Steps: make([]StepJSON, 0, len(v.Steps))}
	for _, s := range v.Steps {
		out.Steps = append(out.Steps, stepJSON(s))
	}
	return out
}

func stepJSON(s store.CreationStep) StepJSON {
	return StepJSON{Kind: s.Kind, StepKey: s.StepKey, State: s.State, Attempt: s.Attempt, Error: s.Error,
		EvidenceEffect: EvidenceEffect(s), ProviderHandle: s.ProviderHandle, Compensation: s.Compensation}
}
