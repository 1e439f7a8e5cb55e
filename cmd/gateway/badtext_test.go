package main

// Text the databases store differently: SQLite keeps any bytes, PostgreSQL
// refuses invalid UTF-8 and NUL. Every API input that reaches SQL is checked
// first, so both dialects answer alike: a JSON field or query parameter is a
// 400 naming it, a path identifier that cannot exist is the route's 404.

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// rawDo sends an admin request with a raw (already escaped) path and a raw
// body, so invalid escapes and JSON \u0000 reach the server as written.
func (g *gateway) rawDo(t *testing.T, method, path, body string) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, g.URL+path, rd)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	req.Header.Set("Authorization", "Bearer "+testAdminToken)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := g.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return resp.StatusCode, out
}

// badTextCase is one request; {task} in path or body is the ID of a task
// that exists.
type badTextCase struct {
	method, path, body string
	status             int
	// message is a substring of the {"error"} message (400s name the field).
	message string
}

var badTextCases = []badTextCase{
	// Task create: every text field of the body.
	{"POST", "/api/v1/tasks", `{"workspace_id":"eng","title":"t","description":"a\u0000b"}`, 400, "description contains a NUL character"},
	{"POST", "/api/v1/tasks", `{"workspace_id":"eng","title":"a\u0000b"}`, 400, "title"},
	{"POST", "/api/v1/tasks", `{"workspace_id":"eng","title":"t","labels":["a\u0000b"]}`, 400, "label"},
	{"POST", "/api/v1/tasks", `{"workspace_id":"eng","title":"t","workflow_step_id":"a\u0000b"}`, 400, "workflow_step_id contains a NUL character"},
	{"POST", "/api/v1/tasks", `{"workspace_id":"a\u0000b","title":"t"}`, 400, "workspace_id contains a NUL character"},
	{"POST", "/api/v1/tasks", `{"workspace_id":"eng","title":"t","external_id":"a\u0000b"}`, 400, "external_id"},
	// Task update: every text field of the body, and the path.
	{"PATCH", "/api/v1/tasks/{task}", `{"description":"a\u0000b"}`, 400, "description contains a NUL character"},
	{"PATCH", "/api/v1/tasks/{task}", `{"title":"a\u0000b"}`, 400, "title"},
	{"PATCH", "/api/v1/tasks/{task}", `{"labels":["a\u0000b"]}`, 400, "label"},
	{"PATCH", "/api/v1/tasks/{task}", `{"workflow_step_id":"a\u0000b"}`, 400, "workflow_step_id contains a NUL character"},
	{"PATCH", "/api/v1/tasks/%FF", `{"title":"t"}`, 404, "task not found"},
	{"PATCH", "/api/v1/tasks/a%00b", `{"title":"t"}`, 404, "task not found"},
	{"GET", "/api/v1/tasks/%FF", "", 404, "task not found"},
	{"GET", "/api/v1/tasks/%00", "", 404, "task not found"},
	{"DELETE", "/api/v1/tasks/%FF", "", 404, "task not found"},
	{"GET", "/api/v1/tasks/%FF/contributions", "", 404, "task not found"},
	// Workspace create: every text field of the body.
	{"POST", "/api/v1/workspaces", `{"id":"w1","task_prefix":"W","name":"a\u0000b"}`, 400, "name"},
	{"POST", "/api/v1/workspaces", `{"id":"w\u0000","task_prefix":"W"}`, 400, "id"},
	{"POST", "/api/v1/workspaces", `{"id":"w1","task_prefix":"W\u0000"}`, 400, "task_prefix"},
	{"POST", "/api/v1/workspaces", `{"id":"w1","task_prefix":"W","steps":[{"id":"a\u0000b"}]}`, 400, "step id"},
	{"POST", "/api/v1/workspaces", `{"id":"w1","task_prefix":"W","steps":[{"id":"s","name":"a\u0000b"}]}`, 400, "name"},
	// Workspace paths.
	{"GET", "/api/v1/workspaces/%FF%FE/tasks", "", 404, "workspace not found"},
	{"GET", "/api/v1/workspaces/a%00b/tasks", "", 404, "workspace not found"},
	{"GET", "/api/v1/workspaces/%FF/tasks/by-external-id?external_id=x", "", 404, "task not found"},
	{"GET", "/api/v1/workspaces/a%00b/tasks/by-external-id?external_id=x", "", 404, "task not found"},
	{"DELETE", "/api/v1/workspaces/%FF/tasks/by-external-id?external_id=x", "", 404, "task not found"},
	{"GET", "/api/v1/workspaces/eng/tasks/by-external-id?external_id=%FF", "", 400, "external_id"},
	{"GET", "/api/v1/workspaces/eng/tasks/by-external-id?external_id=a%00b", "", 400, "external_id"},
	{"DELETE", "/api/v1/workspaces/eng/tasks/by-external-id?external_id=%FF", "", 400, "external_id"},
	// Task list query parameters.
	{"GET", "/api/v1/workspaces/eng/tasks?cursor=%FF", "", 400, "cursor"},
	{"GET", "/api/v1/workspaces/eng/tasks?cursor=_wD-", "", 400, "cursor"},
	{"GET", "/api/v1/workspaces/eng/tasks?include_archived=%FF", "", 400, "include_archived"},
	{"GET", "/api/v1/workspaces/eng/tasks?limit=%00", "", 400, "limit"},
	// Deliveries.
	{"GET", "/api/v1/deliveries?connection=%FF", "", 400, "connection is not valid UTF-8 text"},
	{"GET", "/api/v1/deliveries?connection=a%00b", "", 400, "connection contains a NUL character"},
	{"GET", "/api/v1/deliveries?status=%FF", "", 400, "status"},
	{"GET", "/api/v1/deliveries?cursor=_wD-", "", 400, "cursor"},
	{"GET", "/api/v1/deliveries/%00", "", 404, "delivery not found"},
	{"GET", "/api/v1/deliveries/%FF", "", 404, "delivery not found"},
	{"POST", "/api/v1/deliveries/%FF/replay", "", 404, "delivery not found"},
	// Suppressions.
	{"GET", "/api/v1/suppressions?workspace_id=%FF%FE", "", 400, "workspace_id is not valid UTF-8 text"},
	{"GET", "/api/v1/suppressions?workspace_id=a%00b", "", 400, "workspace_id contains a NUL character"},
	{"GET", "/api/v1/suppressions?cursor=_wD-", "", 400, "cursor"},
	{"GET", "/api/v1/suppressions?cursor=AA", "", 400, "cursor"},
	{"DELETE", "/api/v1/suppressions?workspace_id=%FF&external_id=x", "", 400, "workspace_id is not valid UTF-8 text"},
	{"DELETE", "/api/v1/suppressions?workspace_id=eng&external_id=a%00b", "", 400, "external_id contains a NUL character"},
	// Webhooks: a connection that cannot exist.
	{"POST", "/webhooks/%FF", "{}", 404, ""},
	{"POST", "/webhooks/a%00b", "{}", 404, ""},
}

// TestBadTextSameOnBothDialects runs every case on SQLite and PostgreSQL:
// the same status and message on both, never a 500, and nothing changed.
func TestBadTextSameOnBothDialects(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, dialect string) {
		g := startGateway(t, newDatabaseURL(t, dialect))
		status, body := g.apiDo(t, http.MethodPost, "/api/v1/tasks", map[string]any{
			"workspace_id": testWorkspace, "title": "untouched", "description": "before", "labels": []string{"keep"}})
		if status != http.StatusOK {
			t.Fatalf("create task = %d %s, want 200", status, body)
		}
		var before task
		if err := json.Unmarshal(body, &before); err != nil {
			t.Fatal(err)
		}
		var wsBefore json.RawMessage
		g.getJSON(t, "/api/v1/workspaces", &wsBefore)

		for _, tc := range badTextCases {
			path := strings.ReplaceAll(tc.path, "{task}", before.ID)
			t.Run(tc.method+" "+tc.path+" "+tc.body, func(t *testing.T) {
				status, body := g.rawDo(t, tc.method, path, tc.body)
				var msg struct {
					Error string `json:"error"`
				}
				_ = json.Unmarshal(body, &msg)
				if status != tc.status {
					t.Errorf("%s %s = %d %s, want %d", tc.method, path, status, body, tc.status)
				}
				if !strings.Contains(msg.Error, tc.message) {
					t.Errorf("%s %s error = %q, want it to contain %q", tc.method, path, msg.Error, tc.message)
				}
			})
		}

		after, ok := g.getTask(t, before.ID)
		if !ok || after.Title != before.Title || after.Description != before.Description || !slices.Equal(after.Labels, before.Labels) {
			t.Errorf("task after the bad requests = %+v (found %t), want it unchanged: %+v", after, ok, before)
		}
		if ts := g.tasks(t); len(ts) != 1 {
			t.Errorf("tasks after the bad requests = %v, want only the first", taskSummaries(ts))
		}
		var wsAfter json.RawMessage
		g.getJSON(t, "/api/v1/workspaces", &wsAfter)
		if string(wsAfter) != string(wsBefore) {
			t.Errorf("workspaces after the bad requests = %s, want unchanged %s", wsAfter, wsBefore)
		}
	})
}
