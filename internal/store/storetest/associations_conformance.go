package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/trackergateway/gateway/internal/store"
)

var associationTests = []contractTest{
	{name: "associations are unique per contribution", fn: testAssociations},
	{name: "a task's associations are listed and deleted together", fn: testTaskAssociations},
}

func testAssociations(t *testing.T, s store.Store) {
	ctx := context.Background()
	a := store.Association{Provider: "github", ConnectionID: "gh", ContributionID: "42", ContributionKind: "pull_request",
		TaskID: uuid.NewString(), WorkspaceID: "ws", RepositoryID: "o/r", OperationID: uuid.NewString(),
		IdempotencyKey: "k", OwnershipMarker: "m", ClaimedAt: epoch}
	ok, err := s.InsertAssociation(ctx, a)
	must(t, err)
	if !ok {
		t.Fatal("first insert not inserted")
	}
	b := a
	b.TaskID = uuid.NewString()
	ok, err = s.InsertAssociation(ctx, b)
	must(t, err)
	if ok {
		t.Error("second insert inserted a duplicate")
	}
	got, err := s.GetAssociation(ctx, "github", "gh", "42")
	must(t, err)
	if got.TaskID != a.TaskID {
		t.Errorf("association task = %s, want %s", got.TaskID, a.TaskID)
	}
	n, err := s.DeleteAssociationsOwnedBy(ctx, a.OperationID, "other-marker")
	must(t, err)
	if n != 0 {
		t.Errorf("foreign marker deleted %d", n)
	}
	n, err = s.DeleteAssociationsOwnedBy(ctx, a.OperationID, "m")
	must(t, err)
	if n != 1 {
		t.Errorf("owned delete = %d, want 1", n)
	}
}

func testTaskAssociations(t *testing.T, s store.Store) {
	ctx := context.Background()
	task, other := uuid.NewString(), uuid.NewString()
	assoc := func(contribution, taskID string, claimed time.Duration) store.Association {
		return store.Association{Provider: "github", ConnectionID: "gh", ContributionID: contribution, ContributionKind: "pull_request",
			TaskID: taskID, WorkspaceID: "ws", RepositoryID: "o/r", OperationID: uuid.NewString(),
			IdempotencyKey: "k-" + contribution, OwnershipMarker: "m", ClaimedAt: epoch.Add(claimed)}
	}
	for _, a := range []store.Association{assoc("2", task, time.Second), assoc("1", task, 2*time.Second), assoc("3", other, 0)} {
		ok, err := s.InsertAssociation(ctx, a)
		must(t, err)
		if !ok {
			t.Fatalf("association %s not inserted", a.ContributionID)
		}
	}
	list, err := s.ListAssociationsForTask(ctx, task)
	must(t, err)
	if len(list) != 2 || list[0].ContributionID != "2" || list[1].ContributionID != "1" ||
		list[0].IdempotencyKey != "k-2" || !list[1].ClaimedAt.Equal(epoch.Add(2*time.Second)) {
		t.Errorf("task associations = %+v, want contributions 2 then 1 (in claim order)", list)
	}
	must(t, s.DeleteAssociationsForTask(ctx, task))
	if list, err := s.ListAssociationsForTask(ctx, task); err != nil || len(list) != 0 {
		t.Errorf("after delete: %+v, %v; want none", list, err)
	}
	if _, err := s.GetAssociation(ctx, "github", "gh", "1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("deleted association err = %v, want ErrNotFound", err)
	}
	if list, err := s.ListAssociationsForTask(ctx, other); err != nil || len(list) != 1 {
		t.Errorf("another task's associations = %+v, %v; want its one", list, err)
	}
}
