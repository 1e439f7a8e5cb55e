package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
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

// ContributionLister lists tasks' linked PRs/MRs (the provider projection),
// by task ID.
type ContributionLister interface {
	ContributionsOf(ctx context.Context, taskIDs []string) (map[string][]Contribution, error)
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

// CreateTask creates a task from the request body (Create).
func (a *API) CreateTask(w http.ResponseWriter, r *http.Request) {
	raw, err := readBody(w, r)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	res, err := a.Create(r.Context(), principal(r), raw)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, res)
}

// Create creates a task for p from a create request's JSON (the REST body,
// or an agent tool's arguments), in the normative order: authorize →
// validate the external ID → look up → validate the rest → create.
func (a *API) Create(ctx context.Context, p httpapi.Principal, raw []byte) (CreateJSON, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return CreateJSON{}, failure.New(failure.Invalid, "malformed JSON: the body must be an object")
	}
	// Before anything reads a field: encoding/json has decoded text that is
	// not UTF-8 into U+FFFD, which would make different external IDs one.
	if err := httpapi.CheckJSONText(raw); err != nil {
		return CreateJSON{}, err
	}
	var wsID string
	if v, ok := fields["workspace_id"]; ok {
		_ = json.Unmarshal(v, &wsID)
	}
	if wsID == "" {
		if !p.Admin {
			return CreateJSON{}, errNotCreated
		}
		return CreateJSON{}, failure.New(failure.Invalid, "workspace_id is required")
	}
	if !p.CanSee(wsID) {
		return CreateJSON{}, errNotCreated
	}
	// Checked before the lookup, which reads with it.
	if err := httpapi.CheckText("workspace_id", wsID); err != nil {
		return CreateJSON{}, err
	}
	var ext string
	if v, ok := fields["external_id"]; ok && string(v) != "null" {
		if err := json.Unmarshal(v, &ext); err != nil {
			return CreateJSON{}, failure.New(failure.Invalid, "field \"external_id\" must be a string")
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
				ws, err := a.st.GetWorkspace(ctx, wsID)
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
	res, err := a.creator.Create(ctx, req)
	if err != nil {
		return CreateJSON{}, err
	}
	return CreateResponse(res.Task, res.Outcome), nil
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

// UpdateTask applies a partial update from the request body (Update).
func (a *API) UpdateTask(w http.ResponseWriter, r *http.Request) {
	updated, err := a.Update(r.Context(), principal(r), mux.Vars(r)["id"], func() ([]byte, error) { return readBody(w, r) })
	if err != nil {
		a.fail(w, r, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, updated)
}

// Update applies a partial update (a PATCH body's JSON, read by body) to the
// task id for p; the external ID cannot change. body is read only once p is
// known to see the task: an invisible task is 404 whatever the body.
func (a *API) Update(ctx context.Context, p httpapi.Principal, id string, body func() ([]byte, error)) (TaskJSON, error) {
	if !httpapi.ValidText(id) {
		return TaskJSON{}, errTaskNotFound
	}
	t, err := a.st.GetTask(ctx, id)
	if err != nil {
		return TaskJSON{}, httpapi.Reword(err, errTaskNotFound)
	}
	if !p.CanSee(t.WorkspaceID) {
		return TaskJSON{}, errTaskNotFound
	}
	raw, err := body()
	if err != nil {
		return TaskJSON{}, err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err == nil {
		if _, ok := fields["external_id"]; ok {
			return TaskJSON{}, failure.New(failure.Invalid, "external_id cannot be changed; release it instead")
		}
	}
	var patch patchBody
	if err := httpapi.DecodeJSONBytes(raw, &patch); err != nil {
		return TaskJSON{}, err
	}
	updated, err := a.svc.Update(ctx, id, Patch{Title: patch.Title, Description: patch.Description,
		WorkflowStepID: patch.WorkflowStepID, Labels: patch.Labels, Archived: patch.Archived}, p.CanSee)
	if err != nil {
		return TaskJSON{}, err
	}
	return ToJSON(updated), nil
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
	byTask, err := a.ContributionsOf(ctx, []string{taskID})
	if err != nil || byTask[taskID] == nil {
		return []Contribution{}, err
	}
	return byTask[taskID], nil
}

// ContributionsOf lists the PRs/MRs linked to each of taskIDs in one read,
// by task ID (a task with none is absent).
func (a *API) ContributionsOf(ctx context.Context, taskIDs []string) (map[string][]Contribution, error) {
	if a.contribs == nil {
		return map[string][]Contribution{}, nil
	}
	return a.contribs.ContributionsOf(ctx, taskIDs)
}

func decodeCursor(c string) (time.Time, string, error) {
	t, id, ok := httpapi.DecodeCursor(c)
	if !ok {
		return time.Time{}, "", failure.New(failure.Invalid, "malformed cursor")
	}
	return t, id, nil
}

// visibleWorkspace returns workspace id when p may see it, and notFound
// (the route's own 404 body) otherwise, whether or not it exists.
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

// TaskListJSON is a page of tasks; NextCursor is absent on the last page.
type TaskListJSON struct {
	Tasks      []TaskJSON `json:"tasks"`
	NextCursor string     `json:"next_cursor,omitempty"`
}

// ListTasks pages through a workspace's tasks (List).
func (a *API) ListTasks(w http.ResponseWriter, r *http.Request) {
	page, err := a.List(r.Context(), principal(r), mux.Vars(r)["id"], r.URL.Query())
	if err != nil {
		a.fail(w, r, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, page)
}

// List pages through the tasks of workspace wsID for p. query holds the
// list's parameters as the REST route takes them: limit, cursor,
// include_archived; they are validated only once p may see the workspace.
func (a *API) List(ctx context.Context, p httpapi.Principal, wsID string, query url.Values) (TaskListJSON, error) {
	ws, err := a.visibleWorkspace(ctx, p, wsID, errWorkspaceNotFound)
	if err != nil {
		return TaskListJSON{}, err
	}
	limit, err := httpapi.ParsePageLimit(query.Get("limit"))
	if err != nil {
		return TaskListJSON{}, err
	}
	page := store.TaskPage{WorkspaceID: ws.ID}
	switch query.Get("include_archived") {
	case "", "false":
	case "true":
		page.IncludeArchived = true
	default:
		return TaskListJSON{}, failure.New(failure.Invalid, "include_archived must be true or false")
	}
	ts, next, err := a.TaskPage(ctx, page, limit, query.Get("cursor"))
	if err != nil {
		return TaskListJSON{}, err
	}
	out := TaskListJSON{Tasks: make([]TaskJSON, 0, len(ts)), NextCursor: next}
	for _, t := range ts {
		out.Tasks = append(out.Tasks, ToJSON(t))
	}
	return out, nil
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

// LookupTask finds a task by its external ID (Lookup; query: external_id).
func (a *API) LookupTask(w http.ResponseWriter, r *http.Request) {
	found, err := a.Lookup(r.Context(), principal(r), mux.Vars(r)["id"], r.URL.Query().Get("external_id"))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, found)
}

// Lookup finds the task holding externalID in workspace wsID, for p.
func (a *API) Lookup(ctx context.Context, p httpapi.Principal, wsID, externalID string) (LookupJSON, error) {
	ws, err := a.visibleWorkspace(ctx, p, wsID, errLookupNotFound)
	if err != nil {
		return LookupJSON{}, err
	}
	t, outcome, err := a.creator.Lookup(ctx, ws.ID, externalID)
	if err != nil {
		return LookupJSON{}, httpapi.Reword(err, errLookupNotFound)
	}
	return LookupResponse(t, outcome), nil
}

// ReleaseExternalID releases a task's external ID (Release; query:
// external_id).
func (a *API) ReleaseExternalID(w http.ResponseWriter, r *http.Request) {
	if err := a.Release(r.Context(), principal(r), mux.Vars(r)["id"], r.URL.Query().Get("external_id")); err != nil {
		a.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// Release frees externalID in workspace wsID for p; the task stays.
func (a *API) Release(ctx context.Context, p httpapi.Principal, wsID, externalID string) error {
	ws, err := a.visibleWorkspace(ctx, p, wsID, errLookupNotFound)
	if err != nil {
		return err
	}
	if _, err := a.creator.ReleaseExternalID(ctx, ws.ID, externalID); err != nil {
		return httpapi.Reword(err, errLookupNotFound)
	}
	return nil
}
