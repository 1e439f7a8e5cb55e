package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trackergateway/gateway/connectors/providers"
)

func env(vars map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := vars[k]
		return v, ok
	}
}

const valid = `
workspaces:
  - id: eng
    name: Engineering
    task_prefix: ENG
    steps:
      - {id: backlog, name: Backlog}
      - {id: doing, name: In progress, wip_limit: 3}
connections:
  - id: gh-main
    provider: github
    workspace: eng
    secrets: ["${GH_SECRET}", "${GH_SECRET_OLD}"]
    repositories: ["acme/*"]
tokens:
  - {name: eng-bot, token: "${BOT_TOKEN}", workspaces: [eng]}
`

func TestParseValid(t *testing.T) {
	t.Parallel()
	c, err := Parse([]byte(valid), env(map[string]string{"GH_SECRET": "s3cret", "GH_SECRET_OLD": "", "BOT_TOKEN": "0123456789abcdef"}))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	cn, ok := c.Connection("gh-main")
	if !ok {
		t.Fatal("connection gh-main missing")
	}
	checks := []struct {
		name, got, want string
	}{
		{"host default", cn.Host, "github.com"},
		{"step default", cn.Step, "backlog"},
		{"pull_requests default", cn.PullRequests, PullRequestsLinkOrCreate},
		{"on_close default", cn.OnClose, OnCloseArchive},
		{"on_merge default", cn.OnMerge, OnCloseNone},
	}
	for _, tc := range checks {
		if tc.got != tc.want {
			t.Errorf("%s = %q, want %q", tc.name, tc.got, tc.want)
		}
	}
	// An empty rotation slot is dropped, not used as a secret.
	if got, want := len(cn.SecretBytes()), 1; got != want {
		t.Errorf("secrets = %d, want %d", got, want)
	}
	if got := *c.Workspaces[0].Steps[1].WIPLimit; got != 3 {
		t.Errorf("wip_limit = %d, want 3", got)
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	full := map[string]string{"GH_SECRET": "s3cret", "GH_SECRET_OLD": "", "BOT_TOKEN": "0123456789abcdef"}
	tests := []struct {
		name    string
		yaml    string
		vars    map[string]string
		wantErr string
	}{
		{"unset variable", valid, map[string]string{"GH_SECRET": "x", "BOT_TOKEN": "0123456789abcdef"}, "unset environment variable(s): GH_SECRET_OLD"},
		{"invalid yaml", "workspaces: [", full, "config:"},
		{"unknown field", "workspaces:\n  - id: eng\n    colour: red\n", full, "line 3: unknown key colour in workspaces[0] (eng); the keys there are id, name, task_prefix, steps"},
		{"no secret", strings.Replace(valid, `["${GH_SECRET}", "${GH_SECRET_OLD}"]`, `[""]`, 1), full, "at least one non-empty secret"},
		{"unknown provider", strings.Replace(valid, "provider: github", "provider: bitbucket", 1), full, `provider "bitbucket"`},
		{"unknown workspace", strings.Replace(valid, "workspace: eng", "workspace: ops", 1), full, `unknown workspace "ops"`},
		{"bad prefix", strings.Replace(valid, "task_prefix: ENG", "task_prefix: eng", 1), full, "task_prefix"},
		{"short token", valid, map[string]string{"GH_SECRET": "s", "GH_SECRET_OLD": "", "BOT_TOKEN": "short"}, "at least 16 characters"},
		{"bad pull_requests", strings.Replace(valid, "repositories:", "pull_requests: always\n    repositories:", 1), full, "pull_requests"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(tc.yaml), env(tc.vars))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Parse error = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestDefault(t *testing.T) {
	t.Parallel()
	secrets := map[string]string{}
	c, err := Default(env(map[string]string{"GATEWAY_JIRA_SITE": "acme.atlassian.net"}), func(provider string) (string, error) {
		secrets[provider] = "secret-" + provider
		return secrets[provider], nil
	})
	if err != nil {
		t.Fatalf("Default: %v", err)
	}
	if got, want := len(c.Connections), len(providers.All()); got != want {
		t.Fatalf("connections = %d, want %d", got, want)
	}
	jira, _ := c.Connection("jira")
	if jira.Host != "acme.atlassian.net" {
		t.Errorf("jira host = %q, want acme.atlassian.net", jira.Host)
	}
	if got, want := len(secrets), len(providers.All()); got != want {
		t.Errorf("secrets asked = %d, want %d", got, want)
	}
}

// TestWorkspaceBounds: the YAML enforces the workspace bounds that POST
// /api/v1/workspaces enforces (both call ValidateWorkspace).
func TestWorkspaceBounds(t *testing.T) {
	t.Parallel()
	full := map[string]string{"GH_SECRET": "s3cret", "GH_SECRET_OLD": "", "BOT_TOKEN": "0123456789abcdef"}
	steps := func(n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "      - {id: s%d}\n", i)
		}
		return b.String()
	}
	withSteps := func(list string) string {
		return strings.Replace(valid, "      - {id: backlog, name: Backlog}\n      - {id: doing, name: In progress, wip_limit: 3}\n",
			"      - {id: backlog, name: Backlog}\n"+list, 1)
	}
	long := strings.Repeat("é", 201)
	tests := []struct {
		name    string
		yaml    string
		wantErr string // "" when valid
	}{
		{"longest name", strings.Replace(valid, "name: Engineering", "name: "+long[2:], 1), ""},
		{"50 steps", withSteps(steps(49)), ""},
		{"wip_limit 0", withSteps("      - {id: doing, wip_limit: 0}\n"), ""},
		{"wip_limit 10000", withSteps("      - {id: doing, wip_limit: 10000}\n"), ""},
		{"name too long", strings.Replace(valid, "name: Engineering", "name: "+long, 1), `workspace "eng": name is longer than 200 characters`},
		{"blank name", strings.Replace(valid, "name: Engineering", `name: "  "`, 1), `workspace "eng": name is required`},
		{"name with a control character", strings.Replace(valid, "name: Engineering", `name: "Eng\u0007"`, 1), `workspace "eng": name contains a control character`},
		{"name with NUL", strings.Replace(valid, "name: Engineering", `name: "Eng\0"`, 1), `workspace "eng": name contains a control character`},
		{"51 steps", withSteps(steps(50)), `workspace "eng": 51 steps: at most 50 are allowed`},
		{"step id not a slug", withSteps("      - {id: In Progress}\n"), `workspace "eng": step id "In Progress" must be a lower-case slug`},
		{"step twice", withSteps("      - {id: backlog}\n"), `workspace "eng": step "backlog" defined twice`},
		{"step name too long", withSteps("      - {id: doing, name: " + long + "}\n"), `workspace "eng": step "doing" name is longer than 200 characters`},
		{"step name with a newline", withSteps(`      - {id: doing, name: "a\nb"}` + "\n"), `workspace "eng": step "doing" name contains a control character`},
		{"negative wip_limit", withSteps("      - {id: doing, wip_limit: -1}\n"), `workspace "eng": step "doing": wip_limit must be between 0 (unlimited) and 10000`},
		{"huge wip_limit", withSteps("      - {id: doing, wip_limit: 10001}\n"), `workspace "eng": step "doing": wip_limit must be between 0 (unlimited) and 10000`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(tc.yaml), env(full))
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("Parse error = %v, want nil", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("Parse error = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

// TestProvidersAreTheRegistrys: a connection may name exactly the registered
// providers; its host defaults to the provider's, and a provider without a
// default host (Jira) needs one.
func TestProvidersAreTheRegistrys(t *testing.T) {
	t.Parallel()
	connection := func(provider, host string) []byte {
		return []byte(fmt.Sprintf("workspaces: [{id: eng}]\nconnections:\n  - {id: c, provider: %q, host: %q, workspace: eng, secrets: [s]}\n", provider, host))
	}
	type providerCase struct {
		provider, host string
		wantHost       string // the host after defaults, when accepted
		wantErr        string
	}
	tests := []providerCase{
		{"bitbucket", "example.com", "", `provider "bitbucket" must be github, gitlab, jira, gitea or linear`},
		{"GitHub", "", "", `provider "GitHub" must be github, gitlab, jira, gitea or linear`},
		{"", "", "", `provider "" must be github, gitlab, jira, gitea or linear`},
		{"jira", "", "", "host is required for jira"},
	}
	for _, p := range providers.All() {
		tests = append(tests, providerCase{p.Name, "self.example.com", "self.example.com", ""})
		if p.DefaultHost != "" {
			tests = append(tests, providerCase{p.Name, "", p.DefaultHost, ""})
		}
	}
	for _, tc := range tests {
		t.Run(tc.provider+"@"+tc.host, func(t *testing.T) {
			t.Parallel()
			c, err := Parse(connection(tc.provider, tc.host), env(nil))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Parse error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if got := c.Connections[0].Host; got != tc.wantHost {
				t.Fatalf("host = %q, want %q", got, tc.wantHost)
			}
		})
	}
}

// TestDefaultIsOneConnectionPerProvider: zero-config has a connection per
// registered provider, in registry order, on its zero-config host, and
// DefaultSecretEnv is the registry's.
func TestDefaultIsOneConnectionPerProvider(t *testing.T) {
	t.Parallel()
	lookup := env(nil)
	c, err := Default(lookup, func(provider string) (string, error) { return "secret-" + provider, nil })
	if err != nil {
		t.Fatalf("Default: %v", err)
	}
	all := providers.All()
	if len(c.Connections) != len(all) || len(DefaultSecretEnv) != len(all) {
		t.Fatalf("%d connections and %d secret variables for %d providers", len(c.Connections), len(DefaultSecretEnv), len(all))
	}
	for i, p := range all {
		cn := c.Connections[i]
		if cn.ID != p.Name || cn.Provider != p.Name || cn.Host != p.ZeroConfigHost(lookup) || cn.Secrets[0] != "secret-"+p.Name {
			t.Errorf("connection %d = %+v, want provider %s on %s", i, cn, p.Name, p.ZeroConfigHost(lookup))
		}
		if got := DefaultSecretEnv[p.Name]; got != p.SecretEnv {
			t.Errorf("DefaultSecretEnv[%s] = %q, want %q", p.Name, got, p.SecretEnv)
		}
	}
	if jira, _ := c.Connection("jira"); jira.Host != "jira.example.com" {
		t.Errorf("jira host without GATEWAY_JIRA_SITE = %q, want jira.example.com", jira.Host)
	}
}

// A configuration error names the line of the entry at fault: yaml.v3's
// syntax and type errors carry it, validation errors are placed on the key
// of the connection, workspace or token they are about.
func TestParseErrorLines(t *testing.T) {
	t.Parallel()
	const head = `workspaces:
  - id: eng
    steps:
      - {id: backlog}
connections:
  - id: gh-main
    provider: github
    workspace: eng
    secrets: ["s3cret"]
`
	tests := []struct {
		name, text string
		want       []string // substrings of the error
	}{
		{"unset variable", head + `  - id: gh-other
    provider: github
    workspace: eng
    secrets: ["${NOT_SET_ANYWHERE}"]
`, []string{"line 13:", "NOT_SET_ANYWHERE"}},
		{"syntax", head + "    host: github.com: x\n", []string{"line 10:", "mapping values"}},
		{"unknown key", head + "    bogus: 1\n", []string{"line 10", "bogus"}},
		{"unknown workspace", head + `  - id: gl-main
    provider: gitlab
    secrets: ["x"]
    workspace: nowhere
`, []string{"line 13:", `connection "gl-main": unknown workspace "nowhere"`}},
		{"bad provider", head + `  - id: svn-main
    workspace: eng
    provider: svn
    secrets: ["x"]
`, []string{"line 12:", `provider "svn"`}},
		{"connection defined twice", head + `  - id: gh-main
    provider: github
    workspace: eng
    secrets: ["x"]
`, []string{"line 10:", "defined twice"}},
		{"no secret", head + `  - id: gh-other
    provider: github
    workspace: eng
    secrets: [""]
`, []string{"line 13:", "non-empty secret"}},
		{"on_close", head + `    on_close: sometimes
`, []string{"line 10:", "on_close"}},
		{"workspace", `workspaces:
  - id: eng
  - id: Bad
connections: []
`, []string{"line 3:", `workspace id "Bad"`}},
		{"token", head + `tokens:
  - name: bot
    token: "0123456789abcdef"
    workspaces: [eng, ops]
`, []string{"line 13:", `token "bot": unknown workspace "ops"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(tt.text), env(nil))
			if err == nil {
				t.Fatalf("Parse succeeded, want an error containing %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// LoadEnv names the file, and expands ${VAR} with the lookup it is given.
func TestLoadEnvNamesTheFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "gateway.yaml")
	text := strings.Replace(valid, "workspace: eng", "workspace: ops", 1)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	vars := env(map[string]string{"GH_SECRET": "s3cret", "GH_SECRET_OLD": "", "BOT_TOKEN": "0123456789abcdef"})
	_, err := LoadEnv(path, vars)
	if want := "config " + path + ": line 12: connection \"gh-main\": unknown workspace \"ops\" (the workspace is eng)"; err == nil || err.Error() != want {
		t.Fatalf("LoadEnv error = %v, want %q", err, want)
	}
	if err := os.WriteFile(path, []byte(valid), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := LoadEnv(path, vars)
	if err != nil {
		t.Fatalf("LoadEnv: %v", err)
	}
	if cn, _ := c.Connection("gh-main"); len(cn.Secrets) == 0 || cn.Secrets[0] != "s3cret" {
		t.Fatalf("secrets = %q, want the lookup's s3cret first", cn.Secrets)
	}
}

// TestConnectionRecoveryKeys: api_url, its older name api_base_url, hooks
// and recover_every load as documented, and bad values are refused naming
// their line.
func TestConnectionRecoveryKeys(t *testing.T) {
	t.Parallel()
	const head = `workspaces:
  - id: eng
connections:
  - id: conn
    workspace: eng
    secrets: ["s3cret"]
`
	tests := []struct {
		name, text string
		wantURL    string
		wantHooks  []Hook
		wantEvery  time.Duration
		wantErr    []string // substrings of the error; nil when it loads
	}{
		{name: "api_url and hooks", text: head + `    provider: github
    api_url: https://ghe.example.com/api/v3/
    api_token: t
    hooks:
      - {repository: acme/api, id: 123456}
      - {organization: acme, id: 789}
    recover_every: 10m
`, wantURL: "https://ghe.example.com/api/v3/", wantEvery: 10 * time.Minute,
			wantHooks: []Hook{{Repository: "acme/api", ID: 123456}, {Organization: "acme", ID: 789}}},
		{name: "api_base_url is api_url", text: head + "    provider: github\n    api_base_url: http://api.test/\n", wantURL: "http://api.test/"},
		{name: "both names agreeing", text: head + "    provider: github\n    api_base_url: http://api.test/\n    api_url: http://api.test/\n", wantURL: "http://api.test/"},
		{name: "gitlab project and group hooks", text: head + `    provider: gitlab
    hooks: [{project: acme/api, id: 1}, {group: acme, id: 2}]
`, wantHooks: []Hook{{Project: "acme/api", ID: 1}, {Group: "acme", ID: 2}}},
		{name: "both names differing", text: head + "    provider: github\n    api_base_url: http://a.test/\n    api_url: http://b.test/\n",
			wantErr: []string{"line 8:", "api_base_url", "differ"}},
		{name: "unknown key", text: head + "    provider: github\n    api_urll: http://a.test/\n", wantErr: []string{"line 8:", "api_urll"}},
		{name: "unknown hook key", text: head + "    provider: github\n    hooks:\n      - {repository: a/b, id: 1, colour: red}\n",
			wantErr: []string{"line 9:", "unknown key colour in connections[0] (conn).hooks[0] (1); the keys there are repository, organization, project, group, id"}},
		{name: "github project hook", text: head + "    provider: github\n    hooks: [{project: acme/api, id: 1}]\n",
			wantErr: []string{"line 8:", "repository or organization"}},
		{name: "two owners", text: head + "    provider: github\n    hooks: [{repository: acme/api, organization: acme, id: 1}]\n",
			wantErr: []string{"exactly one of"}},
		{name: "repository without owner", text: head + "    provider: github\n    hooks: [{repository: api, id: 1}]\n", wantErr: []string{"owner/repo"}},
		{name: "no id", text: head + "    provider: github\n    hooks: [{repository: acme/api}]\n", wantErr: []string{"positive hook ID"}},
		{name: "twice", text: head + "    provider: github\n    hooks: [{repository: acme/api, id: 1}, {repository: acme/api, id: 1}]\n",
			wantErr: []string{"listed twice"}},
		{name: "jira hooks", text: head + "    provider: jira\n    host: acme.atlassian.net\n    hooks: [{project: PROJ, id: 1}]\n", wantErr: []string{"retries by itself"}},
		{name: "bad recover_every", text: head + "    provider: github\n    api_token: t\n    hooks: [{repository: a/b, id: 1}]\n    recover_every: often\n",
			wantErr: []string{"line 10:", "not a Go duration"}},
		{name: "recover_every without hooks", text: head + "    provider: github\n    api_token: t\n    recover_every: 10m\n",
			wantErr: []string{"needs api_token and hooks"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cn, ok := parseConnection(t, tc.text, nil, tc.wantErr)
			if !ok {
				return
			}
			if cn.APIURL != tc.wantURL {
				t.Errorf("api_url = %q, want %q", cn.APIURL, tc.wantURL)
			}
			if fmt.Sprint(cn.Hooks) != fmt.Sprint(tc.wantHooks) {
				t.Errorf("hooks = %v, want %v", cn.Hooks, tc.wantHooks)
			}
			if got := cn.RecoveryInterval(); got != tc.wantEvery {
				t.Errorf("recovery interval = %v, want %v", got, tc.wantEvery)
			}
		})
	}
}

// parseConnection parses text and returns its connection "conn"; with
// wantErr (substrings of the error) it checks the error instead and
// reports false.
func parseConnection(t *testing.T, text string, vars map[string]string, wantErr []string) (Connection, bool) {
	t.Helper()
	c, err := Parse([]byte(text), env(vars))
	if wantErr != nil {
		if err == nil {
			t.Fatalf("Parse succeeded, want an error containing %q", wantErr)
		}
		for _, w := range wantErr {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("error %q does not contain %q", err, w)
			}
		}
		return Connection{}, false
	}
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	cn, _ := c.Connection("conn")
	return cn, true
}
