package gitea

import (
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trackergateway/gateway/connectors"
	"github.com/trackergateway/gateway/connectors/adaptertest"
)

const host = "gitea.example.com"

var fixtureDir = filepath.Join("..", "..", "fixtures", "gitea")

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	return adaptertest.Fixture(t, fixtureDir, name)
}

// eventFor is the X-Gitea-Event of a fixture: its name up to the first dot.
func eventFor(file string) string {
	name, _, _ := strings.Cut(file, ".")
	return name
}

func headerFor(event string) http.Header {
	h := http.Header{}
	h.Set(HeaderEvent, event)
	return h
}

func mustTime(t testing.TB, s string) time.Time { return adaptertest.MustTime(t, s) }

const (
	issueID    = "gitea:gitea.example.com:issue:2"
	prID       = "gitea:gitea.example.com:pull_request:12"
	repo       = "test/repo"
	issueRef   = "test/repo#2"
	prRef      = "test/repo#12"
	issueURL   = "http://localhost:3000/test/repo/issues/2"
	prURL      = "http://localhost:3000/test/repo/pulls/12"
	headSHA    = "2020558fe2e34debb818a514715839cabd25e778"
	prBody     = "fixes bug #2"
	issueTitle = "crash"
)

func pr(state, title, body, updated, mergedAt string, draft bool, references ...connectors.Reference) *connectors.Contribution {
	c := &connectors.Contribution{
		Kind:       connectors.KindPullRequest,
		ID:         12,
		Number:     12,
		Repository: repo,
		URL:        prURL,
		Title:      title,
		Body:       body,
		State:      state,
		Draft:      draft,
		Merged:     state == "merged",
		HeadBranch: "test",
		BaseBranch: "master",
		HeadSHA:    headSHA,
		Author:     "user1",
		References: references,
	}
	c.MergedAt, _ = time.Parse(time.RFC3339, mergedAt)
	c.UpdatedAt, _ = time.Parse(time.RFC3339, updated)
	return c
}

type fixtureCase struct {
	file         string
	eventName    string
	action       connectors.Action
	kind         string
	externalID   string
	ref          string
	url          string
	title        string
	labels       []string
	closed       bool
	updatedAt    string
	contribution *connectors.Contribution
}

var fixtureCases = []fixtureCase{
	{file: "issues.opened.json", eventName: "issues.opened", action: connectors.ActionCreate, kind: connectors.KindIssue,
		externalID: issueID, ref: issueRef, url: issueURL, title: issueTitle, labels: []string{}, updatedAt: "2024-05-06T08:00:00Z"},
	{file: "issues.edited.json", eventName: "issues.edited", action: connectors.ActionUpdate, kind: connectors.KindIssue,
		externalID: issueID, ref: issueRef, url: issueURL, title: issueTitle, labels: []string{}, updatedAt: "2024-05-06T08:05:00Z"},
	{file: "issues.label_updated.json", eventName: "issues.label_updated", action: connectors.ActionUpdate, kind: connectors.KindIssue,
		externalID: issueID, ref: issueRef, url: issueURL, title: issueTitle, labels: []string{"bug"}, updatedAt: "2024-05-06T08:10:00Z"},
	{file: "issues.closed.json", eventName: "issues.closed", action: connectors.ActionClose, kind: connectors.KindIssue,
		externalID: issueID, ref: issueRef, url: issueURL, title: issueTitle, labels: []string{"bug"}, closed: true, updatedAt: "2024-05-06T08:20:00Z"},
	{file: "issues.reopened.json", eventName: "issues.reopened", action: connectors.ActionReopen, kind: connectors.KindIssue,
		externalID: issueID, ref: issueRef, url: issueURL, title: issueTitle, labels: []string{"bug"}, updatedAt: "2024-05-06T08:30:00Z"},
	{file: "issues.deleted.json", eventName: "issues.deleted", action: connectors.ActionDelete, kind: connectors.KindIssue,
		externalID: issueID, ref: issueRef, url: issueURL, title: issueTitle, labels: []string{"bug"}, updatedAt: "2024-05-06T08:30:00Z"},
	// "fixes bug #2" names no issue: a keyword must be followed by the
	// reference.
	{file: "pull_request.opened.json", eventName: "pull_request.opened", action: connectors.ActionCreate, kind: connectors.KindPullRequest,
		externalID: prID, ref: prRef, url: prURL, title: "Fix bug", labels: []string{}, updatedAt: "2024-05-06T09:00:00Z",
		contribution: pr("open", "Fix bug", prBody, "2024-05-06T09:00:00Z", "", false)},
	{file: "pull_request.opened.wip-title.json", eventName: "pull_request.opened", action: connectors.ActionCreate, kind: connectors.KindPullRequest,
		externalID: prID, ref: prRef, url: prURL, title: "WIP: Fix bug", labels: []string{}, updatedAt: "2024-05-06T09:00:00Z",
		contribution: pr("open", "WIP: Fix bug", prBody, "2024-05-06T09:00:00Z", "", true)},
	{file: "pull_request.closed.merged.json", eventName: "pull_request.closed", action: connectors.ActionClose, kind: connectors.KindPullRequest,
		externalID: prID, ref: prRef, url: prURL, title: "Fix bug TES-41", labels: []string{}, closed: true, updatedAt: "2024-05-06T10:00:00Z",
		contribution: pr("merged", "Fix bug TES-41", "fixes bug #2\n\nFixes #2", "2024-05-06T10:00:00Z", "2024-05-06T10:00:00Z", false,
			connectors.Reference{Provider: connectors.ProviderGitea, Ref: issueRef},
			connectors.Reference{Provider: connectors.ProviderJira, Ref: "TES-41"})},
	{file: "pull_request.closed.json", eventName: "pull_request.closed", action: connectors.ActionClose, kind: connectors.KindPullRequest,
		externalID: prID, ref: prRef, url: prURL, title: "Fix bug", labels: []string{}, closed: true, updatedAt: "2024-05-06T10:30:00Z",
		contribution: pr("closed", "Fix bug", prBody, "2024-05-06T10:30:00Z", "", false)},
	{file: "push.json", eventName: "push", action: connectors.ActionIgnore},
}

func TestParseFixtures(t *testing.T) {
	t.Parallel()
	names := make([]string, 0, len(fixtureCases))
	for _, tc := range fixtureCases {
		names = append(names, tc.file)
	}
	adaptertest.CheckFixturesCovered(t, fixtureDir, names)
	for _, tc := range fixtureCases {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			got, err := Adapter{}.Parse(host, headerFor(eventFor(tc.file)), fixture(t, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			want := adaptertest.Want{Provider: connectors.ProviderGitea, EventName: tc.eventName, Action: tc.action, Kind: tc.kind,
				ExternalID: tc.externalID, EntityKey: tc.externalID, Title: tc.title, Labels: tc.labels, Closed: tc.closed,
				UpdatedAt: mustTime(t, tc.updatedAt), Contribution: tc.contribution}
			if tc.action != connectors.ActionIgnore {
				want.Repository = repo
				want.Source = connectors.Source{Provider: connectors.ProviderGitea, Kind: tc.kind, Ref: tc.ref, URL: tc.url}
			}
			if tc.action == connectors.ActionIgnore {
				want.Labels = nil
			}
			adaptertest.CheckEvent(t, got, want)
		})
	}
}

// Gitea sends label, assignee, milestone and synchronize changes as the
// issues and pull_request events with their own actions, which all update.
// The finer event types (X-Gitea-Event-Type) are accepted as the event too.
func TestParseEventTypesAndActions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		event, fixture, action string
		want                   connectors.Action
	}{
		{"issues", "issues.opened.json", "assigned", connectors.ActionUpdate},
		{"issues", "issues.opened.json", "unassigned", connectors.ActionUpdate},
		{"issues", "issues.opened.json", "label_cleared", connectors.ActionUpdate},
		{"issues", "issues.opened.json", "milestoned", connectors.ActionUpdate},
		{"issues", "issues.opened.json", "demilestoned", connectors.ActionUpdate},
		{"issue_label", "issues.opened.json", "label_updated", connectors.ActionUpdate},
		{"issue_assign", "issues.opened.json", "assigned", connectors.ActionUpdate},
		{"issue_milestone", "issues.opened.json", "milestoned", connectors.ActionUpdate},
		{"issues", "issues.opened.json", "transferred", connectors.ActionIgnore},
		{"pull_request", "pull_request.opened.json", "edited", connectors.ActionUpdate},
		{"pull_request", "pull_request.opened.json", "reopened", connectors.ActionReopen},
		{"pull_request_sync", "pull_request.opened.json", "synchronized", connectors.ActionUpdate},
		{"pull_request_label", "pull_request.opened.json", "label_updated", connectors.ActionUpdate},
		{"pull_request_assign", "pull_request.opened.json", "unassigned", connectors.ActionUpdate},
		{"pull_request_milestone", "pull_request.opened.json", "demilestoned", connectors.ActionUpdate},
		{"pull_request_review_request", "pull_request.opened.json", "review_requested", connectors.ActionUpdate},
		{"pull_request", "pull_request.opened.json", "reviewed", connectors.ActionUpdate},
		{"pull_request", "pull_request.opened.json", "some_future_action", connectors.ActionIgnore},
	}
	for _, tt := range tests {
		t.Run(tt.event+"."+tt.action, func(t *testing.T) {
			t.Parallel()
			body := adaptertest.Mutate(t, fixture(t, tt.fixture), func(m map[string]any) { m["action"] = tt.action })
			got, err := Adapter{}.Parse(host, headerFor(tt.event), body)
			if err != nil {
				t.Fatal(err)
			}
			name, _, _ := strings.Cut(tt.fixture, ".")
			if got.Action != tt.want || got.EventName != name+"."+tt.action {
				t.Fatalf("Parse = %s %s, want %s.%s %s", got.EventName, got.Action, name, tt.action, tt.want)
			}
			// Ignored actions still describe the entity for the outcome.
			if got.ExternalID == "" {
				t.Fatalf("ExternalID is empty: %+v", got)
			}
		})
	}
}

// Events other than issues and pull_request are recorded and ignored,
// whatever their body.
func TestParseIgnoresOtherEvents(t *testing.T) {
	t.Parallel()
	for _, event := range []string{"push", "create", "delete", "issue_comment", "release", "pull_request_approved", "pull_request_comment", "repository"} {
		t.Run(event, func(t *testing.T) {
			t.Parallel()
			got, err := Adapter{}.Parse(host, headerFor(event), fixture(t, "issues.opened.json"))
			if err != nil {
				t.Fatal(err)
			}
			want := connectors.Event{Provider: connectors.ProviderGitea, EventName: event, Action: connectors.ActionIgnore}
			if got.Provider != want.Provider || got.EventName != want.EventName || got.Action != want.Action || got.ExternalID != "" {
				t.Fatalf("Parse = %+v, want %+v", got, want)
			}
		})
	}
}

// Forgejo sends its own X-Forgejo-* headers beside Gitea's; a delivery
// with only Forgejo's is named, keyed and parsed the same.
func TestForgejoHeaders(t *testing.T) {
	t.Parallel()
	body := fixture(t, "issues.opened.json")
	secret := []byte("forgejo-secret")
	h := http.Header{}
	h.Set(HeaderForgejoEvent, "issues")
	h.Set("X-Forgejo-Event-Type", "issues")
	h.Set(HeaderForgejoDelivery, "f0b0c1d2-0000-4000-8000-000000000001")
	h.Set(HeaderForgejoSignature, connectors.HMACSHA256Hex(secret, body))
	a := Adapter{}
	if err := a.Verify(h, body, [][]byte{secret}); err != nil {
		t.Fatalf("Verify = %v", err)
	}
	if got := a.EventName(h); got != "issues" {
		t.Fatalf("EventName = %q", got)
	}
	if got := a.DeliveryKey(h, body); got != "f0b0c1d2-0000-4000-8000-000000000001" {
		t.Fatalf("DeliveryKey = %q", got)
	}
	got, err := a.Parse(host, h, body)
	if err != nil {
		t.Fatal(err)
	}
	if got.Action != connectors.ActionCreate || got.ExternalID != issueID {
		t.Fatalf("Parse = %+v", got)
	}
}

func TestVerify(t *testing.T) {
	t.Parallel()
	body := fixture(t, "issues.opened.json")
	current, previous := []byte("current-secret"), []byte("previous-secret")
	secrets := [][]byte{current, previous}
	good := connectors.HMACSHA256Hex(current, body)
	rotated := connectors.HMACSHA256Hex(previous, body)
	wrong := connectors.HMACSHA256Hex([]byte("other"), body)
	tests := []struct {
		name    string
		headers map[string]string
		want    error
	}{
		{"gitea header", map[string]string{HeaderSignature: good}, nil},
		{"forgejo header", map[string]string{HeaderForgejoSignature: good}, nil},
		{"both", map[string]string{HeaderSignature: good, HeaderForgejoSignature: good}, nil},
		{"both, forgejo wrong", map[string]string{HeaderSignature: good, HeaderForgejoSignature: wrong}, connectors.ErrBadSignature},
		{"both, gitea wrong", map[string]string{HeaderSignature: wrong, HeaderForgejoSignature: good}, connectors.ErrBadSignature},
		{"rotated secret", map[string]string{HeaderSignature: rotated}, nil},
		{"upper-case hex", map[string]string{HeaderSignature: strings.ToUpper(good)}, nil},
		{"all that Gitea sends", map[string]string{HeaderSignature: good, HeaderGogsSignature: good,
			HeaderHubSignature: "sha1=0000000000000000000000000000000000000000", HeaderHubSignature256: "sha256=" + good}, nil},
		{"wrong secret", map[string]string{HeaderSignature: wrong}, connectors.ErrBadSignature},
		{"sha256= prefix", map[string]string{HeaderSignature: "sha256=" + good}, connectors.ErrBadSignature},
		{"sha1 only", map[string]string{HeaderHubSignature: "sha1=0000000000000000000000000000000000000000"}, connectors.ErrUnsupportedSignature},
		{"github sha256 only", map[string]string{HeaderHubSignature256: "sha256=" + good}, connectors.ErrMissingSignature},
		{"missing", nil, connectors.ErrMissingSignature},
		{"empty, as without a secret", map[string]string{HeaderSignature: "", HeaderForgejoSignature: " "}, connectors.ErrMissingSignature},
		{"bad hex", map[string]string{HeaderSignature: "zz" + good[2:]}, connectors.ErrBadSignature},
		{"short", map[string]string{HeaderSignature: good[:40]}, connectors.ErrBadSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := http.Header{}
			for k, v := range tt.headers {
				h.Set(k, v)
			}
			if err := (Adapter{}).Verify(h, body, secrets); !errors.Is(err, tt.want) || (tt.want == nil && err != nil) {
				t.Fatalf("Verify = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestSignVerifies(t *testing.T) {
	t.Parallel()
	body := []byte(`{"action":"opened"}`)
	h := http.Header{}
	Adapter{}.Sign(h, body, []byte("s"))
	if err := (Adapter{}).Verify(h, body, [][]byte{[]byte("s")}); err != nil {
		t.Fatalf("Verify of a signed request: %v", err)
	}
	if h.Get(HeaderDelivery) == "" || h.Get("Content-Type") != "application/json" {
		t.Fatalf("Sign headers = %v", h)
	}
	kept := http.Header{}
	kept.Set(HeaderDelivery, "d-1")
	Adapter{}.Sign(kept, body, []byte("s"))
	if got := kept.Get(HeaderDelivery); got != "d-1" {
		t.Fatalf("Sign replaced the delivery: %q", got)
	}
}

func TestDeliveryKey(t *testing.T) {
	t.Parallel()
	body := []byte(`{"action":"opened"}`)
	tests := []struct {
		name    string
		headers map[string]string
		want    string
	}{
		{"gitea", map[string]string{HeaderDelivery: "d-gitea"}, "d-gitea"},
		{"forgejo", map[string]string{HeaderForgejoDelivery: "d-forgejo"}, "d-forgejo"},
		{"both: gitea's", map[string]string{HeaderDelivery: "d-gitea", HeaderForgejoDelivery: "d-forgejo"}, "d-gitea"},
		{"trimmed", map[string]string{HeaderDelivery: "  d-gitea "}, "d-gitea"},
		{"blank gitea falls back", map[string]string{HeaderDelivery: " ", HeaderForgejoDelivery: "d-forgejo"}, "d-forgejo"},
		{"none: body hash", nil, connectors.BodyDeliveryKey(body)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := http.Header{}
			for k, v := range tt.headers {
				h.Set(k, v)
			}
			if got := (Adapter{}).DeliveryKey(h, body); got != tt.want {
				t.Fatalf("DeliveryKey = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestEventName(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		headers map[string]string
		want    string
	}{
		{"gitea", map[string]string{HeaderEvent: "issues"}, "issues"},
		{"forgejo", map[string]string{HeaderForgejoEvent: "pull_request"}, "pull_request"},
		{"both: gitea's", map[string]string{HeaderEvent: "issues", HeaderForgejoEvent: "push"}, "issues"},
		{"trimmed", map[string]string{HeaderEvent: " push "}, "push"},
		{"blank gitea falls back", map[string]string{HeaderEvent: " ", HeaderForgejoEvent: "push"}, "push"},
		{"none", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := http.Header{}
			for k, v := range tt.headers {
				h.Set(k, v)
			}
			if got := (Adapter{}).EventName(h); got != tt.want {
				t.Fatalf("EventName = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestParseMalformed(t *testing.T) {
	t.Parallel()
	issue := fixture(t, "issues.opened.json")
	pull := fixture(t, "pull_request.opened.json")
	tests := []struct {
		name   string
		header http.Header
		body   []byte
		want   string
	}{
		{"no event header", http.Header{}, issue, "parse gitea delivery: malformed payload: missing X-Gitea-Event header"},
		{"not JSON", headerFor("issues"), []byte("{"), "parse gitea issues: malformed payload"},
		{"wrong type", headerFor("pull_request"), []byte(`{"action":"opened","pull_request":{"id":"12"}}`), "parse gitea pull_request: malformed payload"},
		{"no issue", headerFor("issues"), []byte(`{"action":"opened"}`), "parse gitea issues.opened: malformed payload: no issue"},
		{"no pull request", headerFor("pull_request"), []byte(`{"action":"opened"}`), "parse gitea pull_request.opened: malformed payload: no pull_request"},
		{"issue id", headerFor("issues"), adaptertest.Mutate(t, issue, func(m map[string]any) { adaptertest.Obj(m, "issue")["id"] = 0 }),
			"parse gitea issues.opened: malformed payload: issue: missing id"},
		{"issue number", headerFor("issues"), adaptertest.Mutate(t, issue, func(m map[string]any) { delete(adaptertest.Obj(m, "issue"), "number") }),
			"parse gitea issues.opened: malformed payload: issue: missing number"},
		{"issue repository", headerFor("issues"), adaptertest.Mutate(t, issue, func(m map[string]any) {
			delete(m, "repository")
			delete(adaptertest.Obj(m, "issue"), "repository")
		}), "parse gitea issues.opened: malformed payload: issue: missing repository"},
		{"pull request id", headerFor("pull_request"), adaptertest.Mutate(t, pull, func(m map[string]any) { adaptertest.Obj(m, "pull_request")["id"] = -1 }),
			"parse gitea pull_request.opened: malformed payload: pull_request: missing id"},
		{"pull request repository", headerFor("pull_request"), adaptertest.Mutate(t, pull, func(m map[string]any) {
			delete(m, "repository")
			delete(adaptertest.Obj(adaptertest.Obj(m, "pull_request"), "base"), "repo")
		}), "parse gitea pull_request.opened: malformed payload: pull_request: missing repository"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Adapter{}.Parse(host, tt.header, tt.body)
			if !errors.Is(err, connectors.ErrMalformedPayload) || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("Parse error = %v, want %q", err, tt.want)
			}
		})
	}
}

// Without the top-level repository, the issue's own repository member and
// the pull request's base repository name it.
func TestParseRepositoryFallback(t *testing.T) {
	t.Parallel()
	tests := []struct{ event, fixture string }{
		{"issues", "issues.opened.json"},
		{"pull_request", "pull_request.opened.json"},
	}
	for _, tt := range tests {
		t.Run(tt.event, func(t *testing.T) {
			t.Parallel()
			body := adaptertest.Mutate(t, fixture(t, tt.fixture), func(m map[string]any) { delete(m, "repository") })
			got, err := Adapter{}.Parse(host, headerFor(tt.event), body)
			if err != nil {
				t.Fatal(err)
			}
			if got.Repository != repo {
				t.Fatalf("Repository = %q, want %q", got.Repository, repo)
			}
		})
	}
}

func TestDraft(t *testing.T) {
	t.Parallel()
	yes, no := true, false
	tests := []struct {
		name  string
		draft *bool
		title string
		want  bool
	}{
		{"member true", &yes, "Fix bug", true},
		{"member false wins over the title", &no, "WIP: Fix bug", false},
		{"no member, WIP:", nil, "WIP: Fix bug", true},
		{"no member, [wip] in lower case", nil, "[wip] Fix bug", true},
		{"no member, WIP inside", nil, "Fix WIP: bug", false},
		{"no member, plain", nil, "Fix bug", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := isDraft(tt.draft, tt.title); got != tt.want {
				t.Fatalf("isDraft(%v, %q) = %v, want %v", tt.draft, tt.title, got, tt.want)
			}
		})
	}
}
