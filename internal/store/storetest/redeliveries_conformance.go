package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/trackergateway/gateway/internal/store"
)

var redeliveryTests = []contractTest{
	{name: "held delivery keys are the connection's", fn: testHeldDeliveryKeys},
	{name: "a redelivery is claimed once, answered and listed", fn: testClaimRedelivery},
	{name: "a released request can be claimed again, an answered one is kept", fn: testReleaseRedelivery},
	{name: "concurrent claims of one redelivery: one wins", fn: testClaimRedeliveryRace},
}

func testHeldDeliveryKeys(t *testing.T, s store.Store) {
	ctx := context.Background()
	insertDelivery(t, s, newDelivery("11:guid-a"))
	insertDelivery(t, s, newDelivery("guid-b"))
	other := newDelivery("11:guid-c")
	other.ConnectionID = "other"
	insertDelivery(t, s, other)
	// More keys than one statement takes, so the chunks are exercised.
	keys := []string{"11:guid-a", "guid-b", "11:guid-c", "11:guid-b"}
	for i := range 450 {
		keys = append(keys, fmt.Sprintf("11:absent-%d", i))
	}
	held, err := s.HeldDeliveryKeys(ctx, "gh", keys)
	must(t, err)
	want := map[string]bool{"11:guid-a": true, "guid-b": true}
	if fmt.Sprint(held) != fmt.Sprint(want) {
		t.Errorf("held = %v, want %v", held, want)
	}
	none, err := s.HeldDeliveryKeys(ctx, "gh", nil)
	if err != nil || len(none) != 0 {
		t.Errorf("held of no keys = %v, %v; want none", none, err)
	}
}

func testClaimRedelivery(t *testing.T, s store.Store) {
	ctx := context.Background()
	r := store.Redelivery{ConnectionID: "gh", HookID: 11, GUID: "guid-a", ProviderDeliveryID: 901, Event: "issues", RequestedAt: epoch}
	claimed, err := s.ClaimRedelivery(ctx, r)
	if err != nil || !claimed {
		t.Fatalf("first claim = %v, %v; want claimed", claimed, err)
	}
	again := r
	again.ProviderDeliveryID, again.RequestedAt = 902, epoch.Add(time.Hour)
	if claimed, err := s.ClaimRedelivery(ctx, again); err != nil || claimed {
		t.Fatalf("second claim = %v, %v; want not claimed", claimed, err)
	}
	// Another hook or connection is another request.
	for _, o := range []store.Redelivery{{ConnectionID: "gh", HookID: 12, GUID: "guid-a"}, {ConnectionID: "gl", HookID: 11, GUID: "guid-a"}} {
		o.Event, o.RequestedAt = "issues", epoch
		if claimed, err := s.ClaimRedelivery(ctx, o); err != nil || !claimed {
			t.Errorf("claim of %s/%d/%s = %v, %v; want claimed", o.ConnectionID, o.HookID, o.GUID, claimed, err)
		}
	}

	got, err := s.ListRedeliveries(ctx, "gh", 11, []string{"guid-a", "guid-x"})
	must(t, err)
	if len(got) != 1 || got["guid-a"].Status != store.RedeliveryRequested || got["guid-a"].ProviderDeliveryID != 901 ||
		!got["guid-a"].RequestedAt.Equal(epoch) || got["guid-a"].AnsweredAt != nil {
		t.Fatalf("listed = %+v, want guid-a requested, delivery 901, unanswered", got)
	}

	answered := epoch.Add(time.Second)
	r.Status, r.Error, r.AnsweredAt = store.RedeliveryFailed, "github answered 404", &answered
	must(t, s.AnswerRedelivery(ctx, r))
	got, err = s.ListRedeliveries(ctx, "gh", 11, []string{"guid-a"})
	must(t, err)
	a := got["guid-a"]
	if a.Status != store.RedeliveryFailed || a.Error != "github answered 404" || a.AnsweredAt == nil || !a.AnsweredAt.Equal(answered) {
		t.Errorf("after answer = %+v, want failed with its error and time", a)
	}
	missing := r
	missing.GUID = "never-claimed"
	if err := s.AnswerRedelivery(ctx, missing); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("answer of an unclaimed request = %v, want ErrNotFound", err)
	}
}

func testClaimRedeliveryRace(t *testing.T, s store.Store) {
	ctx := context.Background()
	const racers = 8
	var wg sync.WaitGroup
	wins := make(chan bool, racers)
	for i := range racers {
		wg.Go(func() {
			claimed, err := s.ClaimRedelivery(ctx, store.Redelivery{ConnectionID: "gh", HookID: 11, GUID: "guid-race",
				ProviderDeliveryID: int64(i), Event: "issues", RequestedAt: epoch})
			if err != nil {
				t.Errorf("claim %d: %v", i, err)
			}
			wins <- claimed
		})
	}
	wg.Wait()
	close(wins)
	n := 0
	for w := range wins {
		if w {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d claims won, want 1", n)
	}
}

func testReleaseRedelivery(t *testing.T, s store.Store) {
	ctx := context.Background()
	claim := func(guid string) bool {
		t.Helper()
		claimed, err := s.ClaimRedelivery(ctx, store.Redelivery{ConnectionID: "gh", HookID: 11, GUID: guid, ProviderDeliveryID: 1,
			Event: "issues", RequestedAt: epoch})
		must(t, err)
		return claimed
	}
	claim("released")
	must(t, s.ReleaseRedelivery(ctx, "gh", 11, "released"))
	if !claim("released") {
		t.Errorf("a released request could not be claimed again")
	}

	claim("answered")
	at := epoch.Add(time.Second)
	must(t, s.AnswerRedelivery(ctx, store.Redelivery{ConnectionID: "gh", HookID: 11, GUID: "answered",
		Status: store.RedeliveryAccepted, AnsweredAt: &at}))
	must(t, s.ReleaseRedelivery(ctx, "gh", 11, "answered"))
	if claim("answered") {
		t.Errorf("an answered request was released")
	}
}
