package tasks_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/trackergateway/gateway/internal/idempotency"
	"github.com/trackergateway/gateway/internal/store/sqlstore"
	"github.com/trackergateway/gateway/internal/tasks"
)

// releasingCreator releases the identity between Begin and Complete, as a
// concurrent operator would: the create's outcome is CreatedIdentityLost.
type releasingCreator struct {
	*idempotency.Coordinator
}

func (c releasingCreator) Create(ctx context.Context, req idempotency.CreateRequest) (idempotency.Result, error) {
	begun, err := c.BeginTaskCreation(ctx, req)
	if err != nil || begun.Handle == nil {
		return idempotency.Result{Task: begun.Task, Outcome: begun.Outcome}, err
	}
	if err := c.ExecuteSteps(ctx, begun.Handle); err != nil {
		return idempotency.Result{}, err
	}
	if _, err := c.ReleaseExternalID(ctx, req.WorkspaceID, req.ExternalID); err != nil {
		return idempotency.Result{}, err
	}
	return c.CompleteTaskCreation(ctx, begun.Handle)
}

// outcomeTuple is the exact create response of one outcome.
type outcomeTuple struct {
	deduplicated     bool
	creationComplete bool
	// externalID is the value the body must show; "" means the key must be
	// absent.
	externalID string
	// outcome is what the ledger recorded for the create that made the
	// task ("" while it is unfinished); Created and CreatedIdentityLost
	// share their booleans, so the body's external_id and this tell them
	// apart.
	outcome string
}

func assertOutcomeTuple(t *testing.T, e *env, r response, want outcomeTuple) {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("status = %d, want 200 (body %s)", r.status, r.raw)
	}
	for key, w := range map[string]bool{"deduplicated": want.deduplicated, "creation_complete": want.creationComplete} {
		v, present := r.body[key]
		got, isBool := v.(bool)
		switch {
		case !present:
			t.Errorf("%s absent from %s, want it always present", key, r.raw)
		case !isBool:
			t.Errorf("%s = %v, want a boolean", key, v)
		case got != w:
			t.Errorf("%s = %v, want %v", key, got, w)
		}
	}
	ext, present := r.body["external_id"]
	switch {
	case want.externalID == "" && present:
		t.Errorf("external_id = %v, want the key absent", ext)
	case want.externalID != "" && !present:
		t.Errorf("external_id absent, want %q", want.externalID)
	case want.externalID != "" && ext != want.externalID:
		t.Errorf("external_id = %v, want %q", ext, want.externalID)
	}
	task, err := e.st.GetTask(context.Background(), r.str("id"))
	if err != nil {
		t.Fatalf("task %q of the response: %v", r.str("id"), err)
	}
	if task.ExternalID != want.externalID {
		t.Errorf("stored external_id = %q, want %q (the body shows what the task holds)", task.ExternalID, want.externalID)
	}
	op, err := e.st.GetOperation(context.Background(), task.CreationOperationID)
	if err != nil {
		t.Fatalf("creation operation of the task: %v", err)
	}
	if op.Outcome != want.outcome {
		t.Errorf("recorded outcome = %q, want %q", op.Outcome, want.outcome)
	}
}

// Every success outcome of POST /api/v1/tasks answers its exact tuple.
func TestCreateOutcomeTuples(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		creator func(c *idempotency.Coordinator, e *env) tasks.Creator
		// before runs ahead of the create under test.
		before func(t *testing.T, e *env)
		ext    string
		want   outcomeTuple
		// lookup is the lookup status for ext after the create.
		lookup int
	}{
		{name: "created", ext: "ext-1", want: outcomeTuple{false, true, "ext-1", idempotency.Created.String()}, lookup: http.StatusOK},
		{name: "created without an external id", ext: "", want: outcomeTuple{false, true, "", idempotency.Created.String()}},
		{name: "found settled", ext: "ext-1", before: func(t *testing.T, e *env) {
			if r := e.create(t, createFields("ws", "ext-1")); r.status != http.StatusOK {
				t.Fatalf("first create = %d %s", r.status, r.raw)
			}
		}, want: outcomeTuple{true, true, "ext-1", idempotency.Created.String()}, lookup: http.StatusOK},
		{name: "found unsettled", ext: "ext-1", before: func(t *testing.T, e *env) {
			if _, err := e.coord.BeginTaskCreation(context.Background(), idempotency.CreateRequest{WorkspaceID: "ws",
				ExternalID: "ext-1", Title: "pending", WorkflowStepID: "backlog",
				Actor: idempotency.Actor{Kind: "api_token", ID: "admin", AuthMode: "bearer"}}); err != nil {
				t.Fatalf("Begin: %v", err)
			}
		}, want: outcomeTuple{true, false, "ext-1", ""}, lookup: http.StatusOK},
		{name: "created, identity lost", ext: "ext-1",
			creator: func(c *idempotency.Coordinator, e *env) tasks.Creator { return releasingCreator{c} },
			want:    outcomeTuple{false, true, "", idempotency.CreatedIdentityLost.String()}, lookup: http.StatusNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			forEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
				e := newEnvWith(t, st, envOptions{creator: tc.creator})
				if tc.before != nil {
					tc.before(t, e)
				}
				r := e.create(t, createFields("ws", tc.ext))
				assertOutcomeTuple(t, e, r, tc.want)
				if tc.lookup != 0 {
					l := e.do(t, http.MethodGet, "/api/v1/workspaces/ws/tasks/by-external-id?external_id="+tc.ext, adminToken, "")
					if l.status != tc.lookup {
						t.Errorf("lookup after the create = %d %s, want %d", l.status, l.raw, tc.lookup)
					}
				}
			})
		})
	}
}
