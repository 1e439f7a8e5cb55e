package tasks_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// stepsJSON is n steps s0..s(n-1) as a JSON list.
func stepsJSON(n int) string {
	steps := make([]string, n)
	for i := range steps {
		steps[i] = fmt.Sprintf(`{"id":"s%d"}`, i)
	}
	return "[" + strings.Join(steps, ",") + "]"
}

// TestCreateWorkspaceBounds: POST /api/v1/workspaces enforces the same
// bounds as the YAML (config.ValidateWorkspace), and a refused request
// creates nothing.
func TestCreateWorkspaceBounds(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 201)
	tests := []struct {
		name    string
		body    string
		status  int
		message string
	}{
		{"defaults", `{"id":"ID","task_prefix":"W"}`, 201, ""},
		{"longest name and 50 steps", `{"id":"ID","task_prefix":"W","name":"` + long[2:] + `","steps":` + stepsJSON(50) + `}`, 201, ""},
		{"wip_limit 0 is unlimited", `{"id":"ID","task_prefix":"W","steps":[{"id":"a","wip_limit":0}]}`, 201, ""},
		{"name too long", `{"id":"ID","task_prefix":"W","name":"` + long + `"}`, 400, "name is longer than 200 characters"},
		{"blank name", `{"id":"ID","task_prefix":"W","name":"   "}`, 400, "name is required"},
		{"name with a tab", `{"id":"ID","task_prefix":"W","name":"a\tb"}`, 400, "name contains a control character"},
		{"name with NUL", `{"id":"ID","task_prefix":"W","name":"a\u0000b"}`, 400, "name contains a control character"},
		{"id not a slug", `{"id":"W 1","task_prefix":"W"}`, 400, `id "W 1" must be a lower-case slug (a-z, 0-9, - and _, at most 63)`},
		{"bad task_prefix", `{"id":"ID","task_prefix":"w"}`, 400, `task_prefix "w" must be 1-10 upper-case letters or digits`},
		{"51 steps", `{"id":"ID","task_prefix":"W","steps":` + stepsJSON(51) + `}`, 400, "51 steps: at most 50 are allowed"},
		{"step id not a slug", `{"id":"ID","task_prefix":"W","steps":[{"id":"In Progress"}]}`, 400, `step id "In Progress" must be a lower-case slug (a-z, 0-9, - and _, at most 63)`},
		{"step twice", `{"id":"ID","task_prefix":"W","steps":[{"id":"a"},{"id":"a"}]}`, 400, `step "a" defined twice`},
		{"step name too long", `{"id":"ID","task_prefix":"W","steps":[{"id":"a","name":"` + long + `"}]}`, 400, `step "a" name is longer than 200 characters`},
		{"step name with a newline", `{"id":"ID","task_prefix":"W","steps":[{"id":"a","name":"x\ny"}]}`, 400, `step "a" name contains a control character`},
		{"negative wip_limit", `{"id":"ID","task_prefix":"W","steps":[{"id":"a","wip_limit":-1}]}`, 400, `step "a": wip_limit must be between 0 (unlimited) and 10000`},
		{"huge wip_limit", `{"id":"ID","task_prefix":"W","steps":[{"id":"a","wip_limit":10001}]}`, 400, `step "a": wip_limit must be between 0 (unlimited) and 10000`},
	}
	forEachEnv(t, func(t *testing.T, e *env) {
		for i, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				id := fmt.Sprintf("w%d", i)
				r := e.do(t, http.MethodPost, "/api/v1/workspaces", adminToken, strings.Replace(tt.body, `"ID"`, `"`+id+`"`, 1))
				if tt.status != http.StatusCreated {
					wantError(t, r, tt.status, tt.message)
					if got := e.do(t, http.MethodGet, "/api/v1/workspaces", adminToken, ""); strings.Contains(got.raw, `"`+id+`"`) {
						t.Errorf("workspaces after a refused create = %s, want no %s", got.raw, id)
					}
					return
				}
				if r.status != http.StatusCreated {
					t.Fatalf("status = %d, want 201 (body %s)", r.status, r.raw)
				}
				for _, s := range r.body["steps"].([]any) {
					if limit := s.(map[string]any)["wip_limit"]; limit != nil {
						t.Errorf("step %v: wip_limit = %v, want null (unlimited)", s, limit)
					}
				}
			})
		}
	})
}
