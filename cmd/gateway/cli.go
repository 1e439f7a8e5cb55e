package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/trackergateway/gateway/connectors"
	"github.com/trackergateway/gateway/connectors/providers"
	"github.com/trackergateway/gateway/internal/config"
)

func envOr(env Env, key, def string) string {
	if v, ok := env(key); ok && v != "" {
		return v
	}
	return def
}

func defaultURL(env Env) string {
	return "http://" + envOr(env, "GATEWAY_LISTEN", "127.0.0.1:8080")
}

var sendUsage = usageText{
	line: "send --connection ID --file PAYLOAD [flags]",
	summary: "Signs a payload as the connection's provider would and posts it to the gateway. The secret comes\n" +
		"from --secret, the provider's GATEWAY_<PROVIDER>_SECRET, the configuration file, or the secret the\n" +
		"gateway generated in the local database.",
	example: "gateway send --connection github --file fixtures/github/issues.opened.json",
}

// send signs and posts a payload exactly as the provider would.
func send(ctx context.Context, args []string, env Env, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("send", flag.ContinueOnError)
	conn := fs.String("connection", "", "connection id (zero-config: github, gitlab or jira)")
	file := fs.String("file", "", "payload file (e.g. fixtures/github/issues.opened.json)")
	event := fs.String("event", "", "event type header (GitHub X-GitHub-Event, GitLab X-Gitlab-Event); inferred when omitted")
	target := fs.String("url", defaultURL(env), "gateway base URL")
	secret := fs.String("secret", "", "webhook secret (default: $GATEWAY_<PROVIDER>_SECRET, the config's first secret, or the one the gateway generated in the local database)")
	cfgPath := fs.String("config", envOr(env, "GATEWAY_CONFIG", ""), "YAML config (to find the connection's provider and secret)")
	dbURL := fs.String("database-url", envOr(env, "GATEWAY_DATABASE_URL", "sqlite:./data/gateway.db"), "database holding generated secrets")
	deliveryKey := fs.String("delivery", "", "delivery id header to send (default: random, like a new delivery)")
	if err := parseFlags(fs, sendUsage, args, stdout, stderr); err != nil {
		return err
	}
	switch {
	case *conn == "" || *file == "":
		return usageError(stderr, fs, sendUsage, "--connection and --file are required")
	case fs.NArg() > 0:
		return usageError(stderr, fs, sendUsage, "unexpected argument %q", fs.Arg(0))
	}
	body, err := os.ReadFile(*file)
	if err != nil {
		return fmt.Errorf("read payload: %w", err)
	}
	provider, key, err := resolveSender(ctx, *conn, *cfgPath, *dbURL, *secret, env)
	if err != nil {
		return err
	}
	h := http.Header{}
	// A provider without an event header (Jira) names the event in the body.
	if ev := inferEvent(provider.Name, *event, *file, body); ev != "" && provider.EventHeader != "" {
		h.Set(provider.EventHeader, ev)
	}
	if *deliveryKey != "" {
		h.Set(provider.DeliveryKeyHeader, *deliveryKey)
	}
	provider.Adapter.Sign(h, body, []byte(key))
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(*target, "/")+"/webhooks/"+url.PathEscape(*conn), bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header = h
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("post: %w", err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	fmt.Fprintf(stdout, "%s %s", resp.Status, out)
	if resp.StatusCode >= 300 {
		return fmt.Errorf("gateway answered %s", resp.Status)
	}
	return nil
}

// resolveSender finds the connection's provider and a secret to sign with.
func resolveSender(ctx context.Context, conn, cfgPath, dbURL, secret string, env Env) (providers.Provider, string, error) {
	name := conn
	var cfgSecret string
	if cfgPath != "" {
		cfg, err := config.Load(cfgPath)
		if err != nil {
			return providers.Provider{}, "", err
		}
		c, ok := cfg.Connection(conn)
		if !ok {
			return providers.Provider{}, "", fmt.Errorf("connection %q is not in %s", conn, cfgPath)
		}
		name = c.Provider
		if s := c.SecretBytes(); len(s) > 0 {
			cfgSecret = string(s[0])
		}
	}
	provider, ok := providers.Lookup(name)
	if !ok {
		return providers.Provider{}, "", fmt.Errorf("unknown provider %q (without --config, the connection is a provider: %s)",
			name, strings.Join(providers.Names(), ", "))
	}
	envName := provider.SecretEnv
	switch {
	case secret != "":
		return provider, secret, nil
	case envOr(env, envName, "") != "":
		return provider, envOr(env, envName, ""), nil
	case cfgSecret != "":
		return provider, cfgSecret, nil
	}
	if path, ok := strings.CutPrefix(dbURL, "sqlite:"); ok {
		if _, err := os.Stat(path); err != nil {
			return providers.Provider{}, "", fmt.Errorf("no secret: pass --secret or set %s", envName)
		}
	}
	st, err := openStore(ctx, dbURL, slog.New(slog.DiscardHandler))
	if err != nil {
		return providers.Provider{}, "", err
	}
	defer st.Close()
	s, err := st.GetGeneratedSecret(ctx, envName)
	if err != nil {
		return providers.Provider{}, "", fmt.Errorf("no secret for %s: pass --secret or set %s", conn, envName)
	}
	return provider, s, nil
}

// inferEvent derives the event header from the fixture name (GitHub:
// "issues.opened.json" → "issues") or the body (GitLab object_kind).
func inferEvent(provider, event, file string, body []byte) string {
	if event != "" {
		return event
	}
	switch provider {
	case connectors.ProviderGitHub:
		name := filepath.Base(file)
		if i := strings.IndexByte(name, '.'); i > 0 {
			return name[:i]
		}
	case connectors.ProviderGitLab:
		var probe struct {
			ObjectKind string `json:"object_kind"`
		}
		_ = json.Unmarshal(body, &probe)
		switch probe.ObjectKind {
		case "issue":
			return "Issue Hook"
		case "merge_request":
			return "Merge Request Hook"
		case "note":
			return "Note Hook"
		case "push":
			return "Push Hook"
		}
	}
	return ""
}

// apiCall performs an operator request and prints the JSON answer.
func apiCall(ctx context.Context, env Env, target, token, method, path string, stdout io.Writer) error {
	if token == "" {
		return errors.New("an admin token is required: --admin-token or GATEWAY_ADMIN_TOKEN")
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(target, "/")+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if len(out) > 0 {
		var pretty bytes.Buffer
		if json.Indent(&pretty, out, "", "  ") == nil {
			out = append(pretty.Bytes(), '\n')
		}
		_, _ = stdout.Write(out)
	}
	if resp.StatusCode >= 300 {
		return fmt.Errorf("gateway answered %s", resp.Status)
	}
	return nil
}

// operatorFlags registers the flags every operator command has.
func operatorFlags(name string, env Env) (*flag.FlagSet, *string, *string) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	target := fs.String("url", defaultURL(env), "gateway base URL (its default follows env GATEWAY_LISTEN)")
	token := fs.String("admin-token", envOr(env, "GATEWAY_ADMIN_TOKEN", ""), "admin token (env GATEWAY_ADMIN_TOKEN)")
	return fs, target, token
}

var (
	deliveriesUsage = usageText{
		line: "deliveries list|get ID|replay ID [flags]",
		summary: "Operator tools for webhook deliveries, through the operator API with the admin token.\n\n" +
			"subcommands:\n" +
			"  list        list deliveries (filter by status or connection)\n" +
			"  get ID      show one delivery: status, outcome, headers (secrets removed) and body\n" +
			"  replay ID   process a finished delivery again\n\n" +
			"Run \"gateway deliveries <subcommand> -h\" for a subcommand's flags.",
		example: "gateway deliveries list --status failed",
	}
	deliveriesListUsage = usageText{
		line:    "deliveries list [flags]",
		summary: "Lists deliveries, one page at a time (--cursor takes the next page).",
		example: "gateway deliveries list --status failed --limit 20",
	}
	deliveriesGetUsage = usageText{
		line:    "deliveries get ID [flags]",
		summary: "Shows one delivery: its status, outcome, headers (secrets removed) and body.",
		example: "gateway deliveries get 0193a5e2-8c1f-7d4e-9b2a-3f6c8d1e2a4b",
	}
	deliveriesReplayUsage = usageText{
		line:    "deliveries replay ID [flags]",
		summary: "Queues a finished delivery again: it is processed with today's code and configuration and never\nre-verified.",
		example: "gateway deliveries replay 0193a5e2-8c1f-7d4e-9b2a-3f6c8d1e2a4b",
	}
)

// deliveries: list [--status S] [--connection C] [--limit N] [--cursor X] | get ID | replay ID.
func deliveries(ctx context.Context, args []string, env Env, stdout, stderr io.Writer) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return needSubcommand("deliveries", deliveriesUsage, args, stdout, stderr)
	}
	switch args[0] {
	case "list":
		fs, target, token := operatorFlags("deliveries list", env)
		status := fs.String("status", "", "filter by status: queued, processing, retrying, succeeded, ignored, suppressed or failed")
		conn := fs.String("connection", "", "filter by connection")
		limit := fs.String("limit", "", "page size")
		cursor := fs.String("cursor", "", "next_cursor of the previous page")
		if err := parseFlags(fs, deliveriesListUsage, args[1:], stdout, stderr); err != nil {
			return err
		}
		if fs.NArg() > 0 {
			return usageError(stderr, fs, deliveriesListUsage, "unexpected argument %q", fs.Arg(0))
		}
		q := url.Values{}
		for k, v := range map[string]string{"status": *status, "connection": *conn, "limit": *limit, "cursor": *cursor} {
			if v != "" {
				q.Set(k, v)
			}
		}
		return apiCall(ctx, env, *target, *token, http.MethodGet, "/api/v1/deliveries?"+q.Encode(), stdout)
	case "get", "replay":
		u := deliveriesGetUsage
		if args[0] == "replay" {
			u = deliveriesReplayUsage
		}
		fs, target, token := operatorFlags("deliveries "+args[0], env)
		if err := parseFlags(fs, u, idLast(args[1:]), stdout, stderr); err != nil {
			return err
		}
		if fs.NArg() != 1 {
			return usageError(stderr, fs, u, "exactly one delivery ID is required")
		}
		path := "/api/v1/deliveries/" + url.PathEscape(fs.Arg(0))
		if args[0] == "replay" {
			return apiCall(ctx, env, *target, *token, http.MethodPost, path+"/replay", stdout)
		}
		return apiCall(ctx, env, *target, *token, http.MethodGet, path, stdout)
	}
	return usageError(stderr, flag.NewFlagSet("deliveries", flag.ContinueOnError), deliveriesUsage, "unknown subcommand %q", args[0])
}

// needSubcommand answers a command that groups subcommands when none is
// named: its usage on stdout for -h, else on stderr.
func needSubcommand(name string, u usageText, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	if err := parseFlags(fs, u, args, stdout, stderr); err != nil {
		return err
	}
	return usageError(stderr, fs, u, "a subcommand is required")
}

// idLast moves a leading positional ID after the flags, so both
// "get ID --admin-token X" and "get --admin-token X ID" work.
func idLast(args []string) []string {
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		return append(append([]string{}, args[1:]...), args[0])
	}
	return args
}

var (
	suppressionsUsage = usageText{
		line: "suppressions list|clear [flags]",
		summary: "Operator tools for suppressions (external IDs whose task was deleted, so that later deliveries\n" +
			"do not bring it back), through the operator API with the admin token.\n\n" +
			"subcommands:\n" +
			"  list    list suppressions\n" +
			"  clear   clear one suppression\n\n" +
			"Run \"gateway suppressions <subcommand> -h\" for a subcommand's flags.",
		example: "gateway suppressions list --workspace default",
	}
	suppressionsListUsage = usageText{
		line:    "suppressions list [flags]",
		summary: "Lists suppressions, of every workspace or of one.",
		example: "gateway suppressions list --workspace default",
	}
	suppressionsClearUsage = usageText{
		line:    "suppressions clear --workspace W --external-id X [flags]",
		summary: "Clears one suppression, so that the next delivery for the external ID creates its task again.",
		example: "gateway suppressions clear --workspace default --external-id github:github.com:issue:1",
	}
)

// suppressions: list [--workspace W] | clear --workspace W --external-id X.
func suppressions(ctx context.Context, args []string, env Env, stdout, stderr io.Writer) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return needSubcommand("suppressions", suppressionsUsage, args, stdout, stderr)
	}
	switch args[0] {
	case "list":
		fs, target, token := operatorFlags("suppressions list", env)
		ws := fs.String("workspace", "", "workspace id (default: every workspace)")
		if err := parseFlags(fs, suppressionsListUsage, args[1:], stdout, stderr); err != nil {
			return err
		}
		if fs.NArg() > 0 {
			return usageError(stderr, fs, suppressionsListUsage, "unexpected argument %q", fs.Arg(0))
		}
		q := url.Values{}
		if *ws != "" {
			q.Set("workspace_id", *ws)
		}
		return apiCall(ctx, env, *target, *token, http.MethodGet, "/api/v1/suppressions?"+q.Encode(), stdout)
	case "clear":
		fs, target, token := operatorFlags("suppressions clear", env)
		ws := fs.String("workspace", "", "workspace id (required)")
		ext := fs.String("external-id", "", "external id (required)")
		if err := parseFlags(fs, suppressionsClearUsage, args[1:], stdout, stderr); err != nil {
			return err
		}
		switch {
		case *ws == "" || *ext == "":
			return usageError(stderr, fs, suppressionsClearUsage, "--workspace and --external-id are required")
		case fs.NArg() > 0:
			return usageError(stderr, fs, suppressionsClearUsage, "unexpected argument %q", fs.Arg(0))
		}
		q := url.Values{"workspace_id": {*ws}, "external_id": {*ext}}
		return apiCall(ctx, env, *target, *token, http.MethodDelete, "/api/v1/suppressions?"+q.Encode(), stdout)
	}
	return usageError(stderr, flag.NewFlagSet("suppressions", flag.ContinueOnError), suppressionsUsage, "unknown subcommand %q", args[0])
}
