package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"text/tabwriter"
	"time"

	"github.com/trackergateway/gateway/internal/recovery"
)

var recoverUsage = usageText{
	line: "recover --connection ID [--since 24h] [--dry-run] [-o table|json] [flags]",
	summary: "Finds the webhook deliveries the connection's provider failed to make (every attempt failed and the\n" +
		"inbox does not hold them) within --since (at most 72h: GitHub keeps three days) and asks the provider\n" +
		"to redeliver each, once: the request is recorded before it is sent, so repeated runs and replicas\n" +
		"never ask twice. Needs the connection's api_token and hooks. --dry-run lists what it would ask for and\n" +
		"asks nothing. Runs through the operator API with the admin token.",
	example: "gateway recover --connection gh-main --since 6h --dry-run",
}

// recoverMissed: POST /api/v1/connections/{id}/recover, printed as a
// table or as the API's JSON.
func recoverMissed(ctx context.Context, args []string, env Env, stdout, stderr io.Writer) error {
	fs, target, token := operatorFlags("recover", env)
	connection := fs.String("connection", "", "connection id (required)")
	since := fs.Duration("since", recovery.DefaultWindow, "how far back to look, at most 72h")
	dryRun := fs.Bool("dry-run", false, "list what would be asked for, ask nothing")
	output := fs.String("o", "table", "output: table | json")
	if err := parseFlags(fs, recoverUsage, args, stdout, stderr); err != nil {
		return err
	}
	switch {
	case *connection == "":
		return usageError(stderr, fs, recoverUsage, "--connection is required")
	case fs.NArg() > 0:
		return usageError(stderr, fs, recoverUsage, "unexpected argument %q", fs.Arg(0))
	case *output != "table" && *output != "json":
		return usageError(stderr, fs, recoverUsage, "-o %q: must be table or json", *output)
	}
	path := "/api/v1/connections/" + url.PathEscape(*connection) + "/recover"
	body := recovery.RecoverRequest{Since: since.String(), DryRun: *dryRun}
	if *output == "json" {
		return apiRequest(ctx, *target, *token, http.MethodPost, path, body, stdout)
	}
	var answer bytes.Buffer
	if err := apiRequest(ctx, *target, *token, http.MethodPost, path, body, &answer); err != nil {
		_, _ = answer.WriteTo(stdout)
		return err
	}
	var res recovery.Result
	if err := json.Unmarshal(answer.Bytes(), &res); err != nil {
		return fmt.Errorf("read the gateway's answer: %w", err)
	}
	return printRecovery(stdout, res, *dryRun)
}

// printRecovery prints a recovery result as a table.
func printRecovery(w io.Writer, res recovery.Result, dryRun bool) error {
	verb := "redelivered"
	if dryRun {
		verb = "would redeliver"
	}
	fmt.Fprintf(w, "checked %d, missing %d, %s %d\n", res.Checked, res.Missing, verb, res.Redelivered)
	if len(res.Deliveries) > 0 {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "\nGUID\tHOOK\tDELIVERY\tEVENT\tDELIVERED AT\tSTATUS\tREDELIVERED\tREQUEST")
		for _, d := range res.Deliveries {
			event := d.Event
			if d.Action != "" {
				event += "." + d.Action
			}
			request := d.Request
			if d.Error != "" {
				request += ": " + d.Error
			}
			fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%d\t%t\t%s\n", d.GUID, d.HookID, d.DeliveryID, event,
				d.DeliveredAt.Format(time.RFC3339), d.StatusCode, d.Redelivered, request)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	for _, u := range res.Unfinished {
		fmt.Fprintf(w, "not finished: %s\n", u)
	}
	return nil
}
