package main

import (
	"context"
	"flag"
	"io"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trackergateway/gateway/connectors/providers"
	"github.com/trackergateway/gateway/internal/config"
	"github.com/trackergateway/gateway/internal/events"
	"github.com/trackergateway/gateway/internal/httpapi"
	"github.com/trackergateway/gateway/internal/idempotency"
	"github.com/trackergateway/gateway/internal/inbox"
	"github.com/trackergateway/gateway/internal/mcpserver"
	"github.com/trackergateway/gateway/internal/tasks"
)

var mcpUsage = usageText{
	line: "mcp [flags]",
	summary: "Serves the agent tools (Model Context Protocol) on stdin and stdout, for an MCP client that starts\n" +
		"the gateway as a local process; docs/agents.md shows how to add it. It acts as the admin: every\n" +
		"workspace, and the operator tools. It opens the database as serve does (applying the migrations,\n" +
		"and the workspaces of --config, or the zero-config default workspace), and nothing else: it\n" +
		"processes no webhook, serves no HTTP and generates no secret or token. Logs go to stderr.",
	example: "gateway mcp --database-url sqlite:./data/gateway.db\n" +
		"gateway mcp --config gateway.yaml --database-url postgres://gateway@/gateway?host=/var/run/postgresql",
}

// stdioPrincipal is who the stdio tools act as: whoever may start the
// process and read its database is its administrator already.
var stdioPrincipal = httpapi.Principal{Name: "mcp-stdio", Admin: true}

// mcpFlags are mcp's flags: serve's database and config flags.
type mcpFlags struct {
	storeFlags
	configPath string
}

func parseMCP(args []string, env Env, stdout, stderr io.Writer) (mcpFlags, error) {
	var f mcpFlags
	fs := flag.NewFlagSet("mcp", flag.ContinueOnError)
	f.register(fs, env)
	fs.StringVar(&f.configPath, "config", envOr(env, "GATEWAY_CONFIG", ""), "YAML config file whose workspaces are applied (env GATEWAY_CONFIG)")
	if err := parseFlags(fs, mcpUsage, args, stdout, stderr); err != nil {
		return f, err
	}
	if fs.NArg() > 0 {
		return f, usageError(stderr, fs, mcpUsage, "unexpected argument %q", fs.Arg(0))
	}
	return f, nil
}

// mcpStdio serves the MCP tools on the process's stdin and stdout until
// the client closes them or ctx ends.
func mcpStdio(ctx context.Context, args []string, env Env, stdout, stderr io.Writer) error {
	f, err := parseMCP(args, env, stdout, stderr)
	if err != nil {
		return err
	}
	// stdout carries the protocol: everything else goes to stderr.
	logger := newLogger(stderr, f.logLevel)
	st, err := openMigrated(ctx, f.storeFlags, logger)
	if err != nil {
		return err
	}
	defer st.Close()
	// Only the workspaces: the connections' secrets and the tokens serve
	// would generate and print play no part here.
	workspaces := []config.Workspace{config.DefaultWorkspace()}
	if f.configPath != "" {
		cfg, err := config.LoadEnv(f.configPath, env)
		if err != nil {
			return err
		}
		workspaces = cfg.Workspaces
	}
	if err := applyWorkspaces(ctx, workspaces, st, time.Now().UTC()); err != nil {
		return err
	}
	now := time.Now
	api := tasks.NewAPI(tasks.NewService(st, logger, now), idempotency.New(st, logger, now, providers.ContributionKinds()), nil, st, logger, now)
	// Events another process commits reach list_task_events's wait by
	// notification on PostgreSQL; on SQLite, by its polling.
	feed := events.NewFeed(st, logger)
	go feed.Run(ctx)
	tools := mcpserver.New(api, inbox.NewOperators(st, logger, now), feed, logger, moduleVersion())
	logger.Info("mcp serving on stdio", "dialect", st.Dialect())
	return tools.Server(stdioPrincipal).Run(ctx, &mcp.StdioTransport{})
}
