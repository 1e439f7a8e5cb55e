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

// send signs and posts a payload exactly as the provider would.
func send(ctx context.Context, args []string, env Env, stdout io.Writer) error {
	fs := flag.NewFlagSet("send", flag.ContinueOnError)
	conn := fs.String("connection", "", "connection id (zero-config: github, gitlab or jira)")
	file := fs.String("file", "", "payload file (e.g. fixtures/github/issues.opened.json)")
	event := fs.String("event", "", "event type header (GitHub X-GitHub-Event, GitLab X-Gitlab-Event); inferred when omitted")
	target := fs.String("url", defaultURL(env), "gateway base URL")
	secret := fs.String("secret", "", "webhook secret (default: $GATEWAY_<PROVIDER>_SECRET, the config's first secret, or the one the gateway generated in the local database)")
	cfgPath := fs.String("config", envOr(env, "GATEWAY_CONFIG", ""), "YAML config (to find the connection's provider and secret)")
	dbURL := fs.String("database-url", envOr(env, "GATEWAY_DATABASE_URL", "sqlite:./data/gateway.db"), "database holding generated secrets")
	deliveryKey := fs.String("delivery", "", "delivery id header to send (default: random, like a new delivery)")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	if *conn == "" || *file == "" {
		return errors.New("--connection and --file are required")
	}
	body, err := os.ReadFile(*file)
	if err != nil {
		return fmt.Errorf("read payload: %w", err)
	}
	provider, key, err := resolveSender(ctx, *conn, *cfgPath, *dbURL, *secret, env)
	if err != nil {
		return err
	}
	adapter, ok := adapters()[provider]
	if !ok {
		return fmt.Errorf("unknown provider %q", provider)
	}
	h := http.Header{}
	if ev := inferEvent(provider, *event, *file, body); ev != "" {
		switch provider {
		case "github":
			h.Set("X-GitHub-Event", ev)
		case "gitlab":
			h.Set("X-Gitlab-Event", ev)
		}
	}
	if *deliveryKey != "" {
		for _, name := range []string{"X-GitHub-Delivery", "Idempotency-Key", "X-Atlassian-Webhook-Identifier"} {
			h.Set(name, *deliveryKey)
		}
	}
	adapter.Sign(h, body, []byte(key))
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
func resolveSender(ctx context.Context, conn, cfgPath, dbURL, secret string, env Env) (string, string, error) {
	provider := conn
	var cfgSecret string
	if cfgPath != "" {
		cfg, err := config.Load(cfgPath)
		if err != nil {
			return "", "", err
		}
		c, ok := cfg.Connection(conn)
		if !ok {
			return "", "", fmt.Errorf("connection %q is not in %s", conn, cfgPath)
		}
		provider = c.Provider
		if s := c.SecretBytes(); len(s) > 0 {
			cfgSecret = string(s[0])
		}
	}
	envName := config.DefaultSecretEnv[provider]
	switch {
	case secret != "":
		return provider, secret, nil
	case envName != "" && envOr(env, envName, "") != "":
		return provider, envOr(env, envName, ""), nil
	case cfgSecret != "":
		return provider, cfgSecret, nil
	}
	if path, ok := strings.CutPrefix(dbURL, "sqlite:"); ok {
		if _, err := os.Stat(path); err != nil {
			return "", "", fmt.Errorf("no secret: pass --secret or set %s", envName)
		}
	}
	st, err := openStore(ctx, dbURL, slog.New(slog.DiscardHandler))
	if err != nil {
		return "", "", err
	}
	defer st.Close()
	s, err := st.GetGeneratedSecret(ctx, envName)
	if err != nil {
		return "", "", fmt.Errorf("no secret for %s: pass --secret or set %s", conn, envName)
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
	case "github":
		name := filepath.Base(file)
		if i := strings.IndexByte(name, '.'); i > 0 {
			return name[:i]
		}
	case "gitlab":
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

func operatorFlags(name string, env Env) (*flag.FlagSet, *string, *string) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	target := fs.String("url", defaultURL(env), "gateway base URL")
	token := fs.String("admin-token", envOr(env, "GATEWAY_ADMIN_TOKEN", ""), "admin token (env GATEWAY_ADMIN_TOKEN)")
	return fs, target, token
}

// deliveries: list [--status S] [--connection C] [--limit N] [--cursor X] | get ID | replay ID.
func deliveries(ctx context.Context, args []string, env Env, stdout io.Writer) error {
	if len(args) == 0 {
		return errors.New("usage: gateway deliveries list|get ID|replay ID")
	}
	fs, target, token := operatorFlags("deliveries "+args[0], env)
	status := fs.String("status", "", "filter by status")
	conn := fs.String("connection", "", "filter by connection")
	limit := fs.String("limit", "", "page size")
	cursor := fs.String("cursor", "", "next_cursor of the previous page")
	if err := fs.Parse(idLast(args[1:])); err != nil {
		return errUsage
	}
	switch args[0] {
	case "list":
		q := url.Values{}
		for k, v := range map[string]string{"status": *status, "connection": *conn, "limit": *limit, "cursor": *cursor} {
			if v != "" {
				q.Set(k, v)
			}
		}
		return apiCall(ctx, env, *target, *token, http.MethodGet, "/api/v1/deliveries?"+q.Encode(), stdout)
	case "get", "replay":
		if fs.NArg() != 1 {
			return fmt.Errorf("usage: gateway deliveries %s ID", args[0])
		}
		path := "/api/v1/deliveries/" + url.PathEscape(fs.Arg(0))
		if args[0] == "replay" {
			return apiCall(ctx, env, *target, *token, http.MethodPost, path+"/replay", stdout)
		}
		return apiCall(ctx, env, *target, *token, http.MethodGet, path, stdout)
	}
	return fmt.Errorf("unknown deliveries command %q", args[0])
}

// idLast moves a leading positional ID after the flags, so both
// "get ID --admin-token X" and "get --admin-token X ID" work.
func idLast(args []string) []string {
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		return append(append([]string{}, args[1:]...), args[0])
	}
	return args
}

// suppressions: list [--workspace W] | clear --workspace W --external-id X.
func suppressions(ctx context.Context, args []string, env Env, stdout io.Writer) error {
	if len(args) == 0 {
		return errors.New("usage: gateway suppressions list|clear")
	}
	fs, target, token := operatorFlags("suppressions "+args[0], env)
	ws := fs.String("workspace", "", "workspace id")
	ext := fs.String("external-id", "", "external id")
	if err := fs.Parse(args[1:]); err != nil {
		return errUsage
	}
	q := url.Values{}
	if *ws != "" {
		q.Set("workspace_id", *ws)
	}
	switch args[0] {
	case "list":
		return apiCall(ctx, env, *target, *token, http.MethodGet, "/api/v1/suppressions?"+q.Encode(), stdout)
	case "clear":
		if *ws == "" || *ext == "" {
			return errors.New("--workspace and --external-id are required")
		}
		q.Set("external_id", *ext)
		return apiCall(ctx, env, *target, *token, http.MethodDelete, "/api/v1/suppressions?"+q.Encode(), stdout)
	}
	return fmt.Errorf("unknown suppressions command %q", args[0])
}
