package main

// Every command answers -h and --help with its usage, its own flags and an
// example on stdout; a command line it cannot run gets the usage on stderr
// and exit 2.

import (
	"bytes"
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// flagLine is how flag.PrintDefaults starts the line of a flag.
var flagLine = regexp.MustCompile(`(?m)^  -([a-z][a-z0-9-]*)`)

// listedFlags returns the flags a usage text lists, sorted.
func listedFlags(usage string) []string {
	var out []string
	for _, m := range flagLine.FindAllStringSubmatch(usage, -1) {
		out = append(out, m[1])
	}
	slices.Sort(out)
	return out
}

func TestHelpEverywhere(t *testing.T) {
	t.Parallel()
	operator := []string{"admin-token", "o", "url"}
	subscriber := []string{"o", "token", "url", "workspace"}
	commands := []struct {
		args  []string
		flags []string
	}{
		{[]string{"serve"}, []string{"admin-token", "config", "database-url", "delivery-lease", "listen", "log-level", "max-inflight-body-bytes", "shutdown-timeout", "workers"}},
		{[]string{"migrate"}, []string{"database-url", "log-level"}},
		{[]string{"send"}, []string{"admin-token", "config", "connection", "database-url", "delivery", "event", "file", "listen", "secret", "url", "wait", "wait-timeout"}},
		{[]string{"deliveries"}, nil},
		{[]string{"deliveries", "list"}, append([]string{"connection", "cursor", "delivery-key", "error-contains", "event", "external-id", "limit", "received-after", "received-before", "since", "status"}, operator...)},
		{[]string{"deliveries", "get"}, operator},
		{[]string{"deliveries", "replay"}, append([]string{"connection", "delivery-key", "dry-run", "error-contains", "event", "external-id", "max", "received-after", "received-before", "since", "status"}, operator...)},
		{[]string{"suppressions"}, nil},
		{[]string{"suppressions", "list"}, append([]string{"cursor", "limit", "workspace"}, operator...)},
		{[]string{"suppressions", "clear"}, append([]string{"external-id", "workspace"}, operator...)},
		{[]string{"installations"}, append([]string{"connection"}, operator...)},
		{[]string{"subscriptions"}, nil},
		{[]string{"subscriptions", "list"}, subscriber},
		{[]string{"subscriptions", "create"}, append([]string{"description", "endpoint", "types"}, subscriber...)},
		{[]string{"subscriptions", "get"}, subscriber},
		{[]string{"subscriptions", "update"}, append([]string{"description", "disable", "enable", "endpoint", "types"}, subscriber...)},
		{[]string{"subscriptions", "delete"}, subscriber},
		{[]string{"subscriptions", "rotate-secret"}, subscriber},
		{[]string{"subscriptions", "deliveries"}, append([]string{"cursor", "limit", "status"}, subscriber...)},
		{[]string{"subscriptions", "replay"}, append([]string{"event", "since"}, subscriber...)},
		{[]string{"recover"}, append([]string{"connection", "dry-run", "since"}, operator...)},
		{[]string{"mcp"}, []string{"config", "database-url", "log-level"}},
		{[]string{"help"}, nil},
		{[]string{"version"}, nil},
	}
	for _, c := range commands {
		for _, h := range []string{"-h", "--help"} {
			name := strings.Join(append(slices.Clone(c.args), h), " ")
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				code, out, errOut := runCLI(t, append(slices.Clone(c.args), h)...)
				if code != 0 {
					t.Errorf("exit code = %d, want 0 (stderr %q)", code, errOut)
				}
				if errOut != "" {
					t.Errorf("stderr = %q, want nothing", errOut)
				}
				if want := "usage: gateway " + strings.Join(c.args, " "); !strings.HasPrefix(out, want) {
					t.Errorf("stdout does not start with %q:\n%s", want, out)
				}
				if !strings.Contains(out, "\nexample:\n  gateway "+c.args[0]) {
					t.Errorf("stdout has no example of gateway %s:\n%s", c.args[0], out)
				}
				want := slices.Sorted(slices.Values(c.flags))
				if got := listedFlags(out); !slices.Equal(got, want) {
					t.Errorf("flags listed = %v, want exactly %v", got, want)
				}
			})
		}
	}
}

func TestHelpCommandShowsACommandsUsage(t *testing.T) {
	t.Parallel()
	tests := [][]string{{"serve"}, {"deliveries", "list"}, {"suppressions", "clear"}, {"version"}}
	for _, args := range tests {
		code, out, _ := runCLI(t, append([]string{"help"}, args...)...)
		_, want, _ := runCLI(t, append(slices.Clone(args), "-h")...)
		if code != 0 || out != want {
			t.Errorf("gateway help %s: exit %d, stdout\n%s\nwant exit 0 and the stdout of -h:\n%s", strings.Join(args, " "), code, out, want)
		}
	}
}

func TestCommandList(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args     []string
		wantCode int
		toStdout bool
	}{
		{nil, 2, false},
		{[]string{"-h"}, 0, true},
		{[]string{"--help"}, 0, true},
		{[]string{"help"}, 0, true},
	}
	for _, tt := range tests {
		code, out, errOut := runCLI(t, tt.args...)
		listing, other := errOut, out
		if tt.toStdout {
			listing, other = out, errOut
		}
		if code != tt.wantCode {
			t.Errorf("gateway %v: exit code = %d, want %d", tt.args, code, tt.wantCode)
		}
		for _, cmd := range []string{"serve", "migrate", "send", "deliveries", "suppressions", "version", "help"} {
			if !strings.Contains(listing, "\n  "+cmd+" ") {
				t.Errorf("gateway %v: command list lacks %q:\n%s", tt.args, cmd, listing)
			}
		}
		if other != "" {
			t.Errorf("gateway %v: the other stream has %q, want nothing", tt.args, other)
		}
	}
}

// The command list names every form of each command, bulk replay
// included.
func TestCommandListNamesEveryForm(t *testing.T) {
	t.Parallel()
	_, out, _ := runCLI(t, "-h")
	for cmd, forms := range map[string][]string{
		"deliveries":   {"list", "get ID", "replay ID", "replay --FILTER... (bulk)"},
		"suppressions": {"list", "clear --workspace W --external-id X"},
	} {
		line := regexp.MustCompile(`(?m)^  ` + cmd + ` .*$`).FindString(out)
		for _, form := range forms {
			if !strings.Contains(line, form) {
				t.Errorf("the command list's %s line %q lacks %q:\n%s", cmd, line, form, out)
			}
		}
	}
}

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args      []string
		wantUsage string // the usage line stderr must show
		wantMsg   string
	}{
		{[]string{"serve", "--bogus"}, "usage: gateway serve", "flag provided but not defined: -bogus"},
		{[]string{"serve", "extra"}, "usage: gateway serve", `unexpected argument "extra"`},
		{[]string{"serve", "--bench-ack-without-storing"}, "usage: gateway serve", "flag provided but not defined"},
		{[]string{"migrate", "--workers", "8"}, "usage: gateway migrate", "flag provided but not defined: -workers"},
		{[]string{"migrate", "--listen", "127.0.0.1:0"}, "usage: gateway migrate", "flag provided but not defined: -listen"},
		{[]string{"migrate", "--shutdown-timeout", "1s"}, "usage: gateway migrate", "flag provided but not defined: -shutdown-timeout"},
		{[]string{"send"}, "usage: gateway send", "--connection and --file are required"},
		{[]string{"send", "--connection", "github"}, "usage: gateway send", "--connection and --file are required"},
		{[]string{"send", "--workers", "2"}, "usage: gateway send", "flag provided but not defined: -workers"},
		{[]string{"deliveries"}, "usage: gateway deliveries", "a subcommand is required"},
		{[]string{"deliveries", "bogus"}, "usage: gateway deliveries", `unknown subcommand "bogus"`},
		{[]string{"deliveries", "list", "--bogus"}, "usage: gateway deliveries list", "flag provided but not defined: -bogus"},
		{[]string{"deliveries", "get"}, "usage: gateway deliveries get", "exactly one delivery ID is required"},
		{[]string{"deliveries", "get", "--status", "failed", "ID"}, "usage: gateway deliveries get", "flag provided but not defined: -status"},
		{[]string{"deliveries", "replay", "a", "b"}, "usage: gateway deliveries replay", "exactly one delivery ID is required"},
		{[]string{"suppressions"}, "usage: gateway suppressions", "a subcommand is required"},
		{[]string{"suppressions", "bogus"}, "usage: gateway suppressions", `unknown subcommand "bogus"`},
		{[]string{"suppressions", "list", "--external-id", "x"}, "usage: gateway suppressions list", "flag provided but not defined: -external-id"},
		{[]string{"suppressions", "clear", "--workspace", "default"}, "usage: gateway suppressions clear", "--workspace and --external-id are required"},
		{[]string{"installations"}, "usage: gateway installations", "--connection is required"},
		{[]string{"version", "--bogus"}, "usage: gateway version", "flag provided but not defined: -bogus"},
		{[]string{"version", "extra"}, "usage: gateway version", `unexpected argument "extra"`},
		{[]string{"help", "--bogus"}, "usage: gateway help", "flag provided but not defined: -bogus"},
		{[]string{"bogus"}, "usage: gateway <command>", `unknown command "bogus"`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			t.Parallel()
			code, out, errOut := runCLI(t, tt.args...)
			if code != 2 {
				t.Errorf("exit code = %d, want 2", code)
			}
			if out != "" {
				t.Errorf("stdout = %q, want nothing", out)
			}
			if !strings.Contains(errOut, tt.wantUsage) || !strings.Contains(errOut, tt.wantMsg) {
				t.Errorf("stderr = %q, want %q and %q", errOut, tt.wantMsg, tt.wantUsage)
			}
		})
	}
}

// TestHelpShowsNoSecret: the admin token and a database password taken
// from the environment are flag defaults, and -h never prints them.
func TestHelpShowsNoSecret(t *testing.T) {
	t.Parallel()
	const token, password = "admin-token-from-the-environment", "pa55word-from-the-environment"
	env := func(k string) (string, bool) {
		switch k {
		case "GATEWAY_ADMIN_TOKEN":
			return token, true
		case "GATEWAY_DATABASE_URL":
			return "postgres://gateway:" + password + "@db.example/gateway", true
		}
		return "", false
	}
	for _, args := range [][]string{{"serve"}, {"migrate"}, {"send"}, {"prune"}, {"deliveries", "list"}, {"suppressions", "clear"}, {"recover"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			code := Main(context.Background(), append(args, "-h"), env, &stdout, &stderr)
			out := stdout.String() + stderr.String()
			if code != 0 || strings.Contains(out, token) || strings.Contains(out, password) {
				t.Errorf("exit %d, -h printed a secret:\n%s", code, out)
			}
			if strings.Contains(out, "-database-url") && !strings.Contains(out, "postgres://gateway:xxxxx@db.example/gateway") {
				t.Errorf("-h does not show the database URL, redacted:\n%s", out)
			}
		})
	}
}
