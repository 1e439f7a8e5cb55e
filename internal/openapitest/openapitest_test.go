package openapitest

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/trackergateway/gateway/docs"
	"github.com/trackergateway/gateway/internal/events"
)

const (
	taskID   = "0193a4f2-7c1e-7b3a-9d2e-5f6a7b8c9d0e"
	goodTask = `{"id":"` + taskID + `","workspace_id":"eng","identifier":"ENG-1",` +
		`"title":"Spelling error","description":"","workflow_step_id":"backlog","labels":[],` +
		`"archived_at":null,"created_at":"2026-01-02T03:04:05.123456Z","updated_at":"2026-01-02T03:04:05.123456Z",` +
		`"external_id":"github:github.com:issue:1",` +
		`"source":{"provider":"github","kind":"issue","ref":"acme/app#1","url":"https://github.com/acme/app/issues/1"}}`
)

// withField returns the JSON object doc with field set to the raw JSON
// value, or removed when value is "".
func withField(t *testing.T, doc, field, value string) string {
	t.Helper()
	key := `"` + field + `":`
	i := strings.Index(doc, key)
	if i < 0 {
		if value == "" {
			t.Fatalf("no field %s in %s", field, doc)
		}
		return strings.Replace(doc, "{", "{"+key+value+",", 1)
	}
	// The value ends at the next top-level comma or the closing brace.
	depth, j := 0, i+len(key)
	for ; j < len(doc); j++ {
		switch doc[j] {
		case '{', '[':
			depth++
		case '}', ']':
			depth--
		}
		if depth < 0 || (depth == 0 && doc[j] == ',') {
			break
		}
	}
	if value == "" {
		if doc[j] == ',' {
			j++
		} else if doc[i-1] == ',' {
			i--
		}
		return doc[:i] + doc[j:]
	}
	return doc[:i] + key + value + doc[j:]
}

func jsonHeader() http.Header { return http.Header{"Content-Type": {"application/json"}} }

func TestEmbeddedDocumentLoads(t *testing.T) {
	t.Parallel()
	s, err := Embedded()
	if err != nil {
		t.Fatalf("Embedded() = %v", err)
	}
	ops := s.Operations()
	for _, want := range []string{"POST /webhooks/{connection}", "POST /api/v1/tasks", "GET /readyz",
		"POST /api/v1/creations/{operation_id}/steps/resolve", "GET /api/v1/openapi.yaml"} {
		if !slices.Contains(ops, want) {
			t.Errorf("Operations() = %v, missing %q", ops, want)
		}
	}
	if !slices.IsSorted(ops) {
		t.Errorf("Operations() = %v, want sorted", ops)
	}
	if !slices.Equal(Operations(), ops) {
		t.Errorf("Operations() = %v, want the embedded document's %v", Operations(), ops)
	}
	if got := s.Methods("/api/v1/tasks/{id}"); !slices.Equal(got, []string{"DELETE", "GET", "PATCH"}) {
		t.Errorf("Methods(/api/v1/tasks/{id}) = %v, want [DELETE GET PATCH]", got)
	}
}

func TestLoadRefusesInvalidDocuments(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, doc string }{
		{"not YAML", "openapi: [3.1.0"},
		{"OpenAPI 3.0", "openapi: 3.0.3\ninfo: {title: x, version: '1'}\npaths: {}\n"},
		{"no info", "openapi: 3.1.0\npaths: {}\n"},
		{"dangling reference", "openapi: 3.1.0\ninfo: {title: x, version: '1'}\npaths:\n  /x:\n    get:\n" +
			"      responses:\n        '200':\n          description: ok\n          content:\n" +
			"            application/json:\n              schema: {$ref: '#/components/schemas/Missing'}\n"},
	} {
		if _, err := Load([]byte(tc.doc)); err == nil {
			t.Errorf("%s: Load accepted it", tc.name)
		}
	}
}

func TestCheckResponse(t *testing.T) {
	t.Parallel()
	s, err := Embedded()
	if err != nil {
		t.Fatal(err)
	}
	created := strings.TrimSuffix(goodTask, "}") + `,"deduplicated":false,"creation_complete":true}`
	throttled := jsonHeader()
	throttled.Set("Retry-After", "3")
	yaml := http.Header{"Content-Type": {"application/yaml"}}
	for _, tc := range []struct {
		name         string
		method, path string
		status       int
		header       http.Header
		body         string
		wantErr      string // "" when the response must validate
	}{
		{"a task", "GET", "/api/v1/tasks/" + taskID, 200, jsonHeader(), goodTask, ""},
		{"a task without external_id and source", "GET", "/api/v1/tasks/" + taskID, 200, jsonHeader(),
			withField(t, withField(t, goodTask, "external_id", ""), "source", ""), ""},
		{"an archived task", "GET", "/api/v1/tasks/" + taskID, 200, jsonHeader(),
			withField(t, goodTask, "archived_at", `"2026-01-03T00:00:00Z"`), ""},
		{"a create outcome", "POST", "/api/v1/tasks", 200, jsonHeader(), created, ""},
		{"a query string is ignored", "GET", "/api/v1/workspaces/eng/tasks/by-external-id?external_id=x", 200, jsonHeader(),
			strings.TrimSuffix(goodTask, "}") + `,"creation_complete":false}`, ""},
		{"an error", "GET", "/api/v1/tasks/nope", 404, jsonHeader(), `{"error":"task not found"}`, ""},
		{"no body", "DELETE", "/api/v1/tasks/" + taskID, 204, http.Header{}, "", ""},
		{"a throttled request", "GET", "/api/v1/workspaces", 429, throttled, `{"error":"too many failed authentication attempts"}`, ""},
		{"a YAML body", "GET", "/api/v1/openapi.yaml", 200, yaml, "openapi: 3.1.0\n", ""},

		{"a required field missing", "GET", "/api/v1/tasks/" + taskID, 200, jsonHeader(),
			withField(t, goodTask, "identifier", ""), `"identifier" is missing`},
		{"a field of the wrong type", "GET", "/api/v1/tasks/" + taskID, 200, jsonHeader(),
			withField(t, goodTask, "labels", `"a,b"`), `labels`},
		{"null where null is not allowed", "GET", "/api/v1/tasks/" + taskID, 200, jsonHeader(),
			withField(t, goodTask, "created_at", `null`), `created_at`},
		{"an undocumented field", "GET", "/api/v1/tasks/" + taskID, 200, jsonHeader(),
			withField(t, goodTask, "revision", `3`), `revision`},
		{"a value outside its enum", "GET", "/api/v1/tasks/" + taskID, 200, jsonHeader(),
			withField(t, goodTask, "source", `{"provider":"bitbucket","kind":"issue","ref":"r","url":"u"}`), `provider`},
		{"a create without its booleans", "POST", "/api/v1/tasks", 200, jsonHeader(), goodTask, `deduplicated`},
		{"an undocumented status", "GET", "/api/v1/tasks/" + taskID, 409, jsonHeader(), `{"error":"x"}`,
			"status 409 is not documented for GET /api/v1/tasks/{id}"},
		{"an undocumented method", "PUT", "/api/v1/tasks/" + taskID, 200, jsonHeader(), goodTask, "no operation PUT"},
		{"an undocumented path", "GET", "/api/v1/nothing", 200, jsonHeader(), `{}`, "no operation GET"},
		{"a body where none is documented", "DELETE", "/api/v1/tasks/" + taskID, 204, jsonHeader(), `{}`, "documents no body"},
		{"a required header missing", "GET", "/api/v1/workspaces", 429, jsonHeader(), `{"error":"x"}`, "Retry-After is missing"},
		{"another content type", "GET", "/api/v1/tasks/" + taskID, 200, http.Header{"Content-Type": {"text/plain"}}, goodTask,
			"text/plain is not documented"},
		{"not JSON", "GET", "/api/v1/tasks/" + taskID, 200, jsonHeader(), `not json`, "not JSON"},
	} {
		err := s.CheckResponse(tc.method, tc.path, tc.status, tc.header, []byte(tc.body))
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%s: CheckResponse = %v, want nil", tc.name, err)
		case tc.wantErr != "" && err == nil:
			t.Errorf("%s: CheckResponse = nil, want an error mentioning %q", tc.name, tc.wantErr)
		case tc.wantErr != "" && !strings.Contains(err.Error(), tc.wantErr):
			t.Errorf("%s: CheckResponse = %v, want an error mentioning %q", tc.name, err, tc.wantErr)
		}
	}
}

func TestCheckSchema(t *testing.T) {
	t.Parallel()
	s, err := Embedded()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CheckSchema("Error", []byte(`{"error":"method not allowed"}`)); err != nil {
		t.Errorf("CheckSchema(Error) = %v, want nil", err)
	}
	if err := s.CheckSchema("Error", []byte(`{"message":"x"}`)); err == nil {
		t.Error("CheckSchema(Error) accepted an object without error")
	}
	if err := s.CheckSchema("NoSuchSchema", []byte(`{}`)); err == nil {
		t.Error("CheckSchema accepted an unknown schema name")
	}
}

// recorder is a testing.TB that records errors instead of failing.
type recorder struct {
	testing.TB
	errors []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func TestValidateResponseReportsThroughT(t *testing.T) {
	t.Parallel()
	good := &recorder{TB: t}
	ValidateResponse(good, "GET", "/api/v1/tasks/"+taskID, 200, jsonHeader(), []byte(goodTask))
	if len(good.errors) != 0 {
		t.Errorf("a good response reported %q", good.errors)
	}
	bad := &recorder{TB: t}
	ValidateResponse(bad, "GET", "/api/v1/tasks/"+taskID, 200, jsonHeader(), []byte(withField(t, goodTask, "title", "1")))
	if len(bad.errors) != 1 || !strings.Contains(bad.errors[0], "title") {
		t.Errorf("a drifted response reported %q, want one error naming title", bad.errors)
	}
}

// TestDocumentHandler checks what GET /api/v1/openapi.yaml answers once
// docs.Handler is mounted there: the embedded bytes, as YAML, as documented.
func TestDocumentHandler(t *testing.T) {
	t.Parallel()
	rec := httptest.NewRecorder()
	docs.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/openapi.yaml", nil))
	ValidateResponse(t, http.MethodGet, "/api/v1/openapi.yaml", rec.Code, rec.Header(), rec.Body.Bytes())
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/yaml" {
		t.Errorf("docs.Handler() = %d %q, want 200 application/yaml", rec.Code, rec.Header().Get("Content-Type"))
	}
	if !bytes.Equal(rec.Body.Bytes(), docs.OpenAPI) {
		t.Errorf("docs.Handler() served %d bytes, want the %d embedded ones", rec.Body.Len(), len(docs.OpenAPI))
	}
	if _, err := Load(rec.Body.Bytes()); err != nil {
		t.Errorf("the served document does not load: %v", err)
	}
}

// TestWebhooksDescribeEveryEventType: the document's webhooks are exactly
// the event types, and each accepts its own events and refuses the others'
// and malformed ones (so the validation of real bodies is not vacuous).
func TestWebhooksDescribeEveryEventType(t *testing.T) {
	t.Parallel()
	spec := mustEmbedded(t)
	if got := spec.Webhooks(); !slices.Equal(got, sortedTypes()) {
		t.Fatalf("webhooks = %v, want every event type %v", got, sortedTypes())
	}
	const contribution = `{"provider":"github","kind":"pull_request","repository":"acme/app","number":2,` +
		`"url":"https://github.com/acme/app/pull/2","title":"Fix","state":"merged","draft":false,` +
		`"merged_at":"2026-01-02T03:04:05Z","head_branch":"fix","base_branch":"main","head_sha":"abc","author":"ann",` +
		`"updated_at":null,"last_synced_at":null}`
	event := func(typ, data string) string {
		return `{"id":"evt_000000000000002a","type":"` + typ + `","timestamp":"2026-01-02T03:04:05.123456Z",` +
			`"workspace_id":"eng","data":` + data + `}`
	}
	const delivery = `{"connection":"github","delivery_id":"0193a4f2-7c1e-7b3a-9d2e-5f6a7b8c9d0f","provider_event":"issues.opened"}`
	tests := []struct {
		name, webhook, body string
		ok                  bool
	}{
		{"created by a delivery", "task.created", event("task.created", `{"task":`+goodTask+`,"revision":1,"cause":`+delivery+`}`), true},
		{"updated through the API", "task.updated", event("task.updated", `{"task":`+goodTask+`,"revision":2,`+
			`"changes":{"title":{"from":"Old","to":"Spelling error"},"labels":{"from":[],"to":["bug"]}},"cause":{"actor":"api"}}`), true},
		{"archived by an agent", "task.archived", event("task.archived", `{"task":`+goodTask+`,"revision":3,`+
			`"changes":{"archived_at":{"from":null,"to":"2026-01-02T03:04:05Z"}},"cause":{"actor":"mcp"}}`), true},
		{"a PR refreshed", "task.contribution_updated", event("task.contribution_updated", `{"task":`+goodTask+`,"revision":4,`+
			`"contribution":`+contribution+`,"changes":{"state":{"from":"open","to":"merged"}},"cause":{"connection":"github"}}`), true},
		{"an older event", "task.deleted", event("task.deleted", `{"task":`+goodTask+`,"revision":5,"cause":{}}`), true},
		{"another type", "task.created", event("task.updated", `{"task":`+goodTask+`,"revision":1,"cause":{"actor":"api"}}`), false},
		{"a contribution on a task event", "task.updated", event("task.updated", `{"task":`+goodTask+`,"revision":2,`+
			`"contribution":`+contribution+`,"cause":{"actor":"api"}}`), false},
		{"a contribution event without its PR", "task.contribution_linked", event("task.contribution_linked",
			`{"task":`+goodTask+`,"revision":2,"cause":{"actor":"api"}}`), false},
		{"two causes", "task.created", event("task.created", `{"task":`+goodTask+`,"revision":1,`+
			`"cause":{"actor":"api","connection":"github"}}`), false},
		{"an unknown actor", "task.created", event("task.created", `{"task":`+goodTask+`,"revision":1,"cause":{"actor":"cron"}}`), false},
		{"no cause", "task.created", event("task.created", `{"task":`+goodTask+`,"revision":1}`), false},
		{"an unknown change", "task.updated", event("task.updated", `{"task":`+goodTask+`,"revision":2,`+
			`"changes":{"identifier":{"from":"A-1","to":"A-2"}},"cause":{"actor":"api"}}`), false},
		{"a bad id", "task.created", strings.Replace(event("task.created", `{"task":`+goodTask+`,"revision":1,"cause":{"actor":"api"}}`),
			"evt_000000000000002a", "42", 1), false},
	}
	for _, tt := range tests {
		err := spec.CheckWebhook(tt.webhook, []byte(tt.body))
		if (err == nil) != tt.ok {
			t.Errorf("%s: webhook %s = %v, want ok %v", tt.name, tt.webhook, err, tt.ok)
		}
		if tt.ok {
			if err := spec.CheckSchema("Event", []byte(tt.body)); err != nil {
				t.Errorf("%s: schema Event = %v", tt.name, err)
			}
		}
	}
}

func sortedTypes() []string {
	out := slices.Clone(events.Types)
	slices.Sort(out)
	return out
}
