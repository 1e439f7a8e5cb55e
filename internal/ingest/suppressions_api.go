package ingest

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/trackergateway/gateway/internal/failure"
	"github.com/trackergateway/gateway/internal/httpapi"
	"github.com/trackergateway/gateway/internal/store"
)

// SuppressionStore lists and clears suppressions.
type SuppressionStore interface {
	ListSuppressions(ctx context.Context, p store.SuppressionPage) ([]store.Suppression, error)
	DeleteSuppression(ctx context.Context, workspaceID, externalID string) (bool, error)
}

// SuppressionJSON is one suppression as operators see it.
type SuppressionJSON struct {
	WorkspaceID string    `json:"workspace_id"`
	ExternalID  string    `json:"external_id"`
	TaskID      string    `json:"task_id,omitempty"`
	Reason      string    `json:"reason"`
	CreatedAt   time.Time `json:"created_at"`
}

// Suppressions serves the operator suppression routes: its exported methods
// are the handlers internal/server mounts behind authentication and the
// admin requirement.
type Suppressions struct {
	st     SuppressionStore
	logger *slog.Logger
}

// NewSuppressions returns the suppression handlers; logger may be nil.
func NewSuppressions(st SuppressionStore, logger *slog.Logger) *Suppressions {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Suppressions{st: st, logger: logger}
}

// ListSuppressions pages through suppressions (query: workspace_id, limit,
// cursor).
func (s *Suppressions) ListSuppressions(w http.ResponseWriter, r *http.Request) {
	s.serve(w, r, s.list)
}

// ClearSuppression deletes one suppression (query: workspace_id and
// external_id, both required), so the next delivery for it is processed.
func (s *Suppressions) ClearSuppression(w http.ResponseWriter, r *http.Request) {
	s.serve(w, r, s.clear)
}

func (s *Suppressions) serve(w http.ResponseWriter, r *http.Request, fn func(w http.ResponseWriter, r *http.Request) error) {
	if err := fn(w, r); err != nil {
		httpapi.WriteError(w, r, s.logger, err)
	}
}

func (s *Suppressions) list(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	limit, err := httpapi.ParsePageLimit(q.Get("limit"))
	if err != nil {
		return err
	}
	ws, err := httpapi.QueryText(q, "workspace_id")
	if err != nil {
		return err
	}
	list, next, err := s.List(r.Context(), ws, limit, q.Get("cursor"))
	if err != nil {
		return err
	}
	resp := map[string]any{}
	if next != "" {
		resp["next_cursor"] = next
	}
	items := make([]SuppressionJSON, 0, len(list))
	for _, sup := range list {
		items = append(items, SuppressionJSON{WorkspaceID: sup.WorkspaceID, ExternalID: sup.ExternalID, TaskID: sup.TaskID,
			Reason: sup.Reason, CreatedAt: sup.CreatedAt.UTC()})
	}
	resp["suppressions"] = items
	httpapi.WriteJSON(w, http.StatusOK, resp)
	return nil
}

// List returns at most limit suppressions (of workspaceID, or of every
// workspace when empty) after cursor (empty: the first page), ordered by
// workspace and external ID, and the next page's cursor (empty: none).
func (s *Suppressions) List(ctx context.Context, workspaceID string, limit int, cursor string) ([]store.Suppression, string, error) {
	page := store.SuppressionPage{WorkspaceID: workspaceID, Limit: limit + 1}
	if cursor != "" {
		ws, ext, ok := httpapi.DecodeKeyCursor(cursor)
		if !ok {
			return nil, "", failure.New(failure.Invalid, "malformed cursor")
		}
		page.AfterWorkspaceID, page.AfterExternalID = ws, ext
	}
	list, err := s.st.ListSuppressions(ctx, page)
	if err != nil {
		return nil, "", err
	}
	list, next := httpapi.TrimPage(list, limit, func(s store.Suppression) string {
		return httpapi.EncodeKeyCursor(s.WorkspaceID, s.ExternalID)
	})
	return list, next, nil
}

func (s *Suppressions) clear(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	ws, err := httpapi.QueryText(q, "workspace_id")
	if err != nil {
		return err
	}
	ext, err := httpapi.QueryText(q, "external_id")
	if err != nil {
		return err
	}
	if err := s.Clear(r.Context(), ws, ext); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// Clear deletes one suppression, so the next delivery for its entity is
// processed; both IDs are required, and a suppression that does not exist
// is "suppression not found".
func (s *Suppressions) Clear(ctx context.Context, workspaceID, externalID string) error {
	if workspaceID == "" || externalID == "" {
		return failure.New(failure.Invalid, "workspace_id and external_id are required")
	}
	ok, err := s.st.DeleteSuppression(ctx, workspaceID, externalID)
	if err != nil {
		return err
	}
	if !ok {
		return failure.New(failure.NotFound, "suppression not found")
	}
	principal, _ := httpapi.PrincipalFrom(ctx)
	s.logger.InfoContext(ctx, "suppression cleared", "workspace_id", workspaceID, "principal", principal.Name)
	return nil
}
