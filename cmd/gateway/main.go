// Command gateway is the tracker gateway: `gateway serve` runs it, `gateway
// migrate` applies the schema, `gateway send` signs and posts a payload as a
// provider would, `gateway deliveries|suppressions|prune|recover` are operator
// tools, `gateway subscriptions` manages a workspace's webhook subscriptions,
// `gateway mcp` serves the agent tools on stdio and `gateway version` says
// which build this is. Every command answers -h and --help. This
// package wires components and parses flags; the logic lives in internal/
// and connectors/.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The first signal starts a graceful stop; restoring the default
	// action makes a second one end the process at once.
	context.AfterFunc(ctx, stop)
	os.Exit(Main(ctx, os.Args[1:], os.LookupEnv, os.Stdout, os.Stderr))
}

// Env looks up an environment variable.
type Env func(string) (string, bool)

var (
	// errUsage: the command line cannot run; the usage went to stderr
	// (exit 2).
	errUsage = errors.New("usage")
	// errHelp: -h or --help; the usage went to stdout (exit 0).
	errHelp = errors.New("help requested")
)

// Main runs one command and returns the process exit code. Tests call it
// directly, exactly as the binary does.
func Main(ctx context.Context, args []string, env Env, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	var err error
	switch args[0] {
	case "serve":
		err = serve(ctx, args[1:], env, stdout, stderr)
	case "migrate":
		err = migrate(ctx, args[1:], env, stdout, stderr)
	case "send":
		err = send(ctx, args[1:], env, stdout, stderr)
	case "deliveries":
		err = deliveries(ctx, args[1:], env, stdout, stderr)
	case "suppressions":
		err = suppressions(ctx, args[1:], env, stdout, stderr)
	case "subscriptions":
		err = subscriptions(ctx, args[1:], env, stdout, stderr)
	case "installations":
		err = installations(ctx, args[1:], env, stdout, stderr)
	case "prune":
		err = prune(ctx, args[1:], env, stdout, stderr)
	case "recover":
		err = recoverMissed(ctx, args[1:], env, stdout, stderr)
	case "mcp":
		err = mcpStdio(ctx, args[1:], env, stdout, stderr)
	case "version":
		err = version(args[1:], stdout, stderr)
	case "help":
		return help(ctx, args[1:], env, stdout, stderr)
	case "-h", "--help":
		usage(stdout)
		return 0
	default:
		fmt.Fprintf(stderr, "gateway: unknown command %q\n", args[0])
		usage(stderr)
		return 2
	}
	switch {
	case err == nil, errors.Is(err, errHelp):
		return 0
	case errors.Is(err, errUsage):
		return 2
	}
	fmt.Fprintf(stderr, "gateway %s: %v\n", args[0], err)
	return 1
}

func usage(w io.Writer) {
	fmt.Fprint(w, `usage: gateway <command> [flags]

commands:
  serve          run the gateway (webhooks, REST API, workers)
  migrate        apply database migrations and exit
  send           sign and post a payload as a provider would
  deliveries     list | get ID | replay ID | replay --FILTER... (bulk)  (operators)
  suppressions   list | clear --workspace W --external-id X  (operators)
  subscriptions  list | create | get | update | delete | rotate-secret | deliveries | replay  (webhooks out)
  installations  --connection ID: a GitHub App's installations  (operators)
  prune          delete expired deliveries and read events once [--dry-run]
  recover        ask a provider to redeliver what it failed to deliver  (operators)
  mcp            serve the agent tools (Model Context Protocol) on stdio
  version        print the build's version and revision
  help           show a command's usage

Run "gateway <command> -h" for a command's flags.

example:
  gateway serve --database-url sqlite:./data/gateway.db
`)
}

var helpUsage = usageText{
	line:    "help [command [subcommand]]",
	summary: "Shows the command list, or a command's usage (the same as \"gateway <command> -h\").",
	example: "gateway help deliveries list",
}

// help prints the command list, or the usage of the command it names.
func help(ctx context.Context, args []string, env Env, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("help", flag.ContinueOnError)
	switch err := parseFlags(fs, helpUsage, args, stdout, stderr); {
	case errors.Is(err, errHelp):
		return 0
	case err != nil:
		return 2
	}
	if fs.NArg() == 0 {
		usage(stdout)
		return 0
	}
	return Main(ctx, append(fs.Args(), "-h"), env, stdout, stderr)
}

// usageText is what a command's usage says besides its flags.
type usageText struct {
	line    string // after "usage: gateway "
	summary string
	example string // one or more lines, each a full command
}

func printUsage(w io.Writer, fs *flag.FlagSet, u usageText) {
	fmt.Fprintf(w, "usage: gateway %s\n\n%s\n", u.line, u.summary)
	hasFlags := false
	fs.VisitAll(func(*flag.Flag) { hasFlags = true })
	if hasFlags {
		fmt.Fprint(w, "\nflags:\n")
		out := fs.Output()
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(out)
	}
	fmt.Fprint(w, "\nexample:\n")
	for line := range strings.Lines(u.example) {
		fmt.Fprintf(w, "  %s", line)
	}
	fmt.Fprintln(w)
}

// parseFlags parses args into fs. -h or --help prints the usage on stdout
// and returns errHelp; a flag the command does not have prints the flag
// package's message and the usage on stderr and returns errUsage.
func parseFlags(fs *flag.FlagSet, u usageText, args []string, stdout, stderr io.Writer) error {
	fs.SetOutput(stderr)
	// The flag package would print the usage to stderr for -h as well; the
	// caller decides where it goes.
	fs.Usage = func() {}
	switch err := fs.Parse(args); {
	case err == nil:
		return nil
	case errors.Is(err, flag.ErrHelp):
		printUsage(stdout, fs, u)
		return errHelp
	default:
		printUsage(stderr, fs, u)
		return errUsage
	}
}

// usageError prints why the command line cannot run and the usage on
// stderr, and returns errUsage.
func usageError(stderr io.Writer, fs *flag.FlagSet, u usageText, format string, args ...any) error {
	fmt.Fprintf(stderr, "gateway %s: %s\n", fs.Name(), fmt.Sprintf(format, args...))
	printUsage(stderr, fs, u)
	return errUsage
}
