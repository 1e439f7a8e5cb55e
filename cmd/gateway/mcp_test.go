package main

// The agent tools end to end, with the MCP SDK's own client: over HTTP
// against the running server (POST /mcp) and over stdio against the built
// binary (gateway mcp), on both dialects.

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trackergateway/gateway/internal/inbox"
	"github.com/trackergateway/gateway/internal/mcpserver/mcptest"
	"github.com/trackergateway/gateway/internal/tasks"
)

// writeMCPConfig is the test configuration plus workspace ops and the
// eng-bot token.
func writeMCPConfig(t *testing.T) string {
	t.Helper()
	cfg := strings.Replace(testConfig, "connections:\n", `  - id: ops
    name: Operations
    task_prefix: OPS
    steps:
      - {id: backlog, name: Backlog}
connections:
`, 1) + "tokens:\n  - {name: eng-bot, token: " + engBotToken + ", workspaces: [eng]}\n"
	path := filepath.Join(t.TempDir(), "gateway-mcp.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// bearer adds a bearer token to every request.
type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

// mcpHTTP connects a new MCP session to the gateway's /mcp with token.
func (g *gateway) mcpHTTP(t *testing.T, token string) *mcp.ClientSession {
	t.Helper()
	return mcptest.Connect(t, &mcp.StreamableClientTransport{Endpoint: g.URL + "/mcp",
		HTTPClient: &http.Client{Timeout: waitTimeout, Transport: bearer{token: token, base: g.client.Transport}}})
}

// stdioSession starts `gateway mcp` from the built binary on dbURL and
// connects to it over its stdin and stdout.
func stdioSession(t *testing.T, dbURL, cfg string) *mcp.ClientSession {
	t.Helper()
	cmd := exec.Command(gatewayBinary(t), "mcp", "--database-url", dbURL, "--config", cfg)
	cmd.Env = subprocessEnv()
	logs := &logTail{}
	cmd.Stderr = logs
	t.Cleanup(func() {
		if len(logs.leaked) > 0 {
			t.Errorf("gateway mcp logged secrets %q", logs.leaked)
		}
		if t.Failed() {
			t.Logf("gateway mcp logs (tail):\n%s", logs)
		}
	})
	return mcptest.Connect(t, &mcp.CommandTransport{Command: cmd})
}

// postToolsList posts a tools/list request to /mcp, with token and host
// when given, and returns the status.
func (g *gateway) postToolsList(t *testing.T, token, host string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, g.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := g.client.Do(req)
	if err != nil {
		t.Fatalf("POST /mcp: %v", err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func createTaskArgs(ws, title, ext string) map[string]any {
	return map[string]any{"workspace_id": ws, "title": title, "external_id": ext}
}

// createTwice creates one external ID twice on cs and requires one task,
// the second answer deduplicated.
func createTwice(t *testing.T, cs *mcp.ClientSession, g *gateway, ext string) {
	t.Helper()
	first := mcptest.Decode[tasks.CreateJSON](t, "create_task", mcptest.Call(t, cs, "create_task", createTaskArgs(testWorkspace, "Filed by an agent", ext)))
	second := mcptest.Decode[tasks.CreateJSON](t, "create_task", mcptest.Call(t, cs, "create_task", createTaskArgs(testWorkspace, "Filed again", ext)))
	if first.Deduplicated || !first.CreationComplete || first.ExternalID != ext {
		t.Errorf("first create = %+v, want a new task holding %s", first, ext)
	}
	if !second.Deduplicated || !second.CreationComplete || second.ID != first.ID || second.Title != "Filed by an agent" {
		t.Errorf("second create = %+v, want task %s, deduplicated", second, first.ID)
	}
	if n := countExternalID(t, g, ext); n != 1 {
		t.Errorf("%d tasks hold %s, want 1", n, ext)
	}
}

func countExternalID(t *testing.T, g *gateway, ext string) int {
	t.Helper()
	n := 0
	for _, tk := range g.tasks(t) {
		if tk.ExternalID == ext {
			n++
		}
	}
	return n
}

// invalidExternalIDs are refused with the REST create's 400 message.
func invalidExternalIDs(t *testing.T, cs *mcp.ClientSession, g *gateway) {
	t.Helper()
	for _, ext := range []string{"agent:1\n", "\tagent:1", strings.Repeat("a", 256)} {
		got := mcptest.ErrorText(t, "create_task", mcptest.Call(t, cs, "create_task", createTaskArgs(testWorkspace, "Bad", ext)))
		status, body := g.apiDo(t, http.MethodPost, "/api/v1/tasks", createTaskArgs(testWorkspace, "Bad", ext))
		var rest struct {
			Error string `json:"error"`
		}
		_ = json.Unmarshal(body, &rest)
		if status != http.StatusBadRequest || got != rest.Error {
			t.Errorf("external_id %q: tool error %q; REST %d %s, want the same 400 message", ext, got, status, body)
		}
	}
	if ts := g.tasks(t); len(ts) != 0 {
		t.Errorf("the workspace holds %v, want no task", taskSummaries(ts))
	}
}

// concurrentCreates creates one external ID from every session at once and
// requires exactly one task.
func concurrentCreates(t *testing.T, sessions []*mcp.ClientSession, g *gateway, ext string) {
	t.Helper()
	created, ids := mcptest.CreateAtOnce(t, sessions, createTaskArgs(testWorkspace, "Raced", ext))
	if created != 1 || len(ids) != 1 {
		t.Errorf("%d of %d concurrent creates made a task, answering task IDs %v; want 1 and 1", created, len(sessions), ids)
	}
	if n := countExternalID(t, g, ext); n != 1 {
		t.Errorf("%d tasks hold %s, want 1", n, ext)
	}
}

func TestMCPOverHTTP(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, dialect string) {
		g := startGateway(t, newDatabaseURL(t, dialect), "--config", writeMCPConfig(t))

		t.Run("no token", func(t *testing.T) {
			if status := g.postToolsList(t, "", ""); status != http.StatusUnauthorized {
				t.Errorf("POST /mcp without a token = %d, want 401", status)
			}
			client := mcp.NewClient(&mcp.Implementation{Name: "no-token", Version: "v0"}, nil)
			if cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: g.URL + "/mcp", HTTPClient: g.client}, nil); err == nil {
				cs.Close()
				t.Errorf("an MCP client without a token connected, want a refusal")
			}
		})

		t.Run("behind a reverse proxy", func(t *testing.T) {
			// A proxy on the same host forwards the public host name.
			if status := g.postToolsList(t, engBotToken, "gateway.example.com"); status != http.StatusOK {
				t.Errorf("POST /mcp with Host gateway.example.com = %d, want 200", status)
			}
		})

		// First, while the workspace is empty.
		t.Run("invalid external IDs", func(t *testing.T) { invalidExternalIDs(t, g.mcpHTTP(t, engBotToken), g) })

		admin := g.mcpHTTP(t, testAdminToken)
		t.Run("create twice", func(t *testing.T) { createTwice(t, admin, g, "agent:http-twice") })

		t.Run("other workspace", func(t *testing.T) {
			bot := g.mcpHTTP(t, engBotToken)
			if names := mcptest.ToolNames(t, bot); strings.Contains(strings.Join(names, " "), "deliveries") {
				t.Errorf("a workspace token is offered %v, want no operator tools", names)
			}
			tests := []struct {
				tool string
				args map[string]any
				want string
			}{
				{"create_task", createTaskArgs("ops", "Not mine", "agent:ops-1"), "task not created"},
				{"get_task_by_external_id", map[string]any{"workspace_id": "ops", "external_id": "agent:ops-1"}, "task not found"},
				{"release_external_id", map[string]any{"workspace_id": "ops", "external_id": "agent:ops-1"}, "task not found"},
				{"list_tasks", map[string]any{"workspace_id": "ops"}, "workspace not found"},
			}
			for _, tc := range tests {
				if got := mcptest.ErrorText(t, tc.tool, mcptest.Call(t, bot, tc.tool, tc.args)); got != tc.want {
					t.Errorf("%s in ops as eng-bot: %q, want %q", tc.tool, got, tc.want)
				}
			}
			var page struct {
				Tasks []task `json:"tasks"`
			}
			g.getJSON(t, "/api/v1/workspaces/ops/tasks?include_archived=true", &page)
			if len(page.Tasks) != 0 {
				t.Errorf("workspace ops holds %v, want nothing created there", taskSummaries(page.Tasks))
			}
			// Its own workspace answers.
			mcptest.Decode[tasks.CreateJSON](t, "create_task", mcptest.Call(t, bot, "create_task", createTaskArgs(testWorkspace, "Mine", "agent:eng-bot")))
		})

		t.Run("concurrent sessions", func(t *testing.T) {
			sessions := []*mcp.ClientSession{g.mcpHTTP(t, engBotToken), g.mcpHTTP(t, engBotToken), g.mcpHTTP(t, testAdminToken), g.mcpHTTP(t, engBotToken)}
			concurrentCreates(t, sessions, g, "agent:http-raced")
		})
	})
}

// gateway mcp shares the database of a running gateway, whose REST API the
// tools' answers are checked against.
func TestMCPOverStdio(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, dialect string) {
		dbURL := newDatabaseURL(t, dialect)
		cfg := writeMCPConfig(t)
		g := startGateway(t, dbURL, "--config", cfg)
		cs := stdioSession(t, dbURL, cfg)
		if names := mcptest.ToolNames(t, cs); len(names) != 8 {
			t.Errorf("gateway mcp offers %v, want the 8 tools of the admin", names)
		}
		invalidExternalIDs(t, cs, g)
		createTwice(t, cs, g, "agent:stdio-twice")
		concurrentCreates(t, []*mcp.ClientSession{cs, stdioSession(t, dbURL, cfg), stdioSession(t, dbURL, cfg)}, g, "agent:stdio-raced")

		deliveries := mcptest.Decode[inbox.DeliveryListJSON](t, "list_deliveries", mcptest.Call(t, cs, "list_deliveries", map[string]any{"limit": 5}))
		if len(deliveries.Deliveries) != 0 {
			t.Errorf("list_deliveries = %+v, want none (no webhook was posted)", deliveries)
		}
	})
}
