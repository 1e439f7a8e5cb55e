package tasks_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/store/sqlstore"
	"github.com/trackergateway/gateway/internal/tasks"
)

// Bad input gets a precise status and {"error": ...} and writes nothing.
func TestCreateBadInput(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body string
		status     int
		message    string // exact when set
	}{
		{"malformed JSON", `{"workspace_id":"ws",`, 400, "malformed JSON: the body must be an object"},
		{"not an object", `["ws"]`, 400, "malformed JSON: the body must be an object"},
		{"null body", `null`, 400, "malformed JSON: the body must be an object"},
		{"empty body", ``, 400, "malformed JSON: the body must be an object"},
		{"trailing data", `{"workspace_id":"ws","title":"x"} {}`, 400, "malformed JSON: the body must be an object"},
		{"title wrong type", `{"workspace_id":"ws","title":5}`, 400, `field "title" must be string`},
		{"labels wrong type", `{"workspace_id":"ws","title":"x","labels":"bug"}`, 400, `field "labels" must be []string`},
		{"label wrong type", `{"workspace_id":"ws","title":"x","labels":[1]}`, 400, `field "labels" must be string`},
		{"unknown field", `{"workspace_id":"ws","title":"x","priority":1}`, 400, `malformed JSON: json: unknown field "priority"`},
		{"missing title", `{"workspace_id":"ws"}`, 400, "title is required"},
		{"blank title", `{"workspace_id":"ws","title":"   "}`, 400, "title is required"},
		{"oversize title", `{"workspace_id":"ws","title":"` + strings.Repeat("é", tasks.MaxTitleRunes+1) + `"}`, 400, "title is longer than 500 characters"},
		{"title with a control character", `{"workspace_id":"ws","title":"a\u0007b"}`, 400, "title contains a control character"},
		{"oversize description", `{"workspace_id":"ws","title":"x","description":"` + strings.Repeat("d", tasks.MaxDescriptionBytes+1) + `"}`, 400, "description is longer than 65536 bytes"},
		{"too many labels", `{"workspace_id":"ws","title":"x","labels":[` + strings.TrimSuffix(strings.Repeat(`"l",`, tasks.MaxLabels+1), ",") + `]}`, 400, "at most 50 labels are allowed"},
		{"empty label", `{"workspace_id":"ws","title":"x","labels":[" "]}`, 400, "labels must not be empty"},
		{"missing workspace", `{"title":"x"}`, 400, "workspace_id is required"},
		{"unknown workspace", `{"workspace_id":"ghost","title":"x"}`, 404, `workspace "ghost" not found`},
		{"unknown workspace with step and ID", `{"workspace_id":"ghost","title":"x","workflow_step_id":"backlog","external_id":"e"}`, 404, `workspace "ghost" not found`},
		{"unknown step", `{"workspace_id":"ws","title":"x","workflow_step_id":"nope"}`, 400, `workflow_step_id "nope" does not exist in workspace "ws"`},
		{"unknown step with ID", `{"workspace_id":"ws","title":"x","workflow_step_id":"nope","external_id":"new"}`, 400, `workflow_step_id "nope" does not exist in workspace "ws"`},
		{"body over 1 MiB", `{"workspace_id":"ws","title":"x","description":"` + strings.Repeat("d", 1<<20) + `"}`, 413, "request body exceeds 1048576 bytes"},
	}
	forEachEnv(t, func(t *testing.T, e *env) {
		e.create(t, createFields("ws", "held"))
		before := e.written(t)
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				wantError(t, e.do(t, http.MethodPost, "/api/v1/tasks", adminToken, tc.body), tc.status, tc.message)
			})
		}
		e.wantNothingWritten(t, before, "bad input")
	})
}

// faultyStore fails the named methods with the given error, as a broken or
// unreachable database would.
type faultyStore struct {
	store.Store
	fail map[string]error
}

func (f *faultyStore) err(method string) error { return f.fail[method] }

func (f *faultyStore) LookupTaskByExternalID(ctx context.Context, ws, ext string) (store.Task, error) {
	if err := f.err("LookupTaskByExternalID"); err != nil {
		return store.Task{}, err
	}
	return f.Store.LookupTaskByExternalID(ctx, ws, ext)
}

func (f *faultyStore) GetTask(ctx context.Context, id string) (store.Task, error) {
	if err := f.err("GetTask"); err != nil {
		return store.Task{}, err
	}
	return f.Store.GetTask(ctx, id)
}

func (f *faultyStore) ListTasks(ctx context.Context, p store.TaskPage) ([]store.Task, error) {
	if err := f.err("ListTasks"); err != nil {
		return nil, err
	}
	return f.Store.ListTasks(ctx, p)
}

func (f *faultyStore) GetWorkspace(ctx context.Context, id string) (store.Workspace, error) {
	if err := f.err("GetWorkspace"); err != nil {
		return store.Workspace{}, err
	}
	return f.Store.GetWorkspace(ctx, id)
}

func (f *faultyStore) InTx(ctx context.Context, fn func(tx store.Queries) error) error {
	if err := f.err("InTx"); err != nil {
		return err
	}
	return f.Store.InTx(ctx, fn)
}

// A database error is a 500 with a generic body and its cause in the log;
// an unreachable database is a 503 so clients retry.
func TestDatabaseErrors(t *testing.T) {
	t.Parallel()
	const cause = "disk on fire"
	routes := []struct {
		method, path, body string
		fails              string
	}{
		{"POST", "/api/v1/tasks", `{"workspace_id":"ws","title":"x","external_id":"ext-9"}`, "LookupTaskByExternalID"},
		{"POST", "/api/v1/tasks", `{"workspace_id":"ws","title":"x","workflow_step_id":"backlog"}`, "InTx"},
		{"GET", "/api/v1/workspaces/ws/tasks/by-external-id?external_id=ext-1", "", "LookupTaskByExternalID"},
		{"DELETE", "/api/v1/workspaces/ws/tasks/by-external-id?external_id=ext-1", "", "LookupTaskByExternalID"},
		{"GET", "/api/v1/workspaces/ws/tasks", "", "ListTasks"},
		{"GET", "/api/v1/tasks/7d1f9c2e-0000-4000-8000-000000000000", "", "GetTask"},
		{"PATCH", "/api/v1/tasks/7d1f9c2e-0000-4000-8000-000000000000", `{"title":"x"}`, "GetTask"},
		{"DELETE", "/api/v1/tasks/7d1f9c2e-0000-4000-8000-000000000000", "", "InTx"},
	}
	kinds := []struct {
		name    string
		err     error
		status  int
		message string
	}{
		{"plain error", errors.New(cause), http.StatusInternalServerError, "internal error"},
		{"unavailable", fmt.Errorf("%s: %w", cause, store.ErrUnavailable), http.StatusServiceUnavailable, "storage unavailable"},
	}
	for _, kind := range kinds {
		t.Run(kind.name, func(t *testing.T) {
			t.Parallel()
			forEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
				fs := &faultyStore{fail: map[string]error{}}
				e := newEnvWith(t, st, envOptions{wrap: func(s store.Store) store.Store { fs.Store = s; return fs }})
				e.create(t, createFields("ws", "ext-1"))
				before := e.written(t)
				for _, rt := range routes {
					fs.fail = map[string]error{rt.fails: kind.err}
					r := e.do(t, rt.method, rt.path, adminToken, rt.body)
					fs.fail = map[string]error{}
					if r.status != kind.status || r.raw != `{"error":"`+kind.message+`"}`+"\n" {
						t.Errorf("%s %s with %s failing = %d %q, want %d {\"error\":%q}", rt.method, rt.path, rt.fails, r.status, r.raw, kind.status, kind.message)
					}
				}
				e.wantNothingWritten(t, before, "failed requests")
				if logs := e.logs.String(); !strings.Contains(logs, cause) {
					t.Errorf("log does not carry the cause %q:\n%s", cause, logs)
				}
				for _, secret := range []string{adminToken, wsToken} {
					if strings.Contains(e.logs.String(), secret) {
						t.Errorf("log carries a bearer token")
					}
				}
			})
		})
	}
	t.Run("closed store", func(t *testing.T) {
		t.Parallel()
		forEachEnv(t, func(t *testing.T, e *env) {
			e.st.Close()
			r := e.do(t, http.MethodPost, "/api/v1/tasks", adminToken, `{"workspace_id":"ws","title":"x"}`)
			if r.status < 500 {
				t.Errorf("create on a closed store = %d %s, want 5xx", r.status, r.raw)
			}
			wantError(t, r, r.status, "")
			if msg := r.str("error"); msg != "internal error" && msg != "storage unavailable" {
				t.Errorf("error = %q, want a generic message", msg)
			}
		})
	})
}
