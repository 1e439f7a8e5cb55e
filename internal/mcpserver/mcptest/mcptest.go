// Package mcptest calls MCP tools with the SDK's own client, for the tests
// of the gateway's MCP surface over each transport.
package mcptest

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trackergateway/gateway/internal/tasks"
)

// Connect connects a new client over transport and closes it at cleanup.
func Connect(t testing.TB, transport mcp.Transport) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "gateway-test", Version: "v0"}, nil)
	cs, err := client.Connect(context.Background(), transport, nil)
	if err != nil {
		t.Fatalf("connect an MCP client: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// ConnectInMemory serves server over the in-memory transport and connects
// a client to it.
func ConnectInMemory(t testing.TB, server *mcp.Server) *mcp.ClientSession {
	t.Helper()
	serverSide, clientSide := mcp.NewInMemoryTransports()
	ss, err := server.Connect(context.Background(), serverSide, nil)
	if err != nil {
		t.Fatalf("connect the MCP server: %v", err)
	}
	// Registered before the client's cleanup, so it runs after it: the
	// server session ends once the client has closed.
	t.Cleanup(func() { _ = ss.Wait() })
	return Connect(t, clientSide)
}

// Call calls a tool; a protocol error (as opposed to a tool error) fails the
// test.
func Call(t testing.TB, cs *mcp.ClientSession, tool string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", tool, err)
	}
	return res
}

// Decode returns the structured content of a successful call; a tool error
// fails the test.
func Decode[T any](t testing.TB, tool string, res *mcp.CallToolResult) T {
	t.Helper()
	var out T
	if res.IsError {
		t.Fatalf("%s: tool error %q, want success", tool, Text(res))
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatalf("%s: structured content: %v", tool, err)
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s: decode structured content %s: %v", tool, b, err)
	}
	return out
}

// ErrorText returns the message of a tool error; a success fails the test.
func ErrorText(t testing.TB, tool string, res *mcp.CallToolResult) string {
	t.Helper()
	if !res.IsError {
		t.Fatalf("%s succeeded with %s, want a tool error", tool, Text(res))
	}
	return Text(res)
}

// Text joins the text content of a result.
func Text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// ToolNames lists the tools the server offers, in its order.
func ToolNames(t testing.TB, cs *mcp.ClientSession) []string {
	t.Helper()
	var names []string
	for tool, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatalf("list tools: %v", err)
		}
		names = append(names, tool.Name)
	}
	return names
}

// CreateAtOnce calls create_task with args on every session at the same
// moment. It returns how many of the answers made a task (were not
// deduplicated) and the distinct task IDs they name.
func CreateAtOnce(t testing.TB, sessions []*mcp.ClientSession, args any) (created int, taskIDs []string) {
	t.Helper()
	results := make([]*mcp.CallToolResult, len(sessions))
	errs := make([]error, len(sessions))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, cs := range sessions {
		wg.Go(func() {
			<-start
			results[i], errs[i] = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "create_task", Arguments: args})
		})
	}
	close(start)
	wg.Wait()
	for i, res := range results {
		if errs[i] != nil {
			t.Fatalf("session %d: call create_task: %v", i, errs[i])
		}
		got := Decode[tasks.CreateJSON](t, "create_task", res)
		if !got.Deduplicated {
			created++
		}
		if !slices.Contains(taskIDs, got.ID) {
			taskIDs = append(taskIDs, got.ID)
		}
	}
	return created, taskIDs
}
