package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/store/sqlstore"
)

// Conformance runs the driver conformance suite against fresh stores of one
// dialect. Every driver must pass it unchanged.
func Conformance(t *testing.T, dialect string) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s *sqlstore.Store)
	}{
		{"workspace upsert is idempotent", testWorkspaceUpsert},
		{"task round trip", testTaskRoundTrip},
		{"unique violations are attributed by name", testUniqueAttribution},
		{"settlement predicate includes external_id", testSettlePredicate},
		{"release clears identity", testRelease},
		{"list tasks pages and hides preparing", testListTasks},
		{"outbox appends in order", testOutbox},
		{"associations are unique per contribution", testAssociations},
		{"inbox dedupes and claims", testInbox},
		{"delivery bodies are stored encoded and read as received", testDeliveryBodies},
		{"entity leases exclude", testEntityLeases},
		{"suppressions and aliases", testSuppressionsAliases},
		{"projection ignores stale payloads", testProjectionStale},
		{"migrations are replay-safe", testMigrateTwice},
		{"durable write probe rewrites one row", testProbeDurableWrite},
		{"writes in a transaction apply in order and fail it", testTransactionWrites},
		{"a lost delivery lease still releases its entity lease", testFinishAfterLostLease},
		{"operation, steps and task are read together", testLockOperationAndSteps},
		{"source entity lookup", testLookupSourceEntity},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, Open(t, dialect))
		})
	}
}

var epoch = time.Date(2026, 1, 2, 3, 4, 5, 123456000, time.UTC)

// SeedWorkspace creates workspace "ws" with steps backlog (unlimited) and
// doing (WIP 1).
func SeedWorkspace(t testing.TB, s store.Store, id string) store.Workspace {
	t.Helper()
	one := 1
	ws := store.Workspace{ID: id, Name: "Workspace " + id, TaskPrefix: "WS", CreatedAt: epoch,
		Steps: []store.Step{{ID: "backlog", Name: "Backlog"}, {ID: "doing", Name: "Doing", WIPLimit: &one}}}
	if err := s.UpsertWorkspace(context.Background(), ws); err != nil {
		t.Fatalf("upsert workspace: %v", err)
	}
	return ws
}

func newTask(ws, ext string, n int) store.Task {
	return store.Task{ID: uuid.NewString(), WorkspaceID: ws, Identifier: "WS-" + itoa(n), Title: "task",
		WorkflowStepID: "backlog", Labels: []string{"a"}, ExternalID: ext, CreationState: store.CreationComplete,
		CreatedAt: epoch.Add(time.Duration(n) * time.Second), UpdatedAt: epoch}
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for n > 0 {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
	}
	return string(b)
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func testWorkspaceUpsert(t *testing.T, s *sqlstore.Store) {
	ctx := context.Background()
	SeedWorkspace(t, s, "ws")
	SeedWorkspace(t, s, "ws")
	ws, err := s.GetWorkspace(ctx, "ws")
	must(t, err)
	if len(ws.Steps) != 2 || ws.Steps[1].WIPLimit == nil || *ws.Steps[1].WIPLimit != 1 {
		t.Fatalf("steps = %+v", ws.Steps)
	}
	if !ws.CreatedAt.Equal(epoch) {
		t.Errorf("created_at = %v, want %v", ws.CreatedAt, epoch)
	}
	n, err := s.NextTaskSequence(ctx, "ws")
	must(t, err)
	if n != 1 {
		t.Errorf("sequence = %d, want 1", n)
	}
	if err := s.CreateWorkspace(ctx, store.Workspace{ID: "ws", Name: "x", TaskPrefix: "X", CreatedAt: epoch}); !errors.Is(err, store.ErrConstraint) {
		t.Errorf("duplicate workspace err = %v, want ErrConstraint", err)
	}
	if _, err := s.GetWorkspace(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("missing workspace err = %v, want ErrNotFound", err)
	}
}

func testTaskRoundTrip(t *testing.T, s *sqlstore.Store) {
	ctx := context.Background()
	SeedWorkspace(t, s, "ws")
	task := newTask("ws", "ext-1", 1)
	task.Source = &store.Source{Provider: "github", Kind: "issue", Ref: "o/r#1", URL: "https://x"}
	task.ArchivedAt = &epoch
	must(t, s.InsertTask(ctx, task))
	got, err := s.GetTask(ctx, task.ID)
	must(t, err)
	if got.ExternalID != "ext-1" || got.Source == nil || got.Source.Ref != "o/r#1" || got.ArchivedAt == nil ||
		!got.ArchivedAt.Equal(epoch) || len(got.Labels) != 1 || got.ExternalIDSettledAt != nil {
		t.Errorf("round trip = %+v", got)
	}
	if _, err := s.LookupTaskByExternalID(ctx, "ws", "EXT-1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("case-insensitive lookup err = %v, want ErrNotFound", err)
	}
	if _, err := s.GetTask(ctx, uuid.NewString()); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("missing task err = %v", err)
	}
}

func testUniqueAttribution(t *testing.T, s *sqlstore.Store) {
	ctx := context.Background()
	SeedWorkspace(t, s, "ws")
	must(t, s.InsertTask(ctx, newTask("ws", "ext-1", 1)))
	err := s.InsertTask(ctx, newTask("ws", "ext-1", 2))
	if !errors.Is(err, store.ErrExternalIDTaken) {
		t.Errorf("same external id err = %v, want ErrExternalIDTaken", err)
	}
	dupIdentifier := newTask("ws", "ext-2", 1)
	err = s.InsertTask(ctx, dupIdentifier)
	if !errors.Is(err, store.ErrConstraint) || errors.Is(err, store.ErrExternalIDTaken) {
		t.Errorf("same identifier err = %v, want ErrConstraint only", err)
	}
	// Tasks without an external ID never collide.
	must(t, s.InsertTask(ctx, newTask("ws", "", 3)))
	must(t, s.InsertTask(ctx, newTask("ws", "", 4)))
}

func testSettlePredicate(t *testing.T, s *sqlstore.Store) {
	ctx := context.Background()
	SeedWorkspace(t, s, "ws")
	task := newTask("ws", "ext-1", 1)
	must(t, s.InsertTask(ctx, task))
	_, err := s.ReleaseExternalID(ctx, "ws", "ext-1")
	must(t, err)
	n, err := s.SettleExternalID(ctx, task.ID, "ext-1", epoch)
	must(t, err)
	if n != 0 {
		t.Errorf("settle after release rows = %d, want 0", n)
	}
	task2 := newTask("ws", "ext-2", 2)
	must(t, s.InsertTask(ctx, task2))
	n, err = s.SettleExternalID(ctx, task2.ID, "ext-2", epoch)
	must(t, err)
	if n != 1 {
		t.Errorf("settle rows = %d, want 1", n)
	}
	n, err = s.SettleExternalID(ctx, task2.ID, "ext-2", epoch)
	must(t, err)
	if n != 0 {
		t.Errorf("second settle rows = %d, want 0", n)
	}
}

func testRelease(t *testing.T, s *sqlstore.Store) {
	ctx := context.Background()
	SeedWorkspace(t, s, "ws")
	task := newTask("ws", "ext-1", 1)
	task.ExternalIDSettledAt = &epoch
	must(t, s.InsertTask(ctx, task))
	got, err := s.ReleaseExternalID(ctx, "ws", "ext-1")
	must(t, err)
	if got.ExternalID != "" || got.ExternalIDSettledAt != nil {
		t.Errorf("released = %+v", got)
	}
	if _, err := s.ReleaseExternalID(ctx, "ws", "ext-1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("second release err = %v", err)
	}
	must(t, s.InsertTask(ctx, newTask("ws", "ext-1", 2)))
}

func testListTasks(t *testing.T, s *sqlstore.Store) {
	ctx := context.Background()
	SeedWorkspace(t, s, "ws")
	for i := 1; i <= 5; i++ {
		task := newTask("ws", "", i)
		if i == 3 {
			task.CreationState = store.CreationPreparing
		}
		if i == 4 {
			task.ArchivedAt = &epoch
		}
		must(t, s.InsertTask(ctx, task))
	}
	page, err := s.ListTasks(ctx, store.TaskPage{WorkspaceID: "ws", Limit: 2})
	must(t, err)
	if len(page) != 2 || page[0].Identifier != "WS-1" || page[1].Identifier != "WS-2" {
		t.Fatalf("page 1 = %v", identifiers(page))
	}
	page, err = s.ListTasks(ctx, store.TaskPage{WorkspaceID: "ws", Limit: 2, AfterCreatedAt: page[1].CreatedAt, AfterID: page[1].ID})
	must(t, err)
	if len(page) != 1 || page[0].Identifier != "WS-5" {
		t.Fatalf("page 2 = %v", identifiers(page))
	}
	all, err := s.ListTasks(ctx, store.TaskPage{WorkspaceID: "ws", Limit: 10, IncludeArchived: true})
	must(t, err)
	if len(all) != 4 {
		t.Errorf("with archived = %v", identifiers(all))
	}
	n, err := s.CountActiveTasksInStep(ctx, "ws", "backlog")
	must(t, err)
	if n != 4 {
		t.Errorf("active in step = %d, want 4", n)
	}
}

func identifiers(ts []store.Task) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Identifier)
	}
	return out
}

func testOutbox(t *testing.T, s *sqlstore.Store) {
	ctx := context.Background()
	var ids []int64
	for i := 1; i <= 3; i++ {
		err := s.InTx(ctx, func(tx store.Queries) error {
			id, err := tx.AppendTaskEvent(ctx, store.TaskEvent{WorkspaceID: "ws", TaskID: uuid.NewString(), Revision: 1,
				Type: store.EventTaskCreated, Payload: `{}`, CreatedAt: epoch})
			ids = append(ids, id)
			return err
		})
		must(t, err)
	}
	evs, err := s.ReadTaskEvents(ctx, ids[0], 10)
	must(t, err)
	if len(evs) != 2 || evs[0].ID != ids[1] || evs[1].ID != ids[2] {
		t.Errorf("events after %d = %+v", ids[0], evs)
	}
	must(t, s.SaveOutboxCursor(ctx, "c", ids[2], epoch))
	must(t, s.SaveOutboxCursor(ctx, "c", ids[0], epoch)) // never moves back
	cur, err := s.GetOutboxCursor(ctx, "c")
	must(t, err)
	if cur != ids[2] {
		t.Errorf("cursor = %d, want %d", cur, ids[2])
	}
}

func testAssociations(t *testing.T, s *sqlstore.Store) {
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

func testDeliveryBodies(t *testing.T, s *sqlstore.Store) {
	ctx := context.Background()
	webhook := []byte(`{"action":"opened","issue":{"title":"` + strings.Repeat("a long and repetitive title ", 80) + `"}}`)
	noise := make([]byte, 4096)
	_, _ = rand.NewChaCha8([32]byte{1}).Read(noise) // never fails
	preEncoded, encoding := store.EncodeDeliveryBody(webhook)
	if encoding != store.BodyS2 {
		t.Fatalf("webhook body encoding = %q, want %q", encoding, store.BodyS2)
	}
	tests := []struct {
		name         string
		body         []byte
		bodyEncoding string // as given to InsertDeliveries
		wantStored   string // body_encoding of the row
	}{
		{"compressible body is compressed", webhook, "", store.BodyS2},
		{"pre-encoded body is stored as it is", preEncoded, store.BodyS2, store.BodyS2},
		{"small body is stored as received", []byte(`{"zen":"Keep it logically awesome."}`), "", store.BodyIdentity},
		{"incompressible body is stored as received", noise, "", store.BodyIdentity},
		{"empty body", []byte{}, "", store.BodyIdentity},
	}
	for i, tc := range tests {
		d := store.Delivery{ConnectionID: "gh", Provider: "github", Event: "issues", DeliveryKey: "body-" + itoa(i),
			Headers: `{}`, Body: tc.body, BodyEncoding: tc.bodyEncoding, ReceivedAt: epoch}
		res, err := s.InsertDeliveries(ctx, []store.Delivery{d})
		must(t, err)
		var stored string
		var storedBody []byte
		must(t, s.Driver().QueryRow(ctx, `SELECT body_encoding, body FROM deliveries WHERE id = $1`, res[0].ID).Scan(&stored, &storedBody))
		if stored != tc.wantStored {
			t.Errorf("%s: stored encoding = %q, want %q", tc.name, stored, tc.wantStored)
		}
		want := tc.body
		if tc.bodyEncoding != "" {
			want = webhook
		}
		if stored == store.BodyS2 && len(storedBody) >= len(want) {
			t.Errorf("%s: stored %d bytes for a %d-byte body", tc.name, len(storedBody), len(want))
		}
		got, err := s.GetDelivery(ctx, res[0].ID)
		must(t, err)
		if !bytes.Equal(got.Body, want) || got.BodyEncoding != "" {
			t.Errorf("%s: read back %d bytes (encoding %q), want the %d bytes received", tc.name, len(got.Body), got.BodyEncoding, len(want))
		}
	}
	// A row stored before bodies had an encoding (migration 00005) reads
	// back as it was stored.
	old := uuid.NewString()
	_, err := s.Driver().Exec(ctx, `INSERT INTO deliveries (id, connection_id, provider, event, delivery_key, headers, body,
		status, attempts, next_attempt_at, received_at) VALUES ($1, 'gh', 'github', 'issues', 'before-00005', '{}', $2,
		'succeeded', 1, $3, $3)`, old, webhook, epoch)
	must(t, err)
	if got, err := s.GetDelivery(ctx, old); err != nil || !bytes.Equal(got.Body, webhook) {
		t.Errorf("row from before body encodings: %d bytes (err %v), want the %d stored", len(got.Body), err, len(webhook))
	}

	claimed, err := s.ClaimDeliveries(ctx, "w1", epoch, time.Minute, len(tests))
	must(t, err)
	if len(claimed) != len(tests) {
		t.Fatalf("claimed %d deliveries, want %d", len(claimed), len(tests))
	}
	for _, d := range claimed {
		var i int
		if _, err := fmt.Sscanf(d.DeliveryKey, "body-%d", &i); err != nil {
			t.Fatalf("delivery key %q: %v", d.DeliveryKey, err)
		}
		want := tests[i].body
		if tests[i].bodyEncoding != "" {
			want = webhook
		}
		if !bytes.Equal(d.Body, want) {
			t.Errorf("%s: claimed body is %d bytes, want the %d bytes received", tests[i].name, len(d.Body), len(want))
		}
	}
}

func testInbox(t *testing.T, s *sqlstore.Store) {
	ctx := context.Background()
	d := store.Delivery{ConnectionID: "gh", Provider: "github", Event: "issues", DeliveryKey: "k1", Headers: `{}`,
		Body: []byte(`{"a":1}`), ReceivedAt: epoch}
	res, err := s.InsertDeliveries(ctx, []store.Delivery{d, d})
	must(t, err)
	if res[0].Duplicate || !res[1].Duplicate || res[0].ID != res[1].ID {
		t.Fatalf("batch with duplicate = %+v", res)
	}
	claimed, err := s.ClaimDeliveries(ctx, "w1", epoch, time.Minute, 10)
	must(t, err)
	if len(claimed) != 1 || claimed[0].Attempts != 1 || string(claimed[0].Body) != `{"a":1}` {
		t.Fatalf("claimed = %+v", claimed)
	}
	again, err := s.ClaimDeliveries(ctx, "w2", epoch.Add(time.Second), time.Minute, 10)
	must(t, err)
	if len(again) != 0 {
		t.Fatalf("leased delivery claimed twice: %+v", again)
	}
	// An expired lease is reclaimed.
	stolen, err := s.ClaimDeliveries(ctx, "w2", epoch.Add(2*time.Minute), time.Minute, 10)
	must(t, err)
	if len(stolen) != 1 || stolen[0].Attempts != 2 {
		t.Fatalf("expired lease not reclaimed: %+v", stolen)
	}
	done := stolen[0]
	done.Status = store.DeliverySucceeded
	now := epoch.Add(3 * time.Minute)
	done.ProcessedAt = &now
	if err := s.FinishDelivery(ctx, done, "w1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("finish by lost lease err = %v, want ErrNotFound", err)
	}
	must(t, s.FinishDelivery(ctx, done, "w2"))
	got, err := s.GetDelivery(ctx, done.ID)
	must(t, err)
	if got.Status != store.DeliverySucceeded || got.LeaseOwner != "" {
		t.Errorf("finished = %+v", got)
	}
	list, err := s.ListDeliveries(ctx, store.DeliveryFilter{Status: store.DeliverySucceeded, Limit: 10})
	must(t, err)
	if len(list) != 1 {
		t.Errorf("list succeeded = %d", len(list))
	}
	rq, requeued, err := s.RequeueDelivery(ctx, done.ID, now)
	must(t, err)
	if !requeued || rq.Status != store.DeliveryQueued || rq.Attempts != 0 {
		t.Errorf("requeued = %v, %+v", requeued, rq)
	}
}

func testEntityLeases(t *testing.T, s *sqlstore.Store) {
	ctx := context.Background()
	d1, d2 := uuid.NewString(), uuid.NewString()
	ok, err := s.AcquireEntityLease(ctx, "e", "w1", d1, epoch, epoch.Add(time.Minute))
	must(t, err)
	if !ok {
		t.Fatal("first lease refused")
	}
	ok, err = s.AcquireEntityLease(ctx, "e", "w2", d2, epoch, epoch.Add(time.Minute))
	must(t, err)
	if ok {
		t.Fatal("held lease granted twice")
	}
	ok, err = s.AcquireEntityLease(ctx, "e", "w2", d2, epoch.Add(2*time.Minute), epoch.Add(3*time.Minute))
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
	ok, err = s.AcquireEntityLease(ctx, "e2", "w3", res[0].ID, epoch, epoch.Add(time.Minute))
	must(t, err)
	if !ok {
		t.Fatal("lease for the claimed delivery refused")
	}
	done := claimed[0]
	done.Status, done.EntityKey = store.DeliverySucceeded, "e2"
	must(t, s.FinishDelivery(ctx, done, "w3"))
	ok, err = s.AcquireEntityLease(ctx, "e2", "w4", uuid.NewString(), epoch, epoch.Add(time.Minute))
	must(t, err)
	if !ok {
		t.Fatal("entity lease still held after its delivery finished")
	}

	// The holder may renew its own lease.
	ok, err = s.AcquireEntityLease(ctx, "e", "w2", d2, epoch.Add(2*time.Minute), epoch.Add(4*time.Minute))
	must(t, err)
	if !ok {
		t.Fatal("holder's renewal refused")
	}
}

func testSuppressionsAliases(t *testing.T, s *sqlstore.Store) {
	ctx := context.Background()
	SeedWorkspace(t, s, "ws")
	must(t, s.UpsertSuppression(ctx, store.Suppression{WorkspaceID: "ws", ExternalID: "x", Reason: "deleted", CreatedAt: epoch}))
	must(t, s.UpsertSuppression(ctx, store.Suppression{WorkspaceID: "ws", ExternalID: "x", Reason: "deleted", CreatedAt: epoch}))
	if _, err := s.GetSuppression(ctx, "ws", "X"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("suppression lookup is not byte-exact: %v", err)
	}
	list, err := s.ListSuppressions(ctx, store.SuppressionPage{Limit: 10})
	must(t, err)
	if len(list) != 1 {
		t.Errorf("suppressions = %+v", list)
	}
	ok, err := s.DeleteSuppression(ctx, "ws", "x")
	must(t, err)
	if !ok {
		t.Error("delete suppression reported nothing deleted")
	}
	task := newTask("ws", "old", 1)
	must(t, s.InsertTask(ctx, task))
	must(t, s.InsertAlias(ctx, "ws", "new", task.ID, epoch))
	must(t, s.InsertAlias(ctx, "ws", "new", task.ID, epoch))
	got, err := s.ResolveAlias(ctx, "ws", "new")
	must(t, err)
	if got != task.ID {
		t.Errorf("alias = %s", got)
	}
	must(t, s.DeleteTask(ctx, task.ID))
	if _, err := s.ResolveAlias(ctx, "ws", "new"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("alias survived task delete: %v", err)
	}
}

func testProjectionStale(t *testing.T, s *sqlstore.Store) {
	ctx := context.Background()
	SeedWorkspace(t, s, "ws")
	task := newTask("ws", "", 1)
	must(t, s.InsertTask(ctx, task))
	newer, older := epoch.Add(time.Hour), epoch
	p := store.Projection{Provider: "github", TaskID: task.ID, ConnectionID: "gh", ProviderID: 9, Repository: "o/r",
		Number: 1, Title: "new", State: "open", ProviderUpdatedAt: &newer}
	must(t, s.UpsertProjection(ctx, p))
	p.Title, p.ProviderUpdatedAt = "old", &older
	must(t, s.UpsertProjection(ctx, p))
	got, err := s.ListProjectionsForTask(ctx, task.ID)
	must(t, err)
	if len(got) != 1 || got[0].Title != "new" {
		t.Errorf("projection = %+v", got)
	}
}

func testMigrateTwice(t *testing.T, s *sqlstore.Store) {
	ctx := context.Background()
	must(t, s.Migrate(ctx))
	must(t, s.Migrate(ctx))
	ok, err := s.Migrated(ctx)
	must(t, err)
	if !ok {
		t.Error("migrated = false after migrate")
	}
}

// testTransactionWrites: writes that answer nothing but their row count
// (which PostgreSQL sends later, with the next statement or the COMMIT) are
// seen by the statements after them, commit with the transaction, vanish on
// rollback, and a failing one fails the transaction with its own error and
// leaves nothing behind.
func testTransactionWrites(t *testing.T, s *sqlstore.Store) {
	ctx := context.Background()
	SeedWorkspace(t, s, "ws")
	first, second := newTask("ws", "ext-1", 1), newTask("ws", "ext-2", 2)
	must(t, s.InTx(ctx, func(tx store.Queries) error {
		if err := tx.InsertTask(ctx, first); err != nil {
			return err
		}
		got, err := tx.LockTask(ctx, first.ID) // a read after the write sees it
		if err != nil {
			return err
		}
		got.Title = "renamed"
		if err := tx.UpdateTask(ctx, got); err != nil {
			return err
		}
		return tx.InsertTask(ctx, second) // travels with the COMMIT
	}))
	for _, id := range []string{first.ID, second.ID} {
		if _, err := s.GetTask(ctx, id); err != nil {
			t.Errorf("task written in the committed transaction: %v", err)
		}
	}
	if got, _ := s.GetTask(ctx, first.ID); got.Title != "renamed" {
		t.Errorf("title = %q, want the update made after the insert", got.Title)
	}

	tests := []struct {
		name    string
		fn      func(tx store.Queries) error
		wantErr error
	}{
		{"a taken external id fails the next read", func(tx store.Queries) error {
			if err := tx.InsertTask(ctx, newTask("ws", "ext-3", 3)); err != nil {
				return err
			}
			if err := tx.InsertTask(ctx, newTask("ws", "ext-1", 4)); err != nil {
				return err
			}
			_, err := tx.NextTaskSequence(ctx, "ws")
			return err
		}, store.ErrExternalIDTaken},
		{"a taken external id fails the commit", func(tx store.Queries) error {
			if err := tx.InsertTask(ctx, newTask("ws", "ext-3", 3)); err != nil {
				return err
			}
			return tx.InsertTask(ctx, newTask("ws", "ext-1", 4))
		}, store.ErrExternalIDTaken},
		{"an update of a missing row fails the next read", func(tx store.Queries) error {
			if err := tx.InsertTask(ctx, newTask("ws", "ext-3", 3)); err != nil {
				return err
			}
			if err := tx.SetTaskCreationState(ctx, uuid.NewString(), store.CreationComplete, epoch); err != nil {
				return err
			}
			_, err := tx.GetWorkspace(ctx, "ws")
			return err
		}, store.ErrNotFound},
	}
	for _, tc := range tests {
		err := s.InTx(ctx, tc.fn)
		if !errors.Is(err, tc.wantErr) {
			t.Errorf("%s: err = %v, want %v", tc.name, err, tc.wantErr)
		}
		if _, err := s.LookupTaskByExternalID(ctx, "ws", "ext-3"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s: the failed transaction's earlier insert survived (err %v)", tc.name, err)
		}
	}

	errStop := errors.New("caller gave up")
	err := s.InTx(ctx, func(tx store.Queries) error {
		if err := tx.InsertTask(ctx, newTask("ws", "ext-3", 3)); err != nil {
			return err
		}
		return errStop
	})
	if !errors.Is(err, errStop) {
		t.Errorf("rolled back transaction err = %v", err)
	}
	if _, err := s.LookupTaskByExternalID(ctx, "ws", "ext-3"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a rolled back insert survived (err %v)", err)
	}
	// The store is usable afterwards: no connection was left in a transaction.
	must(t, s.InsertTask(ctx, newTask("ws", "ext-3", 3)))
}

// testFinishAfterLostLease: a worker whose claim was taken over records
// nothing, gets ErrNotFound, and no longer holds the entity.
func testFinishAfterLostLease(t *testing.T, s *sqlstore.Store) {
	ctx := context.Background()
	res, err := s.InsertDeliveries(ctx, []store.Delivery{{ConnectionID: "gh", Provider: "github", Event: "issues",
		DeliveryKey: "lost-1", Headers: `{}`, Body: []byte(`{}`), ReceivedAt: epoch}})
	must(t, err)
	claimed, err := s.ClaimDeliveries(ctx, "w1", epoch, time.Minute, 1)
	must(t, err)
	if len(claimed) != 1 {
		t.Fatalf("claimed %d deliveries, want 1", len(claimed))
	}
	ok, err := s.AcquireEntityLease(ctx, "e-lost", "w1", res[0].ID, epoch, epoch.Add(10*time.Minute))
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
	ok, err = s.AcquireEntityLease(ctx, "e-lost", "w2", res[0].ID, epoch.Add(2*time.Minute), epoch.Add(3*time.Minute))
	must(t, err)
	if !ok {
		t.Error("entity lease of the worker that lost its claim is still held")
	}
}

func testLockOperationAndSteps(t *testing.T, s *sqlstore.Store) {
	ctx := context.Background()
	SeedWorkspace(t, s, "ws")
	task := newTask("ws", "ext-1", 1)
	op := store.Operation{ID: uuid.NewString(), WorkspaceID: "ws", TaskID: task.ID, State: store.OpPreparing,
		PlanJSON: "{}", ManifestSHA256: "m", ActorJSON: "{}", ActorBindingSHA256: "a", CompletionTokenSHA256: "c",
		CreatedAt: epoch, UpdatedAt: epoch}
	steps := []store.CreationStep{
		{OperationID: op.ID, Kind: "remote_contribution_associate", StepKey: "b", RequestJSON: "{}", RequestSHA256: "r",
			IdempotencyKey: "k2", State: store.StepPlanned, OwnershipMarker: "o2", Compensation: store.CompensationNone,
			Disposition: "none", CreatedAt: epoch, UpdatedAt: epoch},
		{OperationID: op.ID, Kind: "remote_contribution_associate", StepKey: "a", RequestJSON: "{}", RequestSHA256: "r",
			IdempotencyKey: "k1", State: store.StepPlanned, OwnershipMarker: "o1", Compensation: store.CompensationNone,
			Disposition: "none", CreatedAt: epoch, UpdatedAt: epoch},
	}
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
			return nil
		}))
	}
}

func testLookupSourceEntity(t *testing.T, s *sqlstore.Store) {
	ctx := context.Background()
	SeedWorkspace(t, s, "ws")
	held := newTask("ws", "ext-held", 1)
	must(t, s.InsertTask(ctx, held))
	must(t, s.InsertAlias(ctx, "ws", "ext-moved", held.ID, epoch))
	must(t, s.UpsertSuppression(ctx, store.Suppression{WorkspaceID: "ws", ExternalID: "ext-deleted", Reason: "deleted_at_source", CreatedAt: epoch}))
	tests := []struct {
		ext                   string
		wantSuppressed        bool
		wantTask, wantAliasTo string
	}{
		{"ext-held", false, held.ID, ""},
		{"ext-moved", false, "", held.ID},
		{"ext-deleted", true, "", ""},
		{"ext-unknown", false, "", ""},
	}
	for _, tc := range tests {
		e, err := s.LookupSourceEntity(ctx, "ws", tc.ext)
		must(t, err)
		gotTask := ""
		if e.Task != nil {
			gotTask = e.Task.ID
		}
		if e.Suppressed != tc.wantSuppressed || gotTask != tc.wantTask || e.AliasTaskID != tc.wantAliasTo {
			t.Errorf("%s: suppressed %v, task %q, alias to %q; want %v, %q, %q", tc.ext,
				e.Suppressed, gotTask, e.AliasTaskID, tc.wantSuppressed, tc.wantTask, tc.wantAliasTo)
		}
	}
	if e, err := s.LookupSourceEntity(ctx, "other", "ext-held"); err != nil || e.Task != nil {
		t.Errorf("another workspace sees %+v (err %v)", e, err)
	}
}
