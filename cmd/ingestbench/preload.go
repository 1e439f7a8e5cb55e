package main

// Preloading: the flat-cost experiment runs the phases against a database
// that already holds what a gateway accumulates (finished deliveries, tasks
// and their creation operations), to compare with an empty one.

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/store/sqlstore"
)

// preloadWorkspace holds the preloaded tasks, apart from the bench
// workspace whose tasks the phases list and count. The tables and their
// indexes are shared, which is what the experiment is about.
const preloadWorkspace = "stored"

// seedStored migrates the database and stores deliveries finished
// deliveries (succeeded an hour ago, within any retention) through the
// inbox's own insert, then tasks complete tasks with their completed
// creation operations. The tasks' task.created events are not stored: in
// a gateway that has run for a while they are long projected, and stored
// here they would only give the projector a backlog to work through during
// the measurement.
func seedStored(url string, t *template, deliveries, tasks int) {
	ctx := context.Background()
	s := openMigratedBenchStore(ctx, url)
	defer s.Close()
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "preload:", err)
		os.Exit(1)
	}
	finished := time.Now().UTC().Add(-time.Hour)
	if err := seedFinished(ctx, s, t, deliveries, "stored-", finished); err != nil {
		fail(err)
	}
	defer settle(ctx, s, url)
	if tasks == 0 {
		return
	}
	if err := s.UpsertWorkspace(ctx, store.Workspace{ID: preloadWorkspace, Name: "Stored", TaskPrefix: "STORED",
		CreatedAt: finished, Steps: []store.Step{{ID: "backlog", Name: "Backlog"}}}); err != nil {
		fail(err)
	}
	const batch = 1000
	for start := 0; start < tasks; start += batch {
		err := s.InTx(ctx, func(tx store.Queries) error {
			for i := start; i < min(start+batch, tasks); i++ {
				n := strconv.Itoa(i + 1)
				at := finished.Add(time.Duration(i) * time.Millisecond)
				opID, taskID := store.TimeOrderedID(), store.TimeOrderedID()
				ext := "github:github.com:issue:stored-" + n
				task := store.Task{ID: taskID, WorkspaceID: preloadWorkspace, Title: "Stored task " + n,
					WorkflowStepID: "backlog", Labels: []string{"bug"}, ExternalID: ext, ExternalIDSettledAt: &at,
					CreationState: store.CreationComplete, CreationOperationID: opID, Revision: 1, CreatedAt: at, UpdatedAt: at,
					Source: &store.Source{Provider: "github", Kind: "issue", Ref: "stored/repo#" + n,
						URL: "https://github.com/stored/repo/issues/" + n}}
				if err := tx.InsertNumberedTasks(ctx, []store.Task{task}, func([]string) {}); err != nil {
					return err
				}
				if err := tx.InsertOperation(ctx, store.Operation{ID: opID, WorkspaceID: preloadWorkspace, TaskID: taskID,
					State: store.OpCompleted, Outcome: "created", PlanJSON: "{}", ManifestSHA256: "-", ActorJSON: "{}",
					ActorBindingSHA256: "-", CompletionTokenSHA256: "-", ExternalID: ext, CreatedAt: at, UpdatedAt: at}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			fail(err)
		}
	}
}

// settle leaves a PostgreSQL database as a long-running gateway's would
// be, not as a bulk load leaves it: the seeding UPDATE left a dead version
// of every delivery, which autovacuum would otherwise clean (and the
// checkpointer write out) in the middle of the measurement.
func settle(ctx context.Context, s *sqlstore.Store, url string) {
	if strings.HasPrefix(url, "sqlite:") {
		return
	}
	for _, q := range []string{`VACUUM ANALYZE`, `CHECKPOINT`} {
		if _, err := s.Driver().Exec(ctx, q); err != nil {
			fmt.Fprintln(os.Stderr, "preload:", q+":", err)
			os.Exit(1)
		}
	}
}
