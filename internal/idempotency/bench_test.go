package idempotency

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/store/sqlstore"
	"github.com/trackergateway/gateway/internal/store/storetest"
	"github.com/trackergateway/gateway/internal/tasks/taskrules"
)

// Benchmarks of task creation (docs/benchmarks.md, "Task creation"). Each
// runs per dialect on a fresh store; PostgreSQL skips without
// GATEWAY_TEST_POSTGRES_URL.
//
//	go test ./internal/idempotency -run '^$' -bench . -benchtime 2000x -count 3

func benchDialects(b *testing.B, fn func(b *testing.B, st *sqlstore.Store)) {
	for _, d := range storetest.Dialects {
		b.Run(d, func(b *testing.B) {
			st := storetest.Open(b, d)
			storetest.SeedWorkspace(b, st, testWS)
			fn(b, st)
		})
	}
}

func benchRequest(ext string) CreateRequest {
	return CreateRequest{WorkspaceID: testWS, ExternalID: ext, Title: "Benchmark task", WorkflowStepID: "backlog",
		Labels: []string{"bench"}, Actor: Actor{Kind: "api_token", ID: "bench", AuthMode: "bearer"}}
}

// BenchmarkCreateCreated: a ledger create with no steps that creates a task
// (lookup miss, Begin, Complete phase A and phase B with task.created).
func BenchmarkCreateCreated(b *testing.B) {
	benchDialects(b, func(b *testing.B, st *sqlstore.Store) {
		ctx := context.Background()
		c := New(st, discardLogger(), time.Now, testContributionKinds)
		prefix := uuid.NewString()[:8]
		i := 0
		for b.Loop() {
			res, err := c.Create(ctx, benchRequest(prefix+":"+strconv.Itoa(i)))
			if err != nil || res.Outcome != Created {
				b.Fatalf("Create = %v, %v", res.Outcome, err)
			}
			i++
		}
	})
}

// BenchmarkCreateCreatedShared: creates from 32 goroutines at once whose
// transactions share commits (store.WithSharedCommit), as the inbox's
// workers run them. On SQLite, whose groups commit many creates at a time,
// ns/op is then the one writer's time per create rather than an fsync's.
func BenchmarkCreateCreatedShared(b *testing.B) {
	benchDialects(b, func(b *testing.B, st *sqlstore.Store) {
		ctx := store.WithSharedCommit(context.Background())
		c := New(st, discardLogger(), time.Now, testContributionKinds)
		prefix := uuid.NewString()[:8]
		var next atomic.Int64
		b.SetParallelism(16)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				res, err := c.Create(ctx, benchRequest(prefix+":"+strconv.FormatInt(next.Add(1), 10)))
				if err != nil || res.Outcome != Created {
					b.Errorf("Create = %v, %v", res.Outcome, err)
					return
				}
			}
		})
	})
}

// BenchmarkLedgerOverSettlement: a ledger create and a settlement create
// (below) in turn, one of each per op, so that both run on the same machine
// at the same moment: on a shared VM whose speed drifts from one second to
// the next, this ratio is steadier than one taken from two benchmark runs.
// It reports each create's mean time and the ratio.
func BenchmarkLedgerOverSettlement(b *testing.B) {
	benchDialects(b, func(b *testing.B, st *sqlstore.Store) {
		ctx := context.Background()
		c := New(st, discardLogger(), time.Now, testContributionKinds)
		prefix := uuid.NewString()[:8]
		var ledger, settlement time.Duration
		n := 0
		for b.Loop() {
			start := time.Now()
			res, err := c.Create(ctx, benchRequest(prefix+":ledger:"+strconv.Itoa(n)))
			if err != nil || res.Outcome != Created {
				b.Fatalf("Create = %v, %v", res.Outcome, err)
			}
			mid := time.Now()
			if _, o, err := settlementCreate(ctx, st, benchRequest(prefix+":settlement:"+strconv.Itoa(n))); err != nil || o != Created {
				b.Fatalf("settlementCreate = %v, %v", o, err)
			}
			ledger += mid.Sub(start)
			settlement += time.Since(mid)
			n++
		}
		b.ReportMetric(float64(ledger.Nanoseconds())/float64(n), "ledger-ns")
		b.ReportMetric(float64(settlement.Nanoseconds())/float64(n), "settlement-ns")
		b.ReportMetric(float64(ledger)/float64(settlement), "ledger/settlement")
	})
}

// BenchmarkCreateFound: a create whose identity is held: one indexed read, no
// write.
func BenchmarkCreateFound(b *testing.B) {
	benchDialects(b, func(b *testing.B, st *sqlstore.Store) {
		ctx := context.Background()
		c := New(st, discardLogger(), time.Now, testContributionKinds)
		if _, err := c.Create(ctx, benchRequest("held")); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			res, err := c.Create(ctx, benchRequest("held"))
			if err != nil || res.Outcome != FoundSettled {
				b.Fatalf("Create = %v, %v", res.Outcome, err)
			}
		}
	})
}

// BenchmarkLookup: the read-only probe of the lookup route.
func BenchmarkLookup(b *testing.B) {
	benchDialects(b, func(b *testing.B, st *sqlstore.Store) {
		ctx := context.Background()
		c := New(st, discardLogger(), time.Now, testContributionKinds)
		if _, err := c.Create(ctx, benchRequest("held")); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, o, err := c.Lookup(ctx, testWS, "held"); err != nil || o != FoundSettled {
				b.Fatalf("Lookup = %v, %v", o, err)
			}
		}
	})
}

// BenchmarkSettlementCreate: the settlement create the ledger replaced.
func BenchmarkSettlementCreate(b *testing.B) {
	benchDialects(b, func(b *testing.B, st *sqlstore.Store) {
		ctx := context.Background()
		prefix := uuid.NewString()[:8]
		i := 0
		for b.Loop() {
			if _, o, err := settlementCreate(ctx, st, benchRequest(prefix+":"+strconv.Itoa(i))); err != nil || o != Created {
				b.Fatalf("settlementCreate = %v, %v", o, err)
			}
			i++
		}
	})
}

// settlementCreate is the settlement baseline, bench-only: lookup, then one
// transaction (workspace lock, WIP admission, sequence, insert of a complete
// but unsettled task), then the settlement UPDATE whose predicate includes
// external_id, as its own statement.
func settlementCreate(ctx context.Context, st *sqlstore.Store, req CreateRequest) (store.Task, Outcome, error) {
	ext, err := NormalizeExternalID(req.ExternalID)
	if err != nil {
		return store.Task{}, 0, err
	}
	if t, err := st.LookupTaskByExternalID(ctx, req.WorkspaceID, ext); err == nil {
		if t.ExternalIDSettledAt != nil {
			return t, FoundSettled, nil
		}
		return t, FoundUnsettled, nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return store.Task{}, 0, err
	}
	now := time.Now().UTC()
	task := store.Task{ID: uuid.NewString(), WorkspaceID: req.WorkspaceID, Title: req.Title, Description: req.Description,
		WorkflowStepID: req.WorkflowStepID, Labels: req.Labels, ExternalID: ext, CreationState: store.CreationComplete,
		CreatedAt: now, UpdatedAt: now}
	err = st.InTx(ctx, func(tx store.Queries) error {
		ws, err := tx.LockWorkspace(ctx, req.WorkspaceID)
		if err != nil {
			return err
		}
		admitted, err := taskrules.Admit(ctx, tx, taskrules.Admission{Workspace: ws, WorkspaceLocked: true, Task: task})
		if err != nil {
			return err
		}
		task = admitted
		return tx.InsertNumberedTasks(ctx, []store.Task{task}, func(ids []string) { task.Identifier = ids[0] })
	})
	if err != nil {
		return store.Task{}, 0, err
	}
	// The settlement UPDATE of that design, which the store contract no
	// longer has (Complete settles), run through the driver.
	n, err := st.Driver().Exec(ctx, `UPDATE tasks SET external_id_settled_at = $1
		WHERE id = $2 AND external_id = $3 AND external_id_settled_at IS NULL`, now, task.ID, ext)
	if err != nil {
		return store.Task{}, 0, err
	}
	if n == 0 {
		return task, CreatedIdentityLost, nil
	}
	return task, Created, nil
}
