package ingest

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/gorilla/mux"

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

// RegisterSuppressionRoutes mounts GET and DELETE /api/v1/suppressions (the
// caller restricts them to admins).
func RegisterSuppressionRoutes(r *mux.Router, st SuppressionStore, logger *slog.Logger) {
	r.HandleFunc("/api/v1/suppressions", func(w http.ResponseWriter, r *http.Request) {
		limit, err := httpapi.PageLimit(r)
		if err != nil {
			httpapi.WriteError(w, r, logger, err)
			return
		}
		q := r.URL.Query()
		ws, err := httpapi.QueryText(q, "workspace_id")
		if err != nil {
			httpapi.WriteError(w, r, logger, err)
			return
		}
		page := store.SuppressionPage{WorkspaceID: ws, Limit: limit + 1}
		if c := q.Get("cursor"); c != "" {
			ws, ext, ok := httpapi.DecodeKeyCursor(c)
			if !ok {
				httpapi.WriteError(w, r, logger, failure.New(failure.Invalid, "malformed cursor"))
				return
			}
			page.AfterWorkspaceID, page.AfterExternalID = ws, ext
		}
		list, err := st.ListSuppressions(r.Context(), page)
		if err != nil {
			httpapi.WriteError(w, r, logger, err)
			return
		}
		resp := map[string]any{}
		if len(list) > limit {
			list = list[:limit]
			last := list[limit-1]
			resp["next_cursor"] = httpapi.EncodeKeyCursor(last.WorkspaceID, last.ExternalID)
		}
		items := make([]SuppressionJSON, 0, len(list))
		for _, s := range list {
			items = append(items, SuppressionJSON{WorkspaceID: s.WorkspaceID, ExternalID: s.ExternalID, TaskID: s.TaskID,
				Reason: s.Reason, CreatedAt: s.CreatedAt.UTC()})
		}
		resp["suppressions"] = items
		httpapi.WriteJSON(w, http.StatusOK, resp)
	}).Methods(http.MethodGet)
	r.HandleFunc("/api/v1/suppressions", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		ws, err := httpapi.QueryText(q, "workspace_id")
		if err != nil {
			httpapi.WriteError(w, r, logger, err)
			return
		}
		ext, err := httpapi.QueryText(q, "external_id")
		if err != nil {
			httpapi.WriteError(w, r, logger, err)
			return
		}
		if ws == "" || ext == "" {
			httpapi.WriteError(w, r, logger, failure.New(failure.Invalid, "workspace_id and external_id are required"))
			return
		}
		ok, err := st.DeleteSuppression(r.Context(), ws, ext)
		if err != nil {
			httpapi.WriteError(w, r, logger, err)
			return
		}
		if !ok {
			httpapi.WriteError(w, r, logger, failure.New(failure.NotFound, "suppression not found"))
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}).Methods(http.MethodDelete)
}
