package mcpserver_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/trackergateway/gateway/internal/httpapi"
)

// callRaw posts a tools/call whose arguments are the raw JSON args, as
// admin, over streamable HTTP (the in-memory client would re-encode them),
// and returns the tool result.
func (e *env) callRaw(t *testing.T, tool, args string) (isError bool, text string) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.mcp.ServeHTTP(w, r.WithContext(httpapi.WithPrincipal(r.Context(), admin)))
	}))
	defer srv.Close()
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + `}}`
	req, err := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Result struct {
			IsError bool `json:"isError"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"result"`
	}
	if err := json.Unmarshal(raw, &out); err != nil || len(out.Result.Content) == 0 {
		t.Fatalf("%s = %d %q, want a tool result", tool, resp.StatusCode, raw)
	}
	return out.Result.IsError, out.Result.Content[0].Text
}

// restRaw posts body as admin and returns the status and the error message.
func (e *env) restRaw(t *testing.T, method, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, e.rest.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tokenOf[admin.Name])
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.rest.Client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	var out map[string]string
	raw, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(raw, &out)
	return resp.StatusCode, out["error"]
}

// Tool arguments that are not UTF-8 text are refused naming the field, as
// the REST API refuses the same body, and create nothing.
func TestInvalidArgumentTextIsRefused(t *testing.T) {
	t.Parallel()
	invalid := []struct{ name, text string }{
		{"raw byte", "id-\xff"},
		{"lone high surrogate", `id-\ud800`},
		{"lone low surrogate", `id-\udc00`},
		{"reversed pair", `id-\ude00\ud83d`},
	}
	forEachEnv(t, func(t *testing.T, e *env) {
		for _, bad := range invalid {
			for _, tc := range []struct {
				tool, args, field string
				method, path      string // the REST route taking the same body, if any
			}{
				{"create_task", `{"workspace_id":"ws","title":"T","external_id":"` + bad.text + `"}`, "external_id", http.MethodPost, "/api/v1/tasks"},
				{"create_task", `{"workspace_id":"ws","title":"T","labels":["ok","` + bad.text + `"]}`, "labels[1]", http.MethodPost, "/api/v1/tasks"},
				{"get_task_by_external_id", `{"workspace_id":"ws","external_id":"` + bad.text + `"}`, "external_id", "", ""},
				{"update_task", `{"task_id":"00000000-0000-0000-0000-000000000000","title":"` + bad.text + `"}`, "title", "", ""},
				{"replay_deliveries", `{"connection":"` + bad.text + `","dry_run":true}`, "connection", http.MethodPost, "/api/v1/deliveries/replay"},
				{"list_deliveries", `{"error_contains":"` + bad.text + `"}`, "error_contains", "", ""},
			} {
				want := tc.field + " is not valid UTF-8 text"
				if isError, got := e.callRaw(t, tc.tool, tc.args); !isError || got != want {
					t.Errorf("%s %s: error %t %q, want %q", tc.tool, bad.name, isError, got, want)
				}
				if tc.path == "" {
					continue
				}
				if status, got := e.restRaw(t, tc.method, tc.path, tc.args); status != http.StatusBadRequest || got != want {
					t.Errorf("%s %s %s: %d %q, want 400 %q", tc.method, tc.path, bad.name, status, got, want)
				}
			}
		}
		if ts := e.tasksOf(t, "ws"); len(ts) != 0 {
			t.Errorf("workspace ws holds %d tasks, want none", len(ts))
		}

		// Valid text, the replacement character and surrogate pairs
		// included, is each its own external ID.
		for _, ext := range []string{`id-\ufffd`, "id-\xef\xbf\xbd-raw", `id-\ud83d\ude00`, `id-x`} {
			if isError, got := e.callRaw(t, "create_task", `{"workspace_id":"ws","title":"T \ud83d\ude00","external_id":"`+ext+`"}`); isError {
				t.Errorf("create_task with external_id %q: %s", ext, got)
			}
		}
		if ts := e.tasksOf(t, "ws"); len(ts) != 4 {
			t.Errorf("workspace ws holds %d tasks, want 4 distinct ones", len(ts))
		}
	})
}
