// Package config loads the gateway's YAML configuration (workspaces, steps,
// connections, tokens) with ${VAR} expansion, and supplies the zero-config
// defaults.
package config

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/dustin/go-humanize"
	"gopkg.in/yaml.v3"

	"github.com/trackergateway/gateway/connectors/providers"
)

// Config is the whole file.
type Config struct {
	Workspaces  []Workspace  `yaml:"workspaces"`
	Connections []Connection `yaml:"connections"`
	Tokens      []Token      `yaml:"tokens"`
	// MaxInflightBodyBytes bounds the webhook body bytes held in memory at
	// once ("256MiB", "100MB" or a byte count; ParseByteSize); empty means
	// the default. The flag and environment win over it.
	MaxInflightBodyBytes string `yaml:"max_inflight_body_bytes"`
	// Retention: how long finished deliveries and read outbox events are
	// kept (retention.go).
	Retention Retention `yaml:"retention"`
	// Outbound: webhook subscriptions' delivery rules (outbound.go).
	Outbound Outbound `yaml:"outbound"`
}

// Workspace as configured.
type Workspace struct {
	ID         string `yaml:"id"`
	Name       string `yaml:"name"`
	TaskPrefix string `yaml:"task_prefix"`
	Steps      []Step `yaml:"steps"`
}

// Step as configured; WIPLimit nil or 0 means unlimited.
type Step struct {
	ID       string `yaml:"id"`
	Name     string `yaml:"name"`
	WIPLimit *int   `yaml:"wip_limit"`
}

// Pull-request and close/merge policies.
const (
	PullRequestsLinkOrCreate = "link_or_create"
	PullRequestsLink         = "link"
	PullRequestsIgnore       = "ignore"
	OnCloseArchive           = "archive"
	OnCloseNone              = "none"
)

// Connection is one webhook endpoint: POST /webhooks/{id}.
type Connection struct {
	ID           string   `yaml:"id"`
	Provider     string   `yaml:"provider"`
	Host         string   `yaml:"host"`
	Workspace    string   `yaml:"workspace"`
	Step         string   `yaml:"step"`
	Secrets      []string `yaml:"secrets"`
	Repositories []string `yaml:"repositories"`
	Labels       []string `yaml:"labels"`
	PullRequests string   `yaml:"pull_requests"`
	OnClose      string   `yaml:"on_close"`
	OnMerge      string   `yaml:"on_merge"`
	// APIToken authenticates the gateway to the provider's API (PR/MR
	// refreshes, missed-delivery recovery, hook health).
	APIToken string `yaml:"api_token"`
	// APIURL is the provider's REST API base URL, used as given (GitHub
	// Enterprise Server https://HOST/api/v3/, self-managed GitLab
	// https://HOST/api/v4, tests); empty derives it from Host.
	// The older name api_base_url is read into it too (UnmarshalYAML).
	APIURL string `yaml:"api_url"`
	// Hooks are the provider webhooks that post to this connection, which
	// missed-delivery recovery reads and asks to redeliver (hooks.go).
	Hooks []Hook `yaml:"hooks"`
	// RecoverEvery runs recovery in the background this often (a Go
	// duration); empty is off.
	RecoverEvery string `yaml:"recover_every"`
	// App makes a GitHub connection a GitHub App's: deliveries of every
	// installation arrive here, and API calls use installation tokens
	// instead of APIToken (app.go).
	App *App `yaml:"app"`
}

// SecretBytes returns the non-empty secrets.
func (c Connection) SecretBytes() [][]byte {
	var out [][]byte
	for _, s := range c.Secrets {
		if s != "" {
			out = append(out, []byte(s))
		}
	}
	return out
}

// Token is a workspace-scoped API token.
type Token struct {
	Name       string   `yaml:"name"`
	Token      string   `yaml:"token"`
	Workspaces []string `yaml:"workspaces"`
}

var varRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// Expand replaces ${VAR} with the environment value; an unset variable is an
// error (a typo must not silently become an empty secret). An empty list
// entry is allowed ("${OLD_SECRET}" set to "" during rotation is dropped).
func Expand(text string, lookup func(string) (string, bool)) (string, error) {
	var missing []string
	out := varRef.ReplaceAllStringFunc(text, func(m string) string {
		name := varRef.FindStringSubmatch(m)[1]
		v, ok := lookup(name)
		if !ok {
			missing = append(missing, name)
		}
		return v
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("unset environment variable(s): %s", strings.Join(missing, ", "))
	}
	return out, nil
}

// LoadEnv reads and validates a YAML file, expanding ${VAR} with lookup.
// Errors name the file and, where the problem has a place in it, the line
// ("config gateway.yaml: line 12: connection ...").
func LoadEnv(path string, lookup func(string) (string, bool)) (Config, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("read config: %w", err)
	}
	return parse(raw, lookup, "config "+path)
}

// Parse expands variables and validates. Errors name the line where the
// problem has a place in the text.
func Parse(raw []byte, lookup func(string) (string, bool)) (Config, error) {
	return parse(raw, lookup, "config")
}

// parse is Parse with label prefixing every error.
func parse(raw []byte, lookup func(string) (string, bool), label string) (Config, error) {
	var unset []string
	text, err := Expand(string(raw), func(name string) (string, bool) {
		v, ok := lookup(name)
		if !ok {
			unset = append(unset, name)
		}
		return v, ok
	})
	if err != nil {
		if line := lineOf(raw, "${"+unset[0]+"}"); line > 0 {
			return Config{}, fmt.Errorf("%s: line %d: %w", label, line, err)
		}
		return Config{}, fmt.Errorf("%s: %w", label, err)
	}
	// A typo of a key is named with its place and the key meant before
	// the decoder names a Go type for it; a syntax error is the decoder's
	// to report.
	var root yaml.Node
	if yaml.Unmarshal([]byte(text), &root) == nil {
		if err := checkKeys(&root); err != nil {
			return Config{}, fmt.Errorf("%s: %w", label, err)
		}
	}
	var c Config
	dec := yaml.NewDecoder(strings.NewReader(text))
	dec.KnownFields(true)
	// yaml.v3's own errors carry their line ("yaml: line 3: ...").
	if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
		return Config{}, fmt.Errorf("%s: %w", label, err)
	}
	c.applyDefaults()
	if err := c.Validate(); err != nil {
		// Validation runs on the decoded values, which have no position:
		// the node tree of the same text gives the offending entry's line.
		if root.Kind != 0 {
			if line := errorLine(&root, err); line > 0 {
				return Config{}, fmt.Errorf("%s: line %d: %w", label, line, err)
			}
		}
		return Config{}, fmt.Errorf("%s: %w", label, err)
	}
	if c.MaxInflightBodyBytes != "" {
		if _, err := ParseByteSize(c.MaxInflightBodyBytes); err != nil {
			return Config{}, fmt.Errorf("config: max_inflight_body_bytes: %w", err)
		}
	}
	return c, nil
}

// ParseByteSize reads a size such as "256MiB", "100 MB" or "1048576"
// (IEC and SI units); it must be positive.
func ParseByteSize(s string) (int64, error) {
	n, err := humanize.ParseBytes(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a size (e.g. 256MiB): %w", s, err)
	}
	if n == 0 || n > math.MaxInt64 {
		return 0, fmt.Errorf("%q: must be positive", s)
	}
	return int64(n), nil
}

var slug = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)
var prefix = regexp.MustCompile(`^[A-Z][A-Z0-9]{0,9}$`)

// MinTokenLength is the shortest API token accepted, configured or admin.
const MinTokenLength = 16

// ValidToken reports whether s is long enough to be an API token.
func ValidToken(s string) bool { return len(s) >= MinTokenLength }

func (c *Config) applyDefaults() {
	for i := range c.Workspaces {
		w := &c.Workspaces[i]
		if w.Name == "" {
			w.Name = w.ID
		}
		if w.TaskPrefix == "" {
			w.TaskPrefix = strings.ToUpper(strings.NewReplacer("-", "", "_", "").Replace(w.ID))
			if len(w.TaskPrefix) > 10 {
				w.TaskPrefix = w.TaskPrefix[:10]
			}
		}
		if len(w.Steps) == 0 {
			w.Steps = DefaultSteps()
		}
		for j := range w.Steps {
			if w.Steps[j].Name == "" {
				w.Steps[j].Name = w.Steps[j].ID
			}
			if w.Steps[j].WIPLimit != nil && *w.Steps[j].WIPLimit == 0 {
				w.Steps[j].WIPLimit = nil
			}
		}
	}
	for i := range c.Connections {
		cn := &c.Connections[i]
		if cn.PullRequests == "" {
			cn.PullRequests = PullRequestsLinkOrCreate
		}
		if cn.OnClose == "" {
			cn.OnClose = OnCloseArchive
		}
		if cn.OnMerge == "" {
			cn.OnMerge = OnCloseNone
		}
		if p, ok := providers.Lookup(cn.Provider); ok && cn.Host == "" {
			cn.Host = p.DefaultHost
		}
		if cn.Step == "" {
			for _, w := range c.Workspaces {
				if w.ID == cn.Workspace && len(w.Steps) > 0 {
					cn.Step = w.Steps[0].ID
				}
			}
		}
	}
}

// Bounds of a workspace, the same in the YAML and in POST /api/v1/workspaces
// (docs/http-api.md, "API limits").
const (
	MaxWorkspaceNameRunes = 200
	MaxSteps              = 50
	MaxStepNameRunes      = 200
	MaxWIPLimit           = 10_000
)

// ValidateWorkspace checks a workspace after defaults (an empty name is the
// ID, no steps are DefaultSteps, wip_limit 0 is unlimited): the one rule for
// the YAML and the API. Messages name the field; the ID is the caller's to
// add.
func ValidateWorkspace(w Workspace) error {
	if !slug.MatchString(w.ID) {
		return fmt.Errorf("id %q must be a lower-case slug (a-z, 0-9, - and _, at most 63)", w.ID)
	}
	if !prefix.MatchString(w.TaskPrefix) {
		return fmt.Errorf("task_prefix %q must be 1-10 upper-case letters or digits", w.TaskPrefix)
	}
	if err := checkName("name", w.Name, MaxWorkspaceNameRunes); err != nil {
		return err
	}
	switch {
	case len(w.Steps) == 0:
		return errors.New("at least one step is required")
	case len(w.Steps) > MaxSteps:
		return fmt.Errorf("%d steps: at most %d are allowed", len(w.Steps), MaxSteps)
	}
	seen := map[string]bool{}
	for _, s := range w.Steps {
		if !slug.MatchString(s.ID) {
			return fmt.Errorf("step id %q must be a lower-case slug (a-z, 0-9, - and _, at most 63)", s.ID)
		}
		if seen[s.ID] {
			return fmt.Errorf("step %q defined twice", s.ID)
		}
		seen[s.ID] = true
		if err := checkName("step "+strconv.Quote(s.ID)+" name", s.Name, MaxStepNameRunes); err != nil {
			return err
		}
		if s.WIPLimit != nil && (*s.WIPLimit < 0 || *s.WIPLimit > MaxWIPLimit) {
			return fmt.Errorf("step %q: wip_limit must be between 0 (unlimited) and %d", s.ID, MaxWIPLimit)
		}
	}
	return nil
}

// checkName bounds a display name: 1 to max characters of valid UTF-8,
// no control characters (NUL included).
func checkName(field, name string, max int) error {
	switch {
	case !utf8.ValidString(name):
		return fmt.Errorf("%s is not valid UTF-8 text", field)
	case strings.ContainsFunc(name, unicode.IsControl):
		return fmt.Errorf("%s contains a control character", field)
	case strings.TrimSpace(name) == "":
		return fmt.Errorf("%s is required", field)
	case utf8.RuneCountInString(name) > max:
		return fmt.Errorf("%s is longer than %d characters", field, max)
	}
	return nil
}

// DefaultSteps are the steps of a workspace configured without any.
func DefaultSteps() []Step {
	return []Step{{ID: "backlog", Name: "Backlog"}, {ID: "doing", Name: "In progress"}, {ID: "done", Name: "Done"}}
}

// Validate reports the first problem with the configuration.
func (c *Config) Validate() error {
	wsSteps := map[string]map[string]bool{}
	for i, w := range c.Workspaces {
		if !slug.MatchString(w.ID) {
			return at("workspaces", i, "id", fmt.Errorf("workspace id %q: must be a lower-case slug", w.ID))
		}
		if wsSteps[w.ID] != nil {
			return at("workspaces", i, "id", fmt.Errorf("workspace %q: defined twice", w.ID))
		}
		if err := ValidateWorkspace(w); err != nil {
			return at("workspaces", i, "id", fmt.Errorf("workspace %q: %w", w.ID, err))
		}
		steps := map[string]bool{}
		for _, s := range w.Steps {
			steps[s.ID] = true
		}
		wsSteps[w.ID] = steps
	}
	seen := map[string]bool{}
	for i, cn := range c.Connections {
		if !slug.MatchString(cn.ID) {
			return at("connections", i, "id", fmt.Errorf("connection id %q: must be a lower-case slug", cn.ID))
		}
		if seen[cn.ID] {
			return at("connections", i, "id", fmt.Errorf("connection %q: defined twice", cn.ID))
		}
		seen[cn.ID] = true
		if _, ok := providers.Lookup(cn.Provider); !ok {
			return at("connections", i, "provider", fmt.Errorf("connection %q: provider %q must be %s", cn.ID, cn.Provider, providerChoices()))
		}
		if cn.Host == "" {
			return at("connections", i, "id", fmt.Errorf("connection %q: host is required for %s", cn.ID, cn.Provider))
		}
		if err := checkHost(cn.Provider, cn.Host); err != nil {
			return at("connections", i, "host", fmt.Errorf("connection %q: %w", cn.ID, err))
		}
		if cn.Workspace == "" {
			return at("connections", i, "id", fmt.Errorf("connection %q: workspace is required: the id of the workspace its tasks go to (%s)",
				cn.ID, workspaceChoices(c.Workspaces)))
		}
		steps, ok := wsSteps[cn.Workspace]
		if !ok {
			return at("connections", i, "workspace", fmt.Errorf("connection %q: unknown workspace %q (%s)", cn.ID, cn.Workspace,
				workspaceChoices(c.Workspaces)))
		}
		if !steps[cn.Step] {
			return at("connections", i, "step", fmt.Errorf("connection %q: unknown step %q in workspace %q", cn.ID, cn.Step, cn.Workspace))
		}
		if len(cn.SecretBytes()) == 0 {
			return at("connections", i, "secrets", fmt.Errorf("connection %q: at least one non-empty secret is required (unsigned webhooks are never accepted)", cn.ID))
		}
		switch cn.PullRequests {
		case PullRequestsLinkOrCreate, PullRequestsLink, PullRequestsIgnore:
		default:
			return at("connections", i, "pull_requests", fmt.Errorf("connection %q: pull_requests %q must be link_or_create, link or ignore", cn.ID, cn.PullRequests))
		}
		if cn.OnClose != OnCloseArchive && cn.OnClose != OnCloseNone {
			return at("connections", i, "on_close", fmt.Errorf("connection %q: on_close %q must be archive or none", cn.ID, cn.OnClose))
		}
		if cn.OnMerge != OnCloseArchive && cn.OnMerge != OnCloseNone {
			return at("connections", i, "on_merge", fmt.Errorf("connection %q: on_merge %q must be archive or none", cn.ID, cn.OnMerge))
		}
		if key, err := cn.validateApp(); err != nil {
			return at("connections", i, key, fmt.Errorf("connection %q: %w", cn.ID, err))
		}
		if key, err := cn.validateRecovery(); err != nil {
			return at("connections", i, key, fmt.Errorf("connection %q: %w", cn.ID, err))
		}
	}
	names := map[string]bool{}
	for i, tk := range c.Tokens {
		if tk.Name == "" || tk.Name == AdminTokenName {
			return at("tokens", i, "name", fmt.Errorf("token name %q is reserved or empty", tk.Name))
		}
		if names[tk.Name] {
			return at("tokens", i, "name", fmt.Errorf("token %q: defined twice", tk.Name))
		}
		names[tk.Name] = true
		if !ValidToken(tk.Token) {
			return at("tokens", i, "token", fmt.Errorf("token %q: must be at least %d characters", tk.Name, MinTokenLength))
		}
		for _, ws := range tk.Workspaces {
			if wsSteps[ws] == nil {
				return at("tokens", i, "workspaces", fmt.Errorf("token %q: unknown workspace %q", tk.Name, ws))
			}
		}
	}
	return nil
}

// posError places a validation error in the file: the entry at index of a
// top-level list (section), and the key of that entry at fault.
type posError struct {
	section string
	index   int
	key     string
	err     error
}

func (e *posError) Error() string { return e.err.Error() }
func (e *posError) Unwrap() error { return e.err }

func at(section string, index int, key string, err error) error {
	return &posError{section: section, index: index, key: key, err: err}
}

// errorLine is the line of the key (else the entry) err is about; 0 when
// err has no place or root does not have it.
func errorLine(root *yaml.Node, err error) int {
	var pe *posError
	if !errors.As(err, &pe) || root.Kind != yaml.DocumentNode || len(root.Content) == 0 {
		return 0
	}
	list := mappingValue(root.Content[0], pe.section)
	if list == nil || list.Kind != yaml.SequenceNode || pe.index >= len(list.Content) {
		return 0
	}
	entry := list.Content[pe.index]
	if entry.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(entry.Content); i += 2 {
			if entry.Content[i].Value == pe.key {
				return entry.Content[i].Line
			}
		}
	}
	return entry.Line
}

// lineOf is the line of the first occurrence of sub in text, 0 when none.
func lineOf(text []byte, sub string) int {
	i := strings.Index(string(text), sub)
	if i < 0 {
		return 0
	}
	return strings.Count(string(text[:i]), "\n") + 1
}

// mappingValue is the value of key in a mapping node, nil when absent.
func mappingValue(m *yaml.Node, key string) *yaml.Node {
	if m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// AdminTokenName is the stored name of the admin token.
const AdminTokenName = "admin"

// providerChoices names the registered providers for an error message:
// "github, gitlab or jira".
func providerChoices() string { return joinOr(providers.Names()) }

// DefaultSecretEnv names the environment variable of each zero-config
// connection's webhook secret, keyed by provider (the registry's SecretEnv).
var DefaultSecretEnv = defaultSecretEnv()

func defaultSecretEnv() map[string]string {
	out := map[string]string{}
	for _, p := range providers.All() {
		out[p.Name] = p.SecretEnv
	}
	return out
}

// Default is the zero-config configuration: a "default" workspace and one
// connection per registered provider (its id is the provider name; github,
// gitlab, jira) whose secret is secret(provider): the caller takes it from
// DefaultSecretEnv or generates and persists one. The host is the
// provider's zero-config host (Jira's from GATEWAY_JIRA_SITE).
func Default(lookup func(string) (string, bool), secret func(provider string) (string, error)) (Config, error) {
	c := Config{Workspaces: []Workspace{DefaultWorkspace()}}
	for _, p := range providers.All() {
		s, err := secret(p.Name)
		if err != nil {
			return Config{}, fmt.Errorf("secret of connection %s: %w", p.Name, err)
		}
		c.Connections = append(c.Connections, Connection{ID: p.Name, Provider: p.Name, Host: p.ZeroConfigHost(lookup),
			Workspace: "default", Step: "backlog", Secrets: []string{s}})
	}
	c.applyDefaults()
	return c, c.Validate()
}

// DefaultWorkspace is the zero-config workspace, `default`.
func DefaultWorkspace() Workspace {
	return Workspace{ID: "default", Name: "Default", TaskPrefix: "TASK", Steps: DefaultSteps()}
}

// RandomSecret returns 32 random bytes as hex.
func RandomSecret() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// Connection returns the connection by id.
func (c *Config) Connection(id string) (Connection, bool) {
	for _, cn := range c.Connections {
		if cn.ID == id {
			return cn, true
		}
	}
	return Connection{}, false
}
