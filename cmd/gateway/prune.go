package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/trackergateway/gateway/internal/config"
	"github.com/trackergateway/gateway/internal/retention"
	"github.com/trackergateway/gateway/internal/store"
)

var pruneUsage = usageText{
	line: "prune [--dry-run] [flags]",
	summary: "Runs one retention pass and prints what it deleted per kind: the succeeded, ignored and suppressed\n" +
		"deliveries that finished longer ago than retention.processed, the failed ones older than\n" +
		"retention.failed, the outbox events every consumer has read and no enabled webhook subscription\n" +
		"still owes that are older than retention.events (the --config file's retention block; without one\n" +
		"168h, 720h and 168h), and the subscriptions' deliveries of the events removed. Queued,\n" +
		"processing and retrying deliveries, tasks, suppressions, aliases and associations are never\n" +
		"deleted. --dry-run deletes nothing and prints what a pass would delete. A pass a running gateway\n" +
		"is making at the same moment is not doubled: this one then fails and may be run again.",
	example: "gateway prune --dry-run --config gateway.yaml\n" +
		"gateway prune --database-url postgres://gateway@/gateway?host=/var/run/postgresql -o json",
}

// pruneFlags are prune's flags: serve's database and config flags, and its
// own.
type pruneFlags struct {
	storeFlags
	configPath string
	dryRun     bool
	output     string
}

func parsePrune(args []string, env Env, stdout, stderr io.Writer) (pruneFlags, error) {
	var f pruneFlags
	fs := flag.NewFlagSet("prune", flag.ContinueOnError)
	f.register(fs, env)
	fs.StringVar(&f.configPath, "config", envOr(env, "GATEWAY_CONFIG", ""), "YAML config file whose retention block applies (env GATEWAY_CONFIG)")
	fs.BoolVar(&f.dryRun, "dry-run", false, "count what a pass would delete, delete nothing")
	fs.StringVar(&f.output, "o", outputTable, "output: table | json")
	if err := parseFlags(fs, pruneUsage, args, stdout, stderr); err != nil {
		return f, err
	}
	if fs.NArg() > 0 {
		return f, usageError(stderr, fs, pruneUsage, "unexpected argument %q", fs.Arg(0))
	}
	if err := checkOutput(f.output); err != nil {
		return f, usageError(stderr, fs, pruneUsage, "%v", err)
	}
	return f, nil
}

// prune runs one retention pass (retention.Pruner.RunOnce).
func prune(ctx context.Context, args []string, env Env, stdout, stderr io.Writer) error {
	f, err := parsePrune(args, env, stdout, stderr)
	if err != nil {
		return err
	}
	logger := newLogger(stderr, f.logLevel)
	st, err := openMigrated(ctx, f.storeFlags, logger)
	if err != nil {
		return err
	}
	defer st.Close()
	// Without a file the zero-config defaults apply; the zero-config
	// connections (and the secrets they would generate) play no part here.
	var cfg config.Config
	if f.configPath != "" {
		if cfg, err = loadConfig(ctx, f.configPath, env, st, stdout); err != nil {
			return err
		}
	}
	policy, err := cfg.Retention.Policy()
	if err != nil {
		return err
	}
	pruner := retention.New(st, logger, time.Now, policy)
	// Like the gateway's own passes, the deletions are derived work.
	counts, err := pruner.RunOnce(store.WithDeferredSync(ctx), f.dryRun)
	if errors.Is(err, retention.ErrBusy) {
		return errors.New("a gateway is pruning this database right now; nothing was deleted, run it again later")
	}
	if err != nil {
		return err
	}
	if f.output == outputJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			DryRun bool `json:"dry_run"`
			retention.Counts
		}{f.dryRun, counts})
	}
	header := "DELETED"
	if f.dryRun {
		header = "WOULD DELETE"
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "KIND\t%s\n", header)
	fmt.Fprintf(tw, "%s\t%d\n", retention.KindDeliveriesProcessed, counts.DeliveriesProcessed)
	fmt.Fprintf(tw, "%s\t%d\n", retention.KindDeliveriesFailed, counts.DeliveriesFailed)
	fmt.Fprintf(tw, "%s\t%d\n", retention.KindEvents, counts.Events)
	fmt.Fprintf(tw, "%s\t%d\n", retention.KindOutboundDeliveries, counts.OutboundDeliveries)
	return tw.Flush()
}
