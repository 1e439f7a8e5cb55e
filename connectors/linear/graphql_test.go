package linear

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/trackergateway/gateway/connectors"
	"github.com/trackergateway/gateway/connectors/adaptertest"
)

// issuesResponse is an IssuesQuery answer in the shape of Linear's schema:
// an open issue, a completed one, a canceled and archived one, and one moved
// to another team.
const issuesResponse = `{"data":{"issues":{
  "nodes":[
    {"id":"539068e2-ae88-4d09-bd75-22eb4a59612f","identifier":"ENG-123","number":123,"title":"Export fails for large workspaces",
     "description":"Times out.","url":"https://linear.app/acme/issue/ENG-123/export-fails","createdAt":"2026-03-02T09:00:00.000Z",
     "updatedAt":"2026-03-02T10:15:00.000Z","archivedAt":null,
     "state":{"id":"s1","name":"Todo","type":"unstarted"},"team":{"id":"t1","key":"ENG","name":"Engineering"},
     "labels":{"nodes":[{"id":"l1","name":"Bug"},{"id":"l2","name":"Performance"}]},
     "attachments":{"nodes":[{"id":"a1","url":"https://github.com/acme/api/pull/42","updatedAt":"2026-03-02T10:00:00.000Z"},
       {"id":"a2","url":"https://docs.example.com/spec","updatedAt":"2026-03-02T10:00:00.000Z"}]}},
    {"id":"7c2d1e0f-3a4b-4c5d-8e6f-708192a3b4c5","identifier":"ENG-124","number":124,"title":"Done one","description":null,
     "url":"https://linear.app/acme/issue/ENG-124/done-one","createdAt":"2026-03-02T09:00:00.000Z","updatedAt":"2026-03-03T16:30:00.000Z",
     "archivedAt":null,"state":{"id":"s2","name":"Done","type":"completed"},"team":{"id":"t1","key":"ENG","name":"Engineering"},
     "labels":{"nodes":[]},"attachments":{"nodes":[]}},
    {"id":"9e8d7c6b-5a4f-4e3d-9c2b-1a0f9e8d7c6b","identifier":"ENG-125","number":125,"title":"Won't do","description":"",
     "url":"https://linear.app/acme/issue/ENG-125/wont-do","createdAt":"2026-03-02T09:00:00.000Z","updatedAt":"2026-03-04T08:00:00.000Z",
     "archivedAt":"2026-03-04T08:00:00.000Z","state":{"id":"s3","name":"Canceled","type":"canceled"},"team":{"id":"t1","key":"ENG","name":"Engineering"},
     "labels":{"nodes":[]},"attachments":{"nodes":[]}},
    {"id":"0f1e2d3c-4b5a-4968-8776-655443322110","identifier":"OPS-7","number":7,"title":"Moved","description":"",
     "url":"https://linear.app/acme/issue/OPS-7/moved","createdAt":"2026-03-01T09:00:00.000Z","updatedAt":"2026-03-04T11:00:00.000Z",
     "archivedAt":null,"state":{"id":"s4","name":"In Progress","type":"started"},"team":{"id":"t2","key":"OPS","name":"Operations"},
     "previousIdentifiers":["ENG-99"],
     "labels":{"nodes":[]},"attachments":{"nodes":[{"id":"a3","url":"https://gitlab.example.com/acme/infra/-/merge_requests/9","updatedAt":"bad"},
       {"url":"https://github.com/acme/api/pull/43"}]}}
  ],
  "pageInfo":{"hasNextPage":true,"endCursor":"cursor-4"}}}}`

// Each listed issue becomes a delivery that Parse turns into the issue's
// current state, as an update.
func TestIssuesResponseToEvents(t *testing.T) {
	t.Parallel()
	page, err := DecodeIssuesResponse([]byte(issuesResponse))
	if err != nil {
		t.Fatalf("DecodeIssuesResponse: %v", err)
	}
	if !page.HasNextPage || page.EndCursor != "cursor-4" || len(page.Nodes) != 4 {
		t.Fatalf("page = next %v, cursor %q, %d nodes; want true, cursor-4, 4", page.HasNextPage, page.EndCursor, len(page.Nodes))
	}
	want := []adaptertest.Want{
		{EventName: "Issue.update", Action: connectors.ActionUpdate, Kind: connectors.KindIssue,
			ExternalID: "linear:acme:issue:539068e2-ae88-4d09-bd75-22eb4a59612f", EntityKey: "linear:acme:issue:539068e2-ae88-4d09-bd75-22eb4a59612f",
			Repository: "ENG", Title: "Export fails for large workspaces", Labels: []string{"Bug", "Performance"},
			UpdatedAt: time.Date(2026, 3, 2, 10, 15, 0, 0, time.UTC), Source: issueSource("ENG-123", "https://linear.app/acme/issue/ENG-123/export-fails"),
			Links: []connectors.ContributionLink{{ID: "a1", Provider: connectors.ProviderGitHub, Kind: connectors.KindPullRequest,
				Host: "github.com", Repository: "acme/api", Number: 42, URL: "https://github.com/acme/api/pull/42",
				UpdatedAt: time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)}}},
		{EventName: "Issue.update", Action: connectors.ActionUpdate, Kind: connectors.KindIssue,
			ExternalID: "linear:acme:issue:7c2d1e0f-3a4b-4c5d-8e6f-708192a3b4c5", EntityKey: "linear:acme:issue:7c2d1e0f-3a4b-4c5d-8e6f-708192a3b4c5",
			Repository: "ENG", Title: "Done one", Labels: []string{}, Closed: true,
			UpdatedAt: time.Date(2026, 3, 3, 16, 30, 0, 0, time.UTC), Source: issueSource("ENG-124", "https://linear.app/acme/issue/ENG-124/done-one")},
		{EventName: "Issue.update", Action: connectors.ActionUpdate, Kind: connectors.KindIssue,
			ExternalID: "linear:acme:issue:9e8d7c6b-5a4f-4e3d-9c2b-1a0f9e8d7c6b", EntityKey: "linear:acme:issue:9e8d7c6b-5a4f-4e3d-9c2b-1a0f9e8d7c6b",
			Repository: "ENG", Title: "Won't do", Labels: []string{}, Closed: true,
			UpdatedAt: time.Date(2026, 3, 4, 8, 0, 0, 0, time.UTC), Source: issueSource("ENG-125", "https://linear.app/acme/issue/ENG-125/wont-do")},
		{EventName: "Issue.update", Action: connectors.ActionUpdate, Kind: connectors.KindIssue,
			ExternalID: "linear:acme:issue:0f1e2d3c-4b5a-4968-8776-655443322110", EntityKey: "linear:acme:issue:0f1e2d3c-4b5a-4968-8776-655443322110",
			Repository: "OPS", Title: "Moved", Labels: []string{},
			UpdatedAt: time.Date(2026, 3, 4, 11, 0, 0, 0, time.UTC), Source: issueSource("OPS-7", "https://linear.app/acme/issue/OPS-7/moved"),
			// An attachment without its own time takes the issue's; one
			// without an ID cannot be named by a later removal: skipped.
			FormerRefs: []string{"ENG-99"},
			Links: []connectors.ContributionLink{{ID: "a3", Provider: connectors.ProviderGitLab, Kind: connectors.KindMergeRequest,
				Host: "gitlab.example.com", Repository: "acme/infra", Number: 9, URL: "https://gitlab.example.com/acme/infra/-/merge_requests/9",
				UpdatedAt: time.Date(2026, 3, 4, 11, 0, 0, 0, time.UTC)}}},
	}
	for i, node := range page.Nodes {
		t.Run(node.Identifier, func(t *testing.T) {
			h, body, err := node.Delivery()
			if err != nil {
				t.Fatalf("Delivery: %v", err)
			}
			if got := (Adapter{}).EventName(h); got != "Issue" {
				t.Errorf("EventName = %q, want Issue", got)
			}
			if h.Get(HeaderSignature) != "" || h.Get(HeaderDelivery) != "" {
				t.Errorf("delivery headers %v: want no signature and no delivery key", h)
			}
			got, err := Adapter{}.Parse(workspace, h, body)
			if err != nil {
				t.Fatalf("Parse(%s): %v", body, err)
			}
			w := want[i]
			w.Provider = connectors.ProviderLinear
			adaptertest.CheckEvent(t, got, w)
		})
	}
}

func TestDecodeIssuesResponseErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		body    string
		graphQL bool   // the error is ErrGraphQL
		message string // the error says
	}{
		{"graphql errors", `{"errors":[{"message":"Authentication required, not authenticated","extensions":{"code":"AUTHENTICATION_ERROR"}},{"message":"second"}]}`,
			true, "Authentication required, not authenticated; second"},
		{"errors beside data", `{"data":{"issues":{"nodes":[],"pageInfo":{"hasNextPage":false}}},"errors":[{"message":"rate limited"}]}`, true, "rate limited"},
		{"no data", `{}`, false, "no data.issues"},
		{"data null", `{"data":null}`, false, "no data.issues"},
		{"not JSON", `<html>`, false, "decode linear issues"},
		{"nodes not a list", `{"data":{"issues":{"nodes":{}}}}`, false, "decode linear issues"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := DecodeIssuesResponse([]byte(tt.body))
			if err == nil || errors.Is(err, ErrGraphQL) != tt.graphQL || !strings.Contains(err.Error(), tt.message) {
				t.Errorf("DecodeIssuesResponse = %v, want an error saying %q (ErrGraphQL: %v)", err, tt.message, tt.graphQL)
			}
		})
	}
}

func TestDeliveryRefuses(t *testing.T) {
	t.Parallel()
	for _, n := range []IssueNode{
		{UpdatedAt: "2026-03-02T10:15:00.000Z"},
		{ID: "x", UpdatedAt: "yesterday"},
	} {
		if h, body, err := n.Delivery(); err == nil {
			t.Errorf("Delivery(%+v) = %v, %s; want an error", n, h, body)
		}
	}
}

// The query asks for what Delivery passes on to Parse.
func TestIssuesQueryFields(t *testing.T) {
	t.Parallel()
	for _, field := range []string{"updatedAt: {gte: $since}", "orderBy: updatedAt", "includeArchived: true", "first: $first", "after: $after",
		"id identifier number title description url createdAt updatedAt archivedAt previousIdentifiers", "state { id name type }", "team { id key name }",
		"labels { nodes { id name } }", "attachments(first: 50) { nodes { id url updatedAt } }", "pageInfo { hasNextPage endCursor }"} {
		if !strings.Contains(IssuesQuery, field) {
			t.Errorf("IssuesQuery lacks %q", field)
		}
	}
}

// A node that does not decode as an issue is set aside with what could be
// read of its names; the page's other nodes are read.
func TestDecodeIssuesResponseSetsAsideUnreadableNodes(t *testing.T) {
	t.Parallel()
	body := `{"data":{"issues":{"nodes":[
    {"id":"a","identifier":"ENG-1","number":1,"title":"good","updatedAt":"2026-03-02T10:15:00.000Z"},
    {"id":"b","identifier":"ENG-2","number":"two","title":"bad number","updatedAt":"2026-03-02T10:15:00.000Z"},
    null,
    {"id":"c","identifier":"ENG-3","number":3,"title":"good too","updatedAt":"2026-03-02T10:15:00.000Z"}
  ],"pageInfo":{"hasNextPage":false,"endCursor":null}}}}`
	page, err := DecodeIssuesResponse([]byte(body))
	if err != nil {
		t.Fatalf("DecodeIssuesResponse: %v", err)
	}
	var read []string
	for _, n := range page.Nodes {
		read = append(read, n.Identifier)
	}
	if strings.Join(read, ",") != "ENG-1,ENG-3" {
		t.Errorf("nodes read = %q, want ENG-1 and ENG-3", read)
	}
	if len(page.Unreadable) != 2 || page.Unreadable[0].ID != "b" || page.Unreadable[0].Identifier != "ENG-2" ||
		page.Unreadable[0].Err == nil || page.Unreadable[1].ID != "" || page.Unreadable[1].Err == nil {
		t.Errorf("unreadable = %+v, want ENG-2 (b) and the null node, with their errors", page.Unreadable)
	}
}
