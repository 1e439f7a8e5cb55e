package main

// How the operator commands print what the API answers: a table people
// read by default, the API's JSON (indented) with -o json for scripts.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/trackergateway/gateway/internal/inbox"
	"github.com/trackergateway/gateway/internal/ingest"
)

// Output formats of the operator commands (-o).
const (
	outputTable = "table"
	outputJSON  = "json"
)

// checkOutput refuses an -o value other than table or json.
func checkOutput(o string) error {
	if o != outputTable && o != outputJSON {
		return fmt.Errorf("-o %q: must be %s or %s", o, outputTable, outputJSON)
	}
	return nil
}

// printAnswer prints the API's answer: as indented JSON with -o json, else
// through table, which decodes it into v first.
func printAnswer[T any](stdout io.Writer, output string, answer []byte, table func(tw io.Writer, v T)) error {
	if output == outputJSON {
		var pretty bytes.Buffer
		if err := json.Indent(&pretty, answer, "", "  "); err != nil {
			return fmt.Errorf("read the answer: %w", err)
		}
		pretty.WriteByte('\n')
		_, err := stdout.Write(pretty.Bytes())
		return err
	}
	var v T
	if err := json.Unmarshal(answer, &v); err != nil {
		return fmt.Errorf("read the answer: %w", err)
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	table(tw, v)
	return tw.Flush()
}

// deliveryPage is GET /api/v1/deliveries's answer.
type deliveryPage struct {
	Deliveries []inbox.DeliveryJSON `json:"deliveries"`
	NextCursor string               `json:"next_cursor"`
}

func deliveriesTable(tw io.Writer, p deliveryPage) {
	switch {
	case len(p.Deliveries) == 0 && p.NextCursor == "":
		fmt.Fprintln(tw, "no deliveries match")
		return
	case len(p.Deliveries) == 0:
		// An --error-contains page read its bound of failed deliveries.
		fmt.Fprintln(tw, "none matched on this page")
	default:
		writeDeliveryRows(tw, p.Deliveries)
	}
	if p.NextCursor != "" {
		fmt.Fprintf(tw, "\nmore: add --cursor %s\n", p.NextCursor)
	}
}

// writeDeliveryRows writes deliveries one line each: what an operator scans
// for (when, where, what, how it ended and why). RESULT is the outcome the
// gateway recorded: a succeeded delivery whose action was not taken (a
// resend that changed nothing, a stale update) says so there, where
// STATUS and ACTION alone read as done.
func writeDeliveryRows(tw io.Writer, ds []inbox.DeliveryJSON) {
	fmt.Fprintln(tw, "ID\tRECEIVED (UTC)\tCONNECTION\tEVENT\tSTATUS\tATTEMPTS\tACTION\tRESULT\tEXTERNAL ID\tLAST ERROR")
	for _, d := range ds {
		var action, result, extID string
		if d.Outcome != nil {
			action, result, extID = deref(d.Outcome.Action), deref(d.Outcome.Result), deref(d.Outcome.ExternalID)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", d.ID, shortTime(d.ReceivedAt), d.Connection,
			orDash(d.Event), d.Status, d.Attempts, orDash(action), orDash(oneLine(result, 60)), orDash(extID),
			orDash(oneLine(deref(d.LastError), 60)))
	}
}

func deliveryTable(tw io.Writer, d inbox.DeliveryDetailJSON) {
	row := func(k, v string) { fmt.Fprintf(tw, "%s\t%s\n", k, orDash(v)) }
	row("id", d.ID)
	row("connection", d.Connection+" ("+d.Provider+")")
	row("event", d.Event)
	row("delivery key", d.DeliveryKey)
	row("received (UTC)", shortTime(d.ReceivedAt))
	row("status", d.Status)
	row("attempts", fmt.Sprint(d.Attempts))
	if d.NextAttemptAt != nil {
		row("next attempt (UTC)", shortTime(*d.NextAttemptAt))
	}
	row("last error", deref(d.LastError))
	if o := d.Outcome; o != nil {
		row("action", deref(o.Action))
		row("result", deref(o.Result))
		row("task", deref(o.TaskID))
		row("external id", deref(o.ExternalID))
	}
	var headers map[string][]string
	if json.Unmarshal(d.Headers, &headers) == nil && len(headers) > 0 {
		fmt.Fprintln(tw, "\nheaders (secrets removed):")
		for _, k := range slices.Sorted(maps.Keys(headers)) {
			fmt.Fprintf(tw, "  %s\t%s\n", k, strings.Join(headers[k], ", "))
		}
	}
	// A body that is not JSON comes as a JSON string: shown as its text.
	var body bytes.Buffer
	var text string
	if json.Unmarshal(d.Body, &text) == nil {
		body.WriteString(text)
	} else if json.Indent(&body, d.Body, "", "  ") != nil {
		body.Reset()
		body.Write(d.Body)
	}
	// Without tabs, the body's lines are cells of their own: a tab in it
	// must not align anything.
	fmt.Fprintln(tw, "\nbody:")
	fmt.Fprintln(tw, strings.ReplaceAll(body.String(), "\t", " "))
}

func replayedOneTable(tw io.Writer, d inbox.DeliveryJSON) {
	fmt.Fprintf(tw, "delivery %s (%s, %s) is %s again: a worker processes it with today's configuration\n",
		d.ID, d.Connection, orDash(d.Event), d.Status)
}

func replayTable(dryRun bool) func(tw io.Writer, r inbox.ReplayResultJSON) {
	return func(tw io.Writer, r inbox.ReplayResultJSON) {
		if dryRun {
			fmt.Fprintf(tw, "dry run, nothing changed: %d matched; would replay %d, would skip %d (still in progress)\n",
				r.Matched, r.Count(), r.Skipped)
		} else {
			fmt.Fprintf(tw, "%d matched: %d replayed (queued again), %d skipped (still in progress)\n", r.Matched, r.Count(), r.Skipped)
		}
		if len(r.Deliveries) == 0 {
			return
		}
		fmt.Fprintf(tw, "\nthe first %d matched, as they are now:\n", len(r.Deliveries))
		writeDeliveryRows(tw, r.Deliveries)
	}
}

// suppressionPage is GET /api/v1/suppressions's answer.
type suppressionPage struct {
	Suppressions []ingest.SuppressionJSON `json:"suppressions"`
	NextCursor   string                   `json:"next_cursor"`
}

func suppressionsTable(tw io.Writer, p suppressionPage) {
	if len(p.Suppressions) == 0 {
		fmt.Fprintln(tw, "no suppressions")
		return
	}
	fmt.Fprintln(tw, "WORKSPACE\tEXTERNAL ID\tSINCE (UTC)\tREASON\tDELETED TASK")
	for _, s := range p.Suppressions {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", s.WorkspaceID, s.ExternalID, s.CreatedAt.UTC().Format(tableTime),
			orDash(s.Reason), orDash(s.TaskID))
	}
	if p.NextCursor != "" {
		fmt.Fprintf(tw, "\nmore: add --cursor %s\n", p.NextCursor)
	}
}

const tableTime = "2006-01-02 15:04:05"

// shortTime shows an RFC 3339 time from the API in UTC to the second; what
// does not parse is shown as given.
func shortTime(s string) string {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return s
	}
	return t.UTC().Format(tableTime)
}

// oneLine keeps a cell on one line and at most n runes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// printCleared says what suppressions clear did (the API answers 204 with
// no body).
func printCleared(stdout io.Writer, output, workspace, externalID string) error {
	if output == outputJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"cleared": true, "workspace_id": workspace, "external_id": externalID})
	}
	_, err := fmt.Fprintf(stdout, "cleared the suppression of %s in workspace %s: the next delivery for it creates its task again\n",
		externalID, workspace)
	return err
}
