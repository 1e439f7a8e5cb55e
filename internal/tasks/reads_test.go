package tasks_test

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/trackergateway/gateway/internal/failure"
	"github.com/trackergateway/gateway/internal/idempotency"
	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/tasks"
)

// Ordinary reads carry external_id (omitted when none) and never the
// create-only fields.
func TestReadsCarryExternalIDButNotCreationFields(t *testing.T) {
	t.Parallel()
	forEachEnv(t, func(t *testing.T, e *env) {
		with := e.create(t, createFields("ws", "ext-1")).str("id")
		without := e.create(t, createFields("ws", "")).str("id")
		check := func(name string, item map[string]any, wantExt string) {
			t.Helper()
			for _, key := range []string{"creation_complete", "deduplicated"} {
				if _, ok := item[key]; ok {
					t.Errorf("%s carries %s: %v", name, key, item)
				}
			}
			got, ok := item["external_id"]
			if wantExt == "" && ok {
				t.Errorf("%s external_id = %v, want it omitted", name, got)
			}
			if wantExt != "" && got != wantExt {
				t.Errorf("%s external_id = %v, want %q", name, got, wantExt)
			}
		}
		for id, ext := range map[string]string{with: "ext-1", without: ""} {
			r := e.do(t, http.MethodGet, "/api/v1/tasks/"+id, wsToken, "")
			if r.status != http.StatusOK {
				t.Fatalf("GET = %d %s", r.status, r.raw)
			}
			check("GET task", r.body, ext)
			p := e.do(t, http.MethodPatch, "/api/v1/tasks/"+id, wsToken, `{"description":"more"}`)
			if p.status != http.StatusOK {
				t.Fatalf("PATCH = %d %s", p.status, p.raw)
			}
			check("PATCH response", p.body, ext)
		}
		list := e.do(t, http.MethodGet, "/api/v1/workspaces/ws/tasks", wsToken, "")
		items, _ := list.body["tasks"].([]any)
		if len(items) != 2 {
			t.Fatalf("list = %s, want 2 tasks", list.raw)
		}
		for _, it := range items {
			item := it.(map[string]any)
			want := ""
			if item["id"] == with {
				want = "ext-1"
			}
			check("list item", item, want)
		}
		if _, ok := list.body["next_cursor"]; ok {
			t.Errorf("single page carries next_cursor: %s", list.raw)
		}
	})
}

func TestPatch(t *testing.T) {
	t.Parallel()
	forEachEnv(t, func(t *testing.T, e *env) {
		id := e.create(t, createFields("ws", "ext-1")).str("id")
		e.create(t, map[string]any{"workspace_id": "ws", "title": "occupant", "workflow_step_id": "doing"})
		before := e.written(t)
		for _, tc := range []struct {
			name, body string
			status     int
			message    string
		}{
			{"external_id", `{"external_id":"ext-2"}`, 400, "external_id cannot be changed; release it instead"},
			{"external_id null", `{"external_id":null,"title":"x"}`, 400, "external_id cannot be changed; release it instead"},
			{"empty title", `{"title":"  "}`, 400, "title is required"},
			{"oversize title", `{"title":"` + strings.Repeat("a", tasks.MaxTitleRunes+1) + `"}`, 400, "title is longer than 500 characters"},
			{"wrong type", `{"archived":"yes"}`, 400, `field "archived" must be bool`},
			{"unknown field", `{"colour":"red"}`, 400, ""},
			{"malformed", `{"title":`, 400, ""},
			{"unknown step", `{"workflow_step_id":"nope"}`, 400, `workflow_step_id "nope" does not exist in workspace "ws"`},
			{"full step", `{"workflow_step_id":"doing"}`, 409, `workflow step "doing" is at its WIP limit (1)`},
		} {
			r := e.do(t, http.MethodPatch, "/api/v1/tasks/"+id, adminToken, tc.body)
			wantError(t, r, tc.status, tc.message)
		}
		e.wantNothingWritten(t, before, "refused patches")
		ok := e.do(t, http.MethodPatch, "/api/v1/tasks/"+id, adminToken, `{"title":"Renamed","labels":["x"]}`)
		if ok.status != http.StatusOK || ok.str("title") != "Renamed" || ok.str("external_id") != "ext-1" {
			t.Errorf("patch = %d %s", ok.status, ok.raw)
		}
		if got := events(t, e.st, id, "task.updated"); len(got) != 1 || got[0].Revision != 2 {
			t.Errorf("task.updated events = %+v, want one at revision 2", got)
		}
	})
}

// A task still being created: lists exclude it, GET hides it, PATCH and
// DELETE refuse it with 409 (the service refuses too).
func TestTaskBeingCreatedRefusesLifecycleCommands(t *testing.T) {
	t.Parallel()
	forEachEnv(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		begun, err := e.coord.BeginTaskCreation(ctx, idempotency.CreateRequest{WorkspaceID: "ws", ExternalID: "ext-p",
			Title: "preparing", WorkflowStepID: "backlog"})
		if err != nil {
			t.Fatal(err)
		}
		id := begun.Task.ID
		before := e.written(t)
		if _, err := e.svc.Delete(ctx, id, tasks.DeletedByOperator, nil); failure.CodeOf(err) != failure.Conflict {
			t.Errorf("Service.Delete during preparing = %v, want a conflict", err)
		}
		title := "x"
		if _, err := e.svc.Update(ctx, id, tasks.Patch{Title: &title}, nil); failure.CodeOf(err) != failure.Conflict {
			t.Errorf("Service.Update during preparing = %v, want a conflict", err)
		}
		wantError(t, e.do(t, http.MethodDelete, "/api/v1/tasks/"+id, adminToken, ""), http.StatusConflict, "task is still being created")
		wantError(t, e.do(t, http.MethodPatch, "/api/v1/tasks/"+id, adminToken, `{"title":"x"}`), http.StatusConflict, "task is still being created")
		wantError(t, e.do(t, http.MethodGet, "/api/v1/tasks/"+id, adminToken, ""), http.StatusNotFound, "task not found")
		wantError(t, e.do(t, http.MethodGet, "/api/v1/tasks/"+id+"/contributions", adminToken, ""), http.StatusNotFound, "task not found")
		e.wantNothingWritten(t, before, "refused lifecycle commands")
		if _, err := e.coord.CompleteTaskCreation(ctx, begun.Handle); err != nil {
			t.Fatalf("Complete: %v", err)
		}
		if r := e.do(t, http.MethodDelete, "/api/v1/tasks/"+id, adminToken, ""); r.status != http.StatusNoContent {
			t.Errorf("delete after Complete = %d %s, want 204", r.status, r.raw)
		}
		if _, err := e.st.GetTask(ctx, id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("task after delete: err = %v, want not found", err)
		}
	})
}

func TestListPagination(t *testing.T) {
	t.Parallel()
	forEachEnv(t, func(t *testing.T, e *env) {
		var ids []string
		for i := range 5 {
			ids = append(ids, e.create(t, map[string]any{"workspace_id": "ws", "title": "t", "external_id": string(rune('a' + i))}).str("id"))
		}
		e.do(t, http.MethodPatch, "/api/v1/tasks/"+ids[1], adminToken, `{"archived":true}`)
		collect := func(query string) []string {
			var got []string
			cursor := ""
			for page := 0; page < 10; page++ {
				path := "/api/v1/workspaces/ws/tasks?limit=2" + query
				if cursor != "" {
					path += "&cursor=" + cursor
				}
				r := e.do(t, http.MethodGet, path, adminToken, "")
				if r.status != http.StatusOK {
					t.Fatalf("list = %d %s", r.status, r.raw)
				}
				items, _ := r.body["tasks"].([]any)
				for _, it := range items {
					got = append(got, it.(map[string]any)["id"].(string))
				}
				cursor = r.str("next_cursor")
				if cursor == "" {
					return got
				}
			}
			t.Fatalf("list never ended")
			return nil
		}
		if got, want := collect(""), []string{ids[0], ids[2], ids[3], ids[4]}; strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("list = %v, want %v", got, want)
		}
		if got := collect("&include_archived=true"); strings.Join(got, ",") != strings.Join(ids, ",") {
			t.Errorf("list with archived = %v, want %v", got, ids)
		}
		bad := base64.RawURLEncoding.EncodeToString([]byte("1772366400000000:not-a-uuid"))
		for _, q := range []string{"limit=0", "limit=1001", "limit=x", "include_archived=maybe", "cursor=%21%21", "cursor=" + bad} {
			wantError(t, e.do(t, http.MethodGet, "/api/v1/workspaces/ws/tasks?"+q, adminToken, ""), http.StatusBadRequest, "")
		}
	})
}

// Task IDs that are not UUIDs are simply not found, on every dialect.
func TestMalformedTaskIDIsNotFound(t *testing.T) {
	t.Parallel()
	forEachEnv(t, func(t *testing.T, e *env) {
		for _, id := range []string{"not-a-uuid", "12345", "7d1f9c2e-0000-4000-8000-00000000000z"} {
			for _, route := range []struct{ method, path, body string }{
				{"GET", "/api/v1/tasks/" + id, ""},
				{"PATCH", "/api/v1/tasks/" + id, `{"title":"x"}`},
				{"DELETE", "/api/v1/tasks/" + id, ""},
				{"GET", "/api/v1/tasks/" + id + "/contributions", ""},
			} {
				wantError(t, e.do(t, route.method, route.path, adminToken, route.body), http.StatusNotFound, "task not found")
			}
		}
	})
}
