package recovery

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	linearconn "github.com/trackergateway/gateway/connectors/linear"
	"github.com/trackergateway/gateway/internal/config"
	"github.com/trackergateway/gateway/internal/providerapi"
)

// linearLister lists the issues of a Linear workspace updated in the
// window through Linear's GraphQL API (linearconn.IssuesQuery), with the
// connection's API key.
type linearLister struct {
	r        *Recoverer
	hc       *http.Client
	endpoint string
	auth     string
}

func newLinearLister(r *Recoverer, conn config.Connection) (changeLister, error) {
	hc, endpoint, err := providerapi.LinearClient(r.HTTPClient, r.Metrics, conn)
	if err != nil {
		return nil, err
	}
	return &linearLister{r: r, hc: hc, endpoint: endpoint, auth: providerapi.LinearAuthorization(conn.APIToken)}, nil
}

// linearPageSize is the issues a page asks for.
const linearPageSize = 50

func (l *linearLister) source() string { return "issues at " + l.endpoint }

// changes: the cursor is GraphQL's endCursor ("" the first page).
func (l *linearLister) changes(ctx context.Context, since time.Time, cursor string) ([]itemState, string, error) {
	vars := map[string]any{"first": linearPageSize, "since": since.UTC().Format(time.RFC3339Nano)}
	if cursor != "" {
		vars["after"] = cursor
	}
	query, err := json.Marshal(map[string]any{"query": linearconn.IssuesQuery, "variables": vars})
	if err != nil {
		return nil, "", fmt.Errorf("encode query: %w", err)
	}
	var page linearconn.IssuesPage
	err = l.r.retrying(ctx, true, func() (answer, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, l.endpoint, bytes.NewReader(query))
		if err != nil {
			return answer{}, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", l.auth)
		resp, err := l.hc.Do(req)
		if err != nil {
			return answer{}, err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		ans := answer{status: resp.StatusCode, wait: providerapi.WaitHeader(resp.Header, resp.StatusCode, l.r.now())}
		switch {
		case err != nil:
			return ans, err
		case resp.StatusCode != http.StatusOK:
			return ans, fmt.Errorf("linear answered %s", resp.Status)
		}
		page, err = linearconn.DecodeIssuesResponse(body)
		return ans, err
	})
	if err != nil {
		return nil, "", fmt.Errorf("query issues: %w", err)
	}
	out := make([]itemState, 0, len(page.Nodes)+len(page.Unreadable))
	for _, n := range page.Nodes {
		st := itemState{name: linearItemName(n.Identifier, n.ID)}
		if st.header, st.body, err = n.Delivery(); err != nil {
			st.unreadable = err.Error()
		}
		out = append(out, st)
	}
	for _, u := range page.Unreadable {
		out = append(out, itemState{name: linearItemName(u.Identifier, u.ID), unreadable: u.Err.Error()})
	}
	next := ""
	if page.HasNextPage {
		next = page.EndCursor
	}
	return out, next, nil
}

// linearItemName names a listed issue in a run's answer: "issue ENG-3
// (<id>)", as much of it as the node gave.
func linearItemName(identifier, id string) string {
	switch {
	case identifier != "" && id != "":
		return "issue " + identifier + " (" + id + ")"
	case identifier != "":
		return "issue " + identifier
	case id != "":
		return "issue " + id
	}
	return "an issue without an id"
}
