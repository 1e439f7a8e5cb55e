package linear

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/trackergateway/gateway/connectors"
)

// This file holds what recovery needs to read issues from Linear's GraphQL
// API (https://api.linear.app/graphql) and feed each one in as a delivery:
// Linear keeps no history of its webhook deliveries, so the issues updated
// in the missed window are listed instead. Deletes cannot be recovered so:
// a deleted issue is no longer listed.

// IssuesQuery lists the issues updated since $since (an ISO 8601 time), the
// oldest change first, archived ones included, with the fields Parse reads
// and the first 50 attachments of each (Linear's default page; the pull
// and merge requests among them are the issue's links).
// Pages are $first long; $after is the previous page's EndCursor.
const IssuesQuery = `query Issues($first: Int!, $after: String, $since: DateTimeOrDuration!) {
  issues(first: $first, after: $after, filter: {updatedAt: {gte: $since}}, orderBy: updatedAt, includeArchived: true) {
    nodes {
      id identifier number title description url createdAt updatedAt archivedAt previousIdentifiers
      state { id name type }
      team { id key name }
      labels { nodes { id name } }
      attachments(first: 50) { nodes { id url updatedAt } }
    }
    pageInfo { hasNextPage endCursor }
  }
}`

// ErrGraphQL is a response carrying GraphQL errors (bad query, expired key,
// rate limit), which Linear answers with HTTP 200.
var ErrGraphQL = errors.New("linear graphql error")

// IssuesPage is one page of IssuesQuery's answer.
type IssuesPage struct {
	Nodes []IssueNode
	// Unreadable are the nodes that did not decode as an issue (a member
	// of the wrong type): one bad node leaves the others readable.
	Unreadable  []UnreadableNode
	HasNextPage bool
	EndCursor   string
}

// UnreadableNode is a node of the answer that is not an issue, with what
// could be read of its id and identifier.
type UnreadableNode struct {
	ID         string
	Identifier string
	Err        error
}

// IssueNode is an issue as IssuesQuery reads it.
type IssueNode struct {
	ID          string      `json:"id"`
	Identifier  string      `json:"identifier"`
	Number      float64     `json:"number"`
	Title       string      `json:"title"`
	Description string      `json:"description"`
	URL         string      `json:"url"`
	CreatedAt   string      `json:"createdAt"`
	UpdatedAt   string      `json:"updatedAt"`
	ArchivedAt  *string     `json:"archivedAt"`
	State       *IssueState `json:"state"`
	Team        *IssueTeam  `json:"team"`
	Labels      IssueLabels `json:"labels"`
	// PreviousIdentifiers are the identifiers before team moves.
	PreviousIdentifiers []string         `json:"previousIdentifiers"`
	Attachments         IssueAttachments `json:"attachments"`
}

// IssueAttachments is an issue's attachments connection.
type IssueAttachments struct {
	Nodes []IssueAttachment `json:"nodes"`
}

// IssueAttachment is one attachment: a URL linked to the issue.
type IssueAttachment struct {
	ID        string `json:"id"`
	URL       string `json:"url"`
	UpdatedAt string `json:"updatedAt"`
}

// IssueState is an issue's workflow state; Type is one of triage, backlog,
// unstarted, started, completed, canceled.
type IssueState struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Type string `json:"type"`
}

// IssueTeam is the team an issue belongs to; Key prefixes its identifier.
type IssueTeam struct {
	ID   string `json:"id"`
	Key  string `json:"key"`
	Name string `json:"name"`
}

// IssueLabels is an issue's labels connection.
type IssueLabels struct {
	Nodes []IssueLabel `json:"nodes"`
}

// IssueLabel is one label.
type IssueLabel struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// DecodeIssuesResponse decodes IssuesQuery's response body. GraphQL errors
// in it are ErrGraphQL with their messages.
func DecodeIssuesResponse(body []byte) (IssuesPage, error) {
	var resp struct {
		Data *struct {
			Issues *struct {
				Nodes    []json.RawMessage `json:"nodes"`
				PageInfo struct {
					HasNextPage bool   `json:"hasNextPage"`
					EndCursor   string `json:"endCursor"`
				} `json:"pageInfo"`
			} `json:"issues"`
		} `json:"data"`
		Errors []struct {
			Message string `json:"message"`
		} `json:"errors"`
	}
	if err := connectors.DecodeJSON(body, &resp); err != nil {
		return IssuesPage{}, fmt.Errorf("decode linear issues: %w", err)
	}
	if len(resp.Errors) > 0 {
		msgs := make([]string, len(resp.Errors))
		for i, e := range resp.Errors {
			msgs[i] = e.Message
		}
		return IssuesPage{}, fmt.Errorf("%w: %s", ErrGraphQL, strings.Join(msgs, "; "))
	}
	if resp.Data == nil || resp.Data.Issues == nil {
		return IssuesPage{}, errors.New("decode linear issues: no data.issues")
	}
	is := resp.Data.Issues
	page := IssuesPage{HasNextPage: is.PageInfo.HasNextPage, EndCursor: is.PageInfo.EndCursor}
	for _, raw := range is.Nodes {
		var n *IssueNode
		err := connectors.DecodeJSON(raw, &n)
		if err == nil && n == nil {
			err = errors.New("the node is null")
		}
		if err != nil {
			var names struct {
				ID         any `json:"id"`
				Identifier any `json:"identifier"`
			}
			_ = connectors.DecodeJSON(raw, &names)
			id, _ := names.ID.(string)
			identifier, _ := names.Identifier.(string)
			page.Unreadable = append(page.Unreadable, UnreadableNode{ID: id, Identifier: identifier,
				Err: fmt.Errorf("decode linear issue: %w", err)})
			continue
		}
		page.Nodes = append(page.Nodes, *n)
	}
	return page, nil
}

// deliveryData is an issue in the shape of an "Issue" webhook's data:
// labels as a list, teamId and stateId beside the objects.
type deliveryData struct {
	ID          string       `json:"id"`
	Identifier  string       `json:"identifier"`
	Number      float64      `json:"number"`
	Title       string       `json:"title"`
	Description string       `json:"description"`
	URL         string       `json:"url"`
	CreatedAt   string       `json:"createdAt"`
	UpdatedAt   string       `json:"updatedAt"`
	ArchivedAt  *string      `json:"archivedAt"`
	StateID     string       `json:"stateId,omitempty"`
	State       *IssueState  `json:"state,omitempty"`
	TeamID      string       `json:"teamId,omitempty"`
	Team        *IssueTeam   `json:"team,omitempty"`
	Labels      []IssueLabel `json:"labels"`
	// PreviousIdentifiers and Attachments: see issueData.
	PreviousIdentifiers []string          `json:"previousIdentifiers"`
	Attachments         []IssueAttachment `json:"attachments,omitempty"`
}

// Delivery returns the issue as an unsigned "Issue" update delivery (no
// signature, no delivery key: recovery feeds it in directly), which Parse
// turns into the issue's current state. Its webhookTimestamp is the
// issue's updatedAt. Unlike Linear's own Issue webhook, its data carries
// the issue's attachments, so recovery also brings the links to pull and
// merge requests that were attached while the gateway was away.
func (n IssueNode) Delivery() (http.Header, []byte, error) {
	if strings.TrimSpace(n.ID) == "" {
		return nil, nil, errors.New("linear issue delivery: no id")
	}
	updated, err := time.Parse(time.RFC3339Nano, n.UpdatedAt)
	if err != nil {
		return nil, nil, fmt.Errorf("linear issue delivery %s: updatedAt: %w", n.ID, err)
	}
	data := deliveryData{ID: n.ID, Identifier: n.Identifier, Number: n.Number, Title: n.Title,
		Description: n.Description, URL: n.URL, CreatedAt: n.CreatedAt, UpdatedAt: n.UpdatedAt,
		ArchivedAt: n.ArchivedAt, State: n.State, Team: n.Team, Labels: n.Labels.Nodes,
		PreviousIdentifiers: n.PreviousIdentifiers, Attachments: n.Attachments.Nodes}
	if data.PreviousIdentifiers == nil {
		data.PreviousIdentifiers = []string{}
	}
	if n.State != nil {
		data.StateID = n.State.ID
	}
	if n.Team != nil {
		data.TeamID = n.Team.ID
	}
	if data.Labels == nil {
		data.Labels = []IssueLabel{}
	}
	body, err := json.Marshal(struct {
		Action           string       `json:"action"`
		Type             string       `json:"type"`
		Data             deliveryData `json:"data"`
		URL              string       `json:"url"`
		WebhookTimestamp int64        `json:"webhookTimestamp"`
	}{ActionUpdate, TypeIssue, data, n.URL, updated.UnixMilli()})
	if err != nil {
		return nil, nil, fmt.Errorf("linear issue delivery %s: %w", n.ID, err)
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set(HeaderEvent, TypeIssue)
	return h, body, nil
}
