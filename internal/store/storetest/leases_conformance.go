package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/trackergateway/gateway/internal/store"
)

// acquireLease takes one entity lease through AcquireEntityLeases.
func acquireLease(t testing.TB, s store.Store, entityKey, owner, deliveryID string, now, expires time.Time) (bool, error) {
	t.Helper()
	taken, err := s.AcquireEntityLeases(context.Background(), owner, []store.EntityLease{{EntityKey: entityKey, DeliveryID: deliveryID}}, now, expires)
	if err != nil {
		return false, err
	}
	if len(taken) != 1 {
		t.Fatalf("AcquireEntityLeases answered %d leases, want 1", len(taken))
	}
	return taken[0], nil
}

var leaseTests = []contractTest{
	{name: "entity leases exclude", fn: testEntityLeases},
	{name: "a claim passes over deliveries whose entity another delivery holds", fn: testClaimSkipsLeasedEntities},
	{name: "a batch's entity leases are taken at once", fn: testEntityLeaseBatch},
	{name: "a lost delivery lease still releases its entity lease", fn: testFinishAfterLostLease},
	{name: "a batch is finished together, each lost lease reported", fn: testFinishDeliveries},
}

// testFinishDeliveries: FinishDeliveries records every delivery whose lease
// its owner still holds, reports the one taken over, and releases the
// entity leases of all of them, and no other lease of their owner.
func testFinishDeliveries(t *testing.T, s store.Store) {
	ctx := context.Background()
	// The second delivery is claimed with a short lease, which expires, and
	// w2 takes it over.
	var claimed []store.Delivery
	for i, lease := range []time.Duration{10 * time.Minute, time.Minute, 10 * time.Minute} {
		id := insertDelivery(t, s, newDelivery("batch-"+strconv.Itoa(i)))
		got, err := s.ClaimDeliveries(ctx, "w1", epoch, lease, 1)
		must(t, err)
		if len(got) != 1 || got[0].ID != id {
			t.Fatalf("claim %d = %+v, want delivery %s", i, got, id)
		}
		ok, err := acquireLease(t, s, "entity-"+id, "w1", id, epoch, epoch.Add(10*time.Minute))
		must(t, err)
		if !ok {
			t.Fatalf("entity lease %d refused", i)
		}
		got[0].EntityKey = "entity-" + id
		claimed = append(claimed, got[0])
	}
	taken, err := s.ClaimDeliveries(ctx, "w2", epoch.Add(2*time.Minute), time.Minute, 3)
	must(t, err)
	if len(taken) != 1 || taken[0].ID != claimed[1].ID {
		t.Fatalf("w2 took over %+v, want only the second delivery", taken)
	}
	// w1 also holds a lease for a delivery the batch does not finish.
	unfinished := uuid.NewString()
	ok, err := acquireLease(t, s, "entity-unfinished", "w1", unfinished, epoch, epoch.Add(10*time.Minute))
	must(t, err)
	if !ok {
		t.Fatal("lease for the unfinished delivery refused")
	}
	claimed[0].Status, claimed[1].Status, claimed[2].Status = store.DeliverySucceeded, store.DeliverySucceeded, store.DeliveryFailed
	claimed[2].LastError = "boom"
	lost, err := s.FinishDeliveries(ctx, claimed, "w1")
	must(t, err)
	if len(lost) != 3 || lost[0] || !lost[1] || lost[2] {
		t.Fatalf("lost = %v, want [false true false]", lost)
	}
	for i, want := range []string{store.DeliverySucceeded, store.DeliveryProcessing, store.DeliveryFailed} {
		got, err := s.GetDelivery(ctx, claimed[i].ID)
		must(t, err)
		if got.Status != want {
			t.Errorf("delivery %d: status %s, want %s", i, got.Status, want)
		}
		ok, err := acquireLease(t, s, claimed[i].EntityKey, "w3", uuid.NewString(), epoch, epoch.Add(time.Minute))
		must(t, err)
		if !ok {
			t.Errorf("delivery %d: entity lease still held after FinishDeliveries", i)
		}
	}
	if ok, err := acquireLease(t, s, "entity-unfinished", "w3", uuid.NewString(), epoch, epoch.Add(time.Minute)); err != nil || ok {
		t.Errorf("the lease of a delivery the batch did not finish was released (taken over: %v, %v)", ok, err)
	}
}

func testEntityLeases(t *testing.T, s store.Store) {
	ctx := context.Background()
	d1, d2 := uuid.NewString(), uuid.NewString()
	ok, err := acquireLease(t, s, "e", "w1", d1, epoch, epoch.Add(time.Minute))
	must(t, err)
	if !ok {
		t.Fatal("first lease refused")
	}
	ok, err = acquireLease(t, s, "e", "w2", d2, epoch, epoch.Add(time.Minute))
	must(t, err)
	if ok {
		t.Fatal("held lease granted twice")
	}
	ok, err = acquireLease(t, s, "e", "w2", d2, epoch.Add(2*time.Minute), epoch.Add(3*time.Minute))
	must(t, err)
	if !ok {
		t.Fatal("expired lease not stolen")
	}
	// Finishing a delivery releases the entity lease it holds.
	res, err := s.InsertDeliveries(ctx, []store.Delivery{{ConnectionID: "gh", Provider: "github", Event: "issues",
		DeliveryKey: "lease-1", Headers: `{}`, Body: []byte(`{}`), ReceivedAt: epoch}})
	must(t, err)
	claimed, err := s.ClaimDeliveries(ctx, "w3", epoch, time.Minute, 1)
	must(t, err)
	if len(claimed) != 1 || claimed[0].ID != res[0].ID {
		t.Fatalf("claimed = %+v", claimed)
	}
	ok, err = acquireLease(t, s, "e2", "w3", res[0].ID, epoch, epoch.Add(time.Minute))
	must(t, err)
	if !ok {
		t.Fatal("lease for the claimed delivery refused")
	}
	done := claimed[0]
	done.Status, done.EntityKey = store.DeliverySucceeded, "e2"
	must(t, s.FinishDelivery(ctx, done, "w3"))
	ok, err = acquireLease(t, s, "e2", "w4", uuid.NewString(), epoch, epoch.Add(time.Minute))
	must(t, err)
	if !ok {
		t.Fatal("entity lease still held after its delivery finished")
	}

	// The holder may renew its own lease.
	ok, err = acquireLease(t, s, "e", "w2", d2, epoch.Add(2*time.Minute), epoch.Add(4*time.Minute))
	must(t, err)
	if !ok {
		t.Fatal("holder's renewal refused")
	}
}

// testClaimSkipsLeasedEntities: a due retry whose entity holds another
// delivery's live lease stays queued; one holding its own lease (its worker
// died), one whose entity's lease expired, one with a free entity and one
// with no entity known yet are claimed; the skipped one is claimed once the
// lease has expired.
func testClaimSkipsLeasedEntities(t *testing.T, s store.Store) {
	ctx := context.Background()
	retryAt := epoch.Add(time.Minute)
	entities := []string{"held-by-other", "held-by-itself", "lease-expired", "free", ""}
	ids := make(map[string]string, len(entities))
	for i, entity := range entities {
		id := insertDelivery(t, s, newDelivery("skip-"+strconv.Itoa(i)))
		got, err := s.ClaimDeliveries(ctx, "w1", epoch, time.Minute, 1)
		must(t, err)
		if len(got) != 1 || got[0].ID != id {
			t.Fatalf("first claim of %q = %+v, want delivery %s", entity, got, id)
		}
		d := got[0]
		d.Status, d.EntityKey, d.NextAttemptAt, d.LastError = store.DeliveryRetrying, entity, retryAt, "transient"
		must(t, s.FinishDelivery(ctx, d, "w1"))
		ids[entity] = id
	}
	for _, l := range []struct {
		entity, owner, delivery string
		expires                 time.Time
	}{
		{"held-by-other", "w2", uuid.NewString(), epoch.Add(10 * time.Minute)},
		{"held-by-itself", "w-dead", ids["held-by-itself"], epoch.Add(10 * time.Minute)},
		{"lease-expired", "w2", uuid.NewString(), epoch.Add(90 * time.Second)},
	} {
		ok, err := acquireLease(t, s, l.entity, l.owner, l.delivery, epoch, l.expires)
		must(t, err)
		if !ok {
			t.Fatalf("lease on %q refused", l.entity)
		}
	}

	got, err := s.ClaimDeliveries(ctx, "w3", epoch.Add(2*time.Minute), time.Minute, 10)
	must(t, err)
	claimed := make(map[string]bool, len(got))
	for _, d := range got {
		claimed[d.ID] = true
	}
	for _, entity := range entities {
		if want := entity != "held-by-other"; claimed[ids[entity]] != want {
			t.Errorf("delivery of entity %q: claimed = %v, want %v", entity, claimed[ids[entity]], want)
		}
	}

	// Once the other delivery's lease has expired, the skipped retry is
	// claimed too.
	got, err = s.ClaimDeliveries(ctx, "w3", epoch.Add(11*time.Minute), time.Minute, 10)
	must(t, err)
	if !slices.ContainsFunc(got, func(d store.Delivery) bool { return d.ID == ids["held-by-other"] }) {
		t.Errorf("claim after the lease expired = %+v, want it to hold delivery %s", got, ids["held-by-other"])
	}
}

// testEntityLeaseBatch: AcquireEntityLeases answers each lease of a batch
// as it would answer it alone, the first of two on one entity winning, over
// as many statements as the batch needs.
func testEntityLeaseBatch(t *testing.T, s store.Store) {
	ctx := context.Background()
	mine := uuid.NewString()
	for _, held := range []struct {
		key, owner, delivery string
		expires              time.Time
	}{
		{"held", "w2", uuid.NewString(), epoch.Add(time.Minute)},
		{"expired", "w2", uuid.NewString(), epoch.Add(-time.Second)},
		{"renewed", "w1", mine, epoch.Add(time.Minute)},
	} {
		ok, err := acquireLease(t, s, held.key, held.owner, held.delivery, epoch.Add(-time.Hour), held.expires)
		must(t, err)
		if !ok {
			t.Fatalf("setting up lease %s refused", held.key)
		}
	}
	lease := func(key, delivery string) store.EntityLease {
		return store.EntityLease{EntityKey: key, DeliveryID: delivery}
	}
	leases := []store.EntityLease{lease("free", uuid.NewString()), lease("held", uuid.NewString()),
		lease("expired", uuid.NewString()), lease("free", uuid.NewString()), lease("renewed", mine)}
	taken, err := s.AcquireEntityLeases(ctx, "w1", leases, epoch, epoch.Add(time.Minute))
	must(t, err)
	if want := []bool{true, false, true, false, true}; fmt.Sprint(taken) != fmt.Sprint(want) {
		t.Errorf("taken = %v, want %v (free, held, expired, free again, renewed)", taken, want)
	}
	// What was taken is held: another owner is refused each of them.
	for _, key := range []string{"free", "expired", "renewed"} {
		ok, err := acquireLease(t, s, key, "w3", uuid.NewString(), epoch, epoch.Add(time.Minute))
		must(t, err)
		if ok {
			t.Errorf("lease on %s granted to another owner after the batch took it", key)
		}
	}

	many := make([]store.EntityLease, 1201)
	for i := range many {
		many[i] = store.EntityLease{EntityKey: fmt.Sprint("many-", i), DeliveryID: uuid.NewString()}
	}
	taken, err = s.AcquireEntityLeases(ctx, "w1", many, epoch, epoch.Add(time.Minute))
	must(t, err)
	if n := strings.Count(fmt.Sprint(taken), "true"); len(taken) != len(many) || n != len(many) {
		t.Errorf("a batch of %d free leases: %d answers, %d taken", len(many), len(taken), n)
	}
}

// testFinishAfterLostLease: a worker whose claim was taken over records
// nothing, gets ErrNotFound, and no longer holds the entity.
func testFinishAfterLostLease(t *testing.T, s store.Store) {
	ctx := context.Background()
	res, err := s.InsertDeliveries(ctx, []store.Delivery{{ConnectionID: "gh", Provider: "github", Event: "issues",
		DeliveryKey: "lost-1", Headers: `{}`, Body: []byte(`{}`), ReceivedAt: epoch}})
	must(t, err)
	claimed, err := s.ClaimDeliveries(ctx, "w1", epoch, time.Minute, 1)
	must(t, err)
	if len(claimed) != 1 {
		t.Fatalf("claimed %d deliveries, want 1", len(claimed))
	}
	ok, err := acquireLease(t, s, "e-lost", "w1", res[0].ID, epoch, epoch.Add(10*time.Minute))
	must(t, err)
	if !ok {
		t.Fatal("entity lease refused")
	}
	if _, err := s.ClaimDeliveries(ctx, "w2", epoch.Add(2*time.Minute), time.Minute, 1); err != nil {
		t.Fatal(err)
	}
	done := claimed[0]
	done.Status, done.EntityKey = store.DeliverySucceeded, "e-lost"
	if err := s.FinishDelivery(ctx, done, "w1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("finish after the lease was lost: err = %v, want ErrNotFound", err)
	}
	got, err := s.GetDelivery(ctx, res[0].ID)
	must(t, err)
	if got.Status != store.DeliveryProcessing || got.LeaseOwner != "w2" {
		t.Errorf("delivery = %s owned by %q, want still processing by w2", got.Status, got.LeaseOwner)
	}
	ok, err = acquireLease(t, s, "e-lost", "w2", res[0].ID, epoch.Add(2*time.Minute), epoch.Add(3*time.Minute))
	must(t, err)
	if !ok {
		t.Error("entity lease of the worker that lost its claim is still held")
	}
}
