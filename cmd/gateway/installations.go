package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/trackergateway/gateway/internal/ingest"
)

var installationsUsage = usageText{
	line: "installations --connection ID [flags]",
	summary: "Lists the GitHub App installations a connection's installation deliveries recorded: account,\n" +
		"repository selection, current repositories, suspended or deleted; through the operator API with\n" +
		"the admin token.",
	example: "gateway installations --connection github-app -o json",
}

// installations: --connection ID.
func installations(ctx context.Context, args []string, env Env, stdout, stderr io.Writer) error {
	fs, c := operatorFlags("installations", env)
	conn := fs.String("connection", "", "connection id (required)")
	if err := c.parse(fs, installationsUsage, args, stdout, stderr); err != nil {
		return err
	}
	switch {
	case *conn == "":
		return usageError(stderr, fs, installationsUsage, "--connection is required")
	case fs.NArg() > 0:
		return usageError(stderr, fs, installationsUsage, "unexpected argument %q", fs.Arg(0))
	}
	return run(ctx, c, http.MethodGet, "/api/v1/connections/"+url.PathEscape(*conn)+"/installations", nil, stdout, installationsTable)
}

// installationList is GET /api/v1/connections/{id}/installations's answer.
type installationList struct {
	Installations []ingest.InstallationJSON `json:"installations"`
}

func installationsTable(tw io.Writer, l installationList) {
	if len(l.Installations) == 0 {
		fmt.Fprintln(tw, "no installations")
		return
	}
	fmt.Fprintln(tw, "ID\tACCOUNT\tSTATE\tSELECTION\tREPOSITORIES\tUPDATED (UTC)")
	for _, in := range l.Installations {
		state := "active"
		switch {
		case in.Deleted:
			state = "deleted"
		case in.Suspended:
			state = "suspended"
		}
		repos := strings.Join(in.Repositories, ",")
		fmt.Fprintf(tw, "%d\t%s (%s)\t%s\t%s\t%s\t%s\n", in.ID, in.Account, orDash(in.AccountType), state,
			orDash(in.RepositorySelection), orDash(repos), in.UpdatedAt.UTC().Format(tableTime))
	}
}
