package tasks_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/trackergateway/gateway/internal/idempotency"
	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/store/sqlstore"
	"github.com/trackergateway/gateway/internal/tasks"
)

func TestCreateGoldenPathAndRepeat(t *testing.T) {
	t.Parallel()
	forEachEnv(t, func(t *testing.T, e *env) {
		fields := map[string]any{"workspace_id": "ws", "title": "  Fix login  ", "description": "It breaks.",
			"workflow_step_id": "backlog", "labels": []string{"bug", "bug", "auth"}, "external_id": "jira:PROJ-1"}
		first := e.create(t, fields)
		wantTuple(t, first, false, true, "jira:PROJ-1")
		if got := first.str("identifier"); got != "WS-1" {
			t.Errorf("identifier = %q, want WS-1", got)
		}
		if got := first.str("title"); got != "Fix login" {
			t.Errorf("title = %q, want the trimmed title", got)
		}
		if got := fmt.Sprint(first.body["labels"]); got != "[bug auth]" {
			t.Errorf("labels = %s, want [bug auth]", got)
		}
		for _, key := range []string{"workspace_id", "workflow_step_id", "description", "created_at", "updated_at"} {
			if _, ok := first.body[key]; !ok {
				t.Errorf("create response lacks %q: %s", key, first.raw)
			}
		}
		if v, ok := first.body["archived_at"]; !ok || v != nil {
			t.Errorf("archived_at = %v (present %v), want null", v, ok)
		}
		id := first.str("id")
		if got := events(t, e.st, id, store.EventTaskCreated); len(got) != 1 {
			t.Fatalf("task.created events = %d, want 1", len(got))
		}

		for i := range 3 {
			again := e.create(t, fields)
			wantTuple(t, again, true, true, "jira:PROJ-1")
			if again.str("id") != id {
				t.Errorf("repeat %d id = %s, want %s", i, again.str("id"), id)
			}
		}
		if got := events(t, e.st, id, ""); len(got) != 1 {
			t.Errorf("events after repeats = %d, want still 1", len(got))
		}
		if n := count(t, e.st, `SELECT COUNT(*) FROM tasks`); n != 1 {
			t.Errorf("tasks = %d, want 1", n)
		}
		if n := count(t, e.st, `SELECT COUNT(*) FROM task_creation_operations`); n != 1 {
			t.Errorf("creation operations = %d, want 1 (Found opens none)", n)
		}
	})
}

func TestFoundNeverBurnsASequenceNumber(t *testing.T) {
	t.Parallel()
	forEachEnv(t, func(t *testing.T, e *env) {
		wantTuple(t, e.create(t, createFields("ws", "ext-1")), false, true, "ext-1")
		for range 3 {
			wantTuple(t, e.create(t, createFields("ws", "ext-1")), true, true, "ext-1")
		}
		next := e.create(t, createFields("ws", "ext-2"))
		wantTuple(t, next, false, true, "ext-2")
		if got := next.str("identifier"); got != "WS-2" {
			t.Errorf("next identifier = %q, want WS-2", got)
		}
		ws, err := e.st.GetWorkspace(context.Background(), "ws")
		if err != nil {
			t.Fatal(err)
		}
		if ws.TaskSequence != 2 {
			t.Errorf("task sequence = %d, want 2", ws.TaskSequence)
		}
	})
}

// Found wins over a full WIP step and over invalid or different non-identity
// fields (authorize → validate the ID → look up → only then the rest).
func TestFoundWinsOverFullStepAndInvalidFields(t *testing.T) {
	t.Parallel()
	forEachEnv(t, func(t *testing.T, e *env) {
		fields := createFields("ws", "ext-1")
		fields["workflow_step_id"] = "doing" // WIP 1: now full
		first := e.create(t, fields)
		wantTuple(t, first, false, true, "ext-1")
		before := e.written(t)
		retries := []map[string]any{
			fields,
			{"workspace_id": "ws", "external_id": "ext-1", "workflow_step_id": "doing", "title": ""},
			{"workspace_id": "ws", "external_id": "ext-1", "workflow_step_id": "no-such-step", "title": "x"},
			{"workspace_id": "ws", "external_id": "ext-1", "title": strings.Repeat("t", tasks.MaxTitleRunes+1)},
			{"workspace_id": "ws", "external_id": "ext-1", "labels": "not-a-list"},
			{"workspace_id": "ws", "external_id": "ext-1", "unknown_field": true},
		}
		for i, body := range retries {
			r := e.create(t, body)
			wantTuple(t, r, true, true, "ext-1")
			if r.str("id") != first.str("id") {
				t.Errorf("retry %d id = %s, want %s", i, r.str("id"), first.str("id"))
			}
		}
		e.wantNothingWritten(t, before, "Found retries")
	})
}

func TestCapacityErrorSurfacesWhenNothingHoldsTheID(t *testing.T) {
	t.Parallel()
	forEachEnv(t, func(t *testing.T, e *env) {
		fields := createFields("ws", "ext-1")
		fields["workflow_step_id"] = "doing"
		wantTuple(t, e.create(t, fields), false, true, "ext-1")
		before := e.written(t)
		for _, ext := range []string{"ext-2", ""} {
			f := createFields("ws", ext)
			f["workflow_step_id"] = "doing"
			wantError(t, e.create(t, f), http.StatusConflict, `workflow step "doing" is at its WIP limit (1)`)
		}
		e.wantNothingWritten(t, before, "refused creates")
	})
}

// With one slot left, concurrent creates of one ID into a WIP-1 step: one
// Created, every loser Found, never a capacity error.
func TestRaceForTheLastSlotLoserIsFound(t *testing.T) {
	t.Parallel()
	forEachEnv(t, func(t *testing.T, e *env) {
		const n = 8
		fields := createFields("ws", "ext-1")
		fields["workflow_step_id"] = "doing"
		body := toJSON(t, fields)
		results := make([]response, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				results[i] = e.do(t, http.MethodPost, "/api/v1/tasks", adminToken, body)
			})
		}
		close(start)
		wg.Wait()
		created, ids := 0, map[string]bool{}
		for _, r := range results {
			if r.status != http.StatusOK {
				t.Errorf("status = %d, want 200 (body %s)", r.status, r.raw)
				continue
			}
			ids[r.str("id")] = true
			if r.body["deduplicated"] == false {
				created++
			}
		}
		if created != 1 || len(ids) != 1 {
			t.Errorf("created = %d with %d distinct ids, want exactly one task created", created, len(ids))
		}
		if n := count(t, e.st, `SELECT COUNT(*) FROM tasks`); n != 1 {
			t.Errorf("tasks = %d, want 1", n)
		}
	})
}

func TestHundredConcurrentCreatesMakeOneTask(t *testing.T) {
	t.Parallel()
	forEachEnv(t, func(t *testing.T, e *env) {
		const n = 100
		body := toJSON(t, createFields("ws", "github:github.com:issue:42"))
		results := make([]response, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				results[i] = e.do(t, http.MethodPost, "/api/v1/tasks", adminToken, body)
			})
		}
		close(start)
		wg.Wait()
		created, found, ids := 0, 0, map[string]bool{}
		for _, r := range results {
			if r.status != http.StatusOK {
				t.Errorf("status = %d, want 200 (body %s)", r.status, r.raw)
				continue
			}
			ids[r.str("id")] = true
			switch r.body["deduplicated"] {
			case false:
				created++
			case true:
				found++
			}
		}
		if created != 1 || found != n-1 || len(ids) != 1 {
			t.Errorf("created %d, found %d, distinct ids %d; want 1, %d, 1\nserver log:\n%s", created, found, len(ids), n-1, e.logs.String())
		}
		if got := count(t, e.st, `SELECT COUNT(*) FROM tasks`); got != 1 {
			t.Errorf("tasks = %d, want 1", got)
		}
		if got := count(t, e.st, `SELECT COUNT(*) FROM task_creation_operations`); got != 1 {
			t.Errorf("creation operations = %d, want 1", got)
		}
		if got := count(t, e.st, `SELECT COUNT(*) FROM task_events`); got != 1 {
			t.Errorf("events = %d, want 1", got)
		}
		ws, _ := e.st.GetWorkspace(context.Background(), "ws")
		if ws.TaskSequence != 1 {
			t.Errorf("task sequence = %d, want 1 (no loser burnt a number)", ws.TaskSequence)
		}
	})
}

// An unsettled holder answers deduplicated:true/creation_complete:false
// identically on every retry, and the lookup says creation_complete:false.
func TestUnsettledHolder(t *testing.T) {
	t.Parallel()
	forEachEnv(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		begun, err := e.coord.BeginTaskCreation(ctx, idempotency.CreateRequest{WorkspaceID: "ws", ExternalID: "ext-u",
			Title: "In flight", WorkflowStepID: "backlog", Actor: idempotency.Actor{Kind: "api_token", ID: "other-process"}})
		if err != nil || begun.Handle == nil {
			t.Fatalf("Begin = %+v, %v", begun, err)
		}
		before := e.written(t)
		var firstRaw string
		for i := range 3 {
			r := e.create(t, createFields("ws", "ext-u"))
			wantTuple(t, r, true, false, "ext-u")
			if r.str("id") != begun.Task.ID {
				t.Errorf("id = %s, want %s", r.str("id"), begun.Task.ID)
			}
			if i == 0 {
				firstRaw = r.raw
			} else if r.raw != firstRaw {
				t.Errorf("retry %d body differs:\n%s\n%s", i, r.raw, firstRaw)
			}
		}
		l := e.do(t, http.MethodGet, "/api/v1/workspaces/ws/tasks/by-external-id?external_id=ext-u", adminToken, "")
		if l.status != http.StatusOK || l.body["creation_complete"] != false || l.str("external_id") != "ext-u" {
			t.Errorf("lookup = %d %s, want 200 with creation_complete false", l.status, l.raw)
		}
		if _, ok := l.body["deduplicated"]; ok {
			t.Errorf("lookup carries deduplicated: %s", l.raw)
		}
		// A task still being created is invisible to ordinary reads.
		wantError(t, e.do(t, http.MethodGet, "/api/v1/tasks/"+begun.Task.ID, adminToken, ""), http.StatusNotFound, "task not found")
		list := e.do(t, http.MethodGet, "/api/v1/workspaces/ws/tasks", adminToken, "")
		if items, _ := list.body["tasks"].([]any); len(items) != 0 {
			t.Errorf("list = %s, want no task being created", list.raw)
		}
		e.wantNothingWritten(t, before, "Found unsettled retries")

		// The original creator finishes: now Found, settled.
		if _, err := e.coord.CompleteTaskCreation(ctx, begun.Handle); err != nil {
			t.Fatalf("Complete: %v", err)
		}
		wantTuple(t, e.create(t, createFields("ws", "ext-u")), true, true, "ext-u")
	})
}

// Settlement's zero-row paths, with a concurrent actor between Begin and
// Complete: a release gives CreatedIdentityLost (no external_id); a deletion
// (bypassing the service, which refuses while creating) gives not-found.
func TestSettlementZeroRowPaths(t *testing.T) {
	t.Parallel()
	t.Run("released", func(t *testing.T) {
		t.Parallel()
		forEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
			e := newEnvWith(t, st, envOptions{creator: func(c *idempotency.Coordinator, e *env) tasks.Creator {
				return interceptCreator{Coordinator: c, between: func(task store.Task) {
					r := e.do(t, http.MethodDelete, "/api/v1/workspaces/ws/tasks/by-external-id?external_id=ext-1", adminToken, "")
					if r.status != http.StatusNoContent {
						t.Errorf("release during preparing = %d %s, want 204", r.status, r.raw)
					}
				}}
			}})
			r := e.create(t, createFields("ws", "ext-1"))
			wantTuple(t, r, false, true, "")
			id := r.str("id")
			got := e.do(t, http.MethodGet, "/api/v1/tasks/"+id, adminToken, "")
			if got.status != http.StatusOK {
				t.Fatalf("GET task = %d %s", got.status, got.raw)
			}
			if _, ok := got.body["external_id"]; ok {
				t.Errorf("task still shows an external_id: %s", got.raw)
			}
			created := events(t, e.st, id, store.EventTaskCreated)
			if len(created) != 1 || strings.Contains(created[0].Payload, "external_id") {
				t.Errorf("task.created = %+v, want one event without external_id", created)
			}
			wantError(t, e.do(t, http.MethodGet, "/api/v1/workspaces/ws/tasks/by-external-id?external_id=ext-1", adminToken, ""),
				http.StatusNotFound, "task not found")
		})
	})
	t.Run("deleted", func(t *testing.T) {
		t.Parallel()
		forEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
			e := newEnvWith(t, st, envOptions{creator: func(c *idempotency.Coordinator, e *env) tasks.Creator {
				return interceptCreator{Coordinator: c, between: func(task store.Task) {
					// The service refuses (409) while the task is being created...
					r := e.do(t, http.MethodDelete, "/api/v1/tasks/"+task.ID, adminToken, "")
					wantError(t, r, http.StatusConflict, "task is still being created")
					// ...so delete the row the way a cascade would.
					if err := st.DeleteTask(context.Background(), task.ID); err != nil {
						t.Errorf("delete row: %v", err)
					}
				}}
			}})
			r := e.create(t, createFields("ws", "ext-1"))
			wantError(t, r, http.StatusNotFound, "task not found")
			if n := count(t, e.st, `SELECT COUNT(*) FROM task_events`); n != 0 {
				t.Errorf("events = %d, want none", n)
			}
			if n := count(t, e.st, `SELECT COUNT(*) FROM task_creation_operations WHERE state = 'aborted'`); n != 1 {
				t.Errorf("aborted operations = %d, want 1", n)
			}
		})
	})
}

func TestExternalIDValidation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		ext    any
		status int
		// want: "created" (new task holding storedExt), "found" (the
		// ext-1 task), or "" for an error.
		want      string
		storedExt string
		message   string
	}{
		{name: "256 bytes", ext: strings.Repeat("x", 256), status: 400, message: "external_id is 256 bytes; at most 255 are allowed"},
		{name: "255 bytes", ext: strings.Repeat("x", 255), status: 200, want: "created", storedExt: strings.Repeat("x", 255)},
		{name: "trailing newline", ext: "ext-1\n", status: 400, message: "external_id contains a control character (U+000A) at byte 5"},
		{name: "tab alone", ext: "\t", status: 400, message: "external_id contains a control character (U+0009) at byte 0"},
		{name: "DEL", ext: "ext\u007f1", status: 400},
		{name: "spaces only is no identity", ext: "   ", status: 200, want: "created", storedExt: ""},
		{name: "empty is no identity", ext: "", status: 200, want: "created", storedExt: ""},
		{name: "null is no identity", ext: nil, status: 200, want: "created", storedExt: ""},
		{name: "surrounding spaces trimmed", ext: "  ext-1  ", status: 200, want: "found"},
		{name: "unicode spaces trimmed", ext: "\u00a0ext-1\u3000", status: 200, want: "found"},
		{name: "case-sensitive", ext: "EXT-1", status: 200, want: "created", storedExt: "EXT-1"},
		{name: "not a string", ext: 17, status: 400, message: `field "external_id" must be a string`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			forEachEnv(t, func(t *testing.T, e *env) {
				holder := e.create(t, createFields("ws", "ext-1"))
				wantTuple(t, holder, false, true, "ext-1")
				before := e.written(t)
				fields := map[string]any{"workspace_id": "ws", "title": "t", "external_id": tc.ext}
				r := e.create(t, fields)
				switch tc.want {
				case "":
					wantError(t, r, tc.status, tc.message)
					e.wantNothingWritten(t, before, "invalid external_id")
				case "found":
					wantTuple(t, r, true, true, "ext-1")
					if r.str("id") != holder.str("id") {
						t.Errorf("id = %s, want the ext-1 task %s", r.str("id"), holder.str("id"))
					}
				case "created":
					wantTuple(t, r, false, true, tc.storedExt)
					if r.str("id") == holder.str("id") {
						t.Errorf("got the ext-1 task, want a new one")
					}
					task, err := e.st.GetTask(context.Background(), r.str("id"))
					if err != nil {
						t.Fatal(err)
					}
					if task.ExternalID != tc.storedExt {
						t.Errorf("stored external_id = %q, want %q", task.ExternalID, tc.storedExt)
					}
					if tc.storedExt == "" {
						if n := count(t, e.st, `SELECT COUNT(*) FROM tasks WHERE id = $1 AND external_id IS NULL`, task.ID); n != 1 {
							t.Errorf("external_id is not stored as NULL")
						}
					}
				}
			})
		})
	}
}

func TestSameIDInTwoWorkspacesMakesTwoTasks(t *testing.T) {
	t.Parallel()
	forEachEnv(t, func(t *testing.T, e *env) {
		a := e.create(t, createFields("ws", "ext-1"))
		b := e.create(t, createFields("other", "ext-1"))
		wantTuple(t, a, false, true, "ext-1")
		wantTuple(t, b, false, true, "ext-1")
		if a.str("id") == b.str("id") {
			t.Errorf("both workspaces got task %s", a.str("id"))
		}
		if a.str("workspace_id") != "ws" || b.str("workspace_id") != "other" {
			t.Errorf("workspaces = %s, %s", a.str("workspace_id"), b.str("workspace_id"))
		}
	})
}

func TestTasksWithoutIDsNeverCollide(t *testing.T) {
	t.Parallel()
	forEachEnv(t, func(t *testing.T, e *env) {
		ids := map[string]bool{}
		for _, ext := range []any{nil, "", "  ", nil, "\u3000"} {
			r := e.create(t, map[string]any{"workspace_id": "ws", "title": "same title", "external_id": ext})
			wantTuple(t, r, false, true, "")
			ids[r.str("id")] = true
		}
		if len(ids) != 5 {
			t.Errorf("distinct tasks = %d, want 5", len(ids))
		}
		if n := count(t, e.st, `SELECT COUNT(*) FROM tasks WHERE external_id IS NULL`); n != 5 {
			t.Errorf("tasks with NULL external_id = %d, want 5", n)
		}
	})
}

func TestArchivedTaskIsStillFound(t *testing.T) {
	t.Parallel()
	forEachEnv(t, func(t *testing.T, e *env) {
		first := e.create(t, createFields("ws", "ext-1"))
		id := first.str("id")
		p := e.do(t, http.MethodPatch, "/api/v1/tasks/"+id, adminToken, `{"archived": true}`)
		if p.status != http.StatusOK || p.body["archived_at"] == nil {
			t.Fatalf("archive = %d %s", p.status, p.raw)
		}
		r := e.create(t, createFields("ws", "ext-1"))
		wantTuple(t, r, true, true, "ext-1")
		if r.str("id") != id || r.body["archived_at"] == nil {
			t.Errorf("found = %s archived_at %v, want the archived task %s", r.str("id"), r.body["archived_at"], id)
		}
		l := e.do(t, http.MethodGet, "/api/v1/workspaces/ws/tasks/by-external-id?external_id=ext-1", adminToken, "")
		if l.status != http.StatusOK || l.str("id") != id || l.body["creation_complete"] != true {
			t.Errorf("lookup of archived = %d %s", l.status, l.raw)
		}
	})
}

func TestDeleteAndReleaseFreeTheID(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		free func(t *testing.T, e *env, id string)
	}{
		{"delete", func(t *testing.T, e *env, id string) {
			if r := e.do(t, http.MethodDelete, "/api/v1/tasks/"+id, adminToken, ""); r.status != http.StatusNoContent {
				t.Fatalf("delete = %d %s, want 204", r.status, r.raw)
			}
			wantError(t, e.do(t, http.MethodGet, "/api/v1/tasks/"+id, adminToken, ""), http.StatusNotFound, "task not found")
			if got := events(t, e.st, id, store.EventTaskDeleted); len(got) != 1 {
				t.Errorf("task.deleted events = %d, want 1", len(got))
			}
		}},
		{"release", func(t *testing.T, e *env, id string) {
			r := e.do(t, http.MethodDelete, "/api/v1/workspaces/ws/tasks/by-external-id?external_id="+url.QueryEscape(" ext-1 "), adminToken, "")
			if r.status != http.StatusNoContent || r.raw != "" {
				t.Fatalf("release = %d %q, want 204 without body", r.status, r.raw)
			}
			got := e.do(t, http.MethodGet, "/api/v1/tasks/"+id, adminToken, "")
			if got.status != http.StatusOK {
				t.Fatalf("released task = %d %s, want it kept", got.status, got.raw)
			}
			if _, ok := got.body["external_id"]; ok {
				t.Errorf("released task still shows external_id: %s", got.raw)
			}
			if got.str("title") != "Task ext-1" {
				t.Errorf("released task title = %q, want it unmodified", got.str("title"))
			}
			wantError(t, e.do(t, http.MethodDelete, "/api/v1/workspaces/ws/tasks/by-external-id?external_id=ext-1", adminToken, ""),
				http.StatusNotFound, "task not found")
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			forEachEnv(t, func(t *testing.T, e *env) {
				first := e.create(t, createFields("ws", "ext-1"))
				wantTuple(t, first, false, true, "ext-1")
				tc.free(t, e, first.str("id"))
				again := e.create(t, createFields("ws", "ext-1"))
				wantTuple(t, again, false, true, "ext-1")
				if again.str("id") == first.str("id") {
					t.Errorf("create after %s returned the old task", tc.name)
				}
				if got := again.str("identifier"); got != "WS-2" {
					t.Errorf("identifier = %q, want WS-2", got)
				}
			})
		})
	}
}
