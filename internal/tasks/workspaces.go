package tasks

import (
	"errors"
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

func (a *API) listWorkspaces(w http.ResponseWriter, r *http.Request) {
	all, err := a.st.ListWorkspaces(r.Context())
	if err != nil {
		a.fail(w, r, err)
		return
	}
	p := principal(r)
	out := []WorkspaceJSON{}
	for _, ws := range all {
		if p.CanSee(ws.ID) {
			out = append(out, workspaceJSON(ws))
		}
	}
	httpapi.WriteJSON(w, http.StatusOK, map[string]any{"workspaces": out})
}

func (a *API) createWorkspace(w http.ResponseWriter, r *http.Request) {
	if !principal(r).Admin {
		a.fail(w, r, failure.New(failure.NotFound, "not found"))
		return
	}
	var body WorkspaceJSON
	if err := httpapi.DecodeJSON(w, r, &body); err != nil {
		a.fail(w, r, err)
		return
	}
	if !config.ValidSlug(body.ID) {
		a.fail(w, r, failure.New(failure.Invalid, "id must be a lower-case slug (a-z, 0-9, - and _)"))
		return
	}
	if !config.ValidTaskPrefix(body.TaskPrefix) {
		a.fail(w, r, failure.New(failure.Invalid, "task_prefix must be 1-10 upper-case letters or digits"))
		return
	}
	if body.Name == "" {
		body.Name = body.ID
	}
	if len(body.Steps) == 0 {
		for _, st := range config.DefaultSteps() {
			body.Steps = append(body.Steps, StepJSON{ID: st.ID, Name: st.Name})
		}
	}
	ws := store.Workspace{ID: body.ID, Name: body.Name, TaskPrefix: body.TaskPrefix, CreatedAt: a.now().UTC()}
	seen := map[string]bool{}
	for _, s := range body.Steps {
		if !config.ValidSlug(s.ID) || seen[s.ID] {
			a.fail(w, r, failure.New(failure.Invalid, "step id %q must be a unique lower-case slug", s.ID))
			return
		}
		if s.WIPLimit != nil && *s.WIPLimit < 1 {
			a.fail(w, r, failure.New(failure.Invalid, "step %q: wip_limit must be at least 1 (omit it for unlimited)", s.ID))
			return
		}
		seen[s.ID] = true
		name := s.Name
		if name == "" {
			name = s.ID
		}
		ws.Steps = append(ws.Steps, store.Step{ID: s.ID, Name: name, WIPLimit: s.WIPLimit})
	}
	if err := a.st.CreateWorkspace(r.Context(), ws); err != nil {
		if failure.CodeOf(err) == failure.Internal && isConstraint(err) {
			err = failure.New(failure.Conflict, "workspace %q already exists", ws.ID)
		}
		a.fail(w, r, err)
		return
	}
	created, err := a.st.GetWorkspace(r.Context(), ws.ID)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusCreated, workspaceJSON(created))
}

func isConstraint(err error) bool { return errors.Is(err, store.ErrConstraint) }
