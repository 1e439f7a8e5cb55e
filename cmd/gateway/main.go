// Command gateway is the tracker gateway: `gateway serve` runs it, `gateway
// migrate` applies the schema, `gateway send` signs and posts a payload as a
// provider would, and `gateway deliveries|suppressions` are operator tools.
// This package wires components and parses flags; the logic lives in
// internal/ and connectors/.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
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
		err = send(ctx, args[1:], env, stdout)
	case "deliveries":
		err = deliveries(ctx, args[1:], env, stdout)
	case "suppressions":
		err = suppressions(ctx, args[1:], env, stdout)
	case "help", "-h", "--help":
		usage(stdout)
		return 0
	default:
		fmt.Fprintf(stderr, "gateway: unknown command %q\n", args[0])
		usage(stderr)
		return 2
	}
	if err != nil {
		if err == errUsage {
			return 2
		}
		fmt.Fprintf(stderr, "gateway %s: %v\n", args[0], err)
		return 1
	}
	return 0
}

func usage(w io.Writer) {
	fmt.Fprint(w, `usage: gateway <command> [flags]

commands:
  serve          run the gateway (webhooks, REST API, workers)
  migrate        apply database migrations and exit
  send           sign and post a payload as a provider would
  deliveries     list | get ID | replay ID  (operators)
  suppressions   list | clear --workspace W --external-id X  (operators)

Run "gateway <command> -h" for a command's flags.
`)
}
