package idempotency

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/trackergateway/gateway/internal/events"
	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/store/sqlstore"
)

// TestCreateInFewerTransactions: a create leaves exactly the rows Begin,
// its steps, phase A and phase B leave when each boundary commits apart (a
// coordinator with a failpoint that never fires takes that path), and
// answers with its task as stored, in fewer write transactions: a creation
// that plans no step is one (createAtOnce), and one that plans a step is
// completed by one (completion.both).
func TestCreateInFewerTransactions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		req  func(ext string) CreateRequest
		// txs are the write transactions of the create.
		txs      int64
		contribs int
	}{
		{"an external ID", func(ext string) CreateRequest { return createRequest(ext) }, 1, 0},
		{"no external ID", func(string) CreateRequest { return createRequest("") }, 1, 0},
		{"a WIP-limited step, labels and a source", func(ext string) CreateRequest {
			r := createRequest(ext)
			r.WorkflowStepID, r.Labels, r.Description = "doing", []string{"bug", "ui"}, "a <b> & \"c\""
			r.Source = &store.Source{Provider: "github", Kind: "issue", Ref: "acme/app#1", URL: "https://github.com/acme/app/issues/1"}
			r.OwnerConnection = "gh-main"
			return r
		}, 1, 0},
		// Begin, the step's claim, effect and completion, then Complete.
		{"a creation step", func(ext string) CreateRequest { return createRequest(ext, contribution("pr-"+ext)) }, 5, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			forEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
				ctx := context.Background()
				apart := New(st, discardLogger(), storeClock(), testContributionKinds)
				apart.Failpoint = func(string) error { return nil }
				phased, err := apart.Create(ctx, tc.req("ext-apart"))
				if err != nil || phased.Outcome != Created {
					t.Fatalf("Create apart = %v, %v; want Created", phased.Outcome, err)
				}
				phasedTask, err := st.GetTask(ctx, phased.Task.ID)
				if err != nil {
					t.Fatalf("get task: %v", err)
				}
				if tc.req("").WorkflowStepID == "doing" {
					// Make room in the WIP-limited step for the second task.
					rawExec(t, st, `UPDATE tasks SET workflow_step_id = 'backlog' WHERE id = $1`, phased.Task.ID)
				}
				counted := &countingStore{Store: st}
				c := New(counted, discardLogger(), storeClock(), testContributionKinds)
				res, err := c.Create(ctx, tc.req("ext-once"))
				if err != nil || res.Outcome != Created {
					t.Fatalf("Create = %v, %v; want Created", res.Outcome, err)
				}
				if n := counted.txs.Load(); n != tc.txs {
					t.Errorf("Create opened %d write transactions, want %d", n, tc.txs)
				}
				wantExt := ""
				if tc.req("x").ExternalID != "" {
					wantExt = "ext-once"
				}
				op := onlyOperationOfTask(t, st, res.Task.ID)
				stored := assertOperationCompleted(t, st, op.ID, wantExt, tc.contribs, Created)
				if !reflect.DeepEqual(inUTC(res.Task), inUTC(stored)) {
					t.Errorf("Create answered\n%+v\nbut stored\n%+v", res.Task, stored)
				}
				event := eventsOfTask(t, st, stored.ID)[0]
				if want := createdPayload(t, stored); event.Payload != want {
					t.Errorf("task.created payload %s, want %s", event.Payload, want)
				}

				// Against the phases' rows: the same but for what names the
				// task and the operation.
				phasedOp := onlyOperationOfTask(t, st, phased.Task.ID)
				phasedEvent := eventsOfTask(t, st, phasedTask.ID)[0]
				if got, want := sameTask(inUTC(stored)), sameTask(inUTC(phasedTask)); !reflect.DeepEqual(got, want) {
					t.Errorf("task written at once\n%+v\nwritten by the phases\n%+v", got, want)
				}
				if got, want := sameOperation(op), sameOperation(phasedOp); !reflect.DeepEqual(got, want) {
					t.Errorf("operation written at once\n%+v\nwritten by the phases\n%+v", got, want)
				}
				if want := createdPayload(t, phasedTask); phasedEvent.Payload != want {
					t.Errorf("the phases' task.created payload %s, want %s", phasedEvent.Payload, want)
				}
				if event.Type != phasedEvent.Type || event.Revision != phasedEvent.Revision || event.WorkspaceID != phasedEvent.WorkspaceID {
					t.Errorf("event %+v, the phases' %+v", event, phasedEvent)
				}
			})
		})
	}
}

// createdPayload is the data of task.created of t, created through the API
// (the requests' actor is a token; no request set a cause).
func createdPayload(t testing.TB, task store.Task) string {
	t.Helper()
	payload, err := events.Data{Task: events.TaskOf(task), Revision: 1, Cause: events.Cause{Actor: events.ActorAPI}}.Payload()
	if err != nil {
		t.Fatal(err)
	}
	return payload
}

// storeClock reads a clock that stands still: both creations of a
// comparison are stamped alike.
func storeClock() func() time.Time {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	return func() time.Time { return at }
}

func onlyOperationOfTask(t testing.TB, st *sqlstore.Store, taskID string) store.Operation {
	t.Helper()
	ids := queryStrings(t, st, `SELECT id FROM task_creation_operations WHERE task_id = $1`, taskID)
	if len(ids) != 1 {
		t.Fatalf("operations of task %s = %v, want one", taskID, ids)
	}
	op, err := st.GetOperation(context.Background(), ids[0])
	if err != nil {
		t.Fatalf("get operation: %v", err)
	}
	return op
}

// sameTask is t without what differs between two creations of the same
// request under different external IDs.
func sameTask(t store.Task) store.Task {
	t.ID, t.Identifier, t.Title, t.CreationOperationID = "", "", "", ""
	if t.ExternalID != "" {
		t.ExternalID = "set"
	}
	return t
}

// sameOperation is op without its identities, its plan (which names them)
// and the plan's hashes.
func sameOperation(op store.Operation) store.Operation {
	op.ID, op.TaskID, op.PlanJSON, op.ManifestSHA256, op.CompletionTokenSHA256, op.EventID = "", "", "", "", "", 0
	op.CreatedAt, op.UpdatedAt = op.CreatedAt.UTC(), op.UpdatedAt.UTC()
	if op.ExternalID != "" {
		op.ExternalID = "set"
	}
	return op
}

// inUTC is t with its times in UTC (PostgreSQL's driver reads them in the
// local zone).
func inUTC(t store.Task) store.Task {
	for _, at := range []**time.Time{&t.ArchivedAt, &t.SourceUpdatedAt, &t.ExternalIDSettledAt} {
		if *at != nil {
			u := (**at).UTC()
			*at = &u
		}
	}
	t.CreatedAt, t.UpdatedAt = t.CreatedAt.UTC(), t.UpdatedAt.UTC()
	return t
}
