package main

// The receive path end to end: duplicates, signatures, size cap, unknown
// connections and an unavailable database.

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	_ "modernc.org/sqlite"

	"github.com/trackergateway/gateway/internal/inbox"
	"github.com/trackergateway/gateway/internal/store/storetest"
)

// TestDuplicateDelivery: a delivery resent with the same key is
// acknowledged as a duplicate of the same row and creates one task; a
// redelivery under a new key is a new row that finds the same task.
func TestDuplicateDelivery(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		hook    hookFn
		noKey   bool // drop the key header: the key is the body's SHA-256
		wantExt string
	}{
		{name: "github X-GitHub-Delivery", hook: fx("github/issues.opened.json"), wantExt: ghIssueID},
		{name: "gitlab Idempotency-Key", hook: fx("gitlab/issue.json"), wantExt: glIssueID},
		{name: "gitlab body hash", hook: fx("gitlab/issue.json"), noKey: true, wantExt: glIssueID},
		{name: "jira X-Atlassian-Webhook-Identifier", hook: fx("jira/webhook-issue-created.json"), wantExt: jiraIssueID},
		{name: "jira body hash (Data Center)", hook: fx("jira/webhook-issue-created.json"), noKey: true, wantExt: jiraIssueID},
	}
	forEachDialect(t, func(t *testing.T, dialect string) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				g := startGateway(t, newDatabaseURL(t, dialect))
				h := tc.hook(t).withKey("dup-" + strings.ReplaceAll(tc.name, " ", "-"))
				post := func() receipt {
					t.Helper()
					hd := h.header(secretsByConn[h.Conn])
					if tc.noKey {
						hd.Del("Idempotency-Key")
						hd.Del("X-Atlassian-Webhook-Identifier")
					}
					status, body, err := g.postWebhook(h.Conn, hd, h.Body)
					if err != nil || status != http.StatusAccepted {
						t.Fatalf("POST = %d %s %v, want 202", status, body, err)
					}
					var r receipt
					if err := json.Unmarshal(body, &r); err != nil {
						t.Fatal(err)
					}
					return r
				}
				first := post()
				if first.Status != "accepted" {
					t.Errorf("first receipt status = %q, want accepted", first.Status)
				}
				d := g.waitDelivery(t, first.DeliveryID)
				second := post()
				if second.Status != "duplicate" || second.DeliveryID != first.DeliveryID {
					t.Errorf("second receipt = %+v, want duplicate of %s", second, first.DeliveryID)
				}
				if ds := g.waitIdle(t, waitTimeout); len(ds) != 1 {
					t.Errorf("deliveries = %d, want 1 row", len(ds))
				}
				tk := g.onlyTask(t)
				if tk.ExternalID != tc.wantExt || d.taskID() != tk.ID {
					t.Errorf("task %s %s, outcome task %s; want one task %s", tk.ID, tk.ExternalID, d.taskID(), tc.wantExt)
				}
				if tc.noKey {
					return
				}
				// A redelivery under a new key: a second row, the same task.
				re := g.process(t, h.withKey("redelivery-"+h.Key))
				if re.ID == first.DeliveryID || re.Status != "succeeded" || re.taskID() != tk.ID {
					t.Errorf("redelivery %s: status %q task %q, want a new row succeeded on task %s", re.ID, re.Status, re.taskID(), tk.ID)
				}
				if ds := g.deliveries(t); len(ds) != 2 {
					t.Errorf("deliveries after the redelivery = %d, want 2", len(ds))
				}
				if got := g.onlyTask(t); got.ID != tk.ID {
					t.Errorf("task after the redelivery = %s, want %s", got.ID, tk.ID)
				}
			})
		}
	})
}

// TestConcurrentDuplicatePosts: 200 concurrent posts of one delivery commit
// one row; exactly one is accepted, every other is its duplicate.
func TestConcurrentDuplicatePosts(t *testing.T) {
	t.Parallel()
	const n = 200
	forEachDialect(t, func(t *testing.T, dialect string) {
		g := startGateway(t, newDatabaseURL(t, dialect))
		h := fixtureHook(t, "github/issues.opened.json").withKey("concurrent-delivery")
		header := h.header(githubSecret)
		start := make(chan struct{})
		type result struct {
			status int
			body   []byte
			err    error
		}
		results := make([]result, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				<-start
				s, b, err := g.postWebhook("github", header.Clone(), h.Body)
				results[i] = result{s, b, err}
			})
		}
		close(start)
		wg.Wait()

		accepted, duplicates := 0, 0
		ids := map[string]int{}
		for i, r := range results {
			if r.err != nil || r.status != http.StatusAccepted {
				t.Errorf("post %d = %d %s %v, want 202", i, r.status, r.body, r.err)
				continue
			}
			var rc receipt
			if err := json.Unmarshal(r.body, &rc); err != nil {
				t.Fatal(err)
			}
			ids[rc.DeliveryID]++
			switch rc.Status {
			case "accepted":
				accepted++
			case "duplicate":
				duplicates++
			}
		}
		if accepted != 1 || duplicates != n-1 {
			t.Errorf("receipts: %d accepted, %d duplicate; want 1 and %d", accepted, duplicates, n-1)
		}
		if len(ids) != 1 {
			t.Errorf("receipts name %d delivery ids, want 1", len(ids))
		}
		ds := g.waitIdle(t, waitTimeout)
		if len(ds) != 1 {
			t.Fatalf("deliveries = %d rows, want 1", len(ds))
		}
		if ds[0].Status != "succeeded" {
			t.Errorf("delivery status = %q, want succeeded", ds[0].Status)
		}
		checkTask(t, g.onlyTask(t), ghIssueTask)
	})
}

// TestSignatures: unsigned, wrongly signed and SHA-1-only deliveries are
// 401 and store nothing; any active secret of the connection verifies.
func TestSignatures(t *testing.T) {
	t.Parallel()
	ghBody := readFixture(t, "github/issues.opened.json")
	glBody := readFixture(t, "gitlab/issue.json")
	jiraBody := readFixture(t, "jira/webhook-issue-created.json")
	sha1Hex := func(secret string, body []byte) string {
		m := hmac.New(sha1.New, []byte(secret))
		m.Write(body)
		return hex.EncodeToString(m.Sum(nil))
	}
	sha256Hex := func(secret string, body []byte) string {
		m := hmac.New(sha256.New, []byte(secret))
		m.Write(body)
		return hex.EncodeToString(m.Sum(nil))
	}
	ghHeader := func(set func(h http.Header)) http.Header {
		h := http.Header{"X-Github-Event": {"issues"}, "X-Github-Delivery": {"sig-test"}, "Content-Type": {"application/json"}}
		set(h)
		return h
	}
	cases := []struct {
		name   string
		conn   string
		header http.Header
		body   []byte
		want   int
	}{
		{"github missing", "github", ghHeader(func(http.Header) {}), ghBody, http.StatusUnauthorized},
		{"github wrong secret", "github", ghHeader(func(h http.Header) {
			h.Set("X-Hub-Signature-256", "sha256="+sha256Hex("not-the-secret", ghBody))
		}), ghBody, http.StatusUnauthorized},
		{"github signature of another body", "github", ghHeader(func(h http.Header) {
			h.Set("X-Hub-Signature-256", "sha256="+sha256Hex(githubSecret, glBody))
		}), ghBody, http.StatusUnauthorized},
		{"github malformed", "github", ghHeader(func(h http.Header) { h.Set("X-Hub-Signature-256", "sha256=zz") }), ghBody, http.StatusUnauthorized},
		{"github SHA-1 only (valid)", "github", ghHeader(func(h http.Header) {
			h.Set("X-Hub-Signature", "sha1="+sha1Hex(githubSecret, ghBody))
		}), ghBody, http.StatusUnauthorized},
		{"gitlab missing", "gitlab", http.Header{"X-Gitlab-Event": {"Issue Hook"}, "Content-Type": {"application/json"}}, glBody, http.StatusUnauthorized},
		{"gitlab wrong token", "gitlab", http.Header{"X-Gitlab-Event": {"Issue Hook"}, "X-Gitlab-Token": {"not-the-secret"}, "Content-Type": {"application/json"}}, glBody, http.StatusUnauthorized},
		{"gitlab token prefix", "gitlab", http.Header{"X-Gitlab-Event": {"Issue Hook"}, "X-Gitlab-Token": {gitlabSecret[:5]}, "Content-Type": {"application/json"}}, glBody, http.StatusUnauthorized},
		{"jira missing", "jira", http.Header{"Content-Type": {"application/json"}}, jiraBody, http.StatusUnauthorized},
		{"jira wrong secret", "jira", http.Header{"X-Hub-Signature": {"sha256=" + sha256Hex("not-the-secret", jiraBody)}, "Content-Type": {"application/json"}}, jiraBody, http.StatusUnauthorized},
		{"jira SHA-1 method (valid)", "jira", http.Header{"X-Hub-Signature": {"sha1=" + sha1Hex(jiraSecret, jiraBody)}, "Content-Type": {"application/json"}}, jiraBody, http.StatusUnauthorized},
		// Rotation: the connection's previous secret still verifies.
		{"github previous secret", "github", ghHeader(func(h http.Header) {
			h.Set("X-Hub-Signature-256", "sha256="+sha256Hex(githubOld, ghBody))
		}), ghBody, http.StatusAccepted},
	}
	forEachDialect(t, func(t *testing.T, dialect string) {
		g := startGateway(t, newDatabaseURL(t, dialect))
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				status, body, err := g.postWebhook(tc.conn, tc.header, tc.body)
				if err != nil {
					t.Fatal(err)
				}
				if status != tc.want {
					t.Errorf("POST /webhooks/%s = %d %s, want %d", tc.conn, status, body, tc.want)
				}
				if tc.want == http.StatusUnauthorized {
					// The reason, never a secret or a signature.
					var msg struct {
						Error string `json:"error"`
					}
					if err := json.Unmarshal(body, &msg); err != nil ||
						!(strings.HasPrefix(msg.Error, "missing signature: ") || strings.HasPrefix(msg.Error, "signature mismatch: ") ||
							strings.HasPrefix(msg.Error, "unsupported signature: ")) {
						t.Errorf("401 body = %s, want the reason", body)
					}
					for _, secret := range []string{githubSecret, githubOld, gitlabSecret, gitlabSecret[:5], jiraSecret, "not-the-secret"} {
						if strings.Contains(string(body), secret) {
							t.Errorf("401 body %s shows a secret", body)
						}
					}
				}
			})
		}
		// Only the validly signed delivery was stored.
		ds := g.deliveries(t)
		if len(ds) != 1 || ds[0].DeliveryKey != "sig-test" {
			t.Errorf("deliveries = %+v, want only the one signed with the previous secret", ds)
		}
		// Signatures and tokens are never shown to operators.
		if len(ds) == 1 {
			d := g.getDelivery(t, ds[0].ID)
			for name := range d.Headers {
				if n := strings.ToLower(name); strings.Contains(n, "signature") || strings.Contains(n, "token") {
					t.Errorf("stored headers show %s", name)
				}
			}
		}
	})
}

// oversize is a body one byte over the cap.
func oversize() []byte { return bytes.Repeat([]byte("a"), inbox.MaxBodyBytes+1) }

// TestOversizeBody: a body over 25 MiB is 413, announced by Content-Length or
// streamed chunked, and stores nothing.
func TestOversizeBody(t *testing.T) {
	t.Parallel()
	body := oversize()
	header := hook{Conn: "github", Event: "issues", Body: body}.header(githubSecret)
	forEachDialect(t, func(t *testing.T, dialect string) {
		g := startGateway(t, newDatabaseURL(t, dialect))
		for _, chunked := range []bool{false, true} {
			t.Run(fmt.Sprintf("chunked=%t", chunked), func(t *testing.T) {
				var rd io.Reader = bytes.NewReader(body)
				if chunked {
					rd = io.MultiReader(rd) // unknown length: sent chunked
				}
				req, err := http.NewRequest(http.MethodPost, g.URL+"/webhooks/github", rd)
				if err != nil {
					t.Fatal(err)
				}
				req.Header = header.Clone()
				resp, err := g.client.Do(req)
				if err != nil {
					t.Fatalf("POST: %v", err)
				}
				out, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusRequestEntityTooLarge {
					t.Errorf("POST %d bytes = %d %s, want 413", len(body), resp.StatusCode, out)
				}
				if !strings.Contains(string(out), `"error"`) {
					t.Errorf("413 body = %s, want {\"error\": …}", out)
				}
			})
		}
		if ds := g.deliveries(t); len(ds) != 0 {
			t.Errorf("deliveries = %d, want none", len(ds))
		}
		// The cap itself is allowed: exactly 25 MiB is stored (and, not
		// being JSON, fails processing).
		atCap := hook{Conn: "github", Event: "issues", Body: body[:inbox.MaxBodyBytes]}
		if d := g.process(t, atCap); d.Status != "failed" {
			t.Errorf("delivery of exactly %d bytes: %q, want stored and failed as malformed", inbox.MaxBodyBytes, d.Status)
		}
		// The server still serves.
		if d := g.process(t, fixtureHook(t, "github/issues.opened.json")); d.Status != "succeeded" {
			t.Errorf("delivery after the 413s: %q, want succeeded", d.Status)
		}
	})
}

// TestUnknownConnection: a post to a connection that is not configured is
// 404 and stores nothing.
func TestUnknownConnection(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, dialect string) {
		g := startGateway(t, newDatabaseURL(t, dialect))
		h := fixtureHook(t, "github/issues.opened.json")
		for _, conn := range []string{"nope", "GitHub", "github-old"} {
			status, body, err := g.postWebhook(conn, h.header(githubSecret), h.Body)
			if err != nil {
				t.Fatal(err)
			}
			if status != http.StatusNotFound || strings.TrimSpace(string(body)) != `{"error":"connection not found"}` {
				t.Errorf("POST /webhooks/%s = %d %s, want 404 {\"error\":\"connection not found\"}", conn, status, body)
			}
		}
		if ds := g.deliveries(t); len(ds) != 0 {
			t.Errorf("deliveries = %d, want none", len(ds))
		}
	})
}

// TestDatabaseUnavailable: while the database refuses connections (or, on
// SQLite, another process holds the write lock past the busy timeout) webhook
// posts are 503 so the provider retries; once it is back the same process
// accepts and processes them, without a restart.
func TestDatabaseUnavailable(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, dialect string) {
		var dbURL string
		var down, up func()
		switch dialect {
		case "sqlite":
			dbURL = newDatabaseURL(t, dialect)
			down, up = sqliteWriteLock(t, strings.TrimPrefix(dbURL, "sqlite:"))
		case "postgres":
			admin := storetest.PostgresURL(t)
			dbURL = storetest.NewDatabase(t, admin, "")
			down, up = postgresOutage(t, admin, dbURL)
		}
		// One worker: on SQLite every writer (workers' claims included)
		// waits out the busy timeout in turn before the receipt's commit.
		g := startGateway(t, dbURL, "--workers", "1")
		if d := g.process(t, fixtureHook(t, "github/issues.opened.json")); d.Status != "succeeded" {
			t.Fatalf("delivery before the outage: %q, want succeeded", d.Status)
		}

		down()
		var hooks []hook
		for i := range 2 {
			hooks = append(hooks, hook{Conn: "github", Event: "issues", Key: fmt.Sprintf("outage-%d", i),
				Body: githubIssueOpened(t, int64(900001+i), int64(101+i), fmt.Sprintf("Filed during the outage %d", i))})
		}
		var wg sync.WaitGroup
		for _, h := range hooks {
			wg.Go(func() {
				start := time.Now()
				status, body, err := g.postWebhook(h.Conn, h.header(githubSecret), h.Body)
				t.Logf("POST during the outage answered %d after %v", status, time.Since(start).Round(time.Millisecond))
				switch {
				case err != nil:
					t.Errorf("POST during the outage: %v", err)
				case status != http.StatusServiceUnavailable:
					t.Errorf("POST during the outage = %d %s, want 503", status, body)
				case !strings.Contains(string(body), `"error"`):
					t.Errorf("503 body = %s, want {\"error\": …}", body)
				}
			})
		}
		wg.Wait()
		if dialect == "postgres" {
			// readyz reports the outage; healthz only says the process is up.
			if status := g.statusOf(t, "/readyz"); status != http.StatusServiceUnavailable {
				t.Errorf("GET /readyz during the outage = %d, want 503", status)
			}
		}
		if status := g.statusOf(t, "/healthz"); status != http.StatusOK {
			t.Errorf("GET /healthz during the outage = %d, want 200", status)
		}
		up()

		// The provider retries until it is acknowledged.
		for _, h := range hooks {
			var r receipt
			poll(t, "a retried post to be acknowledged", waitTimeout, func() bool {
				status, body := g.send(t, h)
				if status == http.StatusServiceUnavailable {
					return false
				}
				if status != http.StatusAccepted {
					t.Fatalf("POST after the outage = %d %s, want 202", status, body)
				}
				if err := json.Unmarshal(body, &r); err != nil {
					t.Fatal(err)
				}
				return true
			})
			// A 503 stored nothing: the retry is the first commit.
			if r.Status != "accepted" {
				t.Errorf("retried post after a 503: receipt %+v, want accepted", r)
			}
			if d := g.waitDelivery(t, r.DeliveryID); d.Status != "succeeded" {
				t.Errorf("delivery %s after the outage: %q (%s), want succeeded", h.Key, d.Status, str(d.LastError))
			}
		}
		if status := g.statusOf(t, "/readyz"); status != http.StatusOK {
			t.Errorf("GET /readyz after the outage = %d, want 200", status)
		}
		if ts := g.tasks(t); len(ts) != 3 {
			t.Errorf("tasks = %v, want 3", taskSummaries(ts))
		}
	})
}

// statusOf GETs an unauthenticated path and returns the status.
func (g *gateway) statusOf(t *testing.T, path string) int {
	t.Helper()
	resp, err := g.client.Get(g.URL + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// sqliteWriteLock returns functions that take and release an exclusive write
// lock on the database from another connection (as another process would);
// the gateway's writes wait out their busy timeout and fail.
func sqliteWriteLock(t *testing.T, path string) (down, up func()) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	var conn *sql.Conn
	down = func() {
		t.Helper()
		ctx := context.Background()
		if conn, err = db.Conn(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.ExecContext(ctx, "BEGIN EXCLUSIVE"); err != nil {
			t.Fatalf("BEGIN EXCLUSIVE: %v", err)
		}
	}
	up = func() {
		t.Helper()
		if _, err := conn.ExecContext(context.Background(), "ROLLBACK"); err != nil {
			t.Fatalf("ROLLBACK: %v", err)
		}
		conn.Close()
	}
	return down, up
}

// postgresOutage returns functions that stop and restart the database of
// dbURL for its clients: connections disallowed and every backend
// terminated, then allowed again.
func postgresOutage(t *testing.T, adminURL, dbURL string) (down, up func()) {
	t.Helper()
	cfg, err := pgx.ParseConfig(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	name := cfg.Database
	exec := func(sql string, args ...any) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, adminURL)
		if err != nil {
			t.Fatalf("connect admin: %v", err)
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	allowed := true
	t.Cleanup(func() {
		if !allowed {
			exec(`ALTER DATABASE ` + pgx.Identifier{name}.Sanitize() + ` ALLOW_CONNECTIONS true`)
		}
	})
	down = func() {
		t.Helper()
		exec(`ALTER DATABASE ` + pgx.Identifier{name}.Sanitize() + ` ALLOW_CONNECTIONS false`)
		allowed = false
		// Wait (up to 10s each) for the backends to be gone.
		exec(`SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`, name)
	}
	up = func() {
		t.Helper()
		exec(`ALTER DATABASE ` + pgx.Identifier{name}.Sanitize() + ` ALLOW_CONNECTIONS true`)
		allowed = true
	}
	return down, up
}
