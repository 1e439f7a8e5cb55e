package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/gorilla/mux"

	"github.com/trackergateway/gateway/internal/failure"
	"github.com/trackergateway/gateway/internal/httpapi"
	"github.com/trackergateway/gateway/internal/idempotency"
	"github.com/trackergateway/gateway/internal/store"
)

// Creator is the create coordinator as the REST API uses it.
type Creator interface {
	Create(ctx context.Context, req idempotency.CreateRequest) (idempotency.Result, error)
	Lookup(ctx context.Context, workspaceID, externalID string) (store.Task, idempotency.Outcome, error)
	ReleaseExternalID(ctx context.Context, workspaceID, externalID string) (store.Task, error)
}

// ContributionLister lists a task's linked PRs/MRs (the provider projection).
type ContributionLister interface {
	Contributions(ctx context.Context, taskID string) ([]Contribution, error)
}

// API serves the task and workspace routes: its exported methods are the
// handlers internal/server mounts behind authentication. Those with a task
// or workspace ID read it from the route's {id}.
type API struct {
	svc      *Service
	creator  Creator
	contribs ContributionLister
	st       store.Store
	logger   *slog.Logger
	now      func() time.Time
}

// NewAPI returns the REST API; contribs may be nil until projections exist.
func NewAPI(svc *Service, creator Creator, contribs ContributionLister, st store.Store, logger *slog.Logger, now func() time.Time) *API {
	return &API{svc: svc, creator: creator, contribs: contribs, st: st, logger: logger, now: now}
}

func (a *API) fail(w http.ResponseWriter, r *http.Request, err error) {
	httpapi.WriteError(w, r, a.logger, err)
}

func principal(r *http.Request) httpapi.Principal {
	p, _ := httpapi.PrincipalFrom(r.Context())
	return p
}

// errNotCreated is the create route's unauthorized answer: it leaks nothing
// about the workspace (spec: 404 {"error": "task not created"}).
var errNotCreated = failure.New(failure.NotFound, "task not created")

type createBody struct {
	WorkspaceID    string   `json:"workspace_id"`
	Title          string   `json:"title"`
	Description    string   `json:"description"`
	WorkflowStepID string   `json:"workflow_step_id"`
	Labels         []string `json:"labels"`
	ExternalID     *string  `json:"external_id"`
}

// CreateTask creates a task, in the normative order: authorize → validate
// the external ID → look up → validate the rest → create.
func (a *API) CreateTask(w http.ResponseWriter, r *http.Request) {
	raw, err := readBody(w, r)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		a.fail(w, r, failure.New(failure.Invalid, "malformed JSON: the body must be an object"))
		return
	}
	var wsID string
	if v, ok := fields["workspace_id"]; ok {
		_ = json.Unmarshal(v, &wsID)
	}
	p := principal(r)
	if wsID == "" {
		if !p.Admin {
			a.fail(w, r, errNotCreated)
			return
		}
		a.fail(w, r, failure.New(failure.Invalid, "workspace_id is required"))
		return
	}
	if !p.CanSee(wsID) {
		a.fail(w, r, errNotCreated)
		return
	}
	// Checked before the lookup, which reads with it.
	if err := httpapi.CheckText("workspace_id", wsID); err != nil {
		a.fail(w, r, err)
		return
	}
	var ext string
	if v, ok := fields["external_id"]; ok && string(v) != "null" {
		if err := json.Unmarshal(v, &ext); err != nil {
			a.fail(w, r, failure.New(failure.Invalid, "field \"external_id\" must be a string"))
			return
		}
	}
	req := idempotency.CreateRequest{WorkspaceID: wsID, ExternalID: ext,
		Actor: idempotency.Actor{Kind: "api_token", ID: p.Name, AuthMode: "bearer"},
		Validate: func(req *idempotency.CreateRequest) error {
			var body createBody
			if err := httpapi.DecodeJSONBytes(raw, &body); err != nil {
				return err
			}
			title, err := ValidateTitle(body.Title)
			if err != nil {
				return err
			}
			if _, err := ValidateDescription(body.Description); err != nil {
				return err
			}
			labels, err := ValidateLabels(body.Labels)
			if err != nil {
				return err
			}
			if err := ValidateStepID(body.WorkflowStepID); err != nil {
				return err
			}
			req.Title, req.Description, req.Labels = title, body.Description, labels
			req.WorkflowStepID = body.WorkflowStepID
			if req.WorkflowStepID == "" {
				ws, err := a.st.GetWorkspace(r.Context(), wsID)
				if err != nil {
					return httpapi.Reword(err, failure.New(failure.NotFound, "workspace %q not found", wsID))
				}
				if len(ws.Steps) == 0 {
					return failure.New(failure.Invalid, "workspace %q has no workflow steps", wsID)
				}
				req.WorkflowStepID = ws.Steps[0].ID
			}
			return nil
		}}
	res, err := a.creator.Create(r.Context(), req)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, CreateResponse(res.Task, res.Outcome))
}

func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, httpapi.MaxJSONBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, failure.New(failure.TooLarge, "request body exceeds %d bytes", httpapi.MaxJSONBody)
		}
		return nil, failure.Wrap(failure.Invalid, err, "unreadable body")
	}
	return raw, nil
}

// visibleTask loads the route's task when the caller can see it.
func (a *API) visibleTask(r *http.Request) (store.Task, error) {
	return a.VisibleTask(r.Context(), principal(r), mux.Vars(r)["id"])
}

// VisibleTask loads a completed task p can see; anything else is the same
// 404.
func (a *API) VisibleTask(ctx context.Context, p httpapi.Principal, id string) (store.Task, error) {
	t, err := a.svc.Get(ctx, id)
	if err != nil {
		return t, err
	}
	if !p.CanSee(t.WorkspaceID) {
		return store.Task{}, errTaskNotFound
	}
	return t, nil
}

// GetTask answers a completed task the caller can see.
func (a *API) GetTask(w http.ResponseWriter, r *http.Request) {
	t, err := a.visibleTask(r)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, ToJSON(t))
}

type patchBody struct {
	Title          *string   `json:"title"`
	Description    *string   `json:"description"`
	WorkflowStepID *string   `json:"workflow_step_id"`
	Labels         *[]string `json:"labels"`
	Archived       *bool     `json:"archived"`
}

// UpdateTask applies a partial update; the external ID cannot change.
func (a *API) UpdateTask(w http.ResponseWriter, r *http.Request) {
	p := principal(r)
	id := mux.Vars(r)["id"]
	if !httpapi.ValidText(id) {
		a.fail(w, r, errTaskNotFound)
		return
	}
	// Authorize before validating: an invisible task is 404 whatever the body.
	t, err := a.st.GetTask(r.Context(), id)
	if err != nil {
		a.fail(w, r, httpapi.Reword(err, errTaskNotFound))
		return
	}
	if !p.CanSee(t.WorkspaceID) {
		a.fail(w, r, errTaskNotFound)
		return
	}
	raw, err := readBody(w, r)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err == nil {
		if _, ok := fields["external_id"]; ok {
			a.fail(w, r, failure.New(failure.Invalid, "external_id cannot be changed; release it instead"))
			return
		}
	}
	var body patchBody
	if err := httpapi.DecodeJSONBytes(raw, &body); err != nil {
		a.fail(w, r, err)
		return
	}
	updated, err := a.svc.Update(r.Context(), id, Patch{Title: body.Title, Description: body.Description,
		WorkflowStepID: body.WorkflowStepID, Labels: body.Labels, Archived: body.Archived}, p.CanSee)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, ToJSON(updated))
}

// DeleteTask deletes a task as its operator, recording its suppressions.
func (a *API) DeleteTask(w http.ResponseWriter, r *http.Request) {
	if _, err := a.svc.Delete(r.Context(), mux.Vars(r)["id"], DeletedByOperator, principal(r).CanSee); err != nil {
		a.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// ListContributions lists the PRs/MRs linked to a task.
func (a *API) ListContributions(w http.ResponseWriter, r *http.Request) {
	t, err := a.visibleTask(r)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	out, err := a.Contributions(r.Context(), t.ID)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, map[string]any{"contributions": out})
}

// Contributions lists the PRs/MRs linked to a task (never nil).
func (a *API) Contributions(ctx context.Context, taskID string) ([]Contribution, error) {
	if a.contribs == nil {
		return []Contribution{}, nil
	}
	out, err := a.contribs.Contributions(ctx, taskID)
	if err != nil || out == nil {
		return []Contribution{}, err
	}
	return out, nil
}

func decodeCursor(c string) (time.Time, string, error) {
	t, id, ok := httpapi.DecodeCursor(c)
	if !ok {
		return time.Time{}, "", failure.New(failure.Invalid, "malformed cursor")
	}
	return t, id, nil
}

// workspaceFor authorizes the {id} workspace of a route; notFound is the
// route's own 404 body.
func (a *API) workspaceFor(r *http.Request, notFound *failure.Error) (string, error) {
	ws, err := a.visibleWorkspace(r.Context(), principal(r), mux.Vars(r)["id"], notFound)
	return ws.ID, err
}

// visibleWorkspace returns workspace id when p may see it, and notFound
// otherwise, whether or not it exists.
func (a *API) visibleWorkspace(ctx context.Context, p httpapi.Principal, id string, notFound *failure.Error) (store.Workspace, error) {
	// An ID that is not storable text names no workspace.
	if !p.CanSee(id) || !httpapi.ValidText(id) {
		return store.Workspace{}, notFound
	}
	ws, err := a.st.GetWorkspace(ctx, id)
	if err != nil {
		return ws, httpapi.Reword(err, notFound)
	}
	return ws, nil
}

// VisibleWorkspace returns workspace id when p may see it; "workspace not
// found" otherwise, as the task list answers.
func (a *API) VisibleWorkspace(ctx context.Context, p httpapi.Principal, id string) (store.Workspace, error) {
	return a.visibleWorkspace(ctx, p, id, errWorkspaceNotFound)
}

var errWorkspaceNotFound = failure.New(failure.NotFound, "workspace not found")

// ListTasks pages through a workspace's tasks (query: limit, cursor,
// include_archived).
func (a *API) ListTasks(w http.ResponseWriter, r *http.Request) {
	wsID, err := a.workspaceFor(r, errWorkspaceNotFound)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	limit, err := httpapi.PageLimit(r)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	page := store.TaskPage{WorkspaceID: wsID}
	q := r.URL.Query()
	switch q.Get("include_archived") {
	case "", "false":
	case "true":
		page.IncludeArchived = true
	default:
		a.fail(w, r, failure.New(failure.Invalid, "include_archived must be true or false"))
		return
	}
	ts, next, err := a.TaskPage(r.Context(), page, limit, q.Get("cursor"))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	resp := map[string]any{}
	if next != "" {
		resp["next_cursor"] = next
	}
	items := make([]TaskJSON, 0, len(ts))
	for _, t := range ts {
		items = append(items, ToJSON(t))
	}
	resp["tasks"] = items
	httpapi.WriteJSON(w, http.StatusOK, resp)
}

// TaskPage returns at most limit tasks of page's workspace after cursor
// (empty: the first page), oldest first, and the next page's cursor
// (empty: none). The caller has authorized the workspace.
func (a *API) TaskPage(ctx context.Context, page store.TaskPage, limit int, cursor string) ([]store.Task, string, error) {
	if cursor != "" {
		var err error
		if page.AfterCreatedAt, page.AfterID, err = decodeCursor(cursor); err != nil {
			return nil, "", err
		}
	}
	page.Limit = limit + 1 // one more tells whether a next page exists
	ts, err := a.svc.List(ctx, page)
	if err != nil {
		return nil, "", err
	}
	ts, next := httpapi.TrimPage(ts, limit, func(t store.Task) string { return httpapi.EncodeCursor(t.CreatedAt, t.ID) })
	return ts, next, nil
}

var errLookupNotFound = failure.New(failure.NotFound, "task not found")

// LookupTask finds a task by its external ID (query: external_id).
func (a *API) LookupTask(w http.ResponseWriter, r *http.Request) {
	wsID, err := a.workspaceFor(r, errLookupNotFound)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	t, outcome, err := a.creator.Lookup(r.Context(), wsID, r.URL.Query().Get("external_id"))
	if err != nil {
		a.fail(w, r, httpapi.Reword(err, errLookupNotFound))
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, LookupResponse(t, outcome))
}

// ReleaseExternalID releases a task's external ID (query: external_id).
func (a *API) ReleaseExternalID(w http.ResponseWriter, r *http.Request) {
	wsID, err := a.workspaceFor(r, errLookupNotFound)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	if _, err := a.creator.ReleaseExternalID(r.Context(), wsID, r.URL.Query().Get("external_id")); err != nil {
		a.fail(w, r, httpapi.Reword(err, errLookupNotFound))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
