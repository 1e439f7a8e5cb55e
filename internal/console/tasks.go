package console

import (
	"net/http"
	"net/url"

	"github.com/gorilla/mux"

	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/tasks"
)

// tasksShown is the size of a page of tasks.
const tasksShown = 50

// taskRow is a task with its linked PRs/MRs.
type taskRow struct {
	Task          store.Task
	Contributions []tasks.Contribution
}

type tasksPage struct {
	Workspace       store.Workspace
	Tasks           []taskRow
	IncludeArchived bool
	Next            url.Values
}

// WorkspaceTasks lists a workspace's tasks, oldest first, each with its
// PRs/MRs. A workspace the caller cannot see is a 404, as in the API.
func (c *Console) WorkspaceTasks(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	s, _ := sessionFrom(ctx)
	ws, err := c.d.Tasks.VisibleWorkspace(ctx, s.principal, mux.Vars(r)["id"])
	if err != nil {
		c.fail(w, r, err)
		return
	}
	q := r.URL.Query()
	page := tasksPage{Workspace: ws, IncludeArchived: q.Get("include_archived") == "true"}
	ts, next, err := c.d.Tasks.TaskPage(ctx, store.TaskPage{WorkspaceID: ws.ID, IncludeArchived: page.IncludeArchived},
		tasksShown, q.Get("cursor"))
	if err != nil {
		c.fail(w, r, err)
		return
	}
	ids := make([]string, len(ts))
	for i, t := range ts {
		ids[i] = t.ID
	}
	// One read for the page's PRs/MRs, not one per task.
	byTask, err := c.d.Tasks.ContributionsOf(ctx, ids)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	for _, t := range ts {
		page.Tasks = append(page.Tasks, taskRow{Task: t, Contributions: byTask[t.ID]})
	}
	if next != "" {
		page.Next = url.Values{"cursor": {next}}
		if page.IncludeArchived {
			page.Next.Set("include_archived", "true")
		}
	}
	c.render(w, r, http.StatusOK, "tasks", ws.Name+" tasks", page)
}

type taskPage struct {
	Workspace store.Workspace
	Row       taskRow
}

// Task shows one task with its PRs/MRs (where a delivery's outcome links).
// A task the caller cannot see is a 404, as in the API.
func (c *Console) Task(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	s, _ := sessionFrom(ctx)
	t, err := c.d.Tasks.VisibleTask(ctx, s.principal, mux.Vars(r)["id"])
	if err != nil {
		c.fail(w, r, err)
		return
	}
	ws, err := c.d.Tasks.VisibleWorkspace(ctx, s.principal, t.WorkspaceID)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	cs, err := c.d.Tasks.Contributions(ctx, t.ID)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	c.render(w, r, http.StatusOK, "task", t.Identifier+" "+t.Title, taskPage{Workspace: ws, Row: taskRow{Task: t, Contributions: cs}})
}
