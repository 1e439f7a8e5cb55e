package tasks_test

import (
	"net/http"
	"strings"
	"testing"
)

// A workspace token acting on another workspace gets the route's exact 404
// before any validation, identical to a resource that does not exist: it
// learns nothing about the workspace, the identity or the task.
func TestUnauthorizedIsNotFoundBeforeValidation(t *testing.T) {
	t.Parallel()
	forEachEnv(t, func(t *testing.T, e *env) {
		foreign := e.create(t, createFields("other", "ext-1"))
		foreignID := foreign.str("id")
		const missingID = "7d1f9c2e-0000-4000-8000-000000000000"
		before := e.written(t)
		tests := []struct {
			name, method, path, body string
			message                  string
		}{
			{"create, invalid external_id", "POST", "/api/v1/tasks", `{"workspace_id":"other","external_id":"ext-1\n","title":""}`, "task not created"},
			{"create, held external_id", "POST", "/api/v1/tasks", `{"workspace_id":"other","external_id":"ext-1","title":"x"}`, "task not created"},
			{"create, valid new task", "POST", "/api/v1/tasks", `{"workspace_id":"other","title":"x"}`, "task not created"},
			{"create, invalid fields", "POST", "/api/v1/tasks", `{"workspace_id":"other","title":5,"labels":"x","bogus":1}`, "task not created"},
			{"create, unknown workspace", "POST", "/api/v1/tasks", `{"workspace_id":"ghost","external_id":"ext-1","title":"x"}`, "task not created"},
			{"create, no workspace", "POST", "/api/v1/tasks", `{"title":"x"}`, "task not created"},
			{"create, workspace with NUL", "POST", "/api/v1/tasks", `{"workspace_id":"ot\u0000her","title":"x"}`, "task not created"},
			{"create, NUL description", "POST", "/api/v1/tasks", `{"workspace_id":"other","title":"x","description":"a\u0000b"}`, "task not created"},
			{"lookup, workspace not UTF-8", "GET", "/api/v1/workspaces/%FF/tasks/by-external-id?external_id=ext-1", "", "task not found"},
			{"lookup, external_id not UTF-8", "GET", "/api/v1/workspaces/other/tasks/by-external-id?external_id=%FF", "", "task not found"},
			{"list, workspace with NUL", "GET", "/api/v1/workspaces/ot%00her/tasks", "", "workspace not found"},
			{"get, ID not UTF-8", "GET", "/api/v1/tasks/%FF", "", "task not found"},
			{"patch, NUL description", "PATCH", "/api/v1/tasks/" + foreignID, `{"description":"a\u0000b"}`, "task not found"},
			{"lookup, held", "GET", "/api/v1/workspaces/other/tasks/by-external-id?external_id=ext-1", "", "task not found"},
			{"lookup, invalid", "GET", "/api/v1/workspaces/other/tasks/by-external-id?external_id=%0A", "", "task not found"},
			{"lookup, missing parameter", "GET", "/api/v1/workspaces/other/tasks/by-external-id", "", "task not found"},
			{"lookup, unknown workspace", "GET", "/api/v1/workspaces/ghost/tasks/by-external-id?external_id=ext-1", "", "task not found"},
			{"release, held", "DELETE", "/api/v1/workspaces/other/tasks/by-external-id?external_id=ext-1", "", "task not found"},
			{"release, invalid", "DELETE", "/api/v1/workspaces/other/tasks/by-external-id?external_id=" + strings.Repeat("x", 300), "", "task not found"},
			{"list", "GET", "/api/v1/workspaces/other/tasks", "", "workspace not found"},
			{"list, invalid limit", "GET", "/api/v1/workspaces/other/tasks?limit=-1&cursor=%%%", "", "workspace not found"},
			{"list, unknown workspace", "GET", "/api/v1/workspaces/ghost/tasks", "", "workspace not found"},
			{"get", "GET", "/api/v1/tasks/" + foreignID, "", "task not found"},
			{"get, missing task", "GET", "/api/v1/tasks/" + missingID, "", "task not found"},
			{"contributions", "GET", "/api/v1/tasks/" + foreignID + "/contributions", "", "task not found"},
			{"patch, invalid body", "PATCH", "/api/v1/tasks/" + foreignID, `{"external_id":"x","title":""}`, "task not found"},
			{"patch, malformed body", "PATCH", "/api/v1/tasks/" + foreignID, `{`, "task not found"},
			{"patch, valid body", "PATCH", "/api/v1/tasks/" + foreignID, `{"title":"mine now"}`, "task not found"},
			{"patch, missing task", "PATCH", "/api/v1/tasks/" + missingID, `{"title":"x"}`, "task not found"},
			{"delete", "DELETE", "/api/v1/tasks/" + foreignID, "", "task not found"},
			{"delete, missing task", "DELETE", "/api/v1/tasks/" + missingID, "", "task not found"},
			{"create workspace", "POST", "/api/v1/workspaces", `{"id":"new","task_prefix":"NEW"}`, "not found"},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				r := e.do(t, tc.method, tc.path, wsToken, tc.body)
				wantError(t, r, http.StatusNotFound, tc.message)
				if r.raw != `{"error":"`+tc.message+`"}`+"\n" {
					t.Errorf("body = %q, want exactly {\"error\":%q}", r.raw, tc.message)
				}
			})
		}
		e.wantNothingWritten(t, before, "unauthorized requests")
		// The foreign task is untouched and still Found by its owner.
		wantTuple(t, e.do(t, "POST", "/api/v1/tasks", otherToken, `{"workspace_id":"other","external_id":"ext-1"}`), true, true, "ext-1")
		// Workspace lists show only visible workspaces.
		ws := e.do(t, "GET", "/api/v1/workspaces", wsToken, "")
		if items, _ := ws.body["workspaces"].([]any); len(items) != 1 || !strings.Contains(ws.raw, `"id":"ws"`) {
			t.Errorf("workspaces for the ws token = %s, want only ws", ws.raw)
		}
	})
}

func TestMissingOrUnknownTokenIs401(t *testing.T) {
	t.Parallel()
	forEachEnv(t, func(t *testing.T, e *env) {
		for _, tc := range []struct{ name, token, message string }{
			{"missing", "", "missing bearer token"},
			{"unknown", "not-a-token", "unknown token"},
		} {
			for _, route := range []struct{ method, path, body string }{
				{"POST", "/api/v1/tasks", `{"workspace_id":"ws","title":"x"}`},
				{"GET", "/api/v1/workspaces/ws/tasks", ""},
				{"GET", "/api/v1/workspaces/ws/tasks/by-external-id?external_id=x", ""},
			} {
				wantError(t, e.do(t, route.method, route.path, tc.token, route.body), http.StatusUnauthorized, tc.message)
			}
		}
		if n := count(t, e.st, `SELECT COUNT(*) FROM tasks`); n != 0 {
			t.Errorf("tasks = %d, want 0", n)
		}
	})
}
