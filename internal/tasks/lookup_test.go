package tasks_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

func TestLookupRoute(t *testing.T) {
	t.Parallel()
	forEachEnv(t, func(t *testing.T, e *env) {
		held := e.create(t, createFields("ws", "ext-1"))
		before := e.written(t)
		path := func(ws, ext string) string {
			return "/api/v1/workspaces/" + ws + "/tasks/by-external-id?external_id=" + url.QueryEscape(ext)
		}
		tests := []struct {
			name    string
			path    string
			status  int
			message string
		}{
			{"held", path("ws", "ext-1"), 200, ""},
			{"trimmed", path("ws", "\u00a0ext-1 "), 200, ""},
			{"case differs", path("ws", "EXT-1"), 404, "task not found"},
			{"other workspace", path("other", "ext-1"), 404, "task not found"},
			{"unknown", path("ws", "nope"), 404, "task not found"},
			{"missing parameter", "/api/v1/workspaces/ws/tasks/by-external-id", 400, "external_id is required"},
			{"blank", path("ws", "   "), 400, "external_id is required"},
			{"control character", path("ws", "ext-1\n"), 400, "external_id contains a control character (U+000A) at byte 5"},
			{"too long", path("ws", strings.Repeat("x", 256)), 400, "external_id is 256 bytes; at most 255 are allowed"},
			{"unknown workspace", path("ghost", "ext-1"), 404, "task not found"},
			{"invalid UTF-8", "/api/v1/workspaces/ws/tasks/by-external-id?external_id=ext-%FF", 400, "external_id is not valid UTF-8"},
		}
		for _, tc := range tests {
			r := e.do(t, http.MethodGet, tc.path, adminToken, "")
			if tc.status != http.StatusOK {
				wantError(t, r, tc.status, tc.message)
				continue
			}
			if r.status != http.StatusOK || r.str("id") != held.str("id") || r.str("external_id") != "ext-1" {
				t.Errorf("%s: lookup = %d %s, want the ext-1 task", tc.name, r.status, r.raw)
			}
			if r.body["creation_complete"] != true {
				t.Errorf("%s: creation_complete = %v, want true", tc.name, r.body["creation_complete"])
			}
			if _, ok := r.body["deduplicated"]; ok {
				t.Errorf("%s: lookup carries deduplicated: %s", tc.name, r.raw)
			}
		}
		e.wantNothingWritten(t, before, "lookups")
	})
}

func TestReleaseRoute(t *testing.T) {
	t.Parallel()
	forEachEnv(t, func(t *testing.T, e *env) {
		e.create(t, createFields("ws", "ext-1"))
		before := e.written(t)
		for _, tc := range []struct {
			name, query string
			status      int
			message     string
		}{
			{"missing", "", 400, "external_id is required"},
			{"invalid", "?external_id=" + url.QueryEscape("ext-1\t"), 400, "external_id contains a control character (U+0009) at byte 5"},
			{"not held", "?external_id=ext-2", 404, "task not found"},
			{"case differs", "?external_id=EXT-1", 404, "task not found"},
		} {
			r := e.do(t, http.MethodDelete, "/api/v1/workspaces/ws/tasks/by-external-id"+tc.query, adminToken, "")
			wantError(t, r, tc.status, tc.message)
		}
		e.wantNothingWritten(t, before, "refused releases")
		if r := e.do(t, http.MethodDelete, "/api/v1/workspaces/ws/tasks/by-external-id?external_id=ext-1", wsToken, ""); r.status != http.StatusNoContent {
			t.Errorf("release by the workspace token = %d %s, want 204", r.status, r.raw)
		}
		if n := count(t, e.st, `SELECT COUNT(*) FROM tasks WHERE external_id IS NULL AND external_id_settled_at IS NULL`); n != 1 {
			t.Errorf("released tasks with both columns NULL = %d, want 1", n)
		}
	})
}
