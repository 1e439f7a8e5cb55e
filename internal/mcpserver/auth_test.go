package mcpserver_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/trackergateway/gateway/internal/httpapi"
)

// postToolsList posts a tools/list to /mcp with token ("" for none) and
// returns the status.
func (e *env) postToolsList(t *testing.T, token string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.rest.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := e.rest.Client().Do(req)
	if err != nil {
		t.Fatalf("POST /mcp: %v", err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// Token-less requests to /mcp from an address throttle its failures, never
// its valid token.
func TestValidTokenPassesAThrottledAddress(t *testing.T) {
	t.Parallel()
	e := newEnv(t, openSQLite(t))
	for range httpapi.DefaultFailureBurst {
		e.postToolsList(t, "")
	}
	for _, token := range []string{"", "wrong-token-0123456789"} {
		if status := e.postToolsList(t, token); status != http.StatusTooManyRequests {
			t.Errorf("POST /mcp with %q after %d failures = %d, want 429", token, httpapi.DefaultFailureBurst, status)
		}
	}
	for _, p := range []httpapi.Principal{admin, wsBot} {
		if status := e.postToolsList(t, tokenOf[p.Name]); status != http.StatusOK {
			t.Errorf("POST /mcp as %s from the throttled address = %d, want 200", p.Name, status)
		}
	}
}
