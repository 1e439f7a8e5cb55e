package gitlab

import (
	"errors"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trackergateway/gateway/connectors"
	"github.com/trackergateway/gateway/connectors/adaptertest"
)

const host = "gitlab.example.com"

var fixtureDir = filepath.Join("..", "..", "fixtures", "gitlab")

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	return adaptertest.Fixture(t, fixtureDir, name)
}

// eventFor is the X-Gitlab-Event of a fixture.
func eventFor(file string) string {
	if strings.HasPrefix(file, "merge_request") {
		return "Merge Request Hook"
	}
	return "Issue Hook"
}

func headerFor(event string) http.Header {
	h := http.Header{}
	if event != "" {
		h.Set(HeaderEvent, event)
	}
	return h
}

func mustTime(t testing.TB, s string) time.Time { return adaptertest.MustTime(t, s) }

const (
	issueID    = "gitlab:gitlab.example.com:issue:301"
	movedID    = "gitlab:gitlab.example.com:issue:302"
	mrID       = "gitlab:gitlab.example.com:merge_request:99"
	project    = "gitlabhq/gitlab-test"
	issueRef   = "gitlabhq/gitlab-test#23"
	mrRef      = "gitlabhq/gitlab-test!1"
	issueURL   = "http://example.com/diaspora/issues/23"
	mrURL      = "http://example.com/diaspora/merge_requests/1"
	issueTitle = "New API: create/update/delete file"
	mrTitle    = "MS-Viewport"
	headSHA    = "da1560886d4f094c3e6c9ef40349f7d38b5d27d7"
)

type fixtureCase struct {
	file         string
	eventName    string
	action       connectors.Action
	kind         string
	externalID   string
	previousID   string
	entityKey    string
	ref          string
	url          string
	title        string
	labels       []string
	closed       bool
	updatedAt    string
	contribution *connectors.Contribution
}

func mr(state string, merged bool, mergedAt, updated, body string, references ...connectors.Reference) *connectors.Contribution {
	c := &connectors.Contribution{
		Kind:       connectors.KindMergeRequest,
		ID:         99,
		Number:     1,
		Repository: project,
		URL:        mrURL,
		Title:      mrTitle,
		Body:       body,
		State:      state,
		Merged:     merged,
		HeadBranch: "ms-viewport",
		BaseBranch: "master",
		HeadSHA:    headSHA,
		// The fixtures' user (id 1) is not the author (author_id 51).
		Author:     "",
		References: references,
	}
	if mergedAt != "" {
		c.MergedAt, _ = time.Parse(time.RFC3339, mergedAt)
	}
	c.UpdatedAt, _ = time.Parse(time.RFC3339, updated)
	return c
}

var fixtureCases = []fixtureCase{
	{file: "issue.json", eventName: "Issue Hook.open", action: connectors.ActionCreate, kind: connectors.KindIssue,
		externalID: issueID, entityKey: issueID, ref: issueRef, url: issueURL, title: issueTitle,
		labels: []string{"API"}, updatedAt: "2013-12-03T17:15:43Z"},
	// updated_at in GitLab's "2013-12-03 17:20:15 UTC" format.
	{file: "issue.close.json", eventName: "Issue Hook.close", action: connectors.ActionClose, kind: connectors.KindIssue,
		externalID: issueID, entityKey: issueID, ref: issueRef, url: issueURL, title: issueTitle,
		labels: []string{"API"}, closed: true, updatedAt: "2013-12-03T17:20:15Z"},
	// Moved to issue 302: the task follows; keyed by the old issue.
	{file: "issue.moved.json", eventName: "Issue Hook.close", action: connectors.ActionTransfer, kind: connectors.KindIssue,
		externalID: movedID, previousID: issueID, entityKey: issueID, ref: issueRef, url: issueURL, title: issueTitle,
		labels: []string{"API"}, updatedAt: "2013-12-03T17:25:00Z"},
	{file: "merge_request.json", eventName: "Merge Request Hook.open", action: connectors.ActionCreate, kind: connectors.KindMergeRequest,
		externalID: mrID, entityKey: mrID, ref: mrRef, url: mrURL, title: mrTitle,
		labels: []string{"API"}, updatedAt: "2013-12-03T17:23:34Z",
		contribution: mr("open", false, "", "2013-12-03T17:23:34Z", "")},
	{file: "merge_request.merged.json", eventName: "Merge Request Hook.merge", action: connectors.ActionClose, kind: connectors.KindMergeRequest,
		externalID: mrID, entityKey: mrID, ref: mrRef, url: mrURL, title: mrTitle,
		labels: []string{"API"}, closed: true, updatedAt: "2013-12-04T09:30:00Z",
		contribution: mr("merged", true, "2013-12-04T09:30:00Z", "2013-12-04T09:30:00Z", "Closes #23",
			connectors.Reference{Provider: connectors.ProviderGitLab, Ref: issueRef})},
}

func TestFixturesAllCovered(t *testing.T) {
	t.Parallel()
	var names []string
	for _, c := range fixtureCases {
		names = append(names, c.file)
	}
	adaptertest.CheckFixturesCovered(t, fixtureDir, names)
}

func TestParseFixtures(t *testing.T) {
	t.Parallel()
	for _, tt := range fixtureCases {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			got, err := Adapter{}.Parse(host, headerFor(eventFor(tt.file)), fixture(t, tt.file))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			checkEvent(t, got, tt)
		})
	}
}

func checkEvent(t *testing.T, got connectors.Event, want fixtureCase) {
	t.Helper()
	adaptertest.CheckEvent(t, got, adaptertest.Want{Provider: connectors.ProviderGitLab, EventName: want.eventName,
		Action: want.action, Kind: want.kind, ExternalID: want.externalID, PreviousID: want.previousID,
		EntityKey: want.entityKey, Repository: project, Title: want.title, Labels: want.labels,
		Closed: want.closed, UpdatedAt: mustTime(t, want.updatedAt),
		Source:       connectors.Source{Provider: connectors.ProviderGitLab, Kind: want.kind, Ref: want.ref, URL: want.url},
		Contribution: want.contribution})
}

func mutate(t testing.TB, body []byte, edit func(m map[string]any)) []byte {
	return adaptertest.Mutate(t, body, edit)
}

func attrs(m map[string]any) map[string]any {
	return m["object_attributes"].(map[string]any)
}

func TestParseIssueActions(t *testing.T) {
	t.Parallel()
	base := fixture(t, "issue.json")
	tests := []struct {
		name       string
		action     any // nil: no action key
		movedTo    any
		want       connectors.Action
		externalID string
		closed     bool
	}{
		{"open", "open", nil, connectors.ActionCreate, issueID, false},
		{"reopen", "reopen", nil, connectors.ActionReopen, issueID, false},
		{"close", "close", nil, connectors.ActionClose, issueID, true},
		{"update", "update", nil, connectors.ActionUpdate, issueID, false},
		{"no action", nil, nil, connectors.ActionUpdate, issueID, false},
		{"update, moved", "update", 302, connectors.ActionTransfer, movedID, false},
		{"close, moved_to_id 0", "close", 0, connectors.ActionClose, issueID, true},
		{"open with moved_to_id is no move", "open", 302, connectors.ActionCreate, issueID, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			body := mutate(t, base, func(m map[string]any) {
				a := attrs(m)
				if tt.action == nil {
					delete(a, "action")
				} else {
					a["action"] = tt.action
				}
				a["moved_to_id"] = tt.movedTo
			})
			got, err := Adapter{}.Parse(host, headerFor("Issue Hook"), body)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if got.Action != tt.want {
				t.Errorf("Action = %v, want %v", got.Action, tt.want)
			}
			if got.ExternalID != tt.externalID {
				t.Errorf("ExternalID = %v, want %v", got.ExternalID, tt.externalID)
			}
			if got.EntityKey != issueID {
				t.Errorf("EntityKey = %v, want %v", got.EntityKey, issueID)
			}
			if got.Closed != tt.closed {
				t.Errorf("Closed = %v, want %v", got.Closed, tt.closed)
			}
		})
	}
}

func TestParseMergeRequestActions(t *testing.T) {
	t.Parallel()
	base := fixture(t, "merge_request.json")
	tests := []struct {
		action string
		state  string
		want   connectors.Action
		wantSt string
		merged bool
	}{
		{"open", "opened", connectors.ActionCreate, "open", false},
		{"reopen", "opened", connectors.ActionReopen, "open", false},
		{"close", "closed", connectors.ActionClose, "closed", false},
		{"merge", "merged", connectors.ActionClose, "merged", true},
		{"update", "opened", connectors.ActionUpdate, "open", false},
		{"update", "locked", connectors.ActionUpdate, "open", false},
		{"update", "merged", connectors.ActionUpdate, "merged", true},
		{"approved", "opened", connectors.ActionUpdate, "open", false},
		{"unapproved", "opened", connectors.ActionUpdate, "open", false},
		{"approval", "opened", connectors.ActionUpdate, "open", false},
		{"unapproval", "opened", connectors.ActionUpdate, "open", false},
		{"", "opened", connectors.ActionUpdate, "open", false},
	}
	for _, tt := range tests {
		t.Run(tt.action+"/"+tt.state, func(t *testing.T) {
			t.Parallel()
			body := mutate(t, base, func(m map[string]any) {
				attrs(m)["action"] = tt.action
				attrs(m)["state"] = tt.state
			})
			got, err := Adapter{}.Parse(host, headerFor("Merge Request Hook"), body)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if got.Action != tt.want {
				t.Errorf("Action = %v, want %v", got.Action, tt.want)
			}
			if got.Contribution.State != tt.wantSt {
				t.Errorf("State = %v, want %v", got.Contribution.State, tt.wantSt)
			}
			if got.Contribution.Merged != tt.merged {
				t.Errorf("Merged = %v, want %v", got.Contribution.Merged, tt.merged)
			}
			if got.Closed != (tt.wantSt != "open") {
				t.Errorf("Closed = %v, want %v", got.Closed, tt.wantSt != "open")
			}
		})
	}
}

func TestParseMergeRequestDetails(t *testing.T) {
	t.Parallel()
	base := fixture(t, "merge_request.json")
	tests := []struct {
		name     string
		edit     func(m map[string]any)
		draft    bool
		author   string
		mergedAt string
		refs     []connectors.Reference
	}{
		{name: "draft", edit: func(m map[string]any) { attrs(m)["draft"] = true }, draft: true},
		{name: "work in progress", edit: func(m map[string]any) { attrs(m)["work_in_progress"] = true }, draft: true},
		{name: "author triggered the event", edit: func(m map[string]any) { attrs(m)["author_id"] = 1 }, author: "user1"},
		{name: "merged_at in the payload", edit: func(m map[string]any) {
			attrs(m)["action"] = "merge"
			attrs(m)["state"] = "merged"
			attrs(m)["merged_at"] = "2013-12-03 18:00:00 UTC"
		}, mergedAt: "2013-12-03T18:00:00Z"},
		{name: "references", edit: func(m map[string]any) {
			attrs(m)["title"] = "OPS-4 viewport"
			attrs(m)["source_branch"] = "ABC-1-viewport"
			attrs(m)["description"] = "Closes #23, gitlabhq/other#2 and #24\n\nImplements https://gitlab.example.com/gitlabhq/gitlab-test/-/issues/25 (OPS-4)"
		}, refs: []connectors.Reference{
			{Provider: connectors.ProviderGitLab, Ref: "gitlabhq/gitlab-test#23"},
			{Provider: connectors.ProviderGitLab, Ref: "gitlabhq/other#2"},
			{Provider: connectors.ProviderGitLab, Ref: "gitlabhq/gitlab-test#24"},
			{Provider: connectors.ProviderGitLab, Ref: "gitlabhq/gitlab-test#25"},
			{Provider: connectors.ProviderJira, Ref: "OPS-4"},
			{Provider: connectors.ProviderJira, Ref: "ABC-1"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Adapter{}.Parse(host, headerFor("Merge Request Hook"), mutate(t, base, tt.edit))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			c := got.Contribution
			if c.Draft != tt.draft {
				t.Errorf("Draft = %v, want %v", c.Draft, tt.draft)
			}
			if c.Author != tt.author {
				t.Errorf("Author = %v, want %v", c.Author, tt.author)
			}
			if w := mustTime(t, tt.mergedAt); !c.MergedAt.Equal(w) {
				t.Errorf("MergedAt = %v, want %v", c.MergedAt, w)
			}
			if !slices.Equal(c.References, tt.refs) {
				t.Errorf("References = %v, want %v", c.References, tt.refs)
			}
		})
	}
}

func TestParseEventType(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		event  string
		file   string
		action connectors.Action
		kind   string
	}{
		{"issue from object_kind", "", "issue.json", connectors.ActionCreate, connectors.KindIssue},
		{"merge request from object_kind", "", "merge_request.json", connectors.ActionCreate, connectors.KindMergeRequest},
		{"confidential issue", "Confidential Issue Hook", "issue.json", connectors.ActionCreate, connectors.KindIssue},
		{"push", "Push Hook", `{"object_kind":"push"}`, connectors.ActionIgnore, ""},
		{"note", "Note Hook", `{"object_kind":"note"}`, connectors.ActionIgnore, ""},
		{"confidential note", "Confidential Note Hook", `{"object_kind":"note"}`, connectors.ActionIgnore, ""},
		{"job", "Job Hook", `{"object_kind":"build"}`, connectors.ActionIgnore, ""},
		// Hooks that carry several kinds are ignored whatever the body.
		{"system hook", "System Hook", "merge_request.json", connectors.ActionIgnore, ""},
		{"unknown hook", "Some Future Hook", "issue.json", connectors.ActionIgnore, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			body := []byte(tt.file)
			if strings.HasSuffix(tt.file, ".json") {
				body = fixture(t, tt.file)
			}
			got, err := Adapter{}.Parse(host, headerFor(tt.event), body)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if got.Action != tt.action {
				t.Errorf("Action = %v, want %v", got.Action, tt.action)
			}
			if got.Kind != tt.kind {
				t.Errorf("Kind = %v, want %v", got.Kind, tt.kind)
			}
		})
	}
}

// TestParseKindMismatch: a body whose object_kind disagrees with
// X-Gitlab-Event is a malformed payload (the delivery ends failed), never an
// event of the header's kind built from another kind's body.
func TestParseKindMismatch(t *testing.T) {
	t.Parallel()
	issue := fixture(t, "issue.json")
	merge := fixture(t, "merge_request.json")
	noKind := mutate(t, issue, func(m map[string]any) { delete(m, "object_kind") })
	tests := []struct {
		name  string
		event string
		body  []byte
		want  string
	}{
		{"merge request as an issue", "Issue Hook", merge, `object_kind "merge_request" does not match X-Gitlab-Event "Issue Hook"`},
		{"merge request as a confidential issue", "Confidential Issue Hook", merge,
			`object_kind "merge_request" does not match X-Gitlab-Event "Confidential Issue Hook"`},
		{"issue as a merge request", "Merge Request Hook", issue, `object_kind "issue" does not match X-Gitlab-Event "Merge Request Hook"`},
		{"issue as a note", "Note Hook", issue, `object_kind "issue" does not match X-Gitlab-Event "Note Hook"`},
		{"merge request as a push", "Push Hook", merge, `object_kind "merge_request" does not match X-Gitlab-Event "Push Hook"`},
		{"issue without object_kind", "Issue Hook", noKind, `object_kind "" does not match X-Gitlab-Event "Issue Hook"`},
		{"push that is not JSON", "Push Hook", []byte("nope"), "malformed payload"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Adapter{}.Parse(host, headerFor(tt.event), tt.body)
			if !errors.Is(err, connectors.ErrMalformedPayload) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Parse = %+v, %v; want an error wrapping %v containing %q", got, err, connectors.ErrMalformedPayload, tt.want)
			}
		})
	}
}

func TestParseTime(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want string
	}{
		{"2013-12-03T17:15:43Z", "2013-12-03T17:15:43Z"},
		{"2013-12-03 17:15:43 UTC", "2013-12-03T17:15:43Z"},
		{"2013-12-03T17:15:43.123+02:00", "2013-12-03T15:15:43.123Z"},
		{"2013-12-03 17:15:43 +0200", "2013-12-03T15:15:43Z"},
		{"2013-12-03 17:15:43", "2013-12-03T17:15:43Z"},
		{"", ""},
		{"yesterday", ""},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			var want time.Time
			if tt.want != "" {
				want, _ = time.Parse(time.RFC3339Nano, tt.want)
			}
			if got := parseTime(tt.in); !got.Equal(want) {
				t.Errorf("parseTime(%q) = %v, want %v", tt.in, got, want)
			}
		})
	}
}

func TestParseMalformed(t *testing.T) {
	t.Parallel()
	issue := fixture(t, "issue.json")
	merge := fixture(t, "merge_request.json")
	tests := []struct {
		name  string
		event string
		body  []byte
	}{
		{"not JSON", "Issue Hook", []byte(`{"object_kind":`)},
		{"JSON array", "Issue Hook", []byte(`[]`)},
		{"no header, not JSON", "", []byte(`nope`)},
		{"no header, unknown object_kind", "", []byte(`{"object_kind":"push"}`)},
		{"issue id missing", "Issue Hook", mutate(t, issue, func(m map[string]any) { delete(attrs(m), "id") })},
		{"issue id zero", "Issue Hook", mutate(t, issue, func(m map[string]any) { attrs(m)["id"] = 0 })},
		{"issue iid missing", "Issue Hook", mutate(t, issue, func(m map[string]any) { delete(attrs(m), "iid") })},
		{"issue without project", "Issue Hook", mutate(t, issue, func(m map[string]any) { delete(m, "project") })},
		{"issue id a string", "Issue Hook", mutate(t, issue, func(m map[string]any) { attrs(m)["id"] = "301" })},
		{"labels not a list", "Issue Hook", mutate(t, issue, func(m map[string]any) { m["labels"] = "API" })},
		{"merge request id missing", "Merge Request Hook", mutate(t, merge, func(m map[string]any) { delete(attrs(m), "id") })},
		{"merge request without project", "Merge Request Hook", mutate(t, merge, func(m map[string]any) { delete(m, "project") })},
		{"merge request without attributes", "Merge Request Hook", []byte(`{"object_kind":"merge_request"}`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Adapter{}.Parse(host, headerFor(tt.event), tt.body)
			if !errors.Is(err, connectors.ErrMalformedPayload) {
				t.Errorf("Parse error = %v, want %v", err, connectors.ErrMalformedPayload)
			}
		})
	}
}

func TestVerify(t *testing.T) {
	t.Parallel()
	body := fixture(t, "issue.json")
	tests := []struct {
		name    string
		token   string
		secrets [][]byte
		want    error
	}{
		{"good", "s3cret", [][]byte{[]byte("s3cret")}, nil},
		{"rotation: old secret listed second", "old", [][]byte{[]byte("new"), []byte("old")}, nil},
		{"wrong token", "guess", [][]byte{[]byte("s3cret")}, connectors.ErrBadSignature},
		{"prefix of the secret", "s3c", [][]byte{[]byte("s3cret")}, connectors.ErrBadSignature},
		{"no secrets", "s3cret", nil, connectors.ErrBadSignature},
		{"missing", "", [][]byte{[]byte("s3cret")}, connectors.ErrMissingSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := http.Header{}
			if tt.token != "" {
				h.Set(HeaderToken, tt.token)
			}
			got := Adapter{}.Verify(h, body, tt.secrets)
			if !errors.Is(got, tt.want) || (got == nil) != (tt.want == nil) {
				t.Errorf("Verify = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestSign(t *testing.T) {
	t.Parallel()
	body := fixture(t, "issue.json")
	secret := []byte("s3cret")
	h := http.Header{}
	Adapter{}.Sign(h, body, secret)
	if err := (Adapter{}).Verify(h, body, [][]byte{secret}); err != nil {
		t.Errorf("Verify(Sign) = %v, want nil", err)
	}
	if got, want := h.Get(HeaderToken), "s3cret"; got != want {
		t.Errorf("%s = %v, want %v", HeaderToken, got, want)
	}
	if got := h.Get(HeaderIdempotencyKey); len(got) != 36 {
		t.Errorf("%s = %q, want a UUID", HeaderIdempotencyKey, got)
	}
	if got, want := h.Get("Content-Type"), "application/json"; got != want {
		t.Errorf("Content-Type = %v, want %v", got, want)
	}
	h2 := http.Header{}
	h2.Set(HeaderIdempotencyKey, "resend-1")
	Adapter{}.Sign(h2, body, secret)
	if got, want := h2.Get(HeaderIdempotencyKey), "resend-1"; got != want {
		t.Errorf("%s = %v, want %v", HeaderIdempotencyKey, got, want)
	}
}

func TestDeliveryKey(t *testing.T) {
	t.Parallel()
	body := fixture(t, "issue.json")
	tests := []struct {
		name    string
		headers map[string]string
		want    string
	}{
		{"idempotency key", map[string]string{HeaderIdempotencyKey: "f0b5a4c6-1d2e-4f6a-8b9c-0d1e2f3a4b5c"}, "f0b5a4c6-1d2e-4f6a-8b9c-0d1e2f3a4b5c"},
		{"idempotency key and event UUID", map[string]string{HeaderIdempotencyKey: "k", HeaderEventUUID: "u"}, "k"},
		{"event UUID is never the key", map[string]string{HeaderEventUUID: "u"}, connectors.BodyDeliveryKey(body)},
		{"nothing", map[string]string{}, connectors.BodyDeliveryKey(body)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := http.Header{}
			for k, v := range tt.headers {
				h.Set(k, v)
			}
			if got := (Adapter{}).DeliveryKey(h, body); got != tt.want {
				t.Errorf("DeliveryKey = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestHeaders(t *testing.T) {
	t.Parallel()
	a := Adapter{}
	if got, want := a.Provider(), connectors.ProviderGitLab; got != want {
		t.Errorf("Provider = %v, want %v", got, want)
	}
	if got, want := a.EventName(headerFor("Issue Hook")), "Issue Hook"; got != want {
		t.Errorf("EventName = %v, want %v", got, want)
	}
	if got := a.SecretHeaders(); !slices.Equal(got, []string{"X-Gitlab-Token"}) {
		t.Errorf("SecretHeaders = %v, want [X-Gitlab-Token]", got)
	}
}
