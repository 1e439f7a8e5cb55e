package main

// gateway send as a user runs it: only the flags and environment they would
// have (the same as serve's), payload files under any name, --wait.

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// mapEnv is an environment of exactly these variables.
func mapEnv(vars map[string]string) Env {
	return func(k string) (string, bool) {
		v, ok := vars[k]
		return v, ok
	}
}

// serveWithEnv runs `gateway serve` with no flags, configured by env alone,
// and returns the address it listens on (GATEWAY_LISTEN should be
// 127.0.0.1:0). It is stopped at cleanup.
func serveWithEnv(t *testing.T, env map[string]string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	outR, outW := io.Pipe()
	logs := &logTail{}
	done := make(chan int, 1)
	go func() {
		code := Main(ctx, []string{"serve"}, mapEnv(env), outW, logs)
		_ = outW.Close()
		done <- code
	}()
	urls := make(chan string, 1)
	go scanListening(outR, urls)
	var addr string
	select {
	case u := <-urls:
		addr = strings.TrimPrefix(u, "http://")
	case code := <-done:
		cancel()
		t.Fatalf("serve exited %d before listening; logs:\n%s", code, logs)
	case <-time.After(waitTimeout):
		cancel()
		t.Fatalf("serve did not listen within %s; logs:\n%s", waitTimeout, logs)
	}
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(waitTimeout):
			t.Errorf("serve did not stop within %s", waitTimeout)
		}
		if t.Failed() {
			t.Logf("serve logs (tail):\n%s", logs)
		}
	})
	return addr
}

// payloadCopy copies a fixture to a file named payload.json: send must not
// take the event from the file name.
func payloadCopy(t *testing.T, fixture string) string {
	t.Helper()
	return payloadFile(t, readFixture(t, fixture))
}

func payloadFile(t *testing.T, body []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "payload.json")
	if err := os.WriteFile(path, body, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// runSend runs `gateway send args...` with env and returns the exit code and
// everything printed.
func runSend(env map[string]string, args ...string) (int, string) {
	var out bytes.Buffer
	code := Main(context.Background(), append([]string{"send"}, args...), mapEnv(env), &out, &out)
	return code, out.String()
}

type sendCase struct {
	conn, fixture string
	want          []*regexp.Regexp // each must match the output
}

func checkSend(t *testing.T, env map[string]string, tc sendCase, wantCode int) {
	t.Helper()
	code, out := runSend(env, "--connection", tc.conn, "--file", payloadCopy(t, tc.fixture), "--wait")
	if code != wantCode {
		t.Errorf("send %s as payload.json --wait: exit %d, want %d; output:\n%s", tc.fixture, code, wantCode, out)
		return
	}
	for _, re := range tc.want {
		if !re.MatchString(out) {
			t.Errorf("send %s as payload.json --wait: output does not match %s:\n%s", tc.fixture, re, out)
		}
	}
}

var rx = regexp.MustCompile

// Zero-config: send finds the gateway (GATEWAY_LISTEN), the secret the
// gateway generated in its database (GATEWAY_DATABASE_URL, PostgreSQL
// included) and the event in each provider's payload; --wait prints the
// outcome and the task.
func TestSendZeroConfig(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, dialect string) {
		dbURL := newDatabaseURL(t, dialect)
		addr := serveWithEnv(t, map[string]string{"GATEWAY_DATABASE_URL": dbURL, "GATEWAY_LISTEN": "127.0.0.1:0",
			"GATEWAY_ADMIN_TOKEN": testAdminToken})
		env := map[string]string{"GATEWAY_DATABASE_URL": dbURL, "GATEWAY_LISTEN": addr, "GATEWAY_ADMIN_TOKEN": testAdminToken}

		for _, tc := range []sendCase{
			{"github", "github/issues.opened.json", []*regexp.Regexp{
				rx(`^202 Accepted \{"delivery_id":"[^"]+","status":"accepted"\}`),
				rx(`(?m)^delivery \S+ \(issues\.opened\): succeeded — created \(action create\)$`),
				rx(`(?m)^task TASK-1 "Spelling error in the README file" \(github:github\.com:issue:444500041, id \S+\)$`)}},
			{"github", "github/pull_request.opened.json", []*regexp.Regexp{
				rx(`(?m)^delivery \S+ \(pull_request\.opened\): succeeded`), rx(`(?m)^task TASK-2 `)}},
			{"github", "github/ping.json", []*regexp.Regexp{rx(`(?m)^delivery \S+ \(ping\): ignored — event not mapped to a task action$`)}},
			{"gitlab", "gitlab/issue.json", []*regexp.Regexp{
				rx(`(?m)^delivery \S+ \(Issue Hook\.open\): succeeded — created \(action create\)$`),
				rx(`(?m)^task TASK-3 "[^"]+" \(gitlab:gitlab\.com:issue:\d+, id \S+\)$`)}},
			{"jira", "jira/webhook-issue-created.json", []*regexp.Regexp{
				rx(`(?m)^delivery \S+ \(jira:issue_created\): succeeded — created \(action create\)$`),
				rx(`(?m)^task TASK-4 "[^"]+" \(jira:jira\.example\.com:issue:\d+, id \S+\)$`)}},
			// Linear refuses the fixture's old signed webhookTimestamp:
			// send restamps it.
			{"linear", "linear/issue.create.json", []*regexp.Regexp{
				rx(`^202 Accepted `),
				rx(`(?m)^delivery \S+ \(Issue\.create\): succeeded — created \(action create\)$`),
				rx(`(?m)^task TASK-5 "Export fails for large workspaces" \(linear:linear-workspace:issue:539068e2-ae88-4d09-bd75-22eb4a59612f, id \S+\)$`)}},
		} {
			checkSend(t, env, tc, 0)
		}

		// A secret the gateway refuses: the 401, and what to set.
		code, out := runSend(map[string]string{"GATEWAY_LISTEN": addr, "GATEWAY_GITHUB_SECRET": "stale"},
			"--connection", "github", "--file", payloadCopy(t, "github/issues.edited.json"))
		if code != 1 || !strings.Contains(out, "401") || !strings.Contains(out, "it refused the secret in GATEWAY_GITHUB_SECRET") {
			t.Errorf("send with a stale GATEWAY_GITHUB_SECRET: exit %d, output:\n%s\nwant 1, the 401 and the variable", code, out)
		}
		// Another database's generated secret (a stale ./data/gateway.db):
		// the 401 says to point GATEWAY_DATABASE_URL at the gateway's.
		stale := "sqlite:" + filepath.Join(t.TempDir(), "gateway.db")
		st, err := openMigrated(context.Background(), storeFlags{databaseURL: stale}, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = st.EnsureGeneratedSecret(context.Background(), "GATEWAY_GITHUB_SECRET", "stale-generated", time.Now())
		st.Close()
		if err != nil {
			t.Fatal(err)
		}
		code, out = runSend(map[string]string{"GATEWAY_LISTEN": addr, "GATEWAY_DATABASE_URL": stale},
			"--connection", "github", "--file", payloadCopy(t, "github/issues.edited.json"))
		if code != 1 || !strings.Contains(out, "401") || !strings.Contains(out, "it refused the secret generated in "+stale) ||
			!strings.Contains(out, "GATEWAY_DATABASE_URL") {
			t.Errorf("send with another database's secret: exit %d, output:\n%s\nwant 1, the 401 and GATEWAY_DATABASE_URL", code, out)
		}

		// A delivery that fails: its status and error, and exit 1.
		bad := payloadFile(t, []byte(`{"action":"opened","issue":{"id":7},"repository":{}}`))
		code, out = runSend(env, "--connection", "github", "--file", bad, "--wait")
		if code != 1 || !regexp.MustCompile(`(?m)^delivery \S+ \(issues\): failed after 1 attempt\(s\): .*malformed`).MatchString(out) {
			t.Errorf("send of a malformed issue --wait: exit %d, output:\n%s\nwant exit 1 and the failure", code, out)
		}
	})
}

// --wait says what the delivery did, not only that it succeeded: the result
// the gateway recorded, and an action that was not applied (a stale update,
// a suppressed or ignored delivery) says so; after a delete it names the
// deleted task instead of failing to read it.
func TestSendWaitSaysWhatHappened(t *testing.T) {
	t.Parallel()
	dbURL := newDatabaseURL(t, "sqlite")
	addr := serveWithEnv(t, map[string]string{"GATEWAY_DATABASE_URL": dbURL, "GATEWAY_LISTEN": "127.0.0.1:0",
		"GATEWAY_ADMIN_TOKEN": testAdminToken})
	env := map[string]string{"GATEWAY_DATABASE_URL": dbURL, "GATEWAY_LISTEN": addr, "GATEWAY_ADMIN_TOKEN": testAdminToken}

	const jiraTask = `(?m)^task TASK-1 "[^"]+" \(jira:jira\.example\.com:issue:10040, id \S+\)$`
	const ghIssue = `github:github\.com:issue:444500041`
	for _, tc := range []struct {
		sendCase
		never *regexp.Regexp // must not match the output
	}{
		{sendCase: sendCase{"jira", "jira/webhook-issue-created.json", []*regexp.Regexp{
			rx(`(?m)^delivery \S+ \(jira:issue_created\): succeeded — created \(action create\)$`), rx(jiraTask)}}},
		// The labels edit (2019-02-16) is newer than the resolve (2019-02-15).
		{sendCase: sendCase{"jira", "jira/webhook-issue-updated-labels.json", []*regexp.Regexp{
			rx(`(?m)^delivery \S+ \(jira:issue_updated\): succeeded — updated to revision \d+ \(action update\)$`), rx(jiraTask)}}},
		{sendCase: sendCase{"jira", "jira/webhook-issue-updated-resolved.json", []*regexp.Regexp{
			rx(`(?m)^delivery \S+ \(jira:issue_updated\): succeeded — stale update skipped \(older than the last applied event\) \(action archive not applied\)$`),
			rx(jiraTask)}},
			never: rx(`\(action archive\)`)},
		// A delete of an issue the gateway never saw: no task.
		{sendCase: sendCase{"jira", "jira/webhook-issue-deleted.json", []*regexp.Regexp{
			rx(`(?m)^delivery \S+ \(jira:issue_deleted\): succeeded — no task; suppression recorded \(action delete\)\n\z`)}},
			never: rx(`(?m)^task `)},
		{sendCase: sendCase{"github", "github/issues.opened.json", []*regexp.Regexp{
			rx(`(?m)^task TASK-2 "Spelling error in the README file" \(` + ghIssue + `, id \S+\)$`)}}},
		{sendCase: sendCase{"github", "github/issues.deleted.json", []*regexp.Regexp{
			rx(`(?m)^delivery \S+ \(issues\.deleted\): succeeded — task deleted; suppression recorded \(action delete\)$`),
			rx(`(?m)^task deleted \(` + ghIssue + `, id \S+\)\n\z`)}},
			never: rx(`(?i)not found|cannot|error|404`)},
		{sendCase: sendCase{"github", "github/issues.edited.json", []*regexp.Regexp{
			rx(`(?m)^delivery \S+ \(issues\.edited\): suppressed — the gateway deleted this entity's task; cleared suppressions re-enable it \(action update not applied\)\n\z`)}},
			never: rx(`(?m)^task `)},
		{sendCase: sendCase{"github", "github/ping.json", []*regexp.Regexp{
			rx(`(?m)^delivery \S+ \(ping\): ignored — event not mapped to a task action\n\z`)}}},
	} {
		code, out := runSend(env, "--connection", tc.conn, "--file", payloadCopy(t, tc.fixture), "--wait")
		if code != 0 {
			t.Errorf("send %s --wait: exit %d, want 0; output:\n%s", tc.fixture, code, out)
			continue
		}
		for _, re := range tc.want {
			if !re.MatchString(out) {
				t.Errorf("send %s --wait: output does not match %s:\n%s", tc.fixture, re, out)
			}
		}
		if tc.never != nil && tc.never.MatchString(out) {
			t.Errorf("send %s --wait: output matches %s:\n%s", tc.fixture, tc.never, out)
		}
	}
}

// README's configuration: the connection's provider and first secret come
// from the file, ${VAR} expanded from the environment; the zero-config
// secret variables do not apply to it.
func TestSendWithConfigFile(t *testing.T) {
	// Not parallel: serve expands the file's ${VAR} from the process
	// environment.
	t.Setenv("SEND_TEST_GITHUB_SECRET", "config-github-secret")
	const cfgText = `workspaces:
  - id: eng
    name: Engineering
    task_prefix: ENG
    steps:
      - {id: backlog, name: Backlog}
connections:
  - id: gh-main
    provider: github
    host: github.com
    workspace: eng
    secrets: ["${SEND_TEST_GITHUB_SECRET}", "${SEND_TEST_GITHUB_SECRET_OLD}"]
  - id: gl-main
    provider: gitlab
    host: gitlab.example.com
    workspace: eng
    secrets: ["config-gitlab-secret"]
  - id: jira-main
    provider: jira
    host: acme.atlassian.net
    workspace: eng
    secrets: ["config-jira-secret"]
`
	t.Setenv("SEND_TEST_GITHUB_SECRET_OLD", "")
	cfg := filepath.Join(t.TempDir(), "gateway.yaml")
	if err := os.WriteFile(cfg, []byte(cfgText), 0o600); err != nil {
		t.Fatal(err)
	}
	forEachDialect(t, func(t *testing.T, dialect string) {
		dbURL := newDatabaseURL(t, dialect)
		base := map[string]string{"GATEWAY_DATABASE_URL": dbURL, "GATEWAY_CONFIG": cfg, "GATEWAY_ADMIN_TOKEN": testAdminToken,
			"SEND_TEST_GITHUB_SECRET": "config-github-secret", "SEND_TEST_GITHUB_SECRET_OLD": ""}
		serveEnv := map[string]string{"GATEWAY_LISTEN": "127.0.0.1:0"}
		for k, v := range base {
			serveEnv[k] = v
		}
		addr := serveWithEnv(t, serveEnv)
		env := map[string]string{"GATEWAY_LISTEN": addr,
			// Zero-config secrets: wrong for these connections.
			"GATEWAY_GITHUB_SECRET": "not-the-config-secret", "GATEWAY_GITLAB_SECRET": "not-the-config-secret"}
		for k, v := range base {
			env[k] = v
		}
		for _, tc := range []sendCase{
			{"gh-main", "github/issues.opened.json", []*regexp.Regexp{
				rx(`(?m)^delivery \S+ \(issues\.opened\): succeeded — created \(action create\)$`),
				rx(`(?m)^task ENG-1 "Spelling error in the README file" \(github:github\.com:issue:444500041, id \S+\)$`)}},
			{"gl-main", "gitlab/merge_request.json", []*regexp.Regexp{
				rx(`(?m)^delivery \S+ \(Merge Request Hook\.\w+\): succeeded`), rx(`(?m)^task ENG-2 "[^"]+" \(gitlab:gitlab\.example\.com:merge_request:\d+`)}},
			{"jira-main", "jira/webhook-issue-created.json", []*regexp.Regexp{
				rx(`(?m)^task ENG-3 "[^"]+" \(jira:acme\.atlassian\.net:issue:\d+, id \S+\)$`)}},
		} {
			checkSend(t, env, tc, 0)
		}
	})
}

// Each way send cannot find what it needs says what to set.
func TestSendErrorsNameWhatToSet(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "gateway.yaml")
	if err := os.WriteFile(cfg, []byte(strings.Replace(testConfig, `"`+githubSecret+`"`, `"${SEND_UNSET_SECRET}"`, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	okCfg := writeConfig(t)
	envCfg := filepath.Join(dir, "env.yaml")
	if err := os.WriteFile(envCfg, []byte(strings.Replace(testConfig, `"`+githubSecret+`"`, `"${SEND_ENV_ONLY_SECRET}"`, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	issue := filepath.Join(fixturesDir, "github/issues.opened.json")
	unknownShape := payloadFile(t, []byte(`{"hello":"world"}`))
	missingDB := map[string]string{"GATEWAY_DATABASE_URL": "sqlite:" + filepath.Join(dir, "none.db")}
	tests := []struct {
		name     string
		env      map[string]string
		args     []string
		wantCode int
		want     []string
	}{
		{"configured connection without the config", missingDB, []string{"--connection", "gh-main", "--file", issue}, 1,
			[]string{`unknown connection "gh-main"`, "--config or GATEWAY_CONFIG", "github, gitlab, jira, gitea"}},
		{"no secret anywhere", missingDB, []string{"--connection", "github", "--file", issue}, 1,
			[]string{"no secret for connection github", "GATEWAY_GITHUB_SECRET", "--secret", "GATEWAY_DATABASE_URL", "none.db"}},
		{"unset variable in the config", map[string]string{"GATEWAY_CONFIG": cfg}, []string{"--connection", "github", "--file", issue}, 1,
			[]string{"config " + cfg, "SEND_UNSET_SECRET"}},
		{"connection not in the config", map[string]string{"GATEWAY_CONFIG": okCfg}, []string{"--connection", "gh-main", "--file", issue}, 1,
			[]string{`connection "gh-main" is not in ` + okCfg, "github, gitlab, jira, gitea"}},
		{"event not in the payload", missingDB, []string{"--connection", "github", "--secret", "s", "--file", unknownShape}, 1,
			[]string{"cannot tell the github event from the payload", "--event", "X-GitHub-Event"}},
		// The config's ${VAR} expand from send's environment: the secret is
		// found, and only the event is missing.
		{"event not in the payload, with a config", map[string]string{"GATEWAY_CONFIG": envCfg, "SEND_ENV_ONLY_SECRET": "s"},
			[]string{"--connection", "github", "--file", unknownShape}, 1, []string{"cannot tell the github event from the payload"}},
		{"wait without a token", missingDB, []string{"--connection", "github", "--file", issue, "--wait"}, 2,
			[]string{"--wait needs the admin token", "GATEWAY_ADMIN_TOKEN"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, out := runSend(tt.env, tt.args...)
			if code != tt.wantCode {
				t.Errorf("exit %d, want %d; output:\n%s", code, tt.wantCode, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output does not say %q:\n%s", w, out)
				}
			}
		})
	}
}

func TestRedactURL(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"postgres://gateway:hunter2@db/gateway": "postgres://gateway:xxxxx@db/gateway",
		"postgres://gateway@db/gateway":         "postgres://gateway@db/gateway",
		"sqlite:./data/gateway.db":              "sqlite:./data/gateway.db",
	} {
		if got := redactURL(in); got != want {
			t.Errorf("redactURL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestListenURL(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string]string{
		"127.0.0.1:8080": "http://127.0.0.1:8080",
		":8080":          "http://127.0.0.1:8080",
		"0.0.0.0:9000":   "http://127.0.0.1:9000",
		"[::]:9000":      "http://127.0.0.1:9000",
		"gw.internal:80": "http://gw.internal:80",
	} {
		if got := listenURL(addr); got != want {
			t.Errorf("listenURL(%q) = %q, want %q", addr, got, want)
		}
	}
}
