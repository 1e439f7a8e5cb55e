package tasks_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/store/sqlstore"
)

// Every way a task enters a workflow step — create, move, unarchive — is
// admitted by the one rule: a full step is the same 409, a step with room
// or without a limit admits. Each row runs in its own workspace whose steps
// are backlog (unlimited), doing (WIP 1, one active task), pair (WIP 2, one
// active task) and free (WIP 0: unlimited, three active tasks); every
// limited step also holds an archived task, which does not count.
func TestWIPAdmission(t *testing.T) {
	t.Parallel()
	const full = `workflow step "doing" is at its WIP limit (1)`
	// How the subject task reaches target.
	const (
		create        = "create"
		move          = "move"           // an active task from backlog
		unarchive     = "unarchive"      // an archived task of target
		unarchiveMove = "unarchive+move" // an archived task from backlog, in one patch
		moveArchived  = "move archived"  // an archived task from backlog stays archived
	)
	rows := []struct {
		name, action, target string
		status               int
		message              string
	}{
		{"create into a full step", create, "doing", 409, full},
		{"move into a full step", move, "doing", 409, full},
		{"unarchive in a full step", unarchive, "doing", 409, full},
		{"unarchive and move into a full step", unarchiveMove, "doing", 409, full},
		{"archived task moves into a full step", moveArchived, "doing", 200, ""},
		{"create into a step with room", create, "pair", 200, ""},
		{"move into a step with room", move, "pair", 200, ""},
		{"unarchive in a step with room", unarchive, "pair", 200, ""},
		{"unarchive and move into a step with room", unarchiveMove, "pair", 200, ""},
		{"create into wip_limit 0", create, "free", 200, ""},
		{"move into wip_limit 0", move, "free", 200, ""},
		{"unarchive in wip_limit 0", unarchive, "free", 200, ""},
	}
	forEachEnv(t, func(t *testing.T, e *env) {
		for i, tc := range rows {
			t.Run(tc.name, func(t *testing.T) {
				wsID := fmt.Sprintf("wip-%d", i)
				seedWIPWorkspace(t, e.st, wsID)
				newTask := func(step string, archived bool) string {
					t.Helper()
					r := e.create(t, map[string]any{"workspace_id": wsID, "title": "task", "workflow_step_id": step})
					if r.status != http.StatusOK {
						t.Fatalf("create in %s = %d %s", step, r.status, r.raw)
					}
					if archived {
						if a := e.do(t, http.MethodPatch, "/api/v1/tasks/"+r.str("id"), adminToken, `{"archived":true}`); a.status != http.StatusOK {
							t.Fatalf("archive = %d %s", a.status, a.raw)
						}
					}
					return r.str("id")
				}
				var subject string
				switch tc.action {
				case move:
					subject = newTask("backlog", false)
				case unarchive:
					subject = newTask(tc.target, true) // before the step fills up
				case unarchiveMove, moveArchived:
					subject = newTask("backlog", true)
				}
				occupants := map[string]int{"doing": 1, "pair": 1, "free": 3}[tc.target]
				if tc.target != "free" {
					newTask(tc.target, true)
				}
				for range occupants {
					newTask(tc.target, false)
				}
				seq := sequence(t, e.st, wsID)
				var stored response
				if subject != "" {
					stored = e.do(t, http.MethodGet, "/api/v1/tasks/"+subject, adminToken, "")
				}

				var r response
				switch tc.action {
				case create:
					r = e.create(t, map[string]any{"workspace_id": wsID, "title": "entering", "workflow_step_id": tc.target})
					subject = r.str("id")
				case move, moveArchived:
					r = e.do(t, http.MethodPatch, "/api/v1/tasks/"+subject, adminToken, `{"workflow_step_id":"`+tc.target+`"}`)
				case unarchive:
					r = e.do(t, http.MethodPatch, "/api/v1/tasks/"+subject, adminToken, `{"archived":false}`)
				case unarchiveMove:
					r = e.do(t, http.MethodPatch, "/api/v1/tasks/"+subject, adminToken, `{"archived":false,"workflow_step_id":"`+tc.target+`"}`)
				}

				active := count(t, e.st, `SELECT COUNT(*) FROM tasks WHERE workspace_id = $1 AND workflow_step_id = $2 AND archived_at IS NULL`, wsID, tc.target)
				if tc.status != http.StatusOK {
					wantError(t, r, tc.status, tc.message)
					if active != occupants {
						t.Errorf("active tasks in %s = %d after the refusal, want %d", tc.target, active, occupants)
					}
					if got := sequence(t, e.st, wsID); got != seq {
						t.Errorf("task sequence = %d after the refusal, want %d (no identifier allocated)", got, seq)
					}
					if tc.action != create {
						if after := e.do(t, http.MethodGet, "/api/v1/tasks/"+subject, adminToken, ""); after.raw != stored.raw {
							t.Errorf("refused task changed: before %s, after %s", stored.raw, after.raw)
						}
					}
					return
				}
				if r.status != http.StatusOK {
					t.Fatalf("status = %d, want 200 (body %s)", r.status, r.raw)
				}
				if got := r.str("workflow_step_id"); got != tc.target {
					t.Errorf("workflow_step_id = %q, want %q", got, tc.target)
				}
				wantArchived := tc.action == moveArchived
				if archived := r.body["archived_at"] != nil; archived != wantArchived {
					t.Errorf("archived = %t (%s), want %t", archived, r.raw, wantArchived)
				}
				want := occupants + 1
				if wantArchived {
					want = occupants
				}
				if active != want {
					t.Errorf("active tasks in %s = %d, want %d", tc.target, active, want)
				}
			})
		}
	})
}

// seedWIPWorkspace stores a workspace with the steps TestWIPAdmission uses.
// free's limit is stored as 0: the API and the YAML store 0 as null, and the
// rule itself reads 0 as unlimited too.
func seedWIPWorkspace(t *testing.T, st *sqlstore.Store, id string) {
	t.Helper()
	zero, one, two := 0, 1, 2
	ws := store.Workspace{ID: id, Name: id, TaskPrefix: "W", CreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Steps: []store.Step{
		{ID: "backlog", Name: "Backlog"},
		{ID: "doing", Name: "Doing", WIPLimit: &one},
		{ID: "pair", Name: "Pair", WIPLimit: &two},
		{ID: "free", Name: "Free", WIPLimit: &zero},
	}}
	if err := st.UpsertWorkspace(context.Background(), ws); err != nil {
		t.Fatalf("upsert workspace: %v", err)
	}
}

func sequence(t *testing.T, st *sqlstore.Store, wsID string) int64 {
	t.Helper()
	ws, err := st.GetWorkspace(context.Background(), wsID)
	if err != nil {
		t.Fatal(err)
	}
	return ws.TaskSequence
}
