package storetest

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/trackergateway/gateway/internal/store"
)

var installationTests = []contractTest{
	{name: "installation changes apply and are listed", fn: testApplyInstallationChanges},
	{name: "installation changes in any order, and again, give one state", fn: testInstallationChangesAnyOrder},
	{name: "a later created re-activates a deleted installation", fn: testInstallationRecreated},
	{name: "installations are the connection's, repositories many", fn: testInstallationsScoped},
}

// installationChange is a change of installation 7 of connection gh by
// Codertocat, at epoch plus minutes, reported by delivery d<minutes>.
func installationChange(action string, minutes int, added, removed []string) store.InstallationChange {
	at := epoch.Add(time.Duration(minutes) * time.Minute)
	return store.InstallationChange{ConnectionID: "gh", InstallationID: 7, Action: action, AccountLogin: "Codertocat",
		AccountType: "User", RepositorySelection: "selected", Repositories: added, RemovedRepositories: removed,
		At: at, ReceivedAt: at.Add(time.Second), DeliveryID: fmt.Sprintf("d%d", minutes)}
}

func onlyInstallation(t *testing.T, s store.Store, connectionID string) store.Installation {
	t.Helper()
	list, err := s.ListInstallations(context.Background(), connectionID)
	must(t, err)
	if len(list) != 1 {
		t.Fatalf("installations of %s = %+v, want one", connectionID, list)
	}
	return list[0]
}

func testApplyInstallationChanges(t *testing.T, s store.Store) {
	ctx := context.Background()
	steps := []struct {
		change    store.InstallationChange
		repos     []string
		suspended bool
		deleted   bool
	}{
		{installationChange("created", 1, []string{"o/a", "o/b"}, nil), []string{"o/a", "o/b"}, false, false},
		{installationChange("added", 2, []string{"o/c"}, nil), []string{"o/a", "o/b", "o/c"}, false, false},
		{installationChange("removed", 3, nil, []string{"o/a"}), []string{"o/b", "o/c"}, false, false},
		{installationChange("suspend", 4, nil, nil), []string{"o/b", "o/c"}, true, false},
		{installationChange("unsuspend", 5, nil, nil), []string{"o/b", "o/c"}, false, false},
		{installationChange("new_permissions_accepted", 6, nil, nil), []string{"o/b", "o/c"}, false, false},
		{installationChange("deleted", 7, nil, nil), []string{"o/b", "o/c"}, false, true},
	}
	for _, st := range steps {
		must(t, s.ApplyInstallationChange(ctx, st.change))
		// Applying the same delivery again changes nothing.
		must(t, s.ApplyInstallationChange(ctx, st.change))
		got := inUTC(onlyInstallation(t, s, "gh"))
		want := store.Installation{ConnectionID: "gh", InstallationID: 7, AccountLogin: "Codertocat", AccountType: "User",
			RepositorySelection: "selected", Repositories: st.repos, UpdatedAt: st.change.At, LastDeliveryID: st.change.DeliveryID}
		if st.suspended {
			want.SuspendedAt = &st.change.At
		}
		if st.deleted {
			want.DeletedAt = &st.change.At
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("after %s: %+v, want %+v", st.change.Action, got, want)
		}
	}
}

// inUTC is in with its times in UTC, for reflect.DeepEqual.
func inUTC(in store.Installation) store.Installation {
	in.UpdatedAt = in.UpdatedAt.UTC()
	for _, p := range []**time.Time{&in.SuspendedAt, &in.DeletedAt} {
		if *p != nil {
			u := (*p).UTC()
			*p = &u
		}
	}
	return in
}

// permutations calls fn with every order of n items.
func permutations(n int, fn func([]int)) {
	var rec func(order []int, rest []int)
	rec = func(order, rest []int) {
		if len(rest) == 0 {
			fn(order)
			return
		}
		for i := range rest {
			next := append(slices.Clone(rest[:i]), rest[i+1:]...)
			rec(append(slices.Clone(order), rest[i]), next)
		}
	}
	rec(nil, seq(n))
}

func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

func testInstallationChangesAnyOrder(t *testing.T, s store.Store) {
	ctx := context.Background()
	changes := []store.InstallationChange{
		installationChange("created", 1, []string{"o/a", "o/b"}, nil),
		installationChange("added", 2, []string{"o/c"}, nil),
		installationChange("removed", 3, nil, []string{"o/a"}),
		installationChange("suspend", 4, nil, nil),
	}
	// Same provider time as the suspension, received later: the receipt
	// orders them.
	unsuspend := installationChange("unsuspend", 4, nil, nil)
	unsuspend.ReceivedAt, unsuspend.DeliveryID = unsuspend.ReceivedAt.Add(time.Second), "d4b"
	changes = append(changes, unsuspend)
	last := unsuspend
	n := 0
	permutations(len(changes), func(order []int) {
		n++
		conn := fmt.Sprintf("gh-%d", n)
		for _, i := range order {
			c := changes[i]
			c.ConnectionID = conn
			must(t, s.ApplyInstallationChange(ctx, c))
		}
		// Any of them again, as a replay would.
		again := changes[order[0]]
		again.ConnectionID = conn
		must(t, s.ApplyInstallationChange(ctx, again))
		got := onlyInstallation(t, s, conn)
		if !slices.Equal(got.Repositories, []string{"o/b", "o/c"}) || got.SuspendedAt != nil || got.DeletedAt != nil ||
			!got.UpdatedAt.Equal(last.At) || got.LastDeliveryID != last.DeliveryID {
			t.Fatalf("order %v: %+v, want o/b and o/c, not suspended, last changed by %s", order, got, last.DeliveryID)
		}
	})
}

func testInstallationRecreated(t *testing.T, s store.Store) {
	ctx := context.Background()
	must(t, s.ApplyInstallationChange(ctx, installationChange("created", 1, []string{"o/a"}, nil)))
	must(t, s.ApplyInstallationChange(ctx, installationChange("deleted", 2, nil, nil)))
	if got := onlyInstallation(t, s, "gh"); got.DeletedAt == nil {
		t.Fatalf("after deleted: %+v, want deleted", got)
	}
	again := installationChange("created", 3, []string{"o/b"}, nil)
	again.RepositorySelection = "all"
	must(t, s.ApplyInstallationChange(ctx, again))
	got := onlyInstallation(t, s, "gh")
	if got.DeletedAt != nil || got.RepositorySelection != "all" || !slices.Equal(got.Repositories, []string{"o/b"}) {
		t.Fatalf("after created again: %+v, want active, all, o/b only", got)
	}
	// The deletion delivered again, older than the new creation: kept out.
	must(t, s.ApplyInstallationChange(ctx, installationChange("deleted", 2, nil, nil)))
	if got := onlyInstallation(t, s, "gh"); got.DeletedAt != nil || got.LastDeliveryID != "d3" {
		t.Fatalf("after the old deletion again: %+v, want active, last changed by d3", got)
	}
}

func testInstallationsScoped(t *testing.T, s store.Store) {
	ctx := context.Background()
	var many []string
	for i := range 250 {
		many = append(many, fmt.Sprintf("o/r%03d", i))
	}
	must(t, s.ApplyInstallationChange(ctx, installationChange("created", 1, many, nil)))
	other := installationChange("created", 1, []string{"x/y"}, nil)
	other.ConnectionID = "other"
	must(t, s.ApplyInstallationChange(ctx, other))
	second := installationChange("created", 1, nil, nil)
	second.InstallationID, second.AccountLogin, second.AccountType, second.RepositorySelection = 9, "octo-org", "Organization", "all"
	must(t, s.ApplyInstallationChange(ctx, second))

	list, err := s.ListInstallations(ctx, "gh")
	must(t, err)
	if len(list) != 2 || list[0].InstallationID != 7 || list[1].InstallationID != 9 {
		t.Fatalf("installations of gh = %+v, want 7 and 9", list)
	}
	if !slices.Equal(list[0].Repositories, many) {
		t.Errorf("installation 7 has %d repositories, want %d", len(list[0].Repositories), len(many))
	}
	if list[1].AccountLogin != "octo-org" || list[1].AccountType != "Organization" || len(list[1].Repositories) != 0 {
		t.Errorf("installation 9 = %+v", list[1])
	}
	if got := onlyInstallation(t, s, "other"); !slices.Equal(got.Repositories, []string{"x/y"}) {
		t.Errorf("installation of other = %+v, want x/y", got)
	}
	if none, err := s.ListInstallations(ctx, "absent"); err != nil || len(none) != 0 {
		t.Errorf("installations of an unknown connection = %+v, %v; want none", none, err)
	}
}
