package projection

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trackergateway/gateway/internal/events"
	"github.com/trackergateway/gateway/internal/idempotency"
	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/store/sqlstore"
	"github.com/trackergateway/gateway/internal/store/storetest"
)

// The provider projection (provider_pr_association): refresh after
// task.created through an httptest server answering like the GitHub and
// GitLab APIs, retries with backoff and Retry-After, and its independence
// from the task's creation. Both dialects.

// expectation is what a successful refresh writes, per provider.
type expectation struct {
	c                     contribution
	conn                  string
	answer                func(t testing.TB) string
	title, state, author  string
	head, base, sha, url  string
	draft, merged         bool
	updatedAt             time.Time
	authHeader            func(apiRequest) string
	wantAuth, wantNoToken string
}

var expectations = []expectation{
	{
		c: githubPR, conn: "gh-main",
		answer: func(t testing.TB) string {
			return githubPull(t, func(pr map[string]any) { pr["title"] = "Update the README (title from the API)" })
		},
		title: "Update the README (title from the API)", state: "merged", author: "Codertocat",
		head: "TES-41-readme", base: "master", sha: "ec26c3e57ca3a959ca5aad62de7213c562f8c821",
		url: "https://github.com/Codertocat/Hello-World/pull/2", merged: true,
		updatedAt:  time.Date(2019, 5, 15, 15, 21, 18, 0, time.UTC),
		authHeader: func(r apiRequest) string { return r.authorization }, wantAuth: "Bearer " + githubToken,
	},
	{
		c: gitlabMRc, conn: "gl-main",
		answer: func(t testing.TB) string { return gitlabMR(t, nil) },
		title:  "Add deletion support for designs", state: "open", author: "alexkalderimis",
		head: "delete-designs-v2", base: "master", sha: "8e0b45049b6253b8984cde9241830d2851168142",
		url: "https://gitlab.com/gitlab-org/gitlab-ee/merge_requests/14656", draft: true,
		updatedAt:  time.Date(2019, 8, 20, 9, 9, 56, 690000000, time.UTC),
		authHeader: func(r apiRequest) string { return r.privateToken }, wantAuth: gitlabToken,
	},
}

func (x expectation) check(t *testing.T, got store.Projection) {
	t.Helper()
	if got.Title != x.title {
		t.Errorf("title = %q, want %q", got.Title, x.title)
	}
	if got.State != x.state {
		t.Errorf("state = %v, want %v", got.State, x.state)
	}
	if got.Author != x.author {
		t.Errorf("author = %v, want %v", got.Author, x.author)
	}
	if got.HeadBranch != x.head || got.BaseBranch != x.base {
		t.Errorf("branches = %v→%v, want %v→%v", got.HeadBranch, got.BaseBranch, x.head, x.base)
	}
	if got.HeadSHA != x.sha {
		t.Errorf("head_sha = %v, want %v", got.HeadSHA, x.sha)
	}
	if got.URL != x.url {
		t.Errorf("url = %v, want %v", got.URL, x.url)
	}
	if got.Draft != x.draft || got.Merged != x.merged {
		t.Errorf("draft, merged = %v, %v, want %v, %v", got.Draft, got.Merged, x.draft, x.merged)
	}
	if !timeEq(got.ProviderUpdatedAt, x.updatedAt) {
		t.Errorf("provider_updated_at = %v, want %v", got.ProviderUpdatedAt, x.updatedAt)
	}
	if got.ProviderID != x.c.id || got.Number != x.c.number || got.Repository != x.c.repo {
		t.Errorf("key = %d %s#%d, want %d %s#%d", got.ProviderID, got.Repository, got.Number, x.c.id, x.c.repo, x.c.number)
	}
}

func TestRefreshAfterTaskCreated(t *testing.T) {
	t.Parallel()
	for _, x := range expectations {
		t.Run(x.c.provider, func(t *testing.T) {
			t.Parallel()
			storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
				t.Parallel()
				e := newEnv(t, st)
				e.api.script(x.c.path, ok(x.answer(t)))
				task := e.createTask(x.c, x.conn)
				// The payload row, written before the projector knew of the
				// task and not yet scheduled.
				e.upsert(payloadRow(x.c, task.ID, x.conn))

				e.runOnce()
				calls := e.api.calls()
				if got, want := len(calls), 1; got != want {
					t.Fatalf("API calls = %d, want %d", got, want)
				}
				if got, want := calls[0].method+" "+calls[0].path, "GET "+x.c.path; got != want {
					t.Errorf("request = %v, want %v", got, want)
				}
				if got, want := x.authHeader(calls[0]), x.wantAuth; got != want {
					t.Errorf("auth header = %q, want %q", got, want)
				}
				row := e.row(task.ID)
				x.check(t, row)
				if !timeEq(row.LastSyncedAt, e.clock.Now()) {
					t.Errorf("last_synced_at = %v, want %v", row.LastSyncedAt, e.clock.Now())
				}
				if row.NextSyncAt != nil || row.SyncAttempts != 0 || row.SyncError != "" {
					t.Errorf("sync state = next %v, attempts %d, error %q, want none", row.NextSyncAt, row.SyncAttempts, row.SyncError)
				}
				cursor, err := st.GetOutboxCursor(context.Background(), Consumer)
				if err != nil || cursor == 0 {
					t.Errorf("outbox cursor = %d (%v), want past task.created", cursor, err)
				}

				// Nothing is due any more: no further calls.
				e.clock.Advance(time.Hour)
				e.runOnce()
				if got, want := len(e.api.calls()), 1; got != want {
					t.Errorf("API calls after a second pass = %d, want %d", got, want)
				}

				// The Contributions JSON of the task.
				byTask, err := e.proj.ContributionsOf(context.Background(), []string{task.ID})
				if err != nil {
					t.Fatal(err)
				}
				cs := byTask[task.ID]
				if len(cs) != 1 {
					t.Fatalf("contributions = %d, want 1", len(cs))
				}
				c := cs[0]
				if got, want := c.Provider+"/"+c.Kind, x.c.provider+"/"+x.c.kind; got != want {
					t.Errorf("contribution provider/kind = %v, want %v", got, want)
				}
				if got, want := c.State, x.state; got != want {
					t.Errorf("contribution state = %v, want %v", got, want)
				}
				if got, want := c.Number, x.c.number; got != want {
					t.Errorf("contribution number = %v, want %v", got, want)
				}
				if c.LastSyncedAt == nil || c.UpdatedAt == nil {
					t.Errorf("contribution last_synced_at, updated_at = %v, %v, want both set", c.LastSyncedAt, c.UpdatedAt)
				}
			})
		})
	}
}

// TestOnePassReadsTheWholeOutbox: a pass reads the outbox to its end, so a
// task created behind more than a batch of other creations is refreshed in
// the same pass, and the cursor ends at the last event.
func TestOnePassReadsTheWholeOutbox(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		t.Parallel()
		ctx := context.Background()
		e := newEnv(t, st)
		for i := range outboxBatch + 50 {
			_, err := e.coord.Create(ctx, idempotency.CreateRequest{WorkspaceID: testWorkspace,
				ExternalID: "github:host:issue:" + strconv.Itoa(i), Title: "issue task", WorkflowStepID: "backlog",
				Actor: idempotency.Actor{Kind: "connection", ID: "gh-main", AuthMode: "webhook_signature"}})
			if err != nil {
				t.Fatalf("create issue task %d: %v", i, err)
			}
		}
		x := expectations[0]
		e.api.script(x.c.path, ok(x.answer(t)))
		task := e.createTask(x.c, x.conn)
		e.upsert(payloadRow(x.c, task.ID, x.conn))

		e.runOnce()
		if got, want := len(e.api.calls()), 1; got != want {
			t.Errorf("API calls = %d, want %d: the pass stopped before the PR task's task.created", got, want)
		}
		evts, err := st.ReadTaskEvents(ctx, 0, 2*outboxBatch)
		if err != nil {
			t.Fatal(err)
		}
		cursor, err := st.GetOutboxCursor(ctx, Consumer)
		if err != nil {
			t.Fatal(err)
		}
		// The pass read the outbox to its end, then refreshed the PR,
		// whose contribution event the next pass reads.
		last := evts[len(evts)-1]
		if last.Type == events.TypeContributionUpdated {
			last = evts[len(evts)-2]
		}
		if cursor != last.ID {
			t.Errorf("outbox cursor = %d, want the last event before the refresh %d", cursor, last.ID)
		}
	})
}

// retryScript is 429 with Retry-After (plus each provider's rate-limit
// headers), then 502, then the answer.
func retryScript(t testing.TB, x expectation, now time.Time) []reply {
	limited := reply{status: http.StatusTooManyRequests, header: map[string]string{"Retry-After": "120"},
		body: `{"message":"API rate limit exceeded"}`}
	switch x.c.provider {
	case "github":
		limited.header["X-RateLimit-Remaining"] = "0"
		limited.header["X-RateLimit-Reset"] = strconv.FormatInt(now.Add(90*time.Second).Unix(), 10)
	case "gitlab":
		limited.header["RateLimit-Remaining"] = "0"
		limited.header["RateLimit-Reset"] = strconv.FormatInt(now.Add(90*time.Second).Unix(), 10)
		limited.body = `{"message":"Retry later"}`
	}
	return []reply{limited, {status: http.StatusBadGateway, body: "<html><body>502 Bad Gateway</body></html>"}, ok(x.answer(t))}
}

func TestRetryHonoursRetryAfterThenSucceeds(t *testing.T) {
	t.Parallel()
	for _, x := range expectations {
		t.Run(x.c.provider, func(t *testing.T) {
			t.Parallel()
			storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
				t.Parallel()
				e := newEnv(t, st)
				task := e.createTask(x.c, x.conn)
				due := e.clock.Now()
				p := payloadRow(x.c, task.ID, x.conn)
				p.NextSyncAt = &due // as the ingest service writes it with an api_token
				e.upsert(p)
				e.api.script(x.c.path, retryScript(t, x, e.clock.Now())...)
				before := e.task(task.ID)

				// 1: 429 Retry-After: 120.
				t0 := e.clock.Now()
				e.runOnce()
				row := e.row(task.ID)
				if got, want := row.SyncAttempts, 1; got != want {
					t.Errorf("sync_attempts after 429 = %d, want %d", got, want)
				}
				if row.NextSyncAt == nil || row.NextSyncAt.Before(t0.Add(120*time.Second)) {
					t.Fatalf("next_sync_at after 429 = %v, want ≥ %v (Retry-After)", row.NextSyncAt, t0.Add(120*time.Second))
				}
				if !strings.Contains(row.SyncError, "429") {
					t.Errorf("sync_error = %q, want the 429", row.SyncError)
				}
				if row.LastSyncedAt != nil {
					t.Errorf("last_synced_at = %v, want nil before any success", row.LastSyncedAt)
				}
				e.checkCreationUntouched(before)

				// Before the provider's time: not called.
				e.clock.Advance(119 * time.Second)
				e.runOnce()
				if got, want := len(e.api.calls()), 1; got != want {
					t.Errorf("API calls before Retry-After passed = %d, want %d", got, want)
				}

				// 2: 502.
				e.clock.Set(*row.NextSyncAt)
				t1 := e.clock.Now()
				e.runOnce()
				row = e.row(task.ID)
				if got, want := row.SyncAttempts, 2; got != want {
					t.Errorf("sync_attempts after 502 = %d, want %d", got, want)
				}
				if !strings.Contains(row.SyncError, "502") {
					t.Errorf("sync_error = %q, want the 502", row.SyncError)
				}
				if row.NextSyncAt == nil || !row.NextSyncAt.After(t1) {
					t.Fatalf("next_sync_at after 502 = %v, want after %v", row.NextSyncAt, t1)
				}
				e.checkCreationUntouched(before)

				// 3: success once the clock passes next_sync_at.
				e.clock.Set(*row.NextSyncAt)
				e.runOnce()
				row = e.row(task.ID)
				x.check(t, row)
				if row.SyncAttempts != 0 || row.SyncError != "" || row.NextSyncAt != nil {
					t.Errorf("sync state after success = attempts %d, error %q, next %v, want cleared", row.SyncAttempts, row.SyncError, row.NextSyncAt)
				}
				if !timeEq(row.LastSyncedAt, e.clock.Now()) {
					t.Errorf("last_synced_at = %v, want %v", row.LastSyncedAt, e.clock.Now())
				}
				calls := e.api.calls()
				if got, want := len(calls), 3; got != want {
					t.Errorf("API calls = %d, want %d", got, want)
				}
				for i, c := range calls {
					if got, want := x.authHeader(c), x.wantAuth; got != want {
						t.Errorf("call %d auth header = %q, want %q", i, got, want)
					}
				}
				e.checkCreationUntouched(before)
			})
		})
	}
}

// checkCreationUntouched: projection failures never reach the task or its
// creation (creation_complete, settlement, revision, events).
func (e *env) checkCreationUntouched(before store.Task) {
	e.t.Helper()
	ctx := context.Background()
	after := e.task(before.ID)
	if got, want := after.CreationState, store.CreationComplete; got != want {
		e.t.Errorf("creation_state = %v, want %v", got, want)
	}
	if after.ExternalIDSettledAt == nil || !after.ExternalIDSettledAt.Equal(*before.ExternalIDSettledAt) {
		e.t.Errorf("external_id_settled_at = %v, want %v", after.ExternalIDSettledAt, before.ExternalIDSettledAt)
	}
	_, outcome, err := e.coord.Lookup(ctx, testWorkspace, before.ExternalID)
	if err != nil {
		e.t.Fatalf("lookup: %v", err)
	}
	if !outcome.CreationComplete() {
		e.t.Errorf("lookup creation_complete = false, want true (outcome %v)", outcome)
	}
	op, err := e.st.GetOperation(ctx, before.CreationOperationID)
	if err != nil {
		e.t.Fatal(err)
	}
	if got, want := op.State, store.OpCompleted; got != want {
		e.t.Errorf("creation operation = %v, want %v", got, want)
	}
	evs, err := e.st.ReadTaskEvents(ctx, 0, 1000)
	if err != nil {
		e.t.Fatal(err)
	}
	// A refresh that changes what the task shows of its PR/MR is a
	// contribution event, at a revision of its own; nothing else of the
	// task changes.
	contributionEvents := int64(0)
	for _, ev := range evs {
		switch {
		case ev.TaskID != before.ID || ev.Type == store.EventTaskCreated:
		case ev.Type == events.TypeContributionUpdated:
			contributionEvents++
		default:
			e.t.Errorf("task event %s, want only task.created and task.contribution_updated", ev.Type)
		}
	}
	if got, want := after.Revision, before.Revision+contributionEvents; got != want {
		e.t.Errorf("revision = %d, want %d", got, want)
	}
	if after.Title != before.Title || !after.UpdatedAt.Equal(before.UpdatedAt) {
		e.t.Errorf("task after the refresh = %+v, want its fields as before %+v", after, before)
	}
}

func (e *env) task(id string) store.Task {
	e.t.Helper()
	t, err := e.st.GetTask(context.Background(), id)
	if err != nil {
		e.t.Fatalf("get task: %v", err)
	}
	return t
}

func TestRateLimitResetHonoured(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		c      contribution
		conn   string
		status int
		prefix string
	}{
		{"github primary rate limit", githubPR, "gh-main", http.StatusForbidden, "X-RateLimit-"},
		{"github 429", githubPR, "gh-main", http.StatusTooManyRequests, "X-RateLimit-"},
		{"gitlab 429", gitlabMRc, "gl-main", http.StatusTooManyRequests, "RateLimit-"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
				t.Parallel()
				e := newEnv(t, st)
				task := e.createTask(tc.c, tc.conn)
				due := e.clock.Now()
				p := payloadRow(tc.c, task.ID, tc.conn)
				p.NextSyncAt = &due
				e.upsert(p)
				// The reset is an absolute time on the provider's clock, which
				// the injected clock stands for.
				reset := e.clock.Now().Add(10 * time.Minute).Truncate(time.Second)
				e.api.script(tc.c.path, reply{status: tc.status, body: `{"message":"API rate limit exceeded"}`,
					header: map[string]string{tc.prefix + "Limit": "5000", tc.prefix + "Remaining": "0",
						tc.prefix + "Reset": strconv.FormatInt(reset.Unix(), 10)}})
				e.runOnce()
				row := e.row(task.ID)
				if row.NextSyncAt == nil || row.NextSyncAt.Before(reset) {
					t.Errorf("next_sync_at = %v, want ≥ the rate-limit reset %v", row.NextSyncAt, reset)
				}
				if got, want := row.SyncAttempts, 1; got != want {
					t.Errorf("sync_attempts = %d, want %d", got, want)
				}
			})
		})
	}
}

func TestFailuresNeverAffectCreation(t *testing.T) {
	t.Parallel()
	for _, x := range expectations {
		t.Run(x.c.provider, func(t *testing.T) {
			t.Parallel()
			storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
				t.Parallel()
				e := newEnv(t, st)
				task := e.createTask(x.c, x.conn)
				e.upsert(payloadRow(x.c, task.ID, x.conn))
				e.api.script(x.c.path, reply{status: http.StatusInternalServerError, body: `{"message":"boom"}`})
				before := e.task(task.ID)
				var last time.Duration
				for i := 1; i <= 6; i++ {
					e.runOnce()
					row := e.row(task.ID)
					if got, want := row.SyncAttempts, i; got != want {
						t.Fatalf("pass %d: sync_attempts = %d, want %d", i, got, want)
					}
					wait := row.NextSyncAt.Sub(e.clock.Now())
					if wait <= last {
						t.Errorf("pass %d: backoff %v, want more than the previous %v", i, wait, last)
					}
					last = wait
					e.checkCreationUntouched(before)
					e.clock.Set(*row.NextSyncAt)
				}
				// The payload row is still what the webhook said.
				row := e.row(task.ID)
				if got, want := row.Title, payloadRow(x.c, task.ID, x.conn).Title; got != want {
					t.Errorf("title = %q, want the payload's %q", got, want)
				}
			})
		})
	}
}

func TestCrashBetweenAssociationAndProjection(t *testing.T) {
	t.Parallel()
	for _, x := range expectations {
		t.Run(x.c.provider, func(t *testing.T) {
			t.Parallel()
			storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
				t.Parallel()
				e := newEnv(t, st)
				ctx := context.Background()
				e.api.script(x.c.path, ok(x.answer(t)))
				// The creation dies right after its association is committed.
				var crashed atomic.Bool
				e.coord.Failpoint = func(name string) error {
					if name == idempotency.FailAfterEffectWrite && crashed.CompareAndSwap(false, true) {
						return errors.New("crash")
					}
					return nil
				}
				ext := x.c.provider + ":host:" + x.c.kind + ":" + strconv.FormatInt(x.c.id, 10)
				_, err := e.coord.Create(ctx, idempotency.CreateRequest{WorkspaceID: testWorkspace, ExternalID: ext,
					Title: "PR task", WorkflowStepID: "backlog", OwnerConnection: x.conn,
					Contributions: []idempotency.RemoteContributionRequest{{Provider: x.c.provider, RepositoryID: x.c.repo,
						ContributionKind: x.c.kind, ContributionID: strconv.FormatInt(x.c.id, 10), ConnectionID: x.conn}},
					Actor: idempotency.Actor{Kind: "connection", ID: x.conn, AuthMode: "webhook_signature"}})
				if err == nil {
					t.Fatalf("create: nil error, want the crash")
				}
				assoc, err := st.GetAssociation(ctx, x.c.provider, x.conn, strconv.FormatInt(x.c.id, 10))
				if err != nil {
					t.Fatalf("association after the crash: %v", err)
				}
				// Nothing to project yet: no task.created, no row.
				e.runOnce()
				if got, want := len(e.rows(assoc.TaskID)), 0; got != want {
					t.Errorf("rows before recovery = %d, want %d", got, want)
				}
				// Recovery completes the creation (task.created).
				e.clock.Advance(5 * time.Minute)
				if n, err := idempotency.NewRecoverer(e.coord, st, e.proj.logger).RunOnce(ctx); err != nil || n != 1 {
					t.Fatalf("recovery settled %d (%v), want 1", n, err)
				}
				e.runOnce()
				if got, want := len(e.api.calls()), 0; got != want {
					t.Errorf("API calls without a row = %d, want %d", got, want)
				}
				// The delivery's retry writes the payload row; with an
				// api_token it is due at once, and the refresh completes what
				// the payload lacks (author, and the current title).
				p := payloadRow(x.c, assoc.TaskID, x.conn)
				p.Author, p.Title = "", ""
				due := e.clock.Now()
				p.NextSyncAt = &due
				e.upsert(p)
				e.runOnce()
				x.check(t, e.row(assoc.TaskID))
				// Redelivered again: the payload is older than the API's
				// answer, so it changes nothing and adds no row.
				e.clock.Advance(time.Minute)
				due = e.clock.Now()
				p.NextSyncAt = &due
				e.upsert(p)
				e.runOnce()
				x.check(t, e.row(assoc.TaskID))
				if got, want := len(e.api.calls()), 1; got != want {
					t.Errorf("API calls = %d, want %d", got, want)
				}
			})
		})
	}
}

func TestIncompleteRowCompletedAfterTaskCreated(t *testing.T) {
	t.Parallel()
	for _, x := range expectations {
		t.Run(x.c.provider, func(t *testing.T) {
			t.Parallel()
			storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
				t.Parallel()
				e := newEnv(t, st)
				e.api.script(x.c.path, ok(x.answer(t)))
				task := e.createTask(x.c, x.conn)
				// Only the key survived: the rest of the payload write was lost.
				e.upsert(store.Projection{Provider: x.c.provider, TaskID: task.ID, ConnectionID: x.conn,
					ProviderID: x.c.id, Repository: x.c.repo, Number: x.c.number, State: "open"})
				e.runOnce()
				x.check(t, e.row(task.ID))
				// The full payload arrives late (older than the API's answer):
				// it does not overwrite, and adds no row.
				late := payloadRow(x.c, task.ID, x.conn)
				e.upsert(late)
				x.check(t, e.row(task.ID))
			})
		})
	}
}

func TestAnswerForAnotherIDNeverAddsARow(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		t.Parallel()
		e := newEnv(t, st)
		task := e.createTask(githubPR, "gh-main")
		e.upsert(payloadRow(githubPR, task.ID, "gh-main"))
		e.api.script(ghPath, ok(githubPull(t, func(pr map[string]any) { pr["id"] = 1 })))
		e.runOnce()
		row := e.row(task.ID)
		if !strings.Contains(row.SyncError, "id 1") {
			t.Errorf("sync_error = %q, want the id mismatch", row.SyncError)
		}
		if got, want := row.ProviderID, int64(ghPRID); got != want {
			t.Errorf("provider_id = %d, want %d", got, want)
		}
	})
}

func TestNoTokenIsPayloadOnly(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		contribution
		conn string
	}{{githubPR, "gh-payload-only"}, {gitlabMRc, "gl-payload-only"}} {
		t.Run(c.provider, func(t *testing.T) {
			t.Parallel()
			storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
				t.Parallel()
				e := newEnv(t, st)
				task := e.createTask(c.contribution, c.conn)
				p := payloadRow(c.contribution, task.ID, c.conn)
				e.upsert(p)
				e.runOnce()
				// A row scheduled while the connection still had a token.
				due := e.clock.Now()
				p.NextSyncAt = &due
				e.upsert(p)
				e.runOnce()
				if got, want := len(e.api.calls()), 0; got != want {
					t.Errorf("API calls = %d, want %d", got, want)
				}
				row := e.row(task.ID)
				if row.LastSyncedAt != nil || row.NextSyncAt != nil || row.SyncAttempts != 0 {
					t.Errorf("sync state = last %v, next %v, attempts %d, want none", row.LastSyncedAt, row.NextSyncAt, row.SyncAttempts)
				}
				if got, want := row.Title, p.Title; got != want {
					t.Errorf("title = %q, want the payload's %q", got, want)
				}
			})
		})
	}
}

func TestTokenNeverInSyncError(t *testing.T) {
	t.Parallel()
	for _, x := range expectations {
		t.Run(x.c.provider, func(t *testing.T) {
			t.Parallel()
			storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
				t.Parallel()
				e := newEnv(t, st)
				task := e.createTask(x.c, x.conn)
				e.upsert(payloadRow(x.c, task.ID, x.conn))
				token := e.conns[x.conn].APIToken
				// A proxy that echoes the credentials it refused.
				e.api.script(x.c.path, reply{status: http.StatusUnauthorized,
					body: fmt.Sprintf(`{"message":"bad credentials: %s"}`, token)})
				e.runOnce()
				row := e.row(task.ID)
				if row.SyncError == "" {
					t.Fatalf("sync_error empty, want the 401")
				}
				if strings.Contains(row.SyncError, token) {
					t.Errorf("sync_error %q contains the API token", row.SyncError)
				}
				if !strings.Contains(row.SyncError, "401") {
					t.Errorf("sync_error = %q, want the 401", row.SyncError)
				}
			})
		})
	}
}

func TestDelay(t *testing.T) {
	t.Parallel()
	plain := errors.New("502")
	want := []time.Duration{2 * time.Second, 3 * time.Second, 4500 * time.Millisecond, 6750 * time.Millisecond}
	for i, w := range want {
		if got := delay(i+1, plain); got != w {
			t.Errorf("delay(%d) = %v, want %v", i+1, got, w)
		}
	}
	if got, want := delay(1000, plain), 10*time.Minute; got != want {
		t.Errorf("delay(1000) = %v, want the cap %v", got, want)
	}
	if got, want := delay(1, &retryAfter{wait: time.Hour, err: plain}), time.Hour; got != want {
		t.Errorf("delay with Retry-After 1h = %v, want %v", got, want)
	}
	if got, want := delay(3, &retryAfter{wait: time.Second, err: plain}), 4500*time.Millisecond; got != want {
		t.Errorf("delay with a shorter Retry-After = %v, want the backoff %v", got, want)
	}
}

func TestSyncError(t *testing.T) {
	t.Parallel()
	err := errors.New("GET https://api/x?access_token=s3cret: 401 s3cret " + strings.Repeat("é", maxSyncError))
	got := syncError(err, "s3cret")
	if strings.Contains(got, "s3cret") {
		t.Errorf("syncError kept the token: %q", got[:80])
	}
	if len(got) > maxSyncError+len("…") {
		t.Errorf("syncError length = %d, want at most %d", len(got), maxSyncError+len("…"))
	}
	if !strings.HasPrefix(got, "GET https://api/x?access_token=[redacted]: 401 [redacted]") {
		t.Errorf("syncError = %q", got[:80])
	}
}
