package idempotency

import (
	"context"
	"slices"
	"testing"

	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/store/sqlstore"
)

// TestBeginTakesTheWorkspaceLast: Begin's transaction writes the operation
// and its steps before it takes the workspace row (the WIP check's lock or
// the task sequence), which every create in the workspace waits for until
// the transaction ends.
func TestBeginTakesTheWorkspaceLast(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		req  CreateRequest
		want []string
	}{
		{"no step, no WIP limit", createRequest("gh:1"),
			[]string{"operation", "numbered task"}},
		{"a step", createRequest("gh:2", contribution("7")),
			[]string{"operation", "step", "numbered task"}},
		{"WIP-limited workflow step", func() CreateRequest {
			r := createRequest("gh:3")
			r.WorkflowStepID = "doing"
			return r
		}(), []string{"operation", "lock workspace", "numbered task"}},
	}
	forEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		for _, tc := range tests {
			rec := &recordingStore{Store: st}
			c := New(rec, discardLogger(), newTestClock().Now, testContributionKinds)
			if _, err := c.BeginTaskCreation(context.Background(), tc.req); err != nil {
				t.Fatalf("%s: begin: %v", tc.name, err)
			}
			if !slices.Equal(rec.calls, tc.want) {
				t.Errorf("%s: Begin wrote %v, want %v", tc.name, rec.calls, tc.want)
			}
		}
	})
}

// recordingStore records the writes of Begin's transaction, in order.
type recordingStore struct {
	store.Store
	calls []string
}

func (s *recordingStore) InTx(ctx context.Context, fn func(store.Queries) error) error {
	return s.Store.InTx(ctx, func(q store.Queries) error { return fn(recordingQueries{q, s}) })
}

type recordingQueries struct {
	store.Queries
	s *recordingStore
}

func (q recordingQueries) InsertOperation(ctx context.Context, op store.Operation) error {
	q.s.calls = append(q.s.calls, "operation")
	return q.Queries.InsertOperation(ctx, op)
}

func (q recordingQueries) InsertCreationStep(ctx context.Context, s store.CreationStep) error {
	q.s.calls = append(q.s.calls, "step")
	return q.Queries.InsertCreationStep(ctx, s)
}

func (q recordingQueries) LockWorkspace(ctx context.Context, id string) (store.Workspace, error) {
	q.s.calls = append(q.s.calls, "lock workspace")
	return q.Queries.LockWorkspace(ctx, id)
}

func (q recordingQueries) InsertNumberedTasks(ctx context.Context, ts []store.Task, numbered func([]string)) error {
	q.s.calls = append(q.s.calls, "numbered task")
	return q.Queries.InsertNumberedTasks(ctx, ts, numbered)
}
