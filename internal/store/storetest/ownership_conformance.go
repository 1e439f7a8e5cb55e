package storetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/trackergateway/gateway/internal/store"
)

var ownershipTests = []contractTest{
	{name: "only a SQLite store can be owned alone", fn: testClaimSoleOwnership},
	{name: "leases taken back are free at once", fn: testTakeBackLeases},
}

// testClaimSoleOwnership: a SQLite store is owned by the process that
// claims it (claiming again is a no-op); PostgreSQL is shared by replicas.
// (A second claimant of one file: internal/store/sqlite.)
func testClaimSoleOwnership(t *testing.T, s store.Store) {
	for range 2 {
		sole, err := s.ClaimSoleOwnership()
		must(t, err)
		if want := s.Dialect() == store.DialectSQLite; sole != want {
			t.Errorf("sole = %v, want %v on %s", sole, want, s.Dialect())
		}
	}
}

// testTakeBackLeases: TakeBackLeases ends every live lease as if it had
// expired (deliveries, entity leases, creation operations and running
// steps), so that another owner claims them at once, and leaves what holds
// no live lease alone.
func testTakeBackLeases(t *testing.T, s store.Store) {
	ctx := context.Background()
	SeedWorkspace(t, s, "ws")
	hour := epoch.Add(time.Hour)
	// Two deliveries a dead process held, with their entities; one whose
	// lease has expired already; one queued for later.
	var held []string
	for i, lease := range []time.Duration{time.Hour, time.Hour, time.Second} {
		id := insertDelivery(t, s, newDelivery("held-"+string(rune('a'+i))))
		got, err := s.ClaimDeliveries(ctx, "dead", epoch, lease, 1)
		must(t, err)
		if len(got) != 1 || got[0].ID != id {
			t.Fatalf("claim %d = %+v, want %s", i, got, id)
		}
		if lease == time.Hour {
			held = append(held, id)
			ok, err := acquireLease(t, s, "entity-"+id, "dead", id, epoch, hour)
			must(t, err)
			if !ok {
				t.Fatalf("entity lease %d refused", i)
			}
		}
	}
	later := newDelivery("later")
	later.ReceivedAt = hour
	laterID := insertDelivery(t, s, later)
	// A creation whose caller held its lease, with a step running.
	task := newTask("ws", "ext-taken", 1)
	task.CreationState = store.CreationPreparing
	op := newOperation("ws", task.ID, epoch)
	op.LeaseOwner, op.LeaseExpiresAt = "dead", &hour
	step := newStep(op.ID, "a")
	step.State, step.ClaimOwner, step.LeaseExpiresAt = store.StepRunning, "dead", &hour
	insertCreation(t, s, &task, op, step)

	now := epoch.Add(time.Minute)
	got, err := s.TakeBackLeases(ctx, now)
	must(t, err)
	if want := (store.LeasesTakenBack{Deliveries: 2, Entities: 2, Operations: 1, Steps: 1}); got != want {
		t.Errorf("taken back %+v, want %+v", got, want)
	}
	again, err := s.TakeBackLeases(ctx, now)
	must(t, err)
	if again != (store.LeasesTakenBack{}) {
		t.Errorf("taken back a second time %+v, want nothing", again)
	}

	// Another owner claims the deliveries and their entities right away.
	claimed, err := s.ClaimDeliveries(ctx, "next", now, time.Hour, 10)
	must(t, err)
	var ids []string
	for _, d := range claimed {
		ids = append(ids, d.ID)
		if d.ID == laterID {
			t.Errorf("the delivery queued for later was claimed")
		}
	}
	for _, id := range held {
		if !slices.Contains(ids, id) {
			t.Errorf("delivery %s not claimed after the take-back (claimed %v)", id, ids)
		}
		ok, err := acquireLease(t, s, "entity-"+id, "next", id, now, now.Add(time.Hour))
		must(t, err)
		if !ok {
			t.Errorf("entity lease of %s still held after the take-back", id)
		}
	}
	// Recovery sees the operation as unleased and its step's lease over.
	open, err := s.ListOpenOperations(ctx, now, now.Add(time.Microsecond), 10)
	must(t, err)
	if len(open) != 1 || open[0].ID != op.ID {
		t.Errorf("open operations after the take-back = %+v, want %s", open, op.ID)
	}
	steps, err := s.ListCreationSteps(ctx, op.ID)
	must(t, err)
	if len(steps) != 1 || steps[0].LeaseExpiresAt == nil || steps[0].LeaseExpiresAt.After(now) || steps[0].State != store.StepRunning {
		t.Errorf("step after the take-back = %+v, want running with its lease over at %v", steps, now)
	}
}
