package config

import (
	"reflect"
	"strings"
	"testing"
)

// newUser is a first configuration, as the README shows it.
const newUser = `workspaces:
  - id: eng
    steps:
      - {id: backlog}
      - {id: doing, wip_limit: 3}
connections:
  - id: gh-main
    provider: github
    workspace: eng
    secrets: ["s3cret"]
retention:
  processed: 24h
tokens:
  - {name: eng-bot, token: "0123456789abcdef", workspaces: [eng]}
`

// A typo of a key names the line, the place in the file (the entry and its
// id) and the key meant, else the keys the place takes; never a Go type.
func TestUnknownKeyErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, old, new string
		want           string // the whole error after "config: "
	}{
		{"secret for secrets", `secrets: ["s3cret"]`, `secret: ["s3cret"]`,
			"line 10: unknown key secret in connections[0] (gh-main); did you mean secrets?"},
		{"a key in another case", `secrets: ["s3cret"]`, `Secrets: ["s3cret"]`,
			"line 10: unknown key Secrets in connections[0] (gh-main); did you mean secrets?"},
		{"a top-level section", "connections:\n", "connection:\n",
			"line 6: unknown key connection at the top level; did you mean connections?"},
		{"a step's key", "wip_limit: 3", "wip_limt: 3",
			"line 5: unknown key wip_limt in workspaces[0] (eng).steps[1] (doing); did you mean wip_limit?"},
		{"a token's key", "workspaces: [eng]}", "workspace: [eng]}",
			"line 14: unknown key workspace in tokens[0] (eng-bot); did you mean workspaces?"},
		{"a retention key", "processed: 24h", "procesed: 24h",
			"line 12: unknown key procesed in retention; did you mean processed?"},
		{"api_url's older name", `secrets: ["s3cret"]`, "secrets: [\"s3cret\"]\n    api_base_ur: http://x.test/",
			"line 11: unknown key api_base_ur in connections[0] (gh-main); did you mean api_base_url?"},
		{"a key nothing is near", `secrets: ["s3cret"]`, "secrets: [\"s3cret\"]\n    colour: red",
			"line 11: unknown key colour in connections[0] (gh-main); the keys there are id, provider, host, workspace, step, secrets, " +
				"repositories, labels, pull_requests, on_close, on_merge, api_token, api_url, hooks, recover_every, app, api_base_url"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			text := strings.Replace(newUser, tc.old, tc.new, 1)
			if text == newUser {
				t.Fatalf("%q is not in the configuration", tc.old)
			}
			_, err := Parse([]byte(text), env(nil))
			if want := "config: " + tc.want; err == nil || err.Error() != want {
				t.Errorf("Parse error = %v\nwant %s", err, want)
			}
		})
	}
}

// Anchors, aliases and merge keys are YAML's own: their keys are checked
// where they are merged, and a valid file using them loads.
func TestKeysThroughMergeKeys(t *testing.T) {
	t.Parallel()
	text := newUser + `x-defaults: &defaults
  workspace: eng
  secrets: ["s3cret"]
`
	text = strings.Replace(text, "tokens:", "", 1)
	text = strings.Replace(text, "  - {name: eng-bot, token: \"0123456789abcdef\", workspaces: [eng]}\n", "", 1)
	merged := strings.Replace(newUser, "  - id: gh-main\n    provider: github\n    workspace: eng\n    secrets: [\"s3cret\"]\n",
		"  - &base\n    id: gh-main\n    provider: github\n    workspace: eng\n    secrets: [\"s3cret\"]\n"+
			"  - <<: *base\n    id: gh-other\n", 1)
	c, err := Parse([]byte(merged), env(nil))
	if err != nil {
		t.Fatalf("Parse with a merge key: %v", err)
	}
	if cn, ok := c.Connection("gh-other"); !ok || cn.Workspace != "eng" || len(cn.Secrets) != 1 {
		t.Errorf("merged connection = %+v, want gh-main's workspace and secrets", cn)
	}
	bad := strings.Replace(merged, "    secrets: [\"s3cret\"]\n  - <<: *base", "    secret: [\"s3cret\"]\n  - <<: *base", 1)
	if _, err := Parse([]byte(bad), env(nil)); err == nil || !strings.Contains(err.Error(), "unknown key secret in connections[0] (gh-main); did you mean secrets?") {
		t.Errorf("Parse of a merged typo = %v, want it named", err)
	}
	if _, err := Parse([]byte(text), env(nil)); err == nil || !strings.Contains(err.Error(), "unknown key x-defaults at the top level") {
		t.Errorf("Parse of an unknown top-level anchor holder = %v, want it named", err)
	}
}

// The suggestion is computed from the types' yaml tags: every key of every
// section, mistyped by one letter, is suggested back.
func TestSuggestionsFollowTheTypes(t *testing.T) {
	t.Parallel()
	for _, typ := range []reflect.Type{reflect.TypeFor[Config](), reflect.TypeFor[Workspace](), reflect.TypeFor[Step](),
		reflect.TypeFor[connectionYAML](), reflect.TypeFor[Hook](), reflect.TypeFor[App](), reflect.TypeFor[Token](),
		reflect.TypeFor[Retention]()} {
		keys := yamlKeys(typ).names
		if len(keys) == 0 {
			t.Errorf("%s: no keys", typ)
		}
		for _, k := range keys {
			typo := k[:len(k)-1]
			if len(k) > 3 {
				typo = k[:len(k)/2] + k[len(k)/2+1:]
			}
			if got := nearest(typo, keys); got != k {
				t.Errorf("%s: nearest(%q) = %q, want %q", typ, typo, got, k)
			}
		}
	}
	if got := yamlKeys(reflect.TypeFor[Hook]()).names; strings.Join(got, ",") != "repository,organization,project,group,id" {
		t.Errorf("hook keys = %q, want the tagged fields without the untagged App", got)
	}
}

// A connection's host is a bare host name, optionally with a port, for
// every provider: a URL or a path is refused at start-up naming the
// connection, the field and the expected form, with the host meant.
func TestConnectionHost(t *testing.T) {
	t.Parallel()
	tests := []struct {
		provider, host string
		want           []string // substrings of the error; nil when accepted
	}{
		{"linear", "https://linear.app/acme", []string{"line 9:", `connection "c": host "https://linear.app/acme" is not a bare host name`,
			"for linear it is the workspace's URL key, such as acme of https://linear.app/acme", "did you mean host: acme?"}},
		{"linear", "linear.app/acme/", []string{"did you mean host: acme?"}},
		{"github", "https://github.com/", []string{`connection "c": host "https://github.com/"`, "github.com, or a GitHub Enterprise Server's",
			"did you mean host: github.com?"}},
		{"gitea", "http://gitea.local:3000/explore", []string{"for gitea it is the server's host name", "did you mean host: gitea.local:3000?"}},
		{"jira", "acme.atlassian.net/wiki", []string{"for jira it is the site's host name", "did you mean host: acme.atlassian.net?"}},
		{"gitlab", "gitlab.example.com:99999", []string{`host "gitlab.example.com:99999" is not a bare host name`}},
		{"gitlab", "git lab.example.com", []string{"is not a bare host name"}},
		{"github", "ghe..example.com", []string{"is not a bare host name"}},
		{"github", "user@github.com", []string{"is not a bare host name"}},
		{"linear", "acme", nil},
		{"linear", "acme-corp", nil},
		{"gitea", "localhost:3000", nil},
		{"gitea", "gitea_server:3000", nil},
		{"gitlab", "127.0.0.1:8080", nil},
		{"gitlab", "[::1]:8080", nil},
		{"jira", "Acme.Atlassian.net", nil},
	}
	for _, tc := range tests {
		t.Run(tc.provider+"@"+tc.host, func(t *testing.T) {
			t.Parallel()
			text := "workspaces: [{id: eng}]\nconnections:\n  - id: c\n    provider: " + tc.provider +
				"\n    workspace: eng\n    secrets: [s]\n\n\n    host: \"" + tc.host + "\"\n"
			c, err := Parse([]byte(text), env(nil))
			if tc.want == nil {
				if err != nil {
					t.Fatalf("Parse: %v", err)
				}
				if got := c.Connections[0].Host; got != tc.host {
					t.Errorf("host = %q, want %q", got, tc.host)
				}
				return
			}
			if err == nil {
				t.Fatalf("Parse accepted host %q", tc.host)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// A connection without workspace says the field is required and which
// workspaces there are, not that "" is unknown.
func TestConnectionWithoutWorkspace(t *testing.T) {
	t.Parallel()
	text := strings.Replace(newUser, "    workspace: eng\n", "", 1)
	_, err := Parse([]byte(text), env(nil))
	want := `config: line 7: connection "gh-main": workspace is required: the id of the workspace its tasks go to (the workspace is eng)`
	if err == nil || err.Error() != want {
		t.Errorf("Parse error = %v\nwant %s", err, want)
	}
	two := strings.Replace(text, "workspaces:\n", "workspaces:\n  - id: ops\n", 1)
	if _, err := Parse([]byte(two), env(nil)); err == nil || !strings.Contains(err.Error(), "(the workspaces are ops and eng)") {
		t.Errorf("Parse error = %v, want the two workspaces named", err)
	}
}
