package idempotency

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/store/sqlstore"
	"github.com/trackergateway/gateway/internal/store/storetest"
)

func newTestClock() *storetest.Clock {
	return storetest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), time.Microsecond)
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// forEachDialect runs fn once per dialect, in parallel, each with a fresh
// migrated store seeded with workspace "ws" (steps backlog, and doing with
// WIP 1). The PostgreSQL run skips visibly without a server.
func forEachDialect(t *testing.T, fn func(t *testing.T, st *sqlstore.Store)) {
	t.Helper()
	for _, d := range storetest.Dialects {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			st := storetest.Open(t, d)
			storetest.SeedWorkspace(t, st, "ws")
			fn(t, st)
		})
	}
}

const testWS = "ws"

func contribution(id string) RemoteContributionRequest {
	return RemoteContributionRequest{Provider: "github", RepositoryID: "acme/app", ContributionKind: "pull_request",
		ContributionID: id, ConnectionID: "gh-main"}
}

func createRequest(ext string, contribs ...RemoteContributionRequest) CreateRequest {
	return CreateRequest{WorkspaceID: testWS, ExternalID: ext, Title: "Task " + ext, WorkflowStepID: "backlog",
		Contributions: contribs, Actor: Actor{Kind: "api_token", ID: "tester", AuthMode: "bearer"}}
}

var errCrash = errors.New("simulated crash")

// crashAt returns a Failpoint that fails exactly at name.
func crashAt(name string) func(string) error {
	return func(n string) error {
		if n == name {
			return errCrash
		}
		return nil
	}
}

func queryStrings(t testing.TB, st *sqlstore.Store, query string, args ...any) []string {
	t.Helper()
	rows, err := st.Driver().Query(context.Background(), query, args...)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatalf("scan: %v", err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return out
}

func count(t testing.TB, st *sqlstore.Store, query string, args ...any) int {
	t.Helper()
	var n int
	if err := st.Driver().QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

func rawExec(t testing.TB, st *sqlstore.Store, query string, args ...any) {
	t.Helper()
	n, err := st.Driver().Exec(context.Background(), query, args...)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	if n != 1 {
		t.Fatalf("%s: %d rows, want 1", query, n)
	}
}

// snapshot is every row the ledger and the task system own, to prove that a
// refused call wrote nothing.
type snapshot struct {
	Ops    []store.Operation
	Steps  [][]store.CreationStep
	Tasks  []store.Task
	Assocs []store.Association
	Events []store.TaskEvent
	Seq    int64
}

func takeSnapshot(t testing.TB, st *sqlstore.Store) snapshot {
	t.Helper()
	ctx := context.Background()
	var s snapshot
	for _, id := range queryStrings(t, st, `SELECT id FROM task_creation_operations ORDER BY id`) {
		op, err := st.GetOperation(ctx, id)
		if err != nil {
			t.Fatalf("get operation: %v", err)
		}
		steps, err := st.ListCreationSteps(ctx, id)
		if err != nil {
			t.Fatalf("list steps: %v", err)
		}
		s.Ops, s.Steps = append(s.Ops, op), append(s.Steps, steps)
	}
	for _, id := range queryStrings(t, st, `SELECT id FROM tasks ORDER BY id`) {
		task, err := st.GetTask(ctx, id)
		if err != nil {
			t.Fatalf("get task: %v", err)
		}
		s.Tasks = append(s.Tasks, task)
	}
	for _, key := range queryStrings(t, st, `SELECT contribution_id FROM task_remote_contribution_associations ORDER BY contribution_id`) {
		a, err := st.GetAssociation(ctx, "github", "gh-main", key)
		if err != nil {
			t.Fatalf("get association: %v", err)
		}
		s.Assocs = append(s.Assocs, a)
	}
	events, err := st.ReadTaskEvents(ctx, 0, 10000)
	if err != nil {
		t.Fatalf("read events: %v", err)
	}
	s.Events = events
	ws, err := st.GetWorkspace(ctx, testWS)
	if err != nil {
		t.Fatalf("get workspace: %v", err)
	}
	s.Seq = ws.TaskSequence
	return s
}

func assertUnchanged(t testing.TB, before, after snapshot, what string) {
	t.Helper()
	parts := []struct {
		name          string
		before, after any
	}{
		{"operations", before.Ops, after.Ops}, {"steps", before.Steps, after.Steps}, {"tasks", before.Tasks, after.Tasks},
		{"associations", before.Assocs, after.Assocs}, {"events", before.Events, after.Events}, {"task sequence", before.Seq, after.Seq},
	}
	for _, p := range parts {
		if !reflect.DeepEqual(p.before, p.after) {
			t.Errorf("%s wrote to the database: %s changed\nbefore %+v\nafter  %+v", what, p.name, p.before, p.after)
		}
	}
}

func eventsOfTask(t testing.TB, st *sqlstore.Store, taskID string) []store.TaskEvent {
	t.Helper()
	all, err := st.ReadTaskEvents(context.Background(), 0, 10000)
	if err != nil {
		t.Fatalf("read events: %v", err)
	}
	var out []store.TaskEvent
	for _, e := range all {
		if e.TaskID == taskID {
			out = append(out, e)
		}
	}
	return out
}

// assertCompleted checks the converged success state of a create with the
// given contributions: exactly one completed operation and task, exactly its
// associations, exactly one task.created.
func assertCompleted(t testing.TB, st *sqlstore.Store, opID, ext string, contribs int) store.Task {
	t.Helper()
	return assertCompletedAs(t, st, opID, ext, contribs, Created)
}

func assertCompletedAs(t testing.TB, st *sqlstore.Store, opID, ext string, contribs int, outcome Outcome) store.Task {
	t.Helper()
	task := assertOperationCompleted(t, st, opID, ext, contribs, outcome)
	if n := count(t, st, `SELECT COUNT(*) FROM tasks WHERE workspace_id = $1`, testWS); n != 1 {
		t.Errorf("tasks in workspace = %d, want 1", n)
	}
	if n := count(t, st, `SELECT COUNT(*) FROM task_remote_contribution_associations`); n != contribs {
		t.Errorf("association rows = %d, want %d", n, contribs)
	}
	return task
}

// assertOperationCompleted checks one completed creation (its operation,
// task, associations and task.created), whatever else the store holds.
func assertOperationCompleted(t testing.TB, st *sqlstore.Store, opID, ext string, contribs int, outcome Outcome) store.Task {
	t.Helper()
	ctx := context.Background()
	op, err := st.GetOperation(ctx, opID)
	if err != nil {
		t.Fatalf("get operation: %v", err)
	}
	if op.State != store.OpCompleted {
		t.Fatalf("operation state = %q, want %q (error %q)", op.State, store.OpCompleted, op.Error)
	}
	if op.Outcome != outcome.String() {
		t.Errorf("operation outcome = %q, want %q", op.Outcome, outcome.String())
	}
	task, err := st.GetTask(ctx, op.TaskID)
	if err != nil {
		t.Fatalf("get task: %v", err)
	}
	if task.CreationState != store.CreationComplete {
		t.Errorf("task creation state = %q, want %q", task.CreationState, store.CreationComplete)
	}
	if task.ExternalID != ext {
		t.Errorf("task external id = %q, want %q", task.ExternalID, ext)
	}
	if ext != "" && task.ExternalIDSettledAt == nil {
		t.Errorf("task external_id_settled_at = nil, want set")
	}
	if task.Revision != 1 {
		t.Errorf("task revision = %d, want 1", task.Revision)
	}
	assocs, err := st.ListAssociationsForTask(ctx, task.ID)
	if err != nil {
		t.Fatalf("list associations: %v", err)
	}
	if len(assocs) != contribs {
		t.Errorf("associations = %d, want %d", len(assocs), contribs)
	}
	for _, a := range assocs {
		if a.OperationID != op.ID {
			t.Errorf("association operation = %q, want %q", a.OperationID, op.ID)
		}
	}
	events := eventsOfTask(t, st, task.ID)
	if len(events) != 1 {
		t.Fatalf("events of task = %d, want 1 (%+v)", len(events), events)
	}
	if events[0].Type != store.EventTaskCreated || events[0].Revision != 1 || events[0].ID != op.EventID {
		t.Errorf("event = %s rev %d id %d, want %s rev 1 id %d", events[0].Type, events[0].Revision, events[0].ID,
			store.EventTaskCreated, op.EventID)
	}
	return task
}

// assertAborted checks the converged abort state: the operation and its steps
// retained as aborted, no task row, no live association of the operation, no
// event.
func assertAborted(t testing.TB, st *sqlstore.Store, opID string) {
	t.Helper()
	ctx := context.Background()
	op, err := st.GetOperation(ctx, opID)
	if err != nil {
		t.Fatalf("get operation: %v", err)
	}
	if op.State != store.OpAborted {
		t.Fatalf("operation state = %q, want %q", op.State, store.OpAborted)
	}
	if _, err := st.GetTask(ctx, op.TaskID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("get aborted task: err = %v, want ErrNotFound", err)
	}
	if n := count(t, st, `SELECT COUNT(*) FROM task_remote_contribution_associations WHERE operation_id = $1`, opID); n != 0 {
		t.Errorf("live associations of the aborted operation = %d, want 0", n)
	}
	if n := count(t, st, `SELECT COUNT(*) FROM task_creation_steps WHERE operation_id = $1`, opID); n == 0 {
		t.Errorf("aborted operation kept no steps, want them retained")
	}
	if events := eventsOfTask(t, st, op.TaskID); len(events) != 0 {
		t.Errorf("events of aborted task = %+v, want none", events)
	}
}

func onlyOperation(t testing.TB, st *sqlstore.Store) store.Operation {
	t.Helper()
	ids := queryStrings(t, st, `SELECT id FROM task_creation_operations`)
	if len(ids) != 1 {
		t.Fatalf("operations = %d, want 1", len(ids))
	}
	op, err := st.GetOperation(context.Background(), ids[0])
	if err != nil {
		t.Fatalf("get operation: %v", err)
	}
	return op
}

func stepStates(t testing.TB, st *sqlstore.Store, opID string) []string {
	t.Helper()
	steps, err := st.ListCreationSteps(context.Background(), opID)
	if err != nil {
		t.Fatalf("list steps: %v", err)
	}
	var out []string
	for _, s := range steps {
		out = append(out, s.State)
	}
	sort.Strings(out)
	return out
}

// testContributionKinds are the contributions the test coordinators accept,
// as the gateway's wiring names them.
var testContributionKinds = ContributionKinds{"github": "pull_request", "gitlab": "merge_request", "gitea": "pull_request"}
