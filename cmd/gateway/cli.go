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
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/trackergateway/gateway/connectors"
	"github.com/trackergateway/gateway/connectors/providers"
	"github.com/trackergateway/gateway/internal/config"
	"github.com/trackergateway/gateway/internal/ingest"
	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/store/postgres"
	"github.com/trackergateway/gateway/internal/store/sqlite"
)

func envOr(env Env, key, def string) string {
	if v, ok := env(key); ok && v != "" {
		return v
	}
	return def
}

func defaultURL(env Env) string {
	return listenURL(envOr(env, "GATEWAY_LISTEN", "127.0.0.1:8080"))
}

var sendUsage = usageText{
	line: "send --connection ID --file PAYLOAD [flags]",
	summary: "Signs a payload as the connection's provider would and posts it to the gateway. It finds the\n" +
		"connection, its provider and its secret as serve does, with the same flags and environment: with a\n" +
		"configuration file (--config or GATEWAY_CONFIG) the connection's provider and first secret (${VAR}\n" +
		"expanded); without one the connection is a provider (" + strings.Join(providers.Names(), ", ") + ") whose secret is\n" +
		"GATEWAY_<PROVIDER>_SECRET or the one the gateway generated in its database (--database-url or\n" +
		"GATEWAY_DATABASE_URL). The event is read from the payload unless --event names it. With --wait it\n" +
		"then follows the delivery (with the admin token) and prints its final status, the result the gateway\n" +
		"recorded (\"stale update skipped\", \"task deleted; suppression recorded\"...), its action (\"not\n" +
		"applied\" when it was ignored, suppressed or stale) and the task it touched.",
	example: "gateway send --connection github --file fixtures/github/issues.opened.json\n" +
		"gateway send --config gateway.yaml --connection gh-main --file payload.json --wait",
}

// sendFlags are send's flags; the ones serve also has take the same
// environment variables and defaults.
type sendFlags struct {
	conn, file, event, secret, deliveryKey  string
	target, listen, configPath, databaseURL string
	adminToken                              string
	wait                                    bool
	waitTimeout                             time.Duration
}

// send signs and posts a payload exactly as the provider would.
func send(ctx context.Context, args []string, env Env, stdout, stderr io.Writer) error {
	var f sendFlags
	fs := flag.NewFlagSet("send", flag.ContinueOnError)
	fs.StringVar(&f.conn, "connection", "", "connection id (zero-config: a provider's name: "+strings.Join(providers.Names(), ", ")+")")
	fs.StringVar(&f.file, "file", "", "payload file (e.g. fixtures/github/issues.opened.json)")
	fs.StringVar(&f.event, "event", "", "event header value (GitHub X-GitHub-Event, GitLab X-Gitlab-Event, Gitea X-Gitea-Event); default: read from the payload")
	fs.StringVar(&f.target, "url", "", "gateway base URL (default: http:// and the listen address)")
	fs.StringVar(&f.listen, "listen", envOr(env, "GATEWAY_LISTEN", "127.0.0.1:8080"), "the gateway's listen address, the default of --url (env GATEWAY_LISTEN)")
	fs.StringVar(&f.secret, "secret", "", "webhook secret (default: the config's first secret, else $GATEWAY_<PROVIDER>_SECRET or the one generated in the database)")
	fs.StringVar(&f.configPath, "config", envOr(env, "GATEWAY_CONFIG", ""), "YAML config file serve runs with (env GATEWAY_CONFIG)")
	secretFlag(fs, &f.databaseURL, "database-url", envOr(env, "GATEWAY_DATABASE_URL", "sqlite:./data/gateway.db"), "the database `url` serve runs on, holding the generated secrets (env GATEWAY_DATABASE_URL)", redactURL)
	fs.StringVar(&f.deliveryKey, "delivery", "", "delivery id header to send (default: random, like a new delivery)")
	fs.BoolVar(&f.wait, "wait", false, "wait until the delivery is processed and print its status and task (needs the admin token)")
	fs.DurationVar(&f.waitTimeout, "wait-timeout", 30*time.Second, "how long --wait waits")
	secretFlag(fs, &f.adminToken, "admin-token", envOr(env, "GATEWAY_ADMIN_TOKEN", ""), "admin `token`, for --wait (env GATEWAY_ADMIN_TOKEN)", hidden)
	if err := parseFlags(fs, sendUsage, args, stdout, stderr); err != nil {
		return err
	}
	switch {
	case f.conn == "" || f.file == "":
		return usageError(stderr, fs, sendUsage, "--connection and --file are required")
	case fs.NArg() > 0:
		return usageError(stderr, fs, sendUsage, "unexpected argument %q", fs.Arg(0))
	case f.wait && f.adminToken == "":
		return usageError(stderr, fs, sendUsage, "--wait needs the admin token: --admin-token or GATEWAY_ADMIN_TOKEN")
	case f.wait && f.waitTimeout <= 0:
		return usageError(stderr, fs, sendUsage, "--wait-timeout must be positive")
	}
	if f.target == "" {
		f.target = listenURL(f.listen)
	}
	body, err := os.ReadFile(f.file)
	if err != nil {
		return fmt.Errorf("read payload: %w", err)
	}
	provider, key, from, err := resolveSender(ctx, f, env)
	if err != nil {
		return err
	}
	if r, ok := provider.Adapter.(connectors.Restamper); ok {
		// The provider refuses a stored payload's old signed timestamp.
		if body, err = r.Restamp(body, time.Now()); err != nil {
			return fmt.Errorf("restamp payload: %w", err)
		}
	}
	h := http.Header{}
	if provider.EventHeader != "" {
		ev, err := inferEvent(provider, f.event, body)
		if err != nil {
			return err
		}
		h.Set(provider.EventHeader, ev)
	}
	if f.deliveryKey != "" {
		h.Set(provider.DeliveryKeyHeader, f.deliveryKey)
	}
	provider.Adapter.Sign(h, body, []byte(key))
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(f.target, "/")+"/webhooks/"+url.PathEscape(f.conn), bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header = h
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return reachError(fmt.Errorf("post: %w", err), f.target, "--url, or --listen (env GATEWAY_LISTEN) as serve listens")
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	fmt.Fprintf(stdout, "%s %s", resp.Status, out)
	switch {
	case resp.StatusCode == http.StatusUnauthorized:
		return fmt.Errorf("gateway answered %s: it refused %s", resp.Status, from)
	case resp.StatusCode >= 300:
		return fmt.Errorf("gateway answered %s", resp.Status)
	case !f.wait:
		return nil
	}
	var receipt struct {
		DeliveryID string `json:"delivery_id"`
	}
	if err := json.Unmarshal(out, &receipt); err != nil || receipt.DeliveryID == "" {
		return fmt.Errorf("read the receipt %q: no delivery_id", out)
	}
	return waitDelivery(ctx, f, receipt.DeliveryID, stdout)
}

// listenURL is the base URL of a gateway listening on addr; an unspecified
// host (":8080", "0.0.0.0:8080") is reached on the loopback address.
func listenURL(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://" + addr
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// resolveSender finds the connection's provider and the secret to sign with,
// as serve would: from the configuration file when there is one, else from
// the zero-config connections (the environment or the database's generated
// secret). from says where the secret came from and what to set when the
// gateway refuses it.
func resolveSender(ctx context.Context, f sendFlags, env Env) (provider providers.Provider, secret, from string, err error) {
	const given = "the secret given with --secret"
	if f.configPath != "" {
		cfg, err := config.LoadEnv(f.configPath, env)
		if err != nil {
			return providers.Provider{}, "", "", err
		}
		c, ok := cfg.Connection(f.conn)
		if !ok {
			ids := make([]string, len(cfg.Connections))
			for i, c := range cfg.Connections {
				ids[i] = c.ID
			}
			return providers.Provider{}, "", "", fmt.Errorf("connection %q is not in %s (its connections: %s)", f.conn, f.configPath, strings.Join(ids, ", "))
		}
		provider, _ := providers.Lookup(c.Provider) // the config is validated
		if f.secret != "" {
			return provider, f.secret, given, nil
		}
		return provider, string(c.SecretBytes()[0]), fmt.Sprintf("the first secret of connection %s in %s: --config (or GATEWAY_CONFIG) must name the file the gateway runs with, its variables set as the gateway has them",
			f.conn, f.configPath), nil
	}
	provider, ok := providers.Lookup(f.conn)
	if !ok {
		return providers.Provider{}, "", "", fmt.Errorf("unknown connection %q: without a configuration file (--config or GATEWAY_CONFIG) the connections are %s",
			f.conn, strings.Join(providers.Names(), ", "))
	}
	if f.secret != "" {
		return provider, f.secret, given, nil
	}
	if v := envOr(env, provider.SecretEnv, ""); v != "" {
		return provider, v, fmt.Sprintf("the secret in %s: set it as the gateway has it, or pass --secret", provider.SecretEnv), nil
	}
	dbURL := redactURL(f.databaseURL)
	noSecret := fmt.Errorf("no secret for connection %s: set %s or --secret, or --database-url (or GATEWAY_DATABASE_URL) to the database the gateway runs on (%s has none)",
		f.conn, provider.SecretEnv, dbURL)
	if strings.HasPrefix(f.databaseURL, sqlite.URLScheme) {
		path, err := sqlite.ParseURL(f.databaseURL)
		if err != nil {
			return providers.Provider{}, "", "", err
		}
		// Opening would create an empty database where there is none.
		if _, err := os.Stat(path); err != nil {
			return providers.Provider{}, "", "", noSecret
		}
	}
	st, err := openStore(ctx, f.databaseURL, slog.New(slog.DiscardHandler))
	if err != nil {
		return providers.Provider{}, "", "", fmt.Errorf("read the generated secret: %w", err)
	}
	defer st.Close()
	s, err := st.GetGeneratedSecret(ctx, provider.SecretEnv)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return providers.Provider{}, "", "", noSecret
		}
		return providers.Provider{}, "", "", fmt.Errorf("read the generated secret: %w", err)
	}
	return provider, s, fmt.Sprintf("the secret generated in %s: set --database-url (or GATEWAY_DATABASE_URL) to the database the gateway runs on, %s, or --secret",
		dbURL, provider.SecretEnv), nil
}

// redactURL hides a database URL's password for messages.
func redactURL(s string) string { return postgres.Redact(s, s) }

// inferEvent is the event header value: --event, else what the provider's
// adapter reads from the payload.
func inferEvent(provider providers.Provider, event string, body []byte) (string, error) {
	if event != "" {
		return event, nil
	}
	if ev, ok := provider.EventFromPayload(body); ok {
		return ev, nil
	}
	return "", fmt.Errorf("cannot tell the %s event from the payload: pass --event (the %s value)", provider.Name, provider.EventHeader)
}

// waitDelivery polls the delivery until its status is final (at most
// f.waitTimeout), prints it with the task it touched, and fails when the
// delivery failed.
func waitDelivery(ctx context.Context, f sendFlags, id string, stdout io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, f.waitTimeout)
	defer cancel()
	var d struct {
		Event     string  `json:"event"`
		Status    string  `json:"status"`
		Attempts  int     `json:"attempts"`
		LastError *string `json:"last_error"`
		Outcome   *struct {
			TaskID     *string `json:"task_id"`
			ExternalID *string `json:"external_id"`
			Action     *string `json:"action"`
			Result     *string `json:"result"`
		} `json:"outcome"`
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if err := getAPI(ctx, f, "/api/v1/deliveries/"+url.PathEscape(id), &d); err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("delivery %s not processed within %s (--wait-timeout)", id, f.waitTimeout)
			}
			return fmt.Errorf("read delivery %s: %w", id, err)
		}
		if store.IsFinished(d.Status) {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("delivery %s is still %s after %s (--wait-timeout)", id, d.Status, f.waitTimeout)
		case <-tick.C:
		}
	}
	if d.Status == store.DeliveryFailed {
		fmt.Fprintf(stdout, "delivery %s (%s): failed after %d attempt(s): %s\n", id, d.Event, d.Attempts, deref(d.LastError))
		return fmt.Errorf("delivery %s failed", id)
	}
	var taskID, externalID, action, result string
	if d.Outcome != nil {
		taskID, externalID = deref(d.Outcome.TaskID), deref(d.Outcome.ExternalID)
		action, result = deref(d.Outcome.Action), deref(d.Outcome.Result)
	}
	fmt.Fprintf(stdout, "delivery %s (%s): %s\n", id, d.Event, outcomeText(d.Status, action, result))
	switch {
	case taskID == "":
		return nil
	case d.Status == store.DeliverySucceeded && action == "delete":
		// The task is gone: there is nothing to read, and no error to show.
		fmt.Fprintf(stdout, "task deleted (%s, id %s)\n", externalID, taskID)
		return nil
	}
	var tk struct {
		Identifier string `json:"identifier"`
		Title      string `json:"title"`
		ExternalID string `json:"external_id"`
	}
	if err := getAPI(ctx, f, "/api/v1/tasks/"+url.PathEscape(taskID), &tk); err != nil {
		fmt.Fprintf(stdout, "task %s (%s): cannot read it: %v\n", taskID, externalID, err)
		return nil
	}
	fmt.Fprintf(stdout, "task %s %q (%s, id %s)\n", tk.Identifier, tk.Title, tk.ExternalID, taskID)
	return nil
}

// outcomeText says what a finished delivery did: its status, the result the
// gateway recorded, and its action, marked "not applied" when the delivery
// was ignored, suppressed, a stale update skipped or unchanged (a succeeded status
// alone does not say the action was taken).
func outcomeText(status, action, result string) string {
	text := status
	if result != "" {
		text += " — " + result
	}
	switch {
	case action == "" || action == string(connectors.ActionIgnore):
	case status == store.DeliverySucceeded && result != ingest.StaleUpdateSkipped && result != ingest.UnchangedSkipped:
		text += " (action " + action + ")"
	default:
		text += " (action " + action + " not applied)"
	}
	return text
}

// getAPI GETs an operator API path with the admin token (callAPI) and
// decodes the JSON answer into out.
func getAPI(ctx context.Context, f sendFlags, path string, out any) error {
	answer, err := callAPI(ctx, f.target, f.adminToken, http.MethodGet, path, nil)
	if err != nil {
		return err
	}
	return json.Unmarshal(answer, out)
}

// callAPI performs an operator request, with body as JSON unless nil, and
// returns the answer; an answer other than 2xx is an error carrying the
// API's message.
func callAPI(ctx context.Context, target, token, method, path string, body any) ([]byte, error) {
	if token == "" {
		return nil, errors.New("an admin token is required: --admin-token or GATEWAY_ADMIN_TOKEN")
	}
	if _, set := ctx.Deadline(); !set {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
	}
	var payload io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		payload = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(target, "/")+path, payload)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, reachError(err, target, "--url, or GATEWAY_LISTEN (as serve listens) for its default")
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("read the answer: %w", err)
	}
	if resp.StatusCode >= 300 {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(out, &e) == nil && e.Error != "" {
			return nil, fmt.Errorf("gateway answered %s: %s", resp.Status, e.Error)
		}
		return nil, fmt.Errorf("gateway answered %s", resp.Status)
	}
	return out, nil
}

// reachError explains a request that reached no gateway (nothing listens
// at target, or its host is unknown): the address tried, and how to give
// the command another (set, a phrase naming the flags and environment).
// Any other error is returned as it is.
func reachError(err error, target, set string) error {
	var op *net.OpError
	if !errors.As(err, &op) || op.Op != "dial" {
		return err
	}
	return fmt.Errorf("no gateway answered at %s (%v): is it running there? Give its address with %s", target, op.Err, set)
}

// operatorCmd holds the flags every operator command has.
type operatorCmd struct {
	target, token, output string
}

// operatorFlags registers the flags every operator command has.
func operatorFlags(name string, env Env) (*flag.FlagSet, *operatorCmd) {
	var c operatorCmd
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.StringVar(&c.target, "url", defaultURL(env), "gateway base URL (its default follows env GATEWAY_LISTEN)")
	secretFlag(fs, &c.token, "admin-token", envOr(env, "GATEWAY_ADMIN_TOKEN", ""), "admin `token` (env GATEWAY_ADMIN_TOKEN)", hidden)
	fs.StringVar(&c.output, "o", outputTable, "output: table | json (the API's answer)")
	return fs, &c
}

// parse parses an operator command's arguments and checks -o.
func (c *operatorCmd) parse(fs *flag.FlagSet, u usageText, args []string, stdout, stderr io.Writer) error {
	if err := parseFlags(fs, u, args, stdout, stderr); err != nil {
		return err
	}
	if err := checkOutput(c.output); err != nil {
		return usageError(stderr, fs, u, "%v", err)
	}
	return nil
}

// run performs the command's request and prints the answer through table,
// or as JSON with -o json.
func run[T any](ctx context.Context, c *operatorCmd, method, path string, body any, stdout io.Writer, table func(io.Writer, T)) error {
	answer, err := callAPI(ctx, c.target, c.token, method, path, body)
	if err != nil {
		return err
	}
	return printAnswer(stdout, c.output, answer, table)
}

var (
	deliveriesUsage = usageText{
		line: "deliveries list|get ID|replay [ID] [flags]",
		summary: "Operator tools for webhook deliveries, through the operator API with the admin token.\n\n" +
			"subcommands:\n" +
			"  list        list deliveries (filter by status, connection, event, time, error, external ID or\n" +
			"              the provider's delivery ID)\n" +
			"  get ID      show one delivery: status, outcome, headers (secrets removed) and body\n" +
			"  replay ID   process a finished delivery again\n" +
			"  replay      process again the finished deliveries the filters match (bulk replay)\n\n" +
			"Run \"gateway deliveries <subcommand> -h\" for a subcommand's flags.",
		example: "gateway deliveries list --status failed",
	}
	deliveriesListUsage = usageText{
		line:    "deliveries list [flags]",
		summary: "Lists deliveries, newest first, one page at a time (--cursor takes the next page); every filter\ngiven applies.",
		example: "gateway deliveries list --status failed --connection github --since 2h --limit 20",
	}
	deliveriesGetUsage = usageText{
		line:    "deliveries get ID [flags]",
		summary: "Shows one delivery: its status, outcome, headers (secrets removed) and body.",
		example: "gateway deliveries get 0193a5e2-8c1f-7d4e-9b2a-3f6c8d1e2a4b",
	}
	deliveriesReplayUsage = usageText{
		line: "deliveries replay ID | replay --FILTER VALUE... [--dry-run] [--max N] [flags]",
		summary: "Queues a finished delivery again, or with filters and no ID every finished delivery they match\n" +
			"(newest first, at most --max; queued, processing and retrying ones are skipped). A replayed delivery\n" +
			"is processed with today's code and configuration and never re-verified. --dry-run counts and\n" +
			"changes nothing.",
		example: "gateway deliveries replay --status failed --connection github --since 2h --dry-run",
	}
)

// deliveryFilterFlags registers the delivery filters (the API's, with
// --since for a received_after relative to now) and returns what reads
// them once parsed, as the API names them, the empty ones left out.
func deliveryFilterFlags(fs *flag.FlagSet) func() (map[string]string, error) {
	status := fs.String("status", "", "filter by status: queued, processing, retrying, succeeded, ignored, suppressed or failed")
	conn := fs.String("connection", "", "filter by connection")
	event := fs.String("event", "", "filter by event and its actions (issues matches issues.opened, issues.closed...; issues.opened only itself)")
	since := fs.Duration("since", 0, "received within this long before now (e.g. 2h); sets received_after")
	after := fs.String("received-after", "", "received at or after this RFC 3339 time")
	before := fs.String("received-before", "", "received at or before this RFC 3339 time")
	errContains := fs.String("error-contains", "", "filter by a substring of the last error (ignoring case)")
	extID := fs.String("external-id", "", "filter by the external ID of the delivery's outcome")
	key := fs.String("delivery-key", "", "find the deliveries of a provider's delivery ID (GitHub's X-GitHub-Delivery GUID...),\nwith or without the \"<hook id>:\" the gateway stores before a GitHub GUID")
	return func() (map[string]string, error) {
		if *since < 0 || (*since > 0 && *after != "") {
			return nil, errors.New("--since must be positive, and not given with --received-after")
		}
		if *since > 0 {
			*after = time.Now().Add(-*since).UTC().Format(time.RFC3339Nano)
		}
		out := map[string]string{}
		for k, v := range map[string]string{"status": *status, "connection": *conn, "event": *event, "received_after": *after,
			"received_before": *before, "error_contains": *errContains, "external_id": *extID, "delivery_key": *key} {
			if v != "" {
				out[k] = v
			}
		}
		return out, nil
	}
}

// deliveries: list [filters] [--limit N] [--cursor X] | get ID | replay ID | replay filters [--dry-run] [--max N].
func deliveries(ctx context.Context, args []string, env Env, stdout, stderr io.Writer) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return needSubcommand("deliveries", deliveriesUsage, args, stdout, stderr)
	}
	switch args[0] {
	case "list":
		fs, c := operatorFlags("deliveries list", env)
		filters := deliveryFilterFlags(fs)
		limit := fs.String("limit", "", "page size")
		cursor := fs.String("cursor", "", "next_cursor of the previous page")
		if err := c.parse(fs, deliveriesListUsage, args[1:], stdout, stderr); err != nil {
			return err
		}
		if fs.NArg() > 0 {
			return usageError(stderr, fs, deliveriesListUsage, "unexpected argument %q", fs.Arg(0))
		}
		f, err := filters()
		if err != nil {
			return usageError(stderr, fs, deliveriesListUsage, "%v", err)
		}
		q := url.Values{}
		for k, v := range f {
			q.Set(k, v)
		}
		for k, v := range map[string]string{"limit": *limit, "cursor": *cursor} {
			if v != "" {
				q.Set(k, v)
			}
		}
		return run(ctx, c, http.MethodGet, "/api/v1/deliveries?"+q.Encode(), nil, stdout, deliveriesTable)
	case "get":
		fs, c := operatorFlags("deliveries get", env)
		if err := c.parse(fs, deliveriesGetUsage, idLast(args[1:]), stdout, stderr); err != nil {
			return err
		}
		if fs.NArg() != 1 {
			return usageError(stderr, fs, deliveriesGetUsage, "exactly one delivery ID is required")
		}
		return run(ctx, c, http.MethodGet, "/api/v1/deliveries/"+url.PathEscape(fs.Arg(0)), nil, stdout, deliveryTable)
	case "replay":
		u := deliveriesReplayUsage
		fs, c := operatorFlags("deliveries replay", env)
		filters := deliveryFilterFlags(fs)
		dryRun := fs.Bool("dry-run", false, "bulk: count what would be replayed, change nothing")
		limit := fs.Int("max", 0, "bulk: replay at most this many of the newest matches (default: the gateway's, 10000)")
		if err := c.parse(fs, u, idLast(args[1:]), stdout, stderr); err != nil {
			return err
		}
		f, err := filters()
		if err != nil {
			return usageError(stderr, fs, u, "%v", err)
		}
		bulk := len(f) > 0 || *dryRun || *limit != 0
		switch {
		case fs.NArg() > 1 || (fs.NArg() == 1 && bulk):
			return usageError(stderr, fs, u, "exactly one delivery ID is required to replay one delivery, or none with filters to replay many")
		case fs.NArg() == 1:
			return run(ctx, c, http.MethodPost, "/api/v1/deliveries/"+url.PathEscape(fs.Arg(0))+"/replay", nil, stdout, replayedOneTable)
		case len(f) == 0:
			return usageError(stderr, fs, u, "a delivery ID, or at least one filter to replay many, is required")
		}
		body := map[string]any{"dry_run": *dryRun}
		for k, v := range f {
			body[k] = v
		}
		if *limit != 0 {
			body["max"] = *limit
		}
		return run(ctx, c, http.MethodPost, "/api/v1/deliveries/replay", body, stdout, replayTable(*dryRun))
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
		fs, c := operatorFlags("suppressions list", env)
		ws := fs.String("workspace", "", "workspace id (default: every workspace)")
		limit := fs.String("limit", "", "page size")
		cursor := fs.String("cursor", "", "next_cursor of the previous page")
		if err := c.parse(fs, suppressionsListUsage, args[1:], stdout, stderr); err != nil {
			return err
		}
		if fs.NArg() > 0 {
			return usageError(stderr, fs, suppressionsListUsage, "unexpected argument %q", fs.Arg(0))
		}
		q := url.Values{}
		for k, v := range map[string]string{"workspace_id": *ws, "limit": *limit, "cursor": *cursor} {
			if v != "" {
				q.Set(k, v)
			}
		}
		return run(ctx, c, http.MethodGet, "/api/v1/suppressions?"+q.Encode(), nil, stdout, suppressionsTable)
	case "clear":
		fs, c := operatorFlags("suppressions clear", env)
		ws := fs.String("workspace", "", "workspace id (required)")
		ext := fs.String("external-id", "", "external id (required)")
		if err := c.parse(fs, suppressionsClearUsage, args[1:], stdout, stderr); err != nil {
			return err
		}
		switch {
		case *ws == "" || *ext == "":
			return usageError(stderr, fs, suppressionsClearUsage, "--workspace and --external-id are required")
		case fs.NArg() > 0:
			return usageError(stderr, fs, suppressionsClearUsage, "unexpected argument %q", fs.Arg(0))
		}
		q := url.Values{"workspace_id": {*ws}, "external_id": {*ext}}
		if _, err := callAPI(ctx, c.target, c.token, http.MethodDelete, "/api/v1/suppressions?"+q.Encode(), nil); err != nil {
			return err
		}
		return printCleared(stdout, c.output, *ws, *ext)
	}
	return usageError(stderr, flag.NewFlagSet("suppressions", flag.ContinueOnError), suppressionsUsage, "unknown subcommand %q", args[0])
}
