package recovery

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/trackergateway/gateway/internal/failure"
	"github.com/trackergateway/gateway/internal/httpapi"
)

// Operators serves the operator routes of recovery: POST
// /api/v1/connections/{id}/recover and GET /api/v1/connections/{id}/hooks.
type Operators struct {
	rec    *Recoverer
	logger *slog.Logger
}

// NewOperators returns the recovery handlers.
func NewOperators(rec *Recoverer, logger *slog.Logger) *Operators {
	return &Operators{rec: rec, logger: logger}
}

// RecoverRequest is the body of POST /api/v1/connections/{id}/recover;
// an empty body takes the defaults.
type RecoverRequest struct {
	// Since is a Go duration, at most 72h; empty is 24h.
	Since  string `json:"since"`
	DryRun bool   `json:"dry_run"`
}

// Recover runs recovery for the connection and answers what it found and
// asked for.
func (o *Operators) Recover(w http.ResponseWriter, r *http.Request) {
	opts, err := recoverOptions(w, r)
	if err == nil {
		var res Result
		if res, err = o.rec.Recover(r.Context(), mux.Vars(r)["id"], opts); err == nil {
			httpapi.WriteJSON(w, http.StatusOK, res)
			return
		}
	}
	httpapi.WriteError(w, r, o.logger, err)
}

// recoverOptions reads the request body (empty or JSON).
func recoverOptions(w http.ResponseWriter, r *http.Request) (Options, error) {
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, httpapi.MaxJSONBody))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return Options{}, failure.New(failure.TooLarge, "request body exceeds %d bytes", httpapi.MaxJSONBody)
	case err != nil:
		return Options{}, failure.Wrap(failure.Invalid, err, "request body could not be read")
	}
	var req RecoverRequest
	if strings.TrimSpace(string(raw)) != "" {
		if err := httpapi.DecodeJSONBytes(raw, &req); err != nil {
			return Options{}, err
		}
	}
	since, err := ParseSince(req.Since)
	if err != nil {
		return Options{}, err
	}
	return Options{Since: since, DryRun: req.DryRun}, nil
}

// ParseSince reads a run's since as the API and the console take it: a Go
// duration, positive; empty is 0, which Recover takes as DefaultWindow.
// Recover itself refuses more than MaxWindow.
func ParseSince(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, failure.New(failure.Invalid, "since %q is not a duration (e.g. 24h)", s)
	}
	if d <= 0 {
		return 0, failure.New(failure.Invalid, "since must be positive")
	}
	return d, nil
}

// HooksResponse is the body of GET /api/v1/connections/{id}/hooks.
type HooksResponse struct {
	Connection string      `json:"connection"`
	Hooks      []HookState `json:"hooks"`
}

// ListHooks shows each configured hook's state at its provider.
func (o *Operators) ListHooks(w http.ResponseWriter, r *http.Request) {
	id := mux.Vars(r)["id"]
	hooks, err := o.rec.Hooks(r.Context(), id)
	if err != nil {
		httpapi.WriteError(w, r, o.logger, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, HooksResponse{Connection: id, Hooks: hooks})
}
