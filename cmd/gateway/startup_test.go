package main

// The one-time secrets and admin token are generated only once the listener
// is bound and the database migrated: a start that fails first consumes
// nothing.

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// oneTimeLines are the lines a first zero-config start prints once.
var oneTimeLines = []string{
	`generated webhook secret for connection "github"`,
	`generated webhook secret for connection "gitlab"`,
	`generated webhook secret for connection "jira"`,
	"generated admin token",
}

func TestSecretsSurviveAFailedStart(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, dialect string) {
		dbURL := newDatabaseURL(t, dialect)

		busy, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer busy.Close()
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		var out, errOut bytes.Buffer
		code := Main(ctx, []string{"serve", "--listen", busy.Addr().String(), "--database-url", dbURL}, noEnv, &out, &errOut)
		if code == 0 {
			t.Fatalf("serve on a port in use exited 0; stdout %q", out.String())
		}
		if !strings.Contains(errOut.String(), "listen:") {
			t.Errorf("stderr = %q, want the listen error", errOut.String())
		}
		if strings.Contains(out.String(), "generated") {
			t.Errorf("a start that could not listen printed one-time secrets: %q", out.String())
		}

		printed := serveUntilListening(t, dbURL, noEnv)
		for _, want := range oneTimeLines {
			if !strings.Contains(printed, want) {
				t.Errorf("the first successful start did not print %q; it printed:\n%s", want, printed)
			}
		}
	})
}

// serveUntilListening starts zero-config serve on a free port, returns what
// it printed up to its listening line, and stops it. env is serve's
// environment; extra are more flags.
func serveUntilListening(t *testing.T, dbURL string, env Env, extra ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	outR, outW := io.Pipe()
	logs := &logTail{}
	done := make(chan int, 1)
	go func() {
		code := Main(ctx, append([]string{"serve", "--listen", "127.0.0.1:0", "--database-url", dbURL}, extra...), env, outW, logs)
		_ = outW.Close()
		done <- code
	}()
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			lines <- sc.Text()
		}
		_, _ = io.Copy(io.Discard, outR)
	}()
	var printed strings.Builder
	deadline := time.After(waitTimeout)
wait:
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("serve stopped printing before listening (exit %d); stdout:\n%s\nlogs:\n%s", <-done, printed.String(), logs)
			}
			printed.WriteString(line + "\n")
			if _, ok := listeningAddr(line); ok {
				break wait
			}
		case <-deadline:
			t.Fatalf("serve did not print its listening line within %s; logs:\n%s", waitTimeout, logs)
		}
	}
	cancel()
	go func() {
		for range lines {
		}
	}()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("serve exited %d after its context ended, want 0", code)
		}
	case <-time.After(waitTimeout):
		t.Errorf("serve did not return within %s of its context ending", waitTimeout)
	}
	return printed.String()
}

// TestConfigExpandsFromServesEnvironment: ${VAR} in the configuration file
// is read from the environment serve is given, as every flag's variable
// is; one it lacks stops the start with its name.
func TestConfigExpandsFromServesEnvironment(t *testing.T) {
	t.Parallel()
	const variable = "GATEWAY_TEST_CONFIG_ONLY_SECRET"
	cfg := filepath.Join(t.TempDir(), "gateway.yaml")
	yaml := "workspaces:\n  - {id: eng, task_prefix: ENG}\n" +
		"connections:\n  - {id: gh, provider: github, host: github.com, workspace: eng, secrets: [\"${" + variable + "}\"]}\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	env := func(k string) (string, bool) {
		if k == variable {
			return "a-secret-only-this-environment-has", true
		}
		return "", false
	}
	printed := serveUntilListening(t, newDatabaseURL(t, "sqlite"), env, "--config", cfg)
	if _, ok := listeningAddr(strings.TrimSpace(printed[strings.LastIndex(strings.TrimSpace(printed), "\n")+1:])); !ok {
		t.Errorf("serve printed %q, want it listening", printed)
	}

	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	var out, errOut bytes.Buffer
	code := Main(ctx, []string{"serve", "--listen", "127.0.0.1:0", "--database-url", newDatabaseURL(t, "sqlite"), "--config", cfg}, noEnv, &out, &errOut)
	if code == 0 || !strings.Contains(errOut.String(), variable) {
		t.Errorf("serve without %s: exit %d, stderr %q; want a failed start naming it", variable, code, errOut.String())
	}
}

// TestStartErrorsHideTheDatabasePassword: whatever form the password takes
// in the database URL, a start that fails on it never prints it, nor does
// -h show it as the default.
func TestStartErrorsHideTheDatabasePassword(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, url string
		password  []string // its spellings
	}{
		{"userinfo", "postgres://u:Pw-4242-x@h/db?sslmode=bogus", []string{"Pw-4242-x"}},
		{"userinfo escaped", "postgres://u:p%40ss-4242@h/db?sslmode=bogus", []string{"p%40ss-4242", "p@ss-4242"}},
		{"userinfo unparsable", "postgres://u:sec%zz-4242@h/db", []string{"sec%zz-4242"}},
		{"query", "postgres://u@h/db?password=Pw-4242-x&sslmode=bogus", []string{"Pw-4242-x"}},
		{"query last", "postgresql://u@h/db?sslmode=bogus&password=Pw-4242-x", []string{"Pw-4242-x"}},
		{"query any case", "postgres://u@h/db?PASSWORD=Pw-4242-x&sslmode=bogus", []string{"Pw-4242-x"}},
		{"query unreachable", "postgres://u@127.0.0.1:1/db?password=Pw-4242-x&connect_timeout=1", []string{"Pw-4242-x"}},
		{"key/value", "host=h user=u password=Pw-4242-x sslmode=bogus", []string{"Pw-4242-x"}},
		{"key/value quoted", "host=h user=u password='Pw 4242 x' sslmode=bogus", []string{"Pw 4242 x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for _, args := range [][]string{
				{"serve", "--listen", "127.0.0.1:0", "--database-url", tt.url},
				{"migrate", "--database-url", tt.url},
			} {
				ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
				var out, errOut bytes.Buffer
				code := Main(ctx, args, noEnv, &out, &errOut)
				cancel()
				if code == 0 || errOut.Len() == 0 {
					t.Fatalf("%s exited %d with stderr %q, want a failed start", args[0], code, errOut.String())
				}
				for _, p := range tt.password {
					if strings.Contains(out.String()+errOut.String(), p) {
						t.Errorf("%s printed the password %q:\nstdout %q\nstderr %q", args[0], p, out.String(), errOut.String())
					}
				}
			}
			// -h shows the default from the environment.
			env := func(k string) (string, bool) { return tt.url, k == "GATEWAY_DATABASE_URL" }
			var out, errOut bytes.Buffer
			Main(context.Background(), []string{"serve", "-h"}, env, &out, &errOut)
			for _, p := range tt.password {
				if strings.Contains(out.String()+errOut.String(), p) {
					t.Errorf("serve -h showed the password %q:\n%s%s", p, out.String(), errOut.String())
				}
			}
		})
	}
}
