package storetest

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/trackergateway/gateway/internal/store"
)

var ledgerTests = []contractTest{
	{name: "operation, steps and task are read together", fn: testLockOperationAndSteps},
	{name: "operations and steps are updated and read back", fn: testOperationUpdates},
	{name: "open operations are listed once stale and unleased", fn: testListOpenOperations},
	{name: "finishing a creation appends its event and completes the operation", fn: testFinishCreation},
	{name: "creations written at once name their tasks' identifiers in their events", fn: testInsertCompletedOperations},
}

// testInsertCompletedOperations: after InsertNumberedTasks, in the same
// transaction, InsertCompletedOperations appends each task.created with the
// identifier its row was given between the payload's two parts, and inserts
// each operation completed pointing at its event; tasks are numbered in
// order, one batch after another. Without its task in its operation's
// workspace the database refuses an event (ErrConstraint, even where the
// writes travel with the COMMIT), and the whole batch writes nothing.
func testInsertCompletedOperations(t *testing.T, s store.Store) {
	ctx := context.Background()
	SeedWorkspace(t, s, "ws")
	SeedWorkspace(t, s, "other")
	at := epoch.Add(time.Minute)
	created := func(i int) store.CreatedEvent {
		return store.CreatedEvent{PayloadBefore: `{"identifier":"`, PayloadAfter: `","n":` + strconv.Itoa(i) + `}`, CreatedAt: at}
	}
	next := 1 // the next number of workspace ws
	for _, size := range []int{3, 1} {
		var tasks []store.Task
		var ops []store.Operation
		var events []store.CreatedEvent
		for i := range size {
			task := newTask("ws", "ext-"+strconv.Itoa(next+i), 0)
			task.Revision = 1
			op := newOperation("ws", task.ID, at)
			op.State, op.Outcome, op.ExternalID = store.OpCompleted, "created", task.ExternalID
			tasks, ops, events = append(tasks, task), append(ops, op), append(events, created(next+i))
		}
		var identifiers []string
		must(t, s.InTx(ctx, func(tx store.Queries) error {
			if err := tx.InsertNumberedTasks(ctx, tasks, func(ids []string) { identifiers = ids }); err != nil {
				return err
			}
			return tx.InsertCompletedOperations(ctx, ops, events)
		}))
		stored, err := s.ReadTaskEvents(ctx, 0, 100)
		must(t, err)
		if len(stored) != next-1+size || len(identifiers) != size {
			t.Fatalf("%d events and identifiers %v after a batch of %d, want %d and %d", len(stored), identifiers, size, next-1+size, size)
		}
		for i, task := range tasks {
			want := "WS-" + strconv.Itoa(next+i)
			if identifiers[i] != want {
				t.Errorf("identifier %d = %q, want %q", i, identifiers[i], want)
			}
			got, err := s.GetTask(ctx, task.ID)
			must(t, err)
			if got.Identifier != want {
				t.Errorf("stored identifier of task %d = %q, want %q", i, got.Identifier, want)
			}
			var e store.TaskEvent
			for _, se := range stored {
				if se.TaskID == task.ID {
					e = se
				}
			}
			if wantPayload := `{"identifier":"` + want + `","n":` + strconv.Itoa(next+i) + `}`; e.Payload != wantPayload ||
				e.WorkspaceID != "ws" || e.Revision != 1 || e.Type != store.EventTaskCreated || !e.CreatedAt.Equal(at) {
				t.Errorf("event of task %d = %+v, want task.created revision 1 with payload %s", i, e, wantPayload)
			}
			op, err := s.GetOperation(ctx, ops[i].ID)
			must(t, err)
			if op.State != store.OpCompleted || op.Outcome != "created" || op.EventID != e.ID || op.TaskID != task.ID ||
				op.ExternalID != task.ExternalID || op.PlanJSON != ops[i].PlanJSON || op.LeaseOwner != "" || !op.UpdatedAt.Equal(at) {
				t.Errorf("operation %d = %+v, want completed pointing at event %d", i, op, e.ID)
			}
		}
		next += size
	}
	err := s.InTx(ctx, func(tx store.Queries) error {
		return tx.InsertNumberedTasks(ctx, []store.Task{newTask("ws", "ext-a", 0), newTask("other", "ext-b", 0)}, func([]string) {})
	})
	if err == nil {
		t.Errorf("tasks of two workspaces were numbered together")
	}
	for _, tc := range []struct {
		name string
		task func() store.Task
	}{
		{"no such task", func() store.Task { return newTask("ws", "ext-missing", 0) }},
		{"the task in another workspace", func() store.Task {
			task := newTask("other", "ext-other", 0)
			must(t, s.InsertTask(ctx, task))
			return task
		}},
	} {
		valid := newTask("ws", "ext-valid", 0)
		validOp := newOperation("ws", valid.ID, at)
		validOp.State = store.OpCompleted
		task := tc.task()
		op := newOperation("ws", task.ID, at)
		op.State = store.OpCompleted
		err := s.InTx(ctx, func(tx store.Queries) error {
			if err := tx.InsertNumberedTasks(ctx, []store.Task{valid}, func([]string) {}); err != nil {
				return err
			}
			return tx.InsertCompletedOperations(ctx, []store.Operation{validOp, op}, []store.CreatedEvent{created(0), created(0)})
		})
		if !errors.Is(err, store.ErrConstraint) {
			t.Errorf("%s: err = %v, want ErrConstraint", tc.name, err)
		}
		for _, id := range []string{validOp.ID, op.ID} {
			if _, err := s.GetOperation(ctx, id); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("%s: operation %s was written (%v)", tc.name, id, err)
			}
		}
		if _, err := s.GetTask(ctx, valid.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s: the batch's other task was written (%v)", tc.name, err)
		}
	}
	if events, err := s.ReadTaskEvents(ctx, 0, 100); err != nil || len(events) != next-1 {
		t.Errorf("%d events (%v) after the failed writes, want %d", len(events), err, next-1)
	}
	ws, err := s.GetWorkspace(ctx, "ws")
	must(t, err)
	if ws.TaskSequence != int64(next-1) {
		t.Errorf("task sequence %d after the failed writes, want %d", ws.TaskSequence, next-1)
	}
}

// testFinishCreation: FinishCreation appends the task.created event and
// completes the operation pointing at it, its lease cleared, in the
// caller's transaction.
func testFinishCreation(t *testing.T, s store.Store) {
	ctx := context.Background()
	SeedWorkspace(t, s, "ws")
	task := newTask("ws", "ext-1", 1)
	op := newOperation("ws", task.ID, epoch)
	op.State, op.LeaseOwner, op.LeaseExpiresAt = store.OpCompleting, "caller", &epoch
	must(t, s.InTx(ctx, func(tx store.Queries) error {
		if err := tx.InsertTask(ctx, task); err != nil {
			return err
		}
		return tx.InsertOperation(ctx, op)
	}))
	at := epoch.Add(time.Minute)
	must(t, s.InTx(ctx, func(tx store.Queries) error {
		return tx.FinishCreation(ctx, op.ID, "created", store.TaskEvent{WorkspaceID: "ws", TaskID: task.ID, Revision: 1,
			Type: store.EventTaskCreated, Payload: `{"id":"x"}`, CreatedAt: at})
	}))
	events, err := s.ReadTaskEvents(ctx, 0, 10)
	must(t, err)
	if len(events) != 1 || events[0].TaskID != task.ID || events[0].Type != store.EventTaskCreated || !events[0].CreatedAt.Equal(at) {
		t.Fatalf("events = %+v, want the one task.created", events)
	}
	got, err := s.GetOperation(ctx, op.ID)
	must(t, err)
	if got.State != store.OpCompleted || got.Outcome != "created" || got.EventID != events[0].ID ||
		got.LeaseOwner != "" || got.LeaseExpiresAt != nil || !got.UpdatedAt.Equal(at) {
		t.Errorf("operation = state %s outcome %q event %d lease %q/%v updated %v; want completed, created, %d, none, %v",
			got.State, got.Outcome, got.EventID, got.LeaseOwner, got.LeaseExpiresAt, got.UpdatedAt, events[0].ID, at)
	}
}

// newOperation is a preparing operation of workspace ws for task taskID,
// last touched at updated.
func newOperation(ws, taskID string, updated time.Time) store.Operation {
	return store.Operation{ID: uuid.NewString(), WorkspaceID: ws, TaskID: taskID, State: store.OpPreparing,
		PlanJSON: "{}", ManifestSHA256: "m", ActorJSON: "{}", ActorBindingSHA256: "a", CompletionTokenSHA256: "c",
		CreatedAt: epoch, UpdatedAt: updated}
}

// newStep is a planned step of operation opID.
func newStep(opID, key string) store.CreationStep {
	return store.CreationStep{OperationID: opID, Kind: "remote_contribution_associate", StepKey: key, RequestJSON: "{}",
		RequestSHA256: "r", IdempotencyKey: "k-" + key, State: store.StepPlanned, OwnershipMarker: "o-" + key,
		Compensation: store.CompensationNone, Disposition: "none", CreatedAt: epoch, UpdatedAt: epoch}
}

func testLockOperationAndSteps(t *testing.T, s store.Store) {
	ctx := context.Background()
	SeedWorkspace(t, s, "ws")
	task := newTask("ws", "ext-1", 1)
	op := newOperation("ws", task.ID, epoch)
	steps := []store.CreationStep{newStep(op.ID, "b"), newStep(op.ID, "a")}
	must(t, s.InTx(ctx, func(tx store.Queries) error {
		if err := tx.InsertTask(ctx, task); err != nil {
			return err
		}
		if err := tx.InsertOperation(ctx, op); err != nil {
			return err
		}
		for _, st := range steps {
			if err := tx.InsertCreationStep(ctx, st); err != nil {
				return err
			}
		}
		return nil
	}))
	must(t, s.InTx(ctx, func(tx store.Queries) error {
		got, gotSteps, err := tx.LockOperationAndSteps(ctx, op.ID)
		if err != nil {
			return err
		}
		if got.ID != op.ID || got.TaskID != task.ID || len(gotSteps) != 2 || gotSteps[0].StepKey != "a" || gotSteps[1].StepKey != "b" {
			t.Errorf("operation %s with steps %+v, want %s with steps a, b", got.ID, gotSteps, op.ID)
		}
		return nil
	}))
	err := s.InTx(ctx, func(tx store.Queries) error {
		_, _, err := tx.LockOperationAndSteps(ctx, uuid.NewString())
		return err
	})
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("missing operation err = %v, want ErrNotFound", err)
	}
	// LockCreation adds the task, or nil once its row is gone.
	for _, wantTask := range []bool{true, false} {
		if !wantTask {
			must(t, s.DeleteTask(ctx, task.ID))
		}
		must(t, s.InTx(ctx, func(tx store.Queries) error {
			got, gotSteps, gotTask, err := tx.LockCreation(ctx, op.ID)
			if err != nil {
				return err
			}
			if got.ID != op.ID || len(gotSteps) != 2 || (gotTask != nil) != wantTask || (wantTask && gotTask.ID != task.ID) {
				t.Errorf("lock creation (task present %v) = operation %s, %d steps, task %+v", wantTask, got.ID, len(gotSteps), gotTask)
			}
			got, gotSteps, exists, err := tx.LockCreationTaskExists(ctx, op.ID)
			if err != nil {
				return err
			}
			if got.ID != op.ID || got.PlanJSON != op.PlanJSON || len(gotSteps) != 2 || exists != wantTask {
				t.Errorf("lock creation task exists (task present %v) = operation %s, %d steps, exists %v", wantTask, got.ID, len(gotSteps), exists)
			}
			return nil
		}))
	}
	// A creation that planned no step, and one that does not exist.
	stepless := newTask("ws", "ext-2", 2)
	bare := newOperation("ws", stepless.ID, epoch)
	insertCreation(t, s, &stepless, bare)
	must(t, s.InTx(ctx, func(tx store.Queries) error {
		got, gotSteps, gotTask, err := tx.LockCreation(ctx, bare.ID)
		if err != nil {
			return err
		}
		if got.ID != bare.ID || got.State != store.OpPreparing || len(gotSteps) != 0 || gotTask == nil || gotTask.ID != stepless.ID || gotTask.Title != stepless.Title {
			t.Errorf("lock creation without steps = operation %s, %d steps, task %+v; want %s, none, %s", got.ID, len(gotSteps), gotTask, bare.ID, stepless.ID)
		}
		got, gotSteps, exists, err := tx.LockCreationTaskExists(ctx, bare.ID)
		if err != nil {
			return err
		}
		if got.ID != bare.ID || len(gotSteps) != 0 || !exists {
			t.Errorf("lock creation task exists without steps = operation %s, %d steps, exists %v", got.ID, len(gotSteps), exists)
		}
		return nil
	}))
	for _, id := range []string{uuid.NewString(), "not-a-uuid"} {
		err := s.InTx(ctx, func(tx store.Queries) error {
			_, _, _, err := tx.LockCreation(ctx, id)
			return err
		})
		if !errors.Is(err, store.ErrNotFound) {
			t.Errorf("lock creation of missing operation %q err = %v, want ErrNotFound", id, err)
		}
		err = s.InTx(ctx, func(tx store.Queries) error {
			_, _, _, err := tx.LockCreationTaskExists(ctx, id)
			return err
		})
		if !errors.Is(err, store.ErrNotFound) {
			t.Errorf("lock creation task exists of missing operation %q err = %v, want ErrNotFound", id, err)
		}
	}
}

// insertCreation writes task (when not nil), op and its steps in one
// transaction, as the coordinator does.
func insertCreation(t testing.TB, s store.Store, task *store.Task, op store.Operation, steps ...store.CreationStep) {
	t.Helper()
	ctx := context.Background()
	must(t, s.InTx(ctx, func(tx store.Queries) error {
		if task != nil {
			if err := tx.InsertTask(ctx, *task); err != nil {
				return err
			}
		}
		if err := tx.InsertOperation(ctx, op); err != nil {
			return err
		}
		for _, st := range steps {
			if err := tx.InsertCreationStep(ctx, st); err != nil {
				return err
			}
		}
		return nil
	}))
}

// testOperationUpdates: every column UpdateOperation and UpdateCreationStep
// write reads back through GetOperation and ListCreationSteps, and an update
// of a row that does not exist is ErrNotFound.
func testOperationUpdates(t *testing.T, s store.Store) {
	ctx := context.Background()
	SeedWorkspace(t, s, "ws")
	task := newTask("ws", "ext-1", 1)
	op := newOperation("ws", task.ID, epoch)
	insertCreation(t, s, &task, op, newStep(op.ID, "b"), newStep(op.ID, "a"))

	got, err := s.GetOperation(ctx, op.ID)
	must(t, err)
	if got.ID != op.ID || got.WorkspaceID != "ws" || got.TaskID != task.ID || got.State != store.OpPreparing ||
		got.ManifestSHA256 != "m" || got.CompletionTokenSHA256 != "c" || got.LeaseExpiresAt != nil || !got.UpdatedAt.Equal(epoch) {
		t.Errorf("inserted operation = %+v, want %+v", got, op)
	}
	for _, id := range []string{uuid.NewString(), "not-a-uuid"} {
		if _, err := s.GetOperation(ctx, id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("get operation %q err = %v, want ErrNotFound", id, err)
		}
	}

	lease := epoch.Add(2 * time.Minute)
	want := got
	want.State, want.ReleaseApplied, want.Outcome, want.EventID = store.OpCompleting, true, "created", 7
	want.RecoveryAction, want.Generation, want.LeaseOwner, want.LeaseExpiresAt = "finish", 3, "recoverer", &lease
	want.Error, want.ExternalID, want.UpdatedAt = "provider timed out", "ext-1", epoch.Add(time.Minute)
	must(t, s.UpdateOperation(ctx, want))
	got, err = s.GetOperation(ctx, op.ID)
	must(t, err)
	if got.State != want.State || !got.ReleaseApplied || got.Outcome != want.Outcome || got.EventID != want.EventID ||
		got.RecoveryAction != want.RecoveryAction || got.Generation != want.Generation || got.LeaseOwner != want.LeaseOwner ||
		got.LeaseExpiresAt == nil || !got.LeaseExpiresAt.Equal(lease) || got.Error != want.Error ||
		got.ExternalID != want.ExternalID || !got.UpdatedAt.Equal(want.UpdatedAt) {
		t.Errorf("updated operation = %+v, want %+v", got, want)
	}
	missing := want
	missing.ID = uuid.NewString()
	if err := s.UpdateOperation(ctx, missing); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("update of a missing operation err = %v, want ErrNotFound", err)
	}

	steps, err := s.ListCreationSteps(ctx, op.ID)
	must(t, err)
	if len(steps) != 2 || steps[0].StepKey != "a" || steps[1].StepKey != "b" || steps[0].State != store.StepPlanned {
		t.Fatalf("steps = %+v, want planned a, b", steps)
	}
	step := steps[0]
	step.State, step.Attempt, step.ClaimOwner, step.ClaimGeneration = store.StepSucceeded, 2, "worker", 3
	step.LeaseExpiresAt, step.EvidenceJSON, step.EvidenceSHA256 = &lease, `{"id":1}`, "e"
	step.ProviderHandle, step.Compensation, step.Disposition = "handle", store.CompensationRequired, "kept"
	step.Error, step.UpdatedAt = "retried once", epoch.Add(time.Minute)
	must(t, s.UpdateCreationStep(ctx, step))
	steps, err = s.ListCreationSteps(ctx, op.ID)
	must(t, err)
	if len(steps) != 2 {
		t.Fatalf("steps after update = %+v", steps)
	}
	g := steps[0]
	if g.State != step.State || g.Attempt != 2 || g.ClaimOwner != "worker" || g.ClaimGeneration != 3 ||
		g.LeaseExpiresAt == nil || !g.LeaseExpiresAt.Equal(lease) || g.EvidenceJSON != step.EvidenceJSON ||
		g.EvidenceSHA256 != "e" || g.ProviderHandle != "handle" || g.Compensation != store.CompensationRequired ||
		g.Disposition != "kept" || g.Error != step.Error || !g.UpdatedAt.Equal(step.UpdatedAt) {
		t.Errorf("updated step = %+v, want %+v", g, step)
	}
	if steps[1].State != store.StepPlanned {
		t.Errorf("the other step = %+v, want it untouched", steps[1])
	}
	missingStep := step
	missingStep.StepKey = "nope"
	if err := s.UpdateCreationStep(ctx, missingStep); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("update of a missing step err = %v, want ErrNotFound", err)
	}
	if steps, err := s.ListCreationSteps(ctx, uuid.NewString()); err != nil || len(steps) != 0 {
		t.Errorf("steps of an unknown operation = %+v, %v; want none", steps, err)
	}
}

// testListOpenOperations: recovery finds the operations still open (not
// completed or aborted) that nobody touched since staleBefore and whose
// lease, if any, has expired, the least recently touched first.
func testListOpenOperations(t *testing.T, s store.Store) {
	ctx := context.Background()
	names := map[string]string{} // operation ID → name
	add := func(name, state string, updated time.Time, lease *time.Time) {
		op := newOperation("ws", uuid.NewString(), updated)
		op.State, op.LeaseExpiresAt = state, lease
		if lease != nil {
			op.LeaseOwner = "recoverer"
		}
		insertCreation(t, s, nil, op)
		names[op.ID] = name
	}
	leaseUntil := epoch.Add(10 * time.Minute)
	add("preparing", store.OpPreparing, epoch, nil)
	add("completing, leased", store.OpCompleting, epoch.Add(time.Second), &leaseUntil)
	add("preparing-release", store.OpPreparingRelease, epoch.Add(2*time.Second), nil)
	add("completed", store.OpCompleted, epoch, nil)
	add("aborted", store.OpAborted, epoch, nil)
	add("recent", store.OpPreparing, epoch.Add(time.Hour), nil)

	tests := []struct {
		name             string
		staleBefore, now time.Time
		limit            int
		want             []string
	}{
		{"a live lease hides its operation", epoch.Add(30 * time.Minute), epoch.Add(5 * time.Minute), 10,
			[]string{"preparing", "preparing-release"}},
		{"an expired lease does not", epoch.Add(30 * time.Minute), epoch.Add(20 * time.Minute), 10,
			[]string{"preparing", "completing, leased", "preparing-release"}},
		{"limit", epoch.Add(30 * time.Minute), epoch.Add(20 * time.Minute), 1, []string{"preparing"}},
		{"nothing stale yet", epoch, epoch.Add(20 * time.Minute), 10, nil},
	}
	for _, tc := range tests {
		got, err := s.ListOpenOperations(ctx, tc.staleBefore, tc.now, tc.limit)
		must(t, err)
		var gotNames []string
		for _, op := range got {
			gotNames = append(gotNames, names[op.ID])
		}
		if !slices.Equal(gotNames, tc.want) {
			t.Errorf("%s: open operations = %q, want %q", tc.name, gotNames, tc.want)
		}
	}
}
