package tasks_test

import (
	"net/http"
	"testing"
)

// Text that is not UTF-8 in a JSON body is a 400 naming its field, never
// decoded into U+FFFD: otherwise "id-\xff", "id-\xfe" and "id-\ud800" would
// all be one external ID.
func TestInvalidJSONTextIsRefused(t *testing.T) {
	t.Parallel()
	invalid := []struct{ name, text string }{
		{"raw byte", "id-\xff"},
		{"lone high surrogate", `id-\ud800`},
		{"lone low surrogate", `id-\udc00`},
		{"reversed pair", `id-\ude00\ud83d`},
	}
	forEachEnv(t, func(t *testing.T, e *env) {
		e.create(t, createFields("ws", "id-\ufffd")) // what each of them would have become
		id := e.create(t, createFields("ws", "patched")).str("id")
		before := e.written(t)
		for _, tc := range invalid {
			for _, req := range []struct{ method, path, body, message string }{
				{http.MethodPost, "/api/v1/tasks", `{"workspace_id":"ws","title":"x","external_id":"` + tc.text + `"}`, "external_id is not valid UTF-8 text"},
				{http.MethodPost, "/api/v1/tasks", `{"workspace_id":"ws","title":"` + tc.text + `"}`, "title is not valid UTF-8 text"},
				{http.MethodPost, "/api/v1/tasks", `{"workspace_id":"ws","title":"x","external_id":"e","labels":["ok","` + tc.text + `"]}`, "labels[1] is not valid UTF-8 text"},
				{http.MethodPatch, "/api/v1/tasks/" + id, `{"description":"` + tc.text + `"}`, "description is not valid UTF-8 text"},
				{http.MethodPatch, "/api/v1/tasks/" + id, `{"labels":["` + tc.text + `"]}`, "labels[0] is not valid UTF-8 text"},
				{http.MethodPost, "/api/v1/workspaces", `{"id":"w2","name":"` + tc.text + `"}`, "name is not valid UTF-8 text"},
			} {
				t.Run(tc.name+" "+req.method+" "+req.message, func(t *testing.T) {
					wantError(t, e.do(t, req.method, req.path, adminToken, req.body), http.StatusBadRequest, req.message)
				})
			}
		}
		e.wantNothingWritten(t, before, "text that is not UTF-8")
	})
}

// Valid escapes, the replacement character itself and surrogate pairs are
// ordinary text: each is its own external ID.
func TestValidJSONTextIsDistinct(t *testing.T) {
	t.Parallel()
	forEachEnv(t, func(t *testing.T, e *env) {
		ids := map[string]string{} // external ID as decoded → task
		for _, tc := range []struct{ escaped, decoded string }{
			{`id-x`, "id-x"},
			{`id-\ufffd`, "id-\ufffd"},
			{"id-\xef\xbf\xbd-raw", "id-\ufffd-raw"},
			{`id-\ud83d\ude00`, "id-\U0001F600"},
			{"id-\U0001F601", "id-\U0001F601"},
			{`id-\u00e9`, "id-é"},
		} {
			r := e.do(t, http.MethodPost, "/api/v1/tasks", adminToken,
				`{"workspace_id":"ws","title":"t \ud83d\ude00","labels":["\ufffd"],"external_id":"`+tc.escaped+`"}`)
			wantTuple(t, r, false, true, tc.decoded)
			if other, ok := ids[tc.decoded]; ok || r.str("id") == other {
				t.Errorf("%q deduplicated onto %s", tc.escaped, other)
			}
			ids[tc.decoded] = r.str("id")
			if got := r.str("title"); got != "t \U0001F600" {
				t.Errorf("title = %q, want the emoji decoded", got)
			}
		}
	})
}
