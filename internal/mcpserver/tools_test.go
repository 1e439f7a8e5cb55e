package mcpserver_test

// The tools over the in-memory transport, with the SDK's own client, on
// both dialects; their errors are compared with the REST API's answer to
// the same request.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trackergateway/gateway/internal/events"
	"github.com/trackergateway/gateway/internal/httpapi"
	"github.com/trackergateway/gateway/internal/inbox"
	"github.com/trackergateway/gateway/internal/mcpserver"
	"github.com/trackergateway/gateway/internal/mcpserver/mcptest"
	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/tasks"
)

var (
	taskTools  = []string{"create_task", "get_task_by_external_id", "list_task_events", "list_tasks", "release_external_id", "update_task"}
	adminTools = append(slices.Clone(taskTools), "list_deliveries", "replay_deliveries")
)

func TestToolsOfferedToEachCaller(t *testing.T) {
	t.Parallel()
	e := newEnv(t, openSQLite(t))
	tests := []struct {
		name   string
		caller httpapi.Principal
		want   []string
	}{
		{"admin", admin, adminTools},
		{"workspace token", wsBot, taskTools},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cs := e.session(t, tc.caller)
			var got []string
			for tool, err := range cs.Tools(context.Background(), nil) {
				if err != nil {
					t.Fatalf("list tools: %v", err)
				}
				got = append(got, tool.Name)
				if len(tool.Description) < 80 {
					t.Errorf("%s: description %q is too short to guide a model", tool.Name, tool.Description)
				}
				schema, _ := tool.InputSchema.(map[string]any)
				if schema["type"] != "object" || len(schema["properties"].(map[string]any)) == 0 {
					t.Errorf("%s: input schema %v, want an object with properties", tool.Name, tool.InputSchema)
				}
				if tool.OutputSchema == nil {
					t.Errorf("%s: no output schema", tool.Name)
				}
			}
			slices.Sort(got)
			want := slices.Sorted(slices.Values(tc.want))
			if !slices.Equal(got, want) {
				t.Errorf("tools = %v, want %v", got, want)
			}
		})
	}
}

func TestCreateTaskRepeatedWithOneExternalIDFindsItsTask(t *testing.T) {
	t.Parallel()
	forEachEnv(t, func(t *testing.T, e *env) {
		cs := e.session(t, wsBot)
		first := mcptest.Decode[tasks.CreateJSON](t, "create_task",
			mcptest.Call(t, cs, "create_task", createArgs("ws", "Fix the flaky test", "agent:fix-flaky")))
		if first.Deduplicated || !first.CreationComplete || first.ExternalID != "agent:fix-flaky" || first.Identifier != "WS-1" {
			t.Errorf("first create = %+v, want a new task WS-1 holding agent:fix-flaky (deduplicated false, creation_complete true)", first)
		}
		// The retry differs in everything but the identity, and omits the
		// title a new task would need: the task it already made wins.
		second := mcptest.Decode[tasks.CreateJSON](t, "create_task",
			mcptest.Call(t, cs, "create_task", map[string]any{"workspace_id": "ws", "external_id": "agent:fix-flaky", "labels": []string{"x"}}))
		if !second.Deduplicated || !second.CreationComplete || second.ID != first.ID || second.Title != "Fix the flaky test" {
			t.Errorf("repeated create = %+v, want task %s deduplicated and unchanged", second, first.ID)
		}
		if ts := e.tasksOf(t, "ws"); len(ts) != 1 {
			t.Errorf("workspace ws holds %d tasks, want 1", len(ts))
		}
		// The same JSON as the REST create's.
		lookup := mcptest.Decode[tasks.LookupJSON](t, "get_task_by_external_id",
			mcptest.Call(t, cs, "get_task_by_external_id", map[string]any{"workspace_id": "ws", "external_id": "agent:fix-flaky"}))
		if lookup.TaskJSON.ID != first.ID || !lookup.CreationComplete {
			t.Errorf("lookup = %+v, want task %s, creation complete", lookup, first.ID)
		}
	})
}

func TestCreateTaskAnswersTheRESTCreateJSON(t *testing.T) {
	t.Parallel()
	e := newEnv(t, openSQLite(t))
	cs := e.session(t, admin)
	res := mcptest.Call(t, cs, "create_task", createArgs("ws", "Same JSON", "ext-json"))
	got, ok := res.StructuredContent.(map[string]any)
	if !ok {
		t.Fatalf("structured content = %T, want an object", res.StructuredContent)
	}
	// The REST create of the same identity finds it: the same fields, with
	// deduplicated now true.
	status, body := e.restJSON(t, admin, http.MethodPost, "/api/v1/tasks", createArgs("ws", "Same JSON", "ext-json"))
	if status != http.StatusOK {
		t.Fatalf("REST create = %d %v", status, body)
	}
	body["deduplicated"] = false
	if !reflect.DeepEqual(got, body) {
		t.Errorf("create_task answered %v, the REST create %v", got, body)
	}
}

func TestWorkspaceTokenCannotReachAnotherWorkspace(t *testing.T) {
	t.Parallel()
	forEachEnv(t, func(t *testing.T, e *env) {
		theirs := mcptest.Decode[tasks.CreateJSON](t, "create_task",
			mcptest.Call(t, e.session(t, admin), "create_task", createArgs("other", "Theirs", "ext-theirs")))
		cs := e.session(t, wsBot)
		tests := []struct {
			tool   string
			args   map[string]any
			method string
			path   string
			body   any
		}{
			{"create_task", createArgs("other", "Mine", "ext-mine"), http.MethodPost, "/api/v1/tasks", createArgs("other", "Mine", "ext-mine")},
			{"create_task", createArgs("other", "Mine", "ext-theirs"), http.MethodPost, "/api/v1/tasks", createArgs("other", "Mine", "ext-theirs")},
			// Authorization comes before the external ID's validation.
			{"create_task", createArgs("other", "Mine", "bad\n"), http.MethodPost, "/api/v1/tasks", createArgs("other", "Mine", "bad\n")},
			{"get_task_by_external_id", map[string]any{"workspace_id": "other", "external_id": "ext-theirs"},
				http.MethodGet, "/api/v1/workspaces/other/tasks/by-external-id?external_id=ext-theirs", nil},
			{"release_external_id", map[string]any{"workspace_id": "other", "external_id": "ext-theirs"},
				http.MethodDelete, "/api/v1/workspaces/other/tasks/by-external-id?external_id=ext-theirs", nil},
			{"list_tasks", map[string]any{"workspace_id": "other", "limit": 5000},
				http.MethodGet, "/api/v1/workspaces/other/tasks?limit=5000", nil},
			{"update_task", map[string]any{"task_id": theirs.ID, "title": "Mine now"},
				http.MethodPatch, "/api/v1/tasks/" + theirs.ID, map[string]any{"title": "Mine now"}},
		}
		for _, tc := range tests {
			got := mcptest.ErrorText(t, tc.tool, mcptest.Call(t, cs, tc.tool, tc.args))
			status, want := e.restError(t, wsBot, tc.method, tc.path, tc.body)
			if status != http.StatusNotFound || got != want {
				t.Errorf("%s %v: tool error %q; REST %d %q, want the same 404 message", tc.tool, tc.args, got, status, want)
			}
		}
		ts := e.tasksOf(t, "other")
		if len(ts) != 1 || ts[0].ID != theirs.ID || ts[0].Title != "Theirs" || ts[0].ExternalID != "ext-theirs" {
			t.Errorf("workspace other holds %+v, want only its own task, unchanged", ts)
		}
	})
}

func TestInvalidExternalIDsGiveTheRESTError(t *testing.T) {
	t.Parallel()
	forEachEnv(t, func(t *testing.T, e *env) {
		cs := e.session(t, wsBot)
		for _, ext := range []string{"ext-1\n", "\text-1", "ext\x00-1", "ext\x7f", strings.Repeat("x", 256), " " + strings.Repeat("é", 128) + " "} {
			got := mcptest.ErrorText(t, "create_task", mcptest.Call(t, cs, "create_task", createArgs("ws", "T", ext)))
			status, want := e.restError(t, wsBot, http.MethodPost, "/api/v1/tasks", createArgs("ws", "T", ext))
			if status != http.StatusBadRequest || got != want {
				t.Errorf("create_task with external_id %q: tool error %q; REST %d %q, want the same 400 message", ext, got, status, want)
			}
			for _, tool := range []struct{ name, method string }{{"get_task_by_external_id", http.MethodGet}, {"release_external_id", http.MethodDelete}} {
				got := mcptest.ErrorText(t, tool.name, mcptest.Call(t, cs, tool.name, map[string]any{"workspace_id": "ws", "external_id": ext}))
				status, want := e.restError(t, wsBot, tool.method, "/api/v1/workspaces/ws/tasks/by-external-id?external_id="+url.QueryEscape(ext), nil)
				if status != http.StatusBadRequest || got != want {
					t.Errorf("%s with external_id %q: tool error %q; REST %d %q, want the same 400 message", tool.name, ext, got, status, want)
				}
			}
		}
		if ts := e.tasksOf(t, "ws"); len(ts) != 0 {
			t.Errorf("workspace ws holds %d tasks, want none", len(ts))
		}
	})
}

func TestConcurrentCreatesOfOneExternalIDMakeOneTask(t *testing.T) {
	t.Parallel()
	forEachEnv(t, func(t *testing.T, e *env) {
		const sessions = 6
		clients := make([]*mcp.ClientSession, sessions)
		for i := range clients {
			clients[i] = e.session(t, wsBot)
		}
		created, ids := mcptest.CreateAtOnce(t, clients, createArgs("ws", "Raced", "ext-raced"))
		if created != 1 || len(ids) != 1 {
			t.Errorf("%d of %d creates made a task, answering task IDs %v; want exactly 1 and 1", created, sessions, ids)
		}
		if ts := e.tasksOf(t, "ws"); len(ts) != 1 {
			t.Errorf("workspace ws holds %d tasks, want 1", len(ts))
		}
	})
}

func TestReleaseExternalIDFreesItForANewTask(t *testing.T) {
	t.Parallel()
	forEachEnv(t, func(t *testing.T, e *env) {
		cs := e.session(t, wsBot)
		first := mcptest.Decode[tasks.CreateJSON](t, "create_task", mcptest.Call(t, cs, "create_task", createArgs("ws", "One", "ext-r")))
		args := map[string]any{"workspace_id": "ws", "external_id": "ext-r"}
		if out := mcptest.Decode[map[string]bool](t, "release_external_id", mcptest.Call(t, cs, "release_external_id", args)); !out["released"] {
			t.Errorf("release answered %v, want released: true", out)
		}
		if msg := mcptest.ErrorText(t, "get_task_by_external_id", mcptest.Call(t, cs, "get_task_by_external_id", args)); msg != "task not found" {
			t.Errorf("lookup after release: %q, want \"task not found\"", msg)
		}
		if msg := mcptest.ErrorText(t, "release_external_id", mcptest.Call(t, cs, "release_external_id", args)); msg != "task not found" {
			t.Errorf("second release: %q, want \"task not found\"", msg)
		}
		second := mcptest.Decode[tasks.CreateJSON](t, "create_task", mcptest.Call(t, cs, "create_task", createArgs("ws", "Two", "ext-r")))
		if second.Deduplicated || second.ID == first.ID {
			t.Errorf("create after release = %+v, want a new task", second)
		}
		if ts := e.tasksOf(t, "ws"); len(ts) != 2 {
			t.Errorf("workspace ws holds %d tasks, want 2 (the released one stays)", len(ts))
		}
	})
}

func TestUpdateAndListTasks(t *testing.T) {
	t.Parallel()
	forEachEnv(t, func(t *testing.T, e *env) {
		cs := e.session(t, wsBot)
		var made []tasks.CreateJSON
		for _, ext := range []string{"ext-a", "ext-b", "ext-c"} {
			made = append(made, mcptest.Decode[tasks.CreateJSON](t, "create_task", mcptest.Call(t, cs, "create_task", createArgs("ws", "Task "+ext, ext))))
		}
		updated := mcptest.Decode[tasks.TaskJSON](t, "update_task", mcptest.Call(t, cs, "update_task",
			map[string]any{"task_id": made[1].ID, "title": "Renamed", "labels": []string{"agent"}, "archived": true}))
		if updated.Title != "Renamed" || !slices.Equal(updated.Labels, []string{"agent"}) || updated.ArchivedAt == nil || updated.ExternalID != "ext-b" {
			t.Errorf("updated = %+v, want renamed, labelled, archived, still holding ext-b", updated)
		}
		// Moving into a step at its WIP limit (doing: 1) is the REST refusal.
		mcptest.Decode[tasks.TaskJSON](t, "update_task", mcptest.Call(t, cs, "update_task", map[string]any{"task_id": made[0].ID, "workflow_step_id": "doing"}))
		got := mcptest.ErrorText(t, "update_task", mcptest.Call(t, cs, "update_task", map[string]any{"task_id": made[2].ID, "workflow_step_id": "doing"}))
		status, want := e.restError(t, wsBot, http.MethodPatch, "/api/v1/tasks/"+made[2].ID, map[string]any{"workflow_step_id": "doing"})
		if status != http.StatusConflict || got != want {
			t.Errorf("update into a full step: tool error %q; REST %d %q, want the same 409 message", got, status, want)
		}

		tests := []struct {
			name string
			args map[string]any
			want []string // external IDs of every page, in order
		}{
			{"default", map[string]any{"workspace_id": "ws"}, []string{"ext-a", "ext-c"}},
			{"archived too", map[string]any{"workspace_id": "ws", "include_archived": true}, []string{"ext-a", "ext-b", "ext-c"}},
			{"pages of one", map[string]any{"workspace_id": "ws", "include_archived": true, "limit": 1}, []string{"ext-a", "ext-b", "ext-c"}},
		}
		for _, tc := range tests {
			var got []string
			args := tc.args
			for pages := 0; ; pages++ {
				page := mcptest.Decode[tasks.TaskListJSON](t, "list_tasks", mcptest.Call(t, cs, "list_tasks", args))
				for _, tk := range page.Tasks {
					got = append(got, tk.ExternalID)
				}
				if page.NextCursor == "" || pages > len(tc.want) {
					break
				}
				args["cursor"] = page.NextCursor
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("%s: listed %v, want %v", tc.name, got, tc.want)
			}
		}
		msg := mcptest.ErrorText(t, "list_tasks", mcptest.Call(t, cs, "list_tasks", map[string]any{"workspace_id": "ws", "limit": 5000}))
		if _, want := e.restError(t, wsBot, http.MethodGet, "/api/v1/workspaces/ws/tasks?limit=5000", nil); msg != want {
			t.Errorf("list_tasks with limit 5000: %q, want the REST message %q", msg, want)
		}
	})
}

func TestDeliveryToolsAreTheOperatorRoutes(t *testing.T) {
	t.Parallel()
	forEachEnv(t, func(t *testing.T, e *env) {
		failedID := seedFailedDelivery(t, e)
		cs := e.session(t, admin)

		list := mcptest.Decode[inbox.DeliveryListJSON](t, "list_deliveries", mcptest.Call(t, cs, "list_deliveries", map[string]any{"status": "failed"}))
		if len(list.Deliveries) != 1 || list.Deliveries[0].ID != failedID {
			t.Fatalf("failed deliveries = %+v, want only %s", list.Deliveries, failedID)
		}
		// The provider's delivery ID finds it, without the hook ID the
		// gateway stores before it.
		list = mcptest.Decode[inbox.DeliveryListJSON](t, "list_deliveries", mcptest.Call(t, cs, "list_deliveries", map[string]any{"delivery_key": "k-failed"}))
		if len(list.Deliveries) != 1 || list.Deliveries[0].ID != failedID {
			t.Errorf("deliveries of delivery_key k-failed = %+v, want only %s", list.Deliveries, failedID)
		}
		byKey := mcptest.Decode[inbox.ReplayResultJSON](t, "replay_deliveries", mcptest.Call(t, cs, "replay_deliveries",
			map[string]any{"delivery_key": "1234:k-failed", "dry_run": true}))
		if byKey.Matched != 1 || len(byKey.Deliveries) != 1 || byKey.Deliveries[0].ID != failedID {
			t.Errorf("dry run of delivery_key 1234:k-failed = %+v, want the failed delivery alone", byKey)
		}
		errorCases := []struct {
			tool, path string
			args       map[string]any
			method     string
		}{
			{"list_deliveries", "/api/v1/deliveries?status=finished", map[string]any{"status": "finished"}, http.MethodGet},
			{"list_deliveries", "/api/v1/deliveries?received_after=yesterday", map[string]any{"received_after": "yesterday"}, http.MethodGet},
			{"replay_deliveries", "/api/v1/deliveries/replay", map[string]any{}, http.MethodPost},
			{"replay_deliveries", "/api/v1/deliveries/replay", map[string]any{"status": "failed", "max": 0}, http.MethodPost},
		}
		for _, tc := range errorCases {
			got := mcptest.ErrorText(t, tc.tool, mcptest.Call(t, cs, tc.tool, tc.args))
			status, want := e.restError(t, admin, tc.method, tc.path, tc.args)
			if status != http.StatusBadRequest || got != want {
				t.Errorf("%s %v: tool error %q; REST %d %q, want the same 400 message", tc.tool, tc.args, got, status, want)
			}
		}

		dry := mcptest.Decode[inbox.ReplayResultJSON](t, "replay_deliveries", mcptest.Call(t, cs, "replay_deliveries",
			map[string]any{"status": "failed", "dry_run": true}))
		if dry.Matched != 1 || dry.WouldReplay == nil || *dry.WouldReplay != 1 || dry.Replayed != nil || e.deliveryStatus(t, failedID) != store.DeliveryFailed {
			t.Errorf("dry run = %+v and the delivery is %s, want 1 matched, would_replay 1 and no replayed, nothing changed", dry, e.deliveryStatus(t, failedID))
		}
		done := mcptest.Decode[inbox.ReplayResultJSON](t, "replay_deliveries", mcptest.Call(t, cs, "replay_deliveries",
			map[string]any{"connection": "gh", "max": 10}))
		if done.Matched != 2 || done.Replayed == nil || *done.Replayed != 1 || done.WouldReplay != nil || done.Skipped != 1 || e.deliveryStatus(t, failedID) != store.DeliveryQueued {
			t.Errorf("replay = %+v and the failed delivery is %s, want 2 matched, 1 replayed, 1 skipped, it queued", done, e.deliveryStatus(t, failedID))
		}
	})
}

func TestWorkspaceTokenHasNoDeliveryTools(t *testing.T) {
	t.Parallel()
	forEachEnv(t, func(t *testing.T, e *env) {
		failedID := seedFailedDelivery(t, e)
		cs := e.session(t, wsBot)
		for _, tool := range []string{"list_deliveries", "replay_deliveries"} {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"status": "failed"}})
			if err == nil && !res.IsError {
				t.Errorf("%s as a workspace token answered %s, want an error", tool, mcptest.Text(res))
			}
		}
		if got := e.deliveryStatus(t, failedID); got != store.DeliveryFailed {
			t.Errorf("the failed delivery is %s, want it left failed", got)
		}
	})
}

// seedFailedDelivery stores two deliveries of connection "gh": one that
// failed, whose ID is returned, and one still queued.
func seedFailedDelivery(t *testing.T, e *env) string {
	t.Helper()
	ctx := context.Background()
	at := time.Date(2026, 3, 1, 11, 0, 0, 0, time.UTC)
	var ds []store.Delivery
	// The failed delivery's key is GitHub's form, "<hook id>:<GUID>".
	for i, key := range []string{"1234:k-failed", "k-queued"} {
		ds = append(ds, store.Delivery{ConnectionID: "gh", Provider: "github", Event: "issues", DeliveryKey: key,
			Headers: `{}`, Body: []byte(`{}`), ReceivedAt: at.Add(time.Duration(i) * time.Second)})
	}
	if _, err := e.st.InsertDeliveries(ctx, ds); err != nil {
		t.Fatalf("insert deliveries: %v", err)
	}
	claimed, err := e.st.ClaimDeliveries(ctx, "test-worker", at.Add(time.Minute), time.Minute, 1)
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim = %v, %v", claimed, err)
	}
	d := claimed[0]
	now := at.Add(time.Minute)
	d.Status, d.ProcessedAt, d.NextAttemptAt, d.LastError = store.DeliveryFailed, &now, now, "parse: malformed payload"
	if err := e.st.FinishDelivery(ctx, d, "test-worker"); err != nil {
		t.Fatalf("finish: %v", err)
	}
	return d.ID
}

func (e *env) deliveryStatus(t *testing.T, id string) string {
	t.Helper()
	d, err := e.st.GetDelivery(context.Background(), id)
	if err != nil {
		t.Fatalf("get delivery %s: %v", id, err)
	}
	return d.Status
}

// failingTasks fails every call with an error that carries no code: an
// internal error.
type failingTasks struct{}

var errBroken = errors.New("connection reset while reading the tasks table")

func (failingTasks) Create(context.Context, httpapi.Principal, []byte) (tasks.CreateJSON, error) {
	return tasks.CreateJSON{}, errBroken
}
func (failingTasks) Lookup(context.Context, httpapi.Principal, string, string) (tasks.LookupJSON, error) {
	return tasks.LookupJSON{}, errBroken
}
func (failingTasks) Release(context.Context, httpapi.Principal, string, string) error {
	return errBroken
}
func (failingTasks) List(context.Context, httpapi.Principal, string, url.Values) (tasks.TaskListJSON, error) {
	return tasks.TaskListJSON{}, errBroken
}
func (failingTasks) Update(context.Context, httpapi.Principal, string, func() ([]byte, error)) (tasks.TaskJSON, error) {
	return tasks.TaskJSON{}, errBroken
}

func TestInternalErrorsAreGenericAndLogged(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	gw := mcpserver.New(failingTasks{}, nil, nil, slog.New(slog.NewJSONHandler(&logs, nil)), "test")
	cs := mcptest.ConnectInMemory(t, gw.Server(wsBot))
	if got := mcptest.ErrorText(t, "create_task", mcptest.Call(t, cs, "create_task", createArgs("ws", "T", "ext-1"))); got != "internal error" {
		t.Errorf("tool error = %q, want the REST API's generic \"internal error\"", got)
	}
	var line struct {
		Level     string `json:"level"`
		Tool      string `json:"mcp_tool"`
		Principal string `json:"principal"`
		Error     string `json:"error"`
	}
	if err := json.Unmarshal(logs.Bytes(), &line); err != nil {
		t.Fatalf("log %q: %v", logs.String(), err)
	}
	if line.Level != "ERROR" || line.Tool != "create_task" || line.Principal != "ws-bot" || line.Error != errBroken.Error() {
		t.Errorf("logged %s, want one error line naming the tool, the principal and the cause", logs.String())
	}
}

func TestCreateTaskWithoutExternalIDMakesATaskEachTime(t *testing.T) {
	t.Parallel()
	e := newEnv(t, openSQLite(t))
	cs := e.session(t, wsBot)
	for _, args := range []map[string]any{
		{"workspace_id": "ws", "title": "No identity"},
		{"workspace_id": "ws", "title": "No identity", "external_id": nil},
		{"workspace_id": "ws", "title": "No identity", "external_id": ""},
		{"workspace_id": "ws", "title": "No identity", "external_id": " \u00a0 "},
	} {
		got := mcptest.Decode[tasks.CreateJSON](t, "create_task", mcptest.Call(t, cs, "create_task", args))
		if got.Deduplicated || got.ExternalID != "" {
			t.Errorf("create_task %v = %+v, want a new task without an external ID", args, got)
		}
	}
	if ts := e.tasksOf(t, "ws"); len(ts) != 4 {
		t.Errorf("workspace ws holds %d tasks, want 4", len(ts))
	}
}

// create_task is idempotent but not read-only, and its description says
// what an agent must do with that (docs/design.md, "External-ID
// idempotency"): it creates when nothing holds the identity, so it is not a
// way to check; deduplicated: true means nothing was created; and with
// creation_complete: false another create may still be running, so the
// task is not ready and the identity must not be released to create again.
func TestCreateTaskDescriptionSaysWhatAnAgentMustNotDo(t *testing.T) {
	t.Parallel()
	e := newEnv(t, openSQLite(t))
	cs := e.session(t, wsBot)
	description := ""
	for tool, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatalf("list tools: %v", err)
		}
		if tool.Name == "create_task" {
			description = tool.Description
		}
	}
	points := []struct {
		point   string
		phrases []string
	}{
		{"create-if-absent, not a lookup; never called to check", []string{
			"create-if-absent, not a lookup", "when no task holds the external_id, this call creates one",
			"never call it just to check"}},
		{"deduplicated: true means it already existed", []string{
			"deduplicated: true means the task already existed and nothing was created",
			"do not report that you created a task"}},
		{"deduplicated: true with creation_complete: false: another create in progress", []string{
			"deduplicated: true together with creation_complete: false", "another create claimed this external_id",
			"may still be in progress", "do not assume the task is ready",
			"do not release the external_id and create again"}},
	}
	for _, p := range points {
		for _, phrase := range p.phrases {
			if !strings.Contains(description, phrase) {
				t.Errorf("create_task description does not say %q (%s):\n%s", phrase, p.point, description)
			}
		}
	}
}

// TestListTaskEvents: list_task_events answers the feed's page, as the
// REST route does, for the caller's workspaces only; the events the tools
// make name the agent tools as their cause.
func TestListTaskEvents(t *testing.T) {
	t.Parallel()
	forEachEnv(t, func(t *testing.T, e *env) {
		cs := e.session(t, wsBot)
		created := mcptest.Decode[tasks.CreateJSON](t, "create_task",
			mcptest.Call(t, cs, "create_task", createArgs("ws", "Watched", "ext-watched")))
		mcptest.Call(t, cs, "update_task", map[string]any{"task_id": created.ID, "title": "Watched closely"})
		page := mcptest.Decode[feedPage](t, "list_task_events",
			mcptest.Call(t, cs, "list_task_events", map[string]any{"workspace_id": "ws"}))
		if len(page.Events) != 2 || page.Events[0].Type != events.TypeCreated || page.Events[1].Type != events.TypeUpdated ||
			page.NextCursor != page.Events[1].ID {
			t.Fatalf("page = %+v, want the create and the update", page)
		}
		var data struct {
			Task  tasks.TaskJSON `json:"task"`
			Cause events.Cause   `json:"cause"`
		}
		if err := json.Unmarshal(page.Events[1].Data, &data); err != nil {
			t.Fatal(err)
		}
		// The data as the REST route answers it.
		status, rest := e.restJSON(t, wsBot, http.MethodGet, "/api/v1/workspaces/ws/events", nil)
		restEvents, _ := rest["events"].([]any)
		var restData map[string]any
		if status == http.StatusOK && len(restEvents) == 2 {
			restData, _ = restEvents[1].(map[string]any)["data"].(map[string]any)
		}
		var toolData map[string]any
		if err := json.Unmarshal(page.Events[1].Data, &toolData); err != nil || !reflect.DeepEqual(toolData, restData) {
			t.Errorf("update's data = %v, the REST route's %v", toolData, restData)
		}
		if data.Task.Title != "Watched closely" || data.Cause != (events.Cause{Actor: events.ActorMCP}) {
			t.Errorf("update's data = %+v, want the renamed task, caused by the agent tools", data)
		}
		// The same page as the REST route's.
		status, body := e.restJSON(t, wsBot, http.MethodGet, "/api/v1/workspaces/ws/events?type=task.updated&after="+page.Events[0].ID, nil)
		next := mcptest.Decode[feedPage](t, "list_task_events", mcptest.Call(t, cs, "list_task_events",
			map[string]any{"workspace_id": "ws", "type": "task.updated", "after": page.Events[0].ID, "limit": 10, "wait": "0"}))
		if status != http.StatusOK || len(next.Events) != 1 || next.Events[0].ID != page.Events[1].ID ||
			body["next_cursor"] != next.NextCursor {
			t.Errorf("filtered page = %+v; REST answered %d %v", next, status, body)
		}
		for _, tt := range []struct {
			args map[string]any
			want string
		}{
			{map[string]any{"workspace_id": "other"}, "workspace not found"},
			{map[string]any{"workspace_id": "ws", "type": "task.closed"}, `unknown event type "task.closed"`},
			{map[string]any{"workspace_id": "ws", "wait": "45s"}, "wait is at most 30s"},
		} {
			if got := mcptest.ErrorText(t, "list_task_events", mcptest.Call(t, cs, "list_task_events", tt.args)); got != tt.want {
				t.Errorf("list_task_events %v = %q, want %q", tt.args, got, tt.want)
			}
		}
	})
}

// feedPage is a page of list_task_events, each event's data kept raw.
type feedPage struct {
	Events []struct {
		ID   string          `json:"id"`
		Type string          `json:"type"`
		Data json.RawMessage `json:"data"`
	} `json:"events"`
	NextCursor string `json:"next_cursor"`
}
