package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/trackergateway/gateway/internal/recovery"
)

var recoverUsage = usageText{
	line: "recover --connection ID [--since 24h] [--dry-run] [-o table|json] [flags]",
	summary: "Finds the webhook deliveries the connection's provider failed to make (every attempt failed and the\n" +
		"inbox does not hold them) within --since and asks the provider to redeliver each, once: the request\n" +
		"is recorded before it is sent, so repeated runs and replicas never ask twice. Needs the connection's\n" +
		"api_token and hooks (or a GitHub App). For a provider that keeps no delivery history (Gitea, Forgejo,\n" +
		"Linear) it lists the items changed within --since instead and records each state the gateway does\n" +
		"not have as a delivery, once per item and update; that needs api_token alone. --since is at most 72h\n" +
		"(GitHub keeps three days of hook deliveries; a refused --since says why for the connection's\n" +
		"provider). --dry-run lists what it would do and does nothing. Runs through the operator API with the\n" +
		"admin token.",
	example: "gateway recover --connection gh-main --since 6h --dry-run",
}

// recoverMissed: POST /api/v1/connections/{id}/recover, printed as a
// table or as the API's JSON.
func recoverMissed(ctx context.Context, args []string, env Env, stdout, stderr io.Writer) error {
	fs, c := operatorFlags("recover", env)
	connection := fs.String("connection", "", "connection id (required)")
	since := fs.Duration("since", recovery.DefaultWindow, "how far back to look, at most 72h")
	dryRun := fs.Bool("dry-run", false, "list what would be asked for, ask nothing")
	if err := c.parse(fs, recoverUsage, args, stdout, stderr); err != nil {
		return err
	}
	switch {
	case *connection == "":
		return usageError(stderr, fs, recoverUsage, "--connection is required")
	case fs.NArg() > 0:
		return usageError(stderr, fs, recoverUsage, "unexpected argument %q", fs.Arg(0))
	}
	// A run pages through the provider and waits out its rate limits: it
	// may take longer than the other operator requests.
	ctx, cancel := context.WithTimeout(ctx, recoverTimeout)
	defer cancel()
	path := "/api/v1/connections/" + url.PathEscape(*connection) + "/recover"
	body := recovery.RecoverRequest{Since: since.String(), DryRun: *dryRun}
	return run(ctx, c, http.MethodPost, path, body, stdout, recoveryTable(*dryRun))
}

// recoverTimeout bounds a recover request; the gateway's own write timeout
// (60 s) comes first.
const recoverTimeout = 2 * time.Minute

// recoveryTable prints a recovery result as a table.
func recoveryTable(dryRun bool) func(io.Writer, recovery.Result) {
	return func(w io.Writer, res recovery.Result) { printRecovery(w, res, dryRun) }
}

func printRecovery(w io.Writer, res recovery.Result, dryRun bool) {
	if res.Method == recovery.MethodReconcile {
		printReconciliation(w, res, dryRun)
		return
	}
	verb, column := "redelivered", "REDELIVERED"
	if dryRun {
		verb, column = "would redeliver", "WOULD REDELIVER"
	}
	fmt.Fprintf(w, "checked %d, missing %d, %s %d\n", res.Checked, res.Missing, verb, res.Count())
	if len(res.Deliveries) > 0 {
		fmt.Fprintf(w, "\nGUID\tHOOK\tDELIVERY\tEVENT\tDELIVERED AT\tSTATUS\t%s\tREQUEST\n", column)
		for _, d := range res.Deliveries {
			event := d.Event
			if d.Action != "" {
				event += "." + d.Action
			}
			request := d.Request
			if d.Error != "" {
				request += ": " + d.Error
			}
			fmt.Fprintf(w, "%s\t%d\t%d\t%s\t%s\t%d\t%t\t%s\n", d.GUID, d.HookID, d.DeliveryID, event,
				d.DeliveredAt.Format(time.RFC3339), d.StatusCode, d.Asked(), request)
		}
	}
	printUnfinished(w, res)
}

// printReconciliation prints a run that listed changed items: each state
// the gateway did not have, by its delivery key.
func printReconciliation(w io.Writer, res recovery.Result, dryRun bool) {
	verb, column := "recorded", "RECORDED"
	if dryRun {
		verb, column = "would record", "WOULD RECORD"
	}
	fmt.Fprintf(w, "changed items %d, states missing %d, %s %d\n", res.Checked, res.Missing, verb, res.Count())
	if len(res.Deliveries) > 0 {
		fmt.Fprintf(w, "\nDELIVERY KEY\tEVENT\tUPDATED AT\t%s\tREQUEST\n", column)
		for _, d := range res.Deliveries {
			fmt.Fprintf(w, "%s\t%s\t%s\t%t\t%s\n", d.GUID, d.Event, d.DeliveredAt.Format(time.RFC3339Nano), d.Asked(), d.Request)
		}
	}
	if res.Skipped > 0 {
		fmt.Fprintf(w, "\nSKIPPED (%d, unreadable)\tREASON\n", res.Skipped)
		for _, s := range res.SkippedItems {
			fmt.Fprintf(w, "%s\t%s\n", s.Item, s.Reason)
		}
	}
	printUnfinished(w, res)
}

func printUnfinished(w io.Writer, res recovery.Result) {
	if len(res.Unfinished) > 0 {
		fmt.Fprintln(w, "\nNOT FINISHED\tHOOK ID\tREASON\tERROR")
		for _, u := range res.Unfinished {
			fmt.Fprintf(w, "%s\t%d\t%s\t%s\n", u.Hook, u.HookID, u.Reason, u.Error)
		}
		fmt.Fprintln(w, "\nthe run stopped early: what it read is above; run it again, or with a shorter --since, for the rest")
	}
}
