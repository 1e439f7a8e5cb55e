package tasks

import (
	"context"
	"net/http"

	"github.com/trackergateway/gateway/internal/config"
	"github.com/trackergateway/gateway/internal/failure"
	"github.com/trackergateway/gateway/internal/httpapi"
	"github.com/trackergateway/gateway/internal/store"
)

// WorkspaceJSON is a workspace with its steps.
type WorkspaceJSON struct {
	ID         string     `json:"id"`
	Name       string     `json:"name"`
	TaskPrefix string     `json:"task_prefix"`
	Steps      []StepJSON `json:"steps"`
}

// StepJSON is a workflow step; wip_limit null means unlimited.
type StepJSON struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	WIPLimit *int   `json:"wip_limit"`
}

func workspaceJSON(ws store.Workspace) WorkspaceJSON {
	out := WorkspaceJSON{ID: ws.ID, Name: ws.Name, TaskPrefix: ws.TaskPrefix, Steps: []StepJSON{}}
	for _, s := range ws.Steps {
		out.Steps = append(out.Steps, StepJSON{ID: s.ID, Name: s.Name, WIPLimit: s.WIPLimit})
	}
	return out
}

// ListWorkspaces lists the workspaces the caller can see.
func (a *API) ListWorkspaces(w http.ResponseWriter, r *http.Request) {
	visible, err := a.VisibleWorkspaces(r.Context(), principal(r))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	out := []WorkspaceJSON{}
	for _, ws := range visible {
		out = append(out, workspaceJSON(ws))
	}
	httpapi.WriteJSON(w, http.StatusOK, map[string]any{"workspaces": out})
}

// VisibleWorkspaces lists the workspaces p can see.
func (a *API) VisibleWorkspaces(ctx context.Context, p httpapi.Principal) ([]store.Workspace, error) {
	all, err := a.st.ListWorkspaces(ctx)
	if err != nil {
		return nil, err
	}
	var out []store.Workspace
	for _, ws := range all {
		if p.CanSee(ws.ID) {
			out = append(out, ws)
		}
	}
	return out, nil
}

// CreateWorkspace creates a workspace (admin only: it refuses anyone else
// itself, wherever it is mounted).
func (a *API) CreateWorkspace(w http.ResponseWriter, r *http.Request) {
	if !principal(r).Admin {
		a.fail(w, r, failure.New(failure.NotFound, "not found"))
		return
	}
	var body WorkspaceJSON
	if err := httpapi.DecodeJSON(w, r, &body); err != nil {
		a.fail(w, r, err)
		return
	}
	// The YAML's defaults and bounds (config.ValidateWorkspace), so a
	// workspace means the same whichever way it was made.
	cw := config.Workspace{ID: body.ID, Name: body.Name, TaskPrefix: body.TaskPrefix}
	if cw.Name == "" {
		cw.Name = cw.ID
	}
	for _, s := range body.Steps {
		name := s.Name
		if name == "" {
			name = s.ID
		}
		cw.Steps = append(cw.Steps, config.Step{ID: s.ID, Name: name, WIPLimit: s.WIPLimit})
	}
	if len(cw.Steps) == 0 {
		cw.Steps = config.DefaultSteps()
	}
	if err := config.ValidateWorkspace(cw); err != nil {
		a.fail(w, r, failure.New(failure.Invalid, "%s", err.Error()))
		return
	}
	ws := store.Workspace{ID: cw.ID, Name: cw.Name, TaskPrefix: cw.TaskPrefix, CreatedAt: a.now().UTC()}
	for _, s := range cw.Steps {
		limit := s.WIPLimit
		if limit != nil && *limit == 0 {
			limit = nil // 0 is unlimited, as in the YAML
		}
		ws.Steps = append(ws.Steps, store.Step{ID: s.ID, Name: s.Name, WIPLimit: limit})
	}
	if err := a.st.CreateWorkspace(r.Context(), ws); err != nil {
		a.fail(w, r, httpapi.Reword(err, failure.New(failure.Conflict, "workspace %q already exists", ws.ID)))
		return
	}
	created, err := a.st.GetWorkspace(r.Context(), ws.ID)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusCreated, workspaceJSON(created))
}
