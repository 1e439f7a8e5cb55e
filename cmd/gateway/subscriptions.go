package main

// gateway subscriptions: a workspace's webhook subscriptions (task events
// out) through the subscription API, with the admin token or the
// workspace's own.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/trackergateway/gateway/internal/outbound"
)

var (
	subscriptionsUsage = usageText{
		line: "subscriptions list|create|get|update|delete|rotate-secret|deliveries|replay [flags]",
		summary: "Webhook subscriptions of a workspace: the gateway posts each task event (task.created,\n" +
			"task.updated, ...) to a subscription's URL, signed as Standard Webhooks, at least once and in\n" +
			"order per task. Through the API, with the admin token or the workspace's token (--token).\n\n" +
			"subcommands:\n" +
			"  list                 list the workspace's subscriptions\n" +
			"  create --endpoint U  subscribe a URL (its secret is shown once)\n" +
			"  get ID               show one subscription\n" +
			"  update ID            change its URL, types, description, or enable/disable it\n" +
			"  delete ID            delete it and its deliveries\n" +
			"  rotate-secret ID     give it a new secret (the old one signs beside it for 24h)\n" +
			"  deliveries ID        list its deliveries, newest event first\n" +
			"  replay ID            send an event (--event) or every event since a time (--since) again\n\n" +
			"Run \"gateway subscriptions <subcommand> -h\" for a subcommand's flags.",
		example: "gateway subscriptions create --workspace default --endpoint https://ci.example.com/hooks/tasks --types task.created,task.updated",
	}
	subscriptionsListUsage = usageText{
		line:    "subscriptions list [flags]",
		summary: "Lists the workspace's subscriptions, oldest first.",
		example: "gateway subscriptions list --workspace default",
	}
	subscriptionsCreateUsage = usageText{
		line: "subscriptions create --endpoint URL [--types T,T] [--description D] [flags]",
		summary: "Subscribes a URL to the workspace's task events (of --types, else of every type) and prints its\n" +
			"secret (whsec_...), shown only now: receivers verify each request's webhook-signature with it.",
		example: "gateway subscriptions create --workspace default --endpoint https://ci.example.com/hooks/tasks --types task.created",
	}
	subscriptionsGetUsage = usageText{
		line:    "subscriptions get ID [flags]",
		summary: "Shows one subscription (never its secret).",
		example: "gateway subscriptions get sub_0f3c5a7e9b1d2c4e6a8b --workspace default",
	}
	subscriptionsUpdateUsage = usageText{
		line: "subscriptions update ID [--endpoint URL] [--types T,T] [--description D] [--enable | --disable] [flags]",
		summary: "Changes what is given. --types \"\" subscribes to every type. --disable stops the sending (events\n" +
			"committed meanwhile stay owed); --enable resumes where it stopped.",
		example: "gateway subscriptions update sub_0f3c5a7e9b1d2c4e6a8b --workspace default --enable",
	}
	subscriptionsDeleteUsage = usageText{
		line:    "subscriptions delete ID [flags]",
		summary: "Deletes a subscription and the record of its deliveries.",
		example: "gateway subscriptions delete sub_0f3c5a7e9b1d2c4e6a8b --workspace default",
	}
	subscriptionsRotateUsage = usageText{
		line: "subscriptions rotate-secret ID [flags]",
		summary: "Gives a subscription a new secret and prints it, shown only now. For 24 hours every request\n" +
			"carries a signature with each secret, so receivers can switch without missing one.",
		example: "gateway subscriptions rotate-secret sub_0f3c5a7e9b1d2c4e6a8b --workspace default",
	}
	subscriptionsDeliveriesUsage = usageText{
		line:    "subscriptions deliveries ID [--status S] [--limit N] [--cursor C] [flags]",
		summary: "Lists a subscription's deliveries, newest event first: status, attempts, last answer and error.",
		example: "gateway subscriptions deliveries sub_0f3c5a7e9b1d2c4e6a8b --workspace default --status failed",
	}
	subscriptionsReplayUsage = usageText{
		line: "subscriptions replay ID (--event EVENT_ID | --since WHEN) [flags]",
		summary: "Sends events again, with the same webhook-id: one event, or every event committed since a time\n" +
			"(RFC 3339, or a duration before now such as 24h). Events still owed are sent anyway and skipped.",
		example: "gateway subscriptions replay sub_0f3c5a7e9b1d2c4e6a8b --workspace default --since 2h",
	}
)

// subscriptionCmd holds the flags every subscriptions subcommand has: an
// operator command's, with the workspace's token accepted beside the
// admin's.
type subscriptionCmd struct {
	operatorCmd
	workspace string
}

func subscriptionFlags(name string, env Env) (*flag.FlagSet, *subscriptionCmd) {
	var c subscriptionCmd
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.StringVar(&c.target, "url", defaultURL(env), "gateway base URL (its default follows env GATEWAY_LISTEN)")
	secretFlag(fs, &c.token, "token", envOr(env, "GATEWAY_TOKEN", envOr(env, "GATEWAY_ADMIN_TOKEN", "")),
		"API `token`: the admin token or the workspace's (env GATEWAY_TOKEN, else GATEWAY_ADMIN_TOKEN)", hidden)
	fs.StringVar(&c.workspace, "workspace", "default", "workspace id")
	fs.StringVar(&c.output, "o", outputTable, "output: table | json (the API's answer)")
	return fs, &c
}

func (c *subscriptionCmd) parse(fs *flag.FlagSet, u usageText, args []string, stdout, stderr io.Writer, wantID bool) (string, error) {
	if err := c.operatorCmd.parse(fs, u, idLast(args), stdout, stderr); err != nil {
		return "", err
	}
	switch {
	case wantID && fs.NArg() != 1:
		return "", usageError(stderr, fs, u, "exactly one subscription ID is required")
	case !wantID && fs.NArg() > 0:
		return "", usageError(stderr, fs, u, "unexpected argument %q", fs.Arg(0))
	case c.token == "":
		return "", errors.New("a token is required: --token, GATEWAY_TOKEN or GATEWAY_ADMIN_TOKEN")
	}
	return fs.Arg(0), nil
}

func (c *subscriptionCmd) path(id string, rest ...string) string {
	p := "/api/v1/workspaces/" + url.PathEscape(c.workspace) + "/subscriptions"
	if id != "" {
		p += "/" + url.PathEscape(id)
	}
	return p + strings.Join(rest, "")
}

// typesList reads --types: comma-separated, "" for every type.
func typesList(v string) []string {
	out := []string{}
	for _, t := range strings.Split(v, ",") {
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, t)
		}
	}
	return out
}

// subscriptions: list | create | get | update | delete | rotate-secret | deliveries | replay.
func subscriptions(ctx context.Context, args []string, env Env, stdout, stderr io.Writer) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return needSubcommand("subscriptions", subscriptionsUsage, args, stdout, stderr)
	}
	name := "subscriptions " + args[0]
	switch args[0] {
	case "list":
		fs, c := subscriptionFlags(name, env)
		if _, err := c.parse(fs, subscriptionsListUsage, args[1:], stdout, stderr, false); err != nil {
			return err
		}
		return run(ctx, &c.operatorCmd, http.MethodGet, c.path(""), nil, stdout, subscriptionsTable)
	case "create":
		fs, c := subscriptionFlags(name, env)
		target := fs.String("endpoint", "", "the subscription's URL, where events are posted (https, unless the gateway allows http)")
		types := fs.String("types", "", "comma-separated event types (default: every type)")
		desc := fs.String("description", "", "what the subscription is for")
		if _, err := c.parse(fs, subscriptionsCreateUsage, args[1:], stdout, stderr, false); err != nil {
			return err
		}
		if *target == "" {
			return usageError(stderr, fs, subscriptionsCreateUsage, "--endpoint is required")
		}
		body := map[string]any{"url": *target, "types": typesList(*types), "description": *desc}
		return run(ctx, &c.operatorCmd, http.MethodPost, c.path(""), body, stdout, secretTable("created"))
	case "get":
		fs, c := subscriptionFlags(name, env)
		id, err := c.parse(fs, subscriptionsGetUsage, args[1:], stdout, stderr, true)
		if err != nil {
			return err
		}
		return run(ctx, &c.operatorCmd, http.MethodGet, c.path(id), nil, stdout, subscriptionTable)
	case "update":
		fs, c := subscriptionFlags(name, env)
		target := fs.String("endpoint", "", "a new URL to post events to")
		types := fs.String("types", "", `new comma-separated event types ("" for every type)`)
		desc := fs.String("description", "", "a new description")
		enable := fs.Bool("enable", false, "enable it: sending resumes where it stopped")
		disable := fs.Bool("disable", false, "disable it: nothing is sent; events stay owed")
		id, err := c.parse(fs, subscriptionsUpdateUsage, args[1:], stdout, stderr, true)
		if err != nil {
			return err
		}
		body := map[string]any{}
		fs.Visit(func(f *flag.Flag) {
			switch f.Name {
			case "endpoint":
				body["url"] = *target
			case "types":
				body["types"] = typesList(*types)
			case "description":
				body["description"] = *desc
			}
		})
		switch {
		case *enable && *disable:
			return usageError(stderr, fs, subscriptionsUpdateUsage, "--enable and --disable exclude each other")
		case *enable:
			body["enabled"] = true
		case *disable:
			body["enabled"] = false
		}
		if len(body) == 0 {
			return usageError(stderr, fs, subscriptionsUpdateUsage, "nothing to change: give --endpoint, --types, --description, --enable or --disable")
		}
		return run(ctx, &c.operatorCmd, http.MethodPatch, c.path(id), body, stdout, subscriptionTable)
	case "delete":
		fs, c := subscriptionFlags(name, env)
		id, err := c.parse(fs, subscriptionsDeleteUsage, args[1:], stdout, stderr, true)
		if err != nil {
			return err
		}
		if _, err := callAPI(ctx, c.target, c.token, http.MethodDelete, c.path(id), nil); err != nil {
			return err
		}
		if c.output == outputJSON {
			_, err = fmt.Fprintf(stdout, "{\n  \"deleted\": true,\n  \"id\": %q\n}\n", id)
			return err
		}
		_, err = fmt.Fprintf(stdout, "deleted subscription %s and its deliveries\n", id)
		return err
	case "rotate-secret":
		fs, c := subscriptionFlags(name, env)
		id, err := c.parse(fs, subscriptionsRotateUsage, args[1:], stdout, stderr, true)
		if err != nil {
			return err
		}
		return run(ctx, &c.operatorCmd, http.MethodPost, c.path(id, "/rotate-secret"), nil, stdout, secretTable("rotated"))
	case "deliveries":
		fs, c := subscriptionFlags(name, env)
		status := fs.String("status", "", "filter by status: pending, retrying, succeeded or failed")
		limit := fs.String("limit", "", "page size")
		cursor := fs.String("cursor", "", "next_cursor of the previous page")
		id, err := c.parse(fs, subscriptionsDeliveriesUsage, args[1:], stdout, stderr, true)
		if err != nil {
			return err
		}
		q := url.Values{}
		for k, v := range map[string]string{"status": *status, "limit": *limit, "cursor": *cursor} {
			if v != "" {
				q.Set(k, v)
			}
		}
		return run(ctx, &c.operatorCmd, http.MethodGet, c.path(id, "/deliveries?"+q.Encode()), nil, stdout, outboundDeliveriesTable)
	case "replay":
		fs, c := subscriptionFlags(name, env)
		event := fs.String("event", "", "the event to send again (evt_...)")
		since := fs.String("since", "", "send again every event committed since: RFC 3339, or a duration such as 24h")
		id, err := c.parse(fs, subscriptionsReplayUsage, args[1:], stdout, stderr, true)
		if err != nil {
			return err
		}
		if (*event == "") == (*since == "") {
			return usageError(stderr, fs, subscriptionsReplayUsage, "exactly one of --event and --since is required")
		}
		body := map[string]any{}
		if *event != "" {
			body["event_id"] = *event
		} else {
			body["since"] = *since
		}
		return run(ctx, &c.operatorCmd, http.MethodPost, c.path(id, "/replay"), body, stdout, outboundReplayTable)
	}
	return usageError(stderr, flag.NewFlagSet("subscriptions", flag.ContinueOnError), subscriptionsUsage, "unknown subcommand %q", args[0])
}

func subscriptionsTable(tw io.Writer, l outbound.SubscriptionListJSON) {
	if len(l.Subscriptions) == 0 {
		fmt.Fprintln(tw, "no subscriptions")
		return
	}
	fmt.Fprintln(tw, "ID\tSTATE\tTYPES\tURL\tDESCRIPTION")
	for _, s := range l.Subscriptions {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", s.ID, subscriptionState(s), typesText(s.Types), s.URL, orDash(oneLine(s.Description, 40)))
	}
}

func subscriptionState(s outbound.SubscriptionJSON) string {
	switch {
	case s.Enabled && s.FailingSince != nil:
		return "enabled (failing)"
	case s.Enabled:
		return "enabled"
	case s.DisabledReason != "":
		return "disabled: " + s.DisabledReason
	}
	return "disabled"
}

func typesText(ts []string) string {
	if len(ts) == 0 {
		return "every type"
	}
	return strings.Join(ts, ",")
}

func subscriptionTable(tw io.Writer, s outbound.SubscriptionJSON) {
	row := func(k, v string) { fmt.Fprintf(tw, "%s\t%s\n", k, orDash(v)) }
	row("id", s.ID)
	row("workspace", s.WorkspaceID)
	row("url", s.URL)
	row("types", typesText(s.Types))
	row("description", s.Description)
	row("state", subscriptionState(s))
	if s.FailingSince != nil {
		row("failing since (UTC)", s.FailingSince.UTC().Format(tableTime))
	}
	if s.PreviousSecretExpiresAt != nil {
		row("previous secret signs until (UTC)", s.PreviousSecretExpiresAt.UTC().Format(tableTime))
	}
	row("created (UTC)", s.CreatedAt.UTC().Format(tableTime))
	row("updated (UTC)", s.UpdatedAt.UTC().Format(tableTime))
}

// secretTable shows a subscription with the secret the API has just made.
func secretTable(what string) func(io.Writer, outbound.SubscriptionJSON) {
	return func(tw io.Writer, s outbound.SubscriptionJSON) {
		subscriptionTable(tw, s)
		fmt.Fprintf(tw, "\n%s: the secret, shown only now (verify webhook-signature with it):\n%s\n", what, s.Secret)
	}
}

func outboundDeliveriesTable(tw io.Writer, p outbound.DeliveryListJSON) {
	if len(p.Deliveries) == 0 {
		fmt.Fprintln(tw, "no deliveries")
		return
	}
	fmt.Fprintln(tw, "EVENT\tTYPE\tTASK\tSTATUS\tATTEMPTS\tLAST ANSWER\tNEXT ATTEMPT (UTC)\tLAST ERROR")
	for _, d := range p.Deliveries {
		code, next := "-", "-"
		if d.LastResponseCode != nil {
			code = fmt.Sprint(*d.LastResponseCode)
		}
		if d.NextAttemptAt != nil {
			next = d.NextAttemptAt.UTC().Format(tableTime)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", d.EventID, d.EventType, d.TaskID, d.Status, d.Attempts, code, next,
			orDash(oneLine(deref(d.LastError), 60)))
	}
	if p.NextCursor != "" {
		fmt.Fprintf(tw, "\nmore: add --cursor %s\n", p.NextCursor)
	}
}

func outboundReplayTable(tw io.Writer, r outbound.ReplayJSON) {
	fmt.Fprintf(tw, "%d replayed (sent again with the same webhook-id), %d skipped (still owed: sent anyway)\n", r.Replayed, r.Skipped)
}
