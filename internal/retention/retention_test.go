package retention_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/trackergateway/gateway/internal/config"
	"github.com/trackergateway/gateway/internal/projection"
	"github.com/trackergateway/gateway/internal/retention"
	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/store/sqlstore"
	"github.com/trackergateway/gateway/internal/store/storetest"
)

var (
	discard = slog.New(slog.NewTextHandler(io.Discard, nil))
	// now is when the tests prune; rows are dated before it.
	now    = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	policy = config.RetentionPolicy{Processed: 168 * time.Hour, Failed: 720 * time.Hour, Events: 168 * time.Hour, Interval: time.Hour}
)

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// finished stores a delivery and finishes it with status ago before now.
func finished(t testing.TB, s store.Store, key, status string, ago time.Duration) string {
	t.Helper()
	at := now.Add(-ago)
	id := received(t, s, key, at.Add(-time.Second))
	claimed, err := s.ClaimDeliveries(context.Background(), "w", at, time.Minute, 1)
	must(t, err)
	if len(claimed) != 1 || claimed[0].ID != id {
		t.Fatalf("claimed %+v, want %s", claimed, id)
	}
	d := claimed[0]
	d.Status, d.ProcessedAt, d.NextAttemptAt = status, &at, at
	if status == store.DeliveryRetrying {
		d.ProcessedAt, d.NextAttemptAt = nil, now.Add(time.Hour)
	}
	must(t, s.FinishDelivery(context.Background(), d, "w"))
	return id
}

func received(t testing.TB, s store.Store, key string, at time.Time) string {
	t.Helper()
	res, err := s.InsertDeliveries(context.Background(), []store.Delivery{{ConnectionID: "gh", Provider: "github",
		Event: "issues", DeliveryKey: key, Headers: `{}`, Body: []byte(`{}`), ReceivedAt: at}})
	must(t, err)
	return res[0].ID
}

// fixture is a database holding rows of every kind, some expired.
type fixture struct {
	deliveries map[string]string // key → ID; keys starting "expired" must go
	events     []int64           // appended in order; events[:2] must go
	task       store.Task
}

const day = 24 * time.Hour

func seed(t *testing.T, s store.Store) fixture {
	t.Helper()
	ctx := context.Background()
	f := fixture{deliveries: map[string]string{}}
	for _, st := range store.ProcessedStatuses {
		f.deliveries["expired-"+st] = finished(t, s, "expired-"+st, st, 8*day)
		f.deliveries["kept-"+st] = finished(t, s, "kept-"+st, st, 6*day)
	}
	f.deliveries["expired-failed"] = finished(t, s, "expired-failed", store.DeliveryFailed, 31*day)
	f.deliveries["kept-failed"] = finished(t, s, "kept-failed", store.DeliveryFailed, 8*day)
	// Pending deliveries, received long ago: a retrying one, one a worker
	// holds, and a queued one (made last: the claims above would take it).
	f.deliveries["pending-retrying"] = finished(t, s, "pending-retrying", store.DeliveryRetrying, 100*day)
	f.deliveries["pending-processing"] = received(t, s, "pending-processing", now.Add(-99*day))
	claimed, err := s.ClaimDeliveries(ctx, "w2", now.Add(-99*day), 1000*day, 1)
	must(t, err)
	if len(claimed) != 1 || claimed[0].ID != f.deliveries["pending-processing"] {
		t.Fatalf("claimed %+v, want the processing delivery", claimed)
	}
	f.deliveries["pending-queued"] = received(t, s, "pending-queued", now.Add(-98*day))

	// A task with its suppression, alias and association, all old.
	storetest.SeedWorkspace(t, s, "ws")
	old := now.Add(-100 * day)
	f.task = store.Task{ID: uuid.NewString(), WorkspaceID: "ws", Identifier: "WS-1", Title: "t", WorkflowStepID: "backlog",
		ExternalID: "github:github.com:issue:o/r#1", CreationState: store.CreationComplete, CreatedAt: old, UpdatedAt: old}
	must(t, s.InsertTask(ctx, f.task))
	must(t, s.UpsertSuppression(ctx, store.Suppression{WorkspaceID: "ws", ExternalID: "github:github.com:issue:o/r#2",
		TaskID: uuid.NewString(), Reason: "deleted", CreatedAt: old}))
	must(t, s.InsertAlias(ctx, "ws", "github:github.com:issue:o/r#3", f.task.ID, old))
	_, err = s.InsertAssociation(ctx, store.Association{Provider: "github", ConnectionID: "gh", ContributionID: "42",
		ContributionKind: "pull_request", TaskID: f.task.ID, WorkspaceID: "ws", RepositoryID: "o/r",
		OperationID: uuid.NewString(), IdempotencyKey: "k", OwnershipMarker: "m", ClaimedAt: old})
	must(t, err)

	// Events: two old and read, one read but recent, one old and unread.
	for i, ago := range []time.Duration{10 * day, 9 * day, 6 * day, 9 * day} {
		err := s.InTx(ctx, func(tx store.Queries) error {
			id, err := tx.AppendTaskEvent(ctx, store.TaskEvent{WorkspaceID: "ws", TaskID: uuid.NewString(), Revision: int64(i + 1),
				Type: store.EventTaskUpdated, Payload: `{}`, CreatedAt: now.Add(-ago)})
			f.events = append(f.events, id)
			return err
		})
		must(t, err)
	}
	must(t, s.SaveOutboxCursor(ctx, projection.Consumer, f.events[2], now))
	return f
}

// check fails unless exactly the expired rows are gone (or, with
// nothingGone, none is).
func (f fixture) check(t *testing.T, s store.Store, nothingGone bool) {
	t.Helper()
	ctx := context.Background()
	for key, id := range f.deliveries {
		_, err := s.GetDelivery(ctx, id)
		gone := errors.Is(err, store.ErrNotFound)
		if err != nil && !gone {
			t.Fatal(err)
		}
		if want := !nothingGone && key[:7] == "expired"; gone != want {
			t.Errorf("delivery %s: deleted = %v, want %v", key, gone, want)
		}
	}
	evs, err := s.ReadTaskEvents(ctx, 0, 10)
	must(t, err)
	want := f.events[2:]
	if nothingGone {
		want = f.events
	}
	var got []int64
	for _, e := range evs {
		got = append(got, e.ID)
	}
	if len(got) != len(want) || got[0] != want[0] {
		t.Errorf("events left = %v, want %v", got, want)
	}
	if _, err := s.GetTask(ctx, f.task.ID); err != nil {
		t.Errorf("task: %v", err)
	}
	if _, err := s.GetSuppression(ctx, "ws", "github:github.com:issue:o/r#2"); err != nil {
		t.Errorf("suppression: %v", err)
	}
	if id, err := s.ResolveAlias(ctx, "ws", "github:github.com:issue:o/r#3"); err != nil || id != f.task.ID {
		t.Errorf("alias = %q, %v", id, err)
	}
	if as, err := s.ListAssociationsForTask(ctx, f.task.ID); err != nil || len(as) != 1 {
		t.Errorf("associations = %+v, %v", as, err)
	}
}

func newPruner(s store.Store, p config.RetentionPolicy) *retention.Pruner {
	pr := retention.New(s, discard, storetest.NewClock(now, 0).Now, p)
	pr.Pause = 0
	return pr
}

// TestPrunesOnlyWhatItMay: a dry run counts and deletes nothing; a pass
// then deletes exactly what the dry run counted, in batches, and nothing
// else.
func TestPrunesOnlyWhatItMay(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, s *sqlstore.Store) {
		t.Parallel()
		ctx := context.Background()
		f := seed(t, s)
		want := retention.Counts{DeliveriesProcessed: 3, DeliveriesFailed: 1, Events: 2}

		p := newPruner(s, policy)
		p.BatchSize = 2
		var mu sync.Mutex
		reported := map[string]int64{}
		batches := 0
		p.OnDeleted = func(kind string, n int64) {
			mu.Lock()
			defer mu.Unlock()
			reported[kind] += n
			batches++
		}
		dry, err := p.RunOnce(ctx, true)
		must(t, err)
		if dry != want {
			t.Errorf("dry run = %+v, want %+v", dry, want)
		}
		f.check(t, s, true)
		if len(reported) != 0 {
			t.Errorf("dry run reported deletions %v", reported)
		}

		got, err := p.RunOnce(ctx, false)
		must(t, err)
		if got != want {
			t.Errorf("pass = %+v, want %+v (the dry run's)", got, want)
		}
		f.check(t, s, false)
		wantReported := map[string]int64{retention.KindDeliveriesProcessed: 3, retention.KindDeliveriesFailed: 1, retention.KindEvents: 2}
		for k, n := range wantReported {
			if reported[k] != n {
				t.Errorf("OnDeleted(%s) total = %d, want %d (all: %v)", k, reported[k], n, reported)
			}
		}
		if batches != 4 { // 2+1 processed, 1 failed, 2 events
			t.Errorf("%d batches reported, want 4 of at most 2 rows", batches)
		}

		again, err := p.RunOnce(ctx, false)
		if err != nil || again != (retention.Counts{}) {
			t.Errorf("second pass = %+v, %v; want nothing left to delete", again, err)
		}
	})
}

// TestZeroKeeps: a zero period keeps its kind whatever its age.
func TestZeroKeeps(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		policy config.RetentionPolicy
		want   retention.Counts
	}{
		{"processed 0", config.RetentionPolicy{Failed: 720 * time.Hour, Events: 168 * time.Hour, Interval: time.Hour},
			retention.Counts{DeliveriesFailed: 1, Events: 2}},
		{"failed 0", config.RetentionPolicy{Processed: 168 * time.Hour, Events: 168 * time.Hour, Interval: time.Hour},
			retention.Counts{DeliveriesProcessed: 3, Events: 2}},
		{"events 0", config.RetentionPolicy{Processed: 168 * time.Hour, Failed: 720 * time.Hour, Interval: time.Hour},
			retention.Counts{DeliveriesProcessed: 3, DeliveriesFailed: 1}},
		{"all 0", config.RetentionPolicy{Interval: time.Hour}, retention.Counts{}},
	}
	storetest.ForDialects(t, func(t *testing.T, dialect string) {
		t.Parallel()
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				s := storetest.Open(t, dialect)
				f := seed(t, s)
				for _, dry := range []bool{true, false} {
					got, err := newPruner(s, tc.policy).RunOnce(context.Background(), dry)
					if err != nil || got != tc.want {
						t.Errorf("dry run %v: %+v, %v; want %+v", dry, got, err, tc.want)
					}
				}
				if tc.want == (retention.Counts{}) {
					f.check(t, s, true)
				}
			})
		}
	})
}

// TestOnePrunerAtATime: while one pruner works, another's pass is refused
// (ErrBusy) and deletes nothing; once the first is done, or its lease has
// expired, the other may run.
func TestOnePrunerAtATime(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, s *sqlstore.Store) {
		t.Parallel()
		ctx := context.Background()
		f := seed(t, s)
		first := newPruner(s, policy)
		first.BatchSize = 1
		inBatch, resume := make(chan struct{}), make(chan struct{})
		var once sync.Once
		first.OnDeleted = func(string, int64) {
			once.Do(func() {
				close(inBatch)
				<-resume
			})
		}
		done := make(chan error, 1)
		var firstCounts retention.Counts
		go func() {
			var err error
			firstCounts, err = first.RunOnce(ctx, false)
			done <- err
		}()
		<-inBatch
		second := newPruner(s, policy)
		got, err := second.RunOnce(ctx, false)
		if !errors.Is(err, retention.ErrBusy) || got != (retention.Counts{}) {
			t.Errorf("second pruner while the first works: %+v, %v; want nothing and ErrBusy", got, err)
		}
		close(resume)
		must(t, <-done)
		if want := (retention.Counts{DeliveriesProcessed: 3, DeliveriesFailed: 1, Events: 2}); firstCounts != want {
			t.Errorf("first pruner = %+v, want %+v", firstCounts, want)
		}
		f.check(t, s, false)
		if _, err := second.RunOnce(ctx, false); err != nil {
			t.Errorf("second pruner once the first is done: %v", err)
		}

		// A pruner that died holding the lease holds it until it expires.
		clock := storetest.NewClock(now, 0)
		ok, err := s.AcquireJobLease(ctx, retention.LeaseName, "dead replica", now, now.Add(retention.DefaultLease))
		must(t, err)
		if !ok {
			t.Fatal("lease not free after both passes")
		}
		third := retention.New(s, discard, clock.Now, policy)
		if _, err := third.RunOnce(ctx, false); !errors.Is(err, retention.ErrBusy) {
			t.Errorf("pass under a live lease: %v, want ErrBusy", err)
		}
		clock.Advance(retention.DefaultLease)
		if _, err := third.RunOnce(ctx, false); err != nil {
			t.Errorf("pass after the lease expired: %v", err)
		}
	})
}

// TestRunStopsOnCancel: Run prunes at once, and returns when ctx ends.
func TestRunStopsOnCancel(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, s *sqlstore.Store) {
		t.Parallel()
		f := seed(t, s)
		ctx, cancel := context.WithCancel(context.Background())
		stopped := make(chan struct{})
		go func() {
			defer close(stopped)
			newPruner(s, policy).Run(ctx)
		}()
		deadline := time.Now().Add(20 * time.Second)
		for {
			_, err := s.GetDelivery(context.Background(), f.deliveries["expired-failed"])
			if errors.Is(err, store.ErrNotFound) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("Run did not prune within 20s")
			}
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
		select {
		case <-stopped:
		case <-time.After(20 * time.Second):
			t.Fatal("Run did not return within 20s of ctx ending")
		}
		// The pass that ran is complete: it released the lease.
		ok, err := s.AcquireJobLease(context.Background(), retention.LeaseName, "other", now, now.Add(time.Minute))
		if err != nil || !ok {
			t.Errorf("lease after Run stopped: %v, %v; want it free", ok, err)
		}
	})
}

// TestBatchesFollowTheDatabase: a batch slower than BatchTarget halves the
// next one (down to 10 rows), one faster than half of it doubles it (up to
// BatchSize).
func TestBatchesFollowTheDatabase(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, s *sqlstore.Store) {
		t.Parallel()
		for i := range 100 {
			finished(t, s, "expired-"+strconv.Itoa(i), store.DeliverySucceeded, 8*day)
		}
		p := newPruner(s, policy)
		p.BatchSize, p.BatchTarget = 40, 10*time.Millisecond
		// The first three batches are slow, the rest fast.
		var sizes []int64
		retention.SetElapsed(p, func(time.Time) time.Duration {
			if len(sizes) < 3 {
				return 20 * time.Millisecond
			}
			return 0
		})
		p.OnDeleted = func(kind string, n int64) { sizes = append(sizes, n) }
		got, err := p.RunOnce(context.Background(), false)
		must(t, err)
		if got.DeliveriesProcessed != 100 {
			t.Errorf("deleted %d, want 100", got.DeliveriesProcessed)
		}
		// 40 slow → 20 slow → 10 slow (the floor) → 10 fast → 20, the rest.
		if want := []int64{40, 20, 10, 10, 20}; !slices.Equal(sizes, want) {
			t.Errorf("batches = %v, want %v", sizes, want)
		}
	})
}

// TestPruningYields: between batches the pruner waits at least
// YieldFactor times as long as the last batch took (at least Pause), so
// it holds the database a bounded share of the time.
func TestPruningYields(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, s *sqlstore.Store) {
		t.Parallel()
		for i := range 30 {
			finished(t, s, "expired-"+strconv.Itoa(i), store.DeliverySucceeded, 8*day)
		}
		p := newPruner(s, policy)
		p.BatchSize, p.BatchTarget, p.Pause = 10, time.Second, 7*time.Millisecond
		// Batches take 3 ms, then 1 ms.
		var batches int
		retention.SetElapsed(p, func(time.Time) time.Duration {
			batches++
			if batches == 1 {
				return 3 * time.Millisecond
			}
			return time.Millisecond
		})
		var waits []time.Duration
		retention.SetWait(p, func(ctx context.Context, d time.Duration) error {
			waits = append(waits, d)
			return ctx.Err()
		})
		got, err := p.RunOnce(context.Background(), false)
		must(t, err)
		if got.DeliveriesProcessed != 30 {
			t.Errorf("deleted %d, want 30", got.DeliveriesProcessed)
		}
		// Seven batches: 10, 10, 10 and an empty one of processed
		// deliveries, one of failed ones, one of events, one of outbound
		// deliveries. After the 3 ms one 4 × 3 ms, after the 1 ms ones the
		// 7 ms Pause.
		ms := time.Millisecond
		if want := []time.Duration{12 * ms, 7 * ms, 7 * ms, 7 * ms, 7 * ms, 7 * ms}; !slices.Equal(waits, want) {
			t.Errorf("waits = %v, want %v", waits, want)
		}
	})
}

// TestPassDeletesExpiredConsoleSessions: a pass deletes the console
// sessions that expired before it and keeps the live ones; a dry run
// deletes none.
func TestPassDeletesExpiredConsoleSessions(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, s *sqlstore.Store) {
		t.Parallel()
		ctx := context.Background()
		for _, sess := range []store.ConsoleSession{
			{IDSHA256: "expired", TokenSHA256: "t", CSRFSecret: "c", CreatedAt: now.Add(-13 * time.Hour), ExpiresAt: now.Add(-time.Hour)},
			{IDSHA256: "live", TokenSHA256: "t", CSRFSecret: "c", CreatedAt: now.Add(-time.Hour), ExpiresAt: now.Add(11 * time.Hour)},
		} {
			must(t, s.InsertConsoleSession(ctx, sess))
		}
		left := func() int64 {
			t.Helper()
			// Counted at a time both would have expired by: what is
			// deleted then is what is still stored.
			n, err := s.DeleteExpiredConsoleSessions(ctx, now.Add(24*time.Hour))
			must(t, err)
			return n
		}
		p := newPruner(s, policy)
		_, err := p.RunOnce(ctx, true)
		must(t, err)
		if _, err := s.GetConsoleSession(ctx, "expired", now.Add(-2*time.Hour)); err != nil {
			t.Errorf("after a dry run the expired session is gone: %v", err)
		}
		_, err = p.RunOnce(ctx, false)
		must(t, err)
		if _, err := s.GetConsoleSession(ctx, "live", now); err != nil {
			t.Errorf("after a pass the live session is gone: %v", err)
		}
		if n := left(); n != 1 {
			t.Errorf("sessions left after a pass = %d, want 1 (the live one)", n)
		}
	})
}
