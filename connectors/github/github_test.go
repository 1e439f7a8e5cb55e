package github

import (
	"errors"
	"net/http"
	"net/url"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trackergateway/gateway/connectors"
	"github.com/trackergateway/gateway/connectors/adaptertest"
)

const host = "github.com"

var fixtureDir = filepath.Join("..", "..", "fixtures", "github")

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	return adaptertest.Fixture(t, fixtureDir, name)
}

// eventFor is the X-GitHub-Event of a fixture: its name up to the first dot.
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
	installationEntity = "github:github.com:installation:41000001"
	issueID            = "github:github.com:issue:444500041"
	oldIssueID         = "github:github.com:issue:512748900"
	prID               = "github:github.com:pull_request:279147437"
	issueRef           = "Codertocat/Hello-World#1"
	prRef              = "Codertocat/Hello-World#2"
	repo               = "Codertocat/Hello-World"
	issueTitle         = "Spelling error in the README file"
	prTitle            = "Update the README with new information."
	issueURL           = "https://github.com/Codertocat/Hello-World/issues/1"
	prURL              = "https://github.com/Codertocat/Hello-World/pull/2"
	headSHA            = "ec26c3e57ca3a959ca5aad62de7213c562f8c821"
	prBody             = "This is a pretty simple change that we need to pull into master."
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
	repository   string
	title        string
	labels       []string
	closed       bool
	updatedAt    string
	contribution *connectors.Contribution
	// installationID is the App installation of the delivery;
	// installation the change an installation event carries.
	installationID int64
	installation   *connectors.InstallationChange
}

const appInstallation = 41000001

// fixtureApp is the GitHub App of the installation fixtures.
const fixtureApp = 800001

// installation is the change an installation fixture carries: Codertocat's
// installation, selected repositories.
func installation(action, at string, added, removed []string) *connectors.InstallationChange {
	c := &connectors.InstallationChange{ID: appInstallation, AppID: fixtureApp, Account: "Codertocat", AccountType: "User", Action: action,
		RepositorySelection: "selected", Repositories: added, RemovedRepositories: removed}
	c.At, _ = time.Parse(time.RFC3339, at)
	return c
}

func pr(state string, merged bool, mergedAt, updated, head, body string, references ...connectors.Reference) *connectors.Contribution {
	c := &connectors.Contribution{
		Kind:       connectors.KindPullRequest,
		ID:         279147437,
		Number:     2,
		Repository: repo,
		URL:        prURL,
		Title:      prTitle,
		Body:       body,
		State:      state,
		Merged:     merged,
		HeadBranch: head,
		BaseBranch: "master",
		HeadSHA:    headSHA,
		Author:     "Codertocat",
		References: references,
	}
	if mergedAt != "" {
		c.MergedAt, _ = time.Parse(time.RFC3339, mergedAt)
	}
	c.UpdatedAt, _ = time.Parse(time.RFC3339, updated)
	return c
}

var fixtureCases = []fixtureCase{
	{file: "ping.json", eventName: "ping", action: connectors.ActionIgnore},
	{file: "installation.created.json", eventName: "installation.created", action: connectors.ActionIgnore,
		entityKey: installationEntity, installationID: appInstallation,
		installation: installation("created", "2026-03-02T09:00:00Z", []string{repo}, nil)},
	{file: "installation.suspend.json", eventName: "installation.suspend", action: connectors.ActionIgnore,
		entityKey: installationEntity, installationID: appInstallation,
		installation: func() *connectors.InstallationChange {
			c := installation("suspend", "2026-03-02T10:00:00Z", nil, nil)
			c.SuspendedAt = c.At
			return c
		}()},
	{file: "installation.unsuspend.json", eventName: "installation.unsuspend", action: connectors.ActionIgnore,
		entityKey: installationEntity, installationID: appInstallation, installation: installation("unsuspend", "2026-03-02T10:30:00Z", nil, nil)},
	{file: "installation.new_permissions_accepted.json", eventName: "installation.new_permissions_accepted", action: connectors.ActionIgnore,
		entityKey: installationEntity, installationID: appInstallation,
		installation: installation("new_permissions_accepted", "2026-03-02T10:45:00Z", nil, nil)},
	{file: "installation.deleted.json", eventName: "installation.deleted", action: connectors.ActionIgnore,
		entityKey: installationEntity, installationID: appInstallation, installation: installation("deleted", "2026-03-02T12:00:00Z", nil, nil)},
	{file: "installation_repositories.added.json", eventName: "installation_repositories.added", action: connectors.ActionIgnore,
		entityKey: installationEntity, installationID: appInstallation,
		installation: installation("added", "2026-03-02T11:00:00Z", []string{"Codertocat/Space"}, nil)},
	{file: "installation_repositories.removed.json", eventName: "installation_repositories.removed", action: connectors.ActionIgnore,
		entityKey: installationEntity, installationID: appInstallation,
		installation: installation("removed", "2026-03-02T11:30:00Z", nil, []string{repo})},
	// The same issue delivered through a GitHub App installation (as the
	// real pull_request and some issues examples are, with installation 1):
	// the same external ID as the repository hook's delivery.
	{file: "issues.opened.app.json", eventName: "issues.opened", action: connectors.ActionCreate, kind: connectors.KindIssue,
		externalID: issueID, entityKey: issueID, ref: issueRef, url: issueURL, repository: repo, title: issueTitle,
		labels: []string{"bug"}, updatedAt: "2019-05-15T15:20:18Z", installationID: appInstallation},
	{file: "issues.opened.json", eventName: "issues.opened", action: connectors.ActionCreate, kind: connectors.KindIssue,
		externalID: issueID, entityKey: issueID, ref: issueRef, url: issueURL, repository: repo, title: issueTitle,
		labels: []string{"bug"}, updatedAt: "2019-05-15T15:20:18Z"},
	{file: "issues.edited.json", eventName: "issues.edited", action: connectors.ActionUpdate, kind: connectors.KindIssue,
		externalID: issueID, entityKey: issueID, ref: issueRef, url: issueURL, repository: repo, title: issueTitle,
		labels: []string{"bug"}, updatedAt: "2019-05-15T15:20:18Z"},
	{file: "issues.labeled.json", eventName: "issues.labeled", action: connectors.ActionUpdate, kind: connectors.KindIssue,
		externalID: issueID, entityKey: issueID, ref: issueRef, url: issueURL, repository: repo, title: issueTitle,
		labels: []string{"bug"}, updatedAt: "2019-05-15T15:20:18Z"},
	{file: "issues.closed.json", eventName: "issues.closed", action: connectors.ActionClose, kind: connectors.KindIssue,
		externalID: issueID, entityKey: issueID, ref: issueRef, url: issueURL, repository: repo, title: issueTitle,
		labels: []string{"bug"}, closed: true, updatedAt: "2019-05-15T15:25:00Z"},
	{file: "issues.reopened.json", eventName: "issues.reopened", action: connectors.ActionReopen, kind: connectors.KindIssue,
		externalID: issueID, entityKey: issueID, ref: issueRef, url: issueURL, repository: repo, title: issueTitle,
		labels: []string{"bug"}, updatedAt: "2021-10-11T16:40:56Z", installationID: 1},
	{file: "issues.deleted.json", eventName: "issues.deleted", action: connectors.ActionDelete, kind: connectors.KindIssue,
		externalID: issueID, entityKey: issueID, ref: issueRef, url: issueURL, repository: repo, title: issueTitle,
		labels: []string{"bug"}, closed: true, updatedAt: "2021-10-11T16:40:56Z", installationID: 1},
	// The old issue (octo-org/octo-repo, 512748900) moved to
	// Codertocat/Hello-World#1 (444500041): the event describes the new
	// issue and is keyed by the old one.
	{file: "issues.transferred.json", eventName: "issues.transferred", action: connectors.ActionTransfer, kind: connectors.KindIssue,
		externalID: issueID, previousID: oldIssueID, entityKey: oldIssueID, ref: issueRef, url: issueURL, repository: repo,
		title: issueTitle, labels: []string{"bug"}, updatedAt: "2019-05-15T15:20:18Z"},
	{file: "issues.opened.with-transfer.json", eventName: "issues.opened", action: connectors.ActionCreate, kind: connectors.KindIssue,
		externalID: issueID, previousID: oldIssueID, entityKey: oldIssueID, ref: issueRef, url: issueURL, repository: repo,
		title: issueTitle, labels: []string{"bug"}, updatedAt: "2019-05-15T15:20:18Z"},
	{file: "pull_request.opened.json", eventName: "pull_request.opened", action: connectors.ActionCreate, kind: connectors.KindPullRequest,
		externalID: prID, entityKey: prID, ref: prRef, url: prURL, repository: repo, title: prTitle,
		labels: []string{"bug"}, updatedAt: "2019-05-15T15:20:33Z",
		contribution: pr("open", false, "", "2019-05-15T15:20:33Z", "changes", prBody), installationID: 1},
	{file: "pull_request.opened.closes-issue.json", eventName: "pull_request.opened", action: connectors.ActionCreate, kind: connectors.KindPullRequest,
		externalID: prID, entityKey: prID, ref: prRef, url: prURL, repository: repo, title: prTitle,
		labels: []string{"bug"}, updatedAt: "2019-05-15T15:20:33Z",
		contribution: pr("open", false, "", "2019-05-15T15:20:33Z", "changes", prBody+"\n\nFixes #1",
			connectors.Reference{Provider: connectors.ProviderGitHub, Ref: issueRef}), installationID: 1},
	{file: "pull_request.synchronize.json", eventName: "pull_request.synchronize", action: connectors.ActionUpdate, kind: connectors.KindPullRequest,
		externalID: prID, entityKey: prID, ref: prRef, url: prURL, repository: repo, title: prTitle,
		labels: []string{"bug"}, updatedAt: "2019-05-15T15:20:33Z",
		contribution: pr("open", false, "", "2019-05-15T15:20:33Z", "changes", prBody), installationID: 1},
	{file: "pull_request.closed.json", eventName: "pull_request.closed", action: connectors.ActionClose, kind: connectors.KindPullRequest,
		externalID: prID, entityKey: prID, ref: prRef, url: prURL, repository: repo, title: prTitle,
		labels: []string{"bug"}, closed: true, updatedAt: "2019-05-15T15:21:18Z",
		contribution: pr("closed", false, "", "2019-05-15T15:21:18Z", "changes", prBody), installationID: 1},
	{file: "pull_request.closed.merged.json", eventName: "pull_request.closed", action: connectors.ActionClose, kind: connectors.KindPullRequest,
		externalID: prID, entityKey: prID, ref: prRef, url: prURL, repository: repo, title: prTitle,
		labels: []string{"bug"}, closed: true, updatedAt: "2019-05-15T15:21:18Z",
		contribution: pr("merged", true, "2019-05-15T15:21:18Z", "2019-05-15T15:21:18Z", "TES-41-readme", prBody+"\n\nFixes #1",
			connectors.Reference{Provider: connectors.ProviderGitHub, Ref: issueRef},
			connectors.Reference{Provider: connectors.ProviderJira, Ref: "TES-41"}), installationID: 1},
	{file: "pull_request.reopened.json", eventName: "pull_request.reopened", action: connectors.ActionReopen, kind: connectors.KindPullRequest,
		externalID: prID, entityKey: prID, ref: prRef, url: prURL, repository: repo, title: prTitle,
		labels: []string{"bug"}, updatedAt: "2019-05-15T15:20:33Z",
		contribution: pr("open", false, "", "2019-05-15T15:20:33Z", "changes", prBody), installationID: 1},
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
	source := connectors.Source{}
	if want.kind != "" {
		source = connectors.Source{Provider: connectors.ProviderGitHub, Kind: want.kind, Ref: want.ref, URL: want.url}
	}
	adaptertest.CheckEvent(t, got, adaptertest.Want{Provider: connectors.ProviderGitHub, EventName: want.eventName,
		Action: want.action, Kind: want.kind, ExternalID: want.externalID, PreviousID: want.previousID,
		EntityKey: want.entityKey, Repository: want.repository, Title: want.title, Labels: want.labels,
		Closed: want.closed, UpdatedAt: mustTime(t, want.updatedAt), Source: source, Contribution: want.contribution})
	if got.InstallationID != want.installationID {
		t.Errorf("InstallationID = %d, want %d", got.InstallationID, want.installationID)
	}
	if !reflect.DeepEqual(got.Installation, want.installation) {
		t.Errorf("Installation = %+v, want %+v", got.Installation, want.installation)
	}
}

func mutate(t testing.TB, body []byte, edit func(m map[string]any)) []byte {
	return adaptertest.Mutate(t, body, edit)
}

func obj(m map[string]any, key string) map[string]any { return adaptertest.Obj(m, key) }

func TestParseIssueActions(t *testing.T) {
	t.Parallel()
	base := fixture(t, "issues.opened.json")
	tests := []struct {
		action string
		want   connectors.Action
	}{
		{"opened", connectors.ActionCreate},
		{"reopened", connectors.ActionReopen},
		{"edited", connectors.ActionUpdate},
		{"labeled", connectors.ActionUpdate},
		{"unlabeled", connectors.ActionUpdate},
		{"assigned", connectors.ActionUpdate},
		{"unassigned", connectors.ActionUpdate},
		{"milestoned", connectors.ActionUpdate},
		{"demilestoned", connectors.ActionUpdate},
		{"pinned", connectors.ActionUpdate},
		{"unpinned", connectors.ActionUpdate},
		{"locked", connectors.ActionUpdate},
		{"unlocked", connectors.ActionUpdate},
		{"closed", connectors.ActionClose},
		{"deleted", connectors.ActionDelete},
		{"typed", connectors.ActionIgnore},
		{"", connectors.ActionIgnore},
	}
	for _, tt := range tests {
		t.Run(tt.action, func(t *testing.T) {
			t.Parallel()
			body := mutate(t, base, func(m map[string]any) { m["action"] = tt.action })
			got, err := Adapter{}.Parse(host, headerFor("issues"), body)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if got.Action != tt.want {
				t.Errorf("Action = %v, want %v", got.Action, tt.want)
			}
			if got.ExternalID != issueID {
				t.Errorf("ExternalID = %v, want %v", got.ExternalID, issueID)
			}
		})
	}
}

func TestParsePullRequestActions(t *testing.T) {
	t.Parallel()
	base := fixture(t, "pull_request.opened.json")
	tests := []struct {
		action string
		want   connectors.Action
	}{
		{"opened", connectors.ActionCreate},
		{"reopened", connectors.ActionReopen},
		{"closed", connectors.ActionClose},
		{"edited", connectors.ActionUpdate},
		{"synchronize", connectors.ActionUpdate},
		{"ready_for_review", connectors.ActionUpdate},
		{"converted_to_draft", connectors.ActionUpdate},
		{"labeled", connectors.ActionUpdate},
		{"unlabeled", connectors.ActionUpdate},
		// Every other action describes the pull request whole too: a pull
		// request whose opening was missed is created (or linked) by it.
		{"assigned", connectors.ActionUpdate},
		{"unassigned", connectors.ActionUpdate},
		{"locked", connectors.ActionUpdate},
		{"unlocked", connectors.ActionUpdate},
		{"review_requested", connectors.ActionUpdate},
		{"review_request_removed", connectors.ActionUpdate},
		{"auto_merge_enabled", connectors.ActionUpdate},
		{"auto_merge_disabled", connectors.ActionUpdate},
		{"enqueued", connectors.ActionUpdate},
		{"dequeued", connectors.ActionUpdate},
		{"milestoned", connectors.ActionUpdate},
		{"demilestoned", connectors.ActionUpdate},
		// Not a pull request action GitHub sends.
		{"exploded", connectors.ActionIgnore},
	}
	for _, tt := range tests {
		t.Run(tt.action, func(t *testing.T) {
			t.Parallel()
			body := mutate(t, base, func(m map[string]any) { m["action"] = tt.action })
			got, err := Adapter{}.Parse(host, headerFor("pull_request"), body)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if got.Action != tt.want {
				t.Errorf("Action = %v, want %v", got.Action, tt.want)
			}
			if got.ExternalID != prID {
				t.Errorf("ExternalID = %v, want %v", got.ExternalID, prID)
			}
		})
	}
}

func TestParsePullRequestDetails(t *testing.T) {
	t.Parallel()
	base := fixture(t, "pull_request.opened.json")
	tests := []struct {
		name     string
		edit     func(m map[string]any)
		wantRefs []connectors.Reference
		draft    bool
	}{
		{
			name: "draft",
			edit: func(m map[string]any) {
				m["action"] = "converted_to_draft"
				obj(m, "pull_request")["draft"] = true
			},
			draft: true,
		},
		{
			name: "references in title, branch and body",
			edit: func(m map[string]any) {
				p := obj(m, "pull_request")
				p["title"] = "PROJ-7: tidy"
				obj(p, "head")["ref"] = "feature/OPS-3-tidy"
				p["body"] = "Closes octo-org/octo-repo#9, resolves https://github.com/Codertocat/Hello-World/issues/4 and mentions PROJ-7"
			},
			wantRefs: []connectors.Reference{
				{Provider: connectors.ProviderGitHub, Ref: "octo-org/octo-repo#9"},
				{Provider: connectors.ProviderGitHub, Ref: "Codertocat/Hello-World#4"},
				{Provider: connectors.ProviderJira, Ref: "PROJ-7"},
				{Provider: connectors.ProviderJira, Ref: "OPS-3"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Adapter{}.Parse(host, headerFor("pull_request"), mutate(t, base, tt.edit))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if got.Contribution == nil {
				t.Fatal("Contribution = nil")
			}
			if got.Contribution.Draft != tt.draft {
				t.Errorf("Draft = %v, want %v", got.Contribution.Draft, tt.draft)
			}
			if !slices.Equal(got.Contribution.References, tt.wantRefs) {
				t.Errorf("References = %v, want %v", got.Contribution.References, tt.wantRefs)
			}
		})
	}
}

func TestParseIgnored(t *testing.T) {
	t.Parallel()
	prIssue := mutate(t, fixture(t, "issues.opened.json"), func(m map[string]any) {
		obj(m, "issue")["pull_request"] = map[string]any{"url": "https://api.github.com/repos/Codertocat/Hello-World/pulls/1"}
	})
	tests := []struct {
		name  string
		event string
		body  []byte
	}{
		{"push", "push", []byte(`{"ref":"refs/heads/main"}`)},
		{"unknown event, any body", "star", []byte(`not json`)},
		{"issue that is a pull request", "issues", prIssue},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Adapter{}.Parse(host, headerFor(tt.event), tt.body)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if got.Action != connectors.ActionIgnore {
				t.Errorf("Action = %v, want %v", got.Action, connectors.ActionIgnore)
			}
		})
	}
}

func TestParseMalformed(t *testing.T) {
	t.Parallel()
	opened := fixture(t, "issues.opened.json")
	pull := fixture(t, "pull_request.opened.json")
	transferred := fixture(t, "issues.transferred.json")
	withTransfer := fixture(t, "issues.opened.with-transfer.json")
	tests := []struct {
		name  string
		event string
		body  []byte
	}{
		{"missing event header", "", opened},
		{"not JSON", "issues", []byte(`{"action":`)},
		{"JSON array", "issues", []byte(`[]`)},
		{"ping not JSON", "ping", []byte(`nope`)},
		{"no issue", "issues", []byte(`{"action":"opened"}`)},
		{"issue id missing", "issues", mutate(t, opened, func(m map[string]any) { delete(obj(m, "issue"), "id") })},
		{"issue id zero", "issues", mutate(t, opened, func(m map[string]any) { obj(m, "issue")["id"] = 0 })},
		{"issue id a string", "issues", mutate(t, opened, func(m map[string]any) { obj(m, "issue")["id"] = "1" })},
		{"issue number missing", "issues", mutate(t, opened, func(m map[string]any) { delete(obj(m, "issue"), "number") })},
		{"no repository", "issues", mutate(t, opened, func(m map[string]any) {
			delete(m, "repository")
			delete(obj(m, "issue"), "repository_url")
		})},
		{"bad updated_at", "issues", mutate(t, opened, func(m map[string]any) { obj(m, "issue")["updated_at"] = "yesterday" })},
		{"transfer without new issue", "issues", mutate(t, transferred, func(m map[string]any) { delete(obj(m, "changes"), "new_issue") })},
		{"transfer without changes", "issues", mutate(t, transferred, func(m map[string]any) { delete(m, "changes") })},
		{"transfer to issue without id", "issues", mutate(t, transferred, func(m map[string]any) {
			delete(obj(obj(m, "changes"), "new_issue"), "id")
		})},
		{"opened with transfer from issue without id", "issues", mutate(t, withTransfer, func(m map[string]any) {
			delete(obj(obj(m, "changes"), "old_issue"), "id")
		})},
		{"no pull request", "pull_request", []byte(`{"action":"opened"}`)},
		{"pull request id zero", "pull_request", mutate(t, pull, func(m map[string]any) { obj(m, "pull_request")["id"] = 0 })},
		{"pull request without repository", "pull_request", mutate(t, pull, func(m map[string]any) {
			delete(m, "repository")
			delete(obj(obj(m, "pull_request"), "base"), "repo")
		})},
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

func TestParseRepositoryFromIssueURL(t *testing.T) {
	t.Parallel()
	body := mutate(t, fixture(t, "issues.opened.json"), func(m map[string]any) { delete(m, "repository") })
	got, err := Adapter{}.Parse(host, headerFor("issues"), body)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if got.Repository != repo {
		t.Errorf("Repository = %v, want %v", got.Repository, repo)
	}
}

func TestVerify(t *testing.T) {
	t.Parallel()
	body := fixture(t, "issues.opened.json")
	secret := []byte("It's a Secret to Everybody")
	good := "sha256=" + connectors.HMACSHA256Hex(secret, body)
	sha1 := "sha1=d03207e4b030cf234e3447bac4d93add4c6643d8"
	tests := []struct {
		name    string
		headers map[string]string
		body    []byte
		secrets [][]byte
		want    error
	}{
		{"good", map[string]string{HeaderSignature256: good}, body, [][]byte{secret}, nil},
		{"good, SHA-1 present too", map[string]string{HeaderSignature256: good, HeaderSignature: sha1}, body, [][]byte{secret}, nil},
		{"rotation: old secret listed second", map[string]string{HeaderSignature256: good}, body, [][]byte{[]byte("new"), secret}, nil},
		{"wrong secret", map[string]string{HeaderSignature256: good}, body, [][]byte{[]byte("other")}, connectors.ErrBadSignature},
		{"tampered body", map[string]string{HeaderSignature256: good}, append(slices.Clone(body), ' '), [][]byte{secret}, connectors.ErrBadSignature},
		{"no method prefix", map[string]string{HeaderSignature256: strings.TrimPrefix(good, "sha256=")}, body, [][]byte{secret}, connectors.ErrBadSignature},
		{"SHA-1 in the SHA-256 header", map[string]string{HeaderSignature256: sha1}, body, [][]byte{secret}, connectors.ErrBadSignature},
		{"missing", map[string]string{}, body, [][]byte{secret}, connectors.ErrMissingSignature},
		{"SHA-1 only", map[string]string{HeaderSignature: sha1}, body, [][]byte{secret}, connectors.ErrUnsupportedSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := http.Header{}
			for k, v := range tt.headers {
				h.Set(k, v)
			}
			got := Adapter{}.Verify(h, tt.body, tt.secrets)
			if !errors.Is(got, tt.want) || (got == nil) != (tt.want == nil) {
				t.Errorf("Verify = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestSign(t *testing.T) {
	t.Parallel()
	body := fixture(t, "issues.opened.json")
	secret := []byte("s3cret")

	h := http.Header{}
	Adapter{}.Sign(h, body, secret)
	if err := (Adapter{}).Verify(h, body, [][]byte{secret}); err != nil {
		t.Errorf("Verify(Sign) = %v, want nil", err)
	}
	if got, want := h.Get("Content-Type"), "application/json"; got != want {
		t.Errorf("Content-Type = %v, want %v", got, want)
	}
	if got := h.Get(HeaderDelivery); len(got) != 36 {
		t.Errorf("%s = %q, want a GUID", HeaderDelivery, got)
	}
	if got, want := h.Get(HeaderHookID), "1"; got != want {
		t.Errorf("%s = %v, want %v", HeaderHookID, got, want)
	}
	if got := h.Get(HeaderEvent); got != "" {
		t.Errorf("%s = %v, want it left to the caller", HeaderEvent, got)
	}

	// A caller's delivery and hook ID are kept; a second Sign makes a new
	// delivery GUID only when there is none.
	h2 := http.Header{}
	h2.Set(HeaderDelivery, "72d3162e-cc78-11e3-81ab-4c9367dc0958")
	h2.Set(HeaderHookID, "42")
	Adapter{}.Sign(h2, body, secret)
	if got, want := h2.Get(HeaderDelivery), "72d3162e-cc78-11e3-81ab-4c9367dc0958"; got != want {
		t.Errorf("%s = %v, want %v", HeaderDelivery, got, want)
	}
	if got, want := h2.Get(HeaderHookID), "42"; got != want {
		t.Errorf("%s = %v, want %v", HeaderHookID, got, want)
	}
	h3 := http.Header{}
	Adapter{}.Sign(h3, body, secret)
	if h3.Get(HeaderDelivery) == h.Get(HeaderDelivery) {
		t.Errorf("two Sign calls made the same delivery GUID %v", h.Get(HeaderDelivery))
	}
}

func TestDeliveryKey(t *testing.T) {
	t.Parallel()
	body := []byte(`{"zen":"Keep it logically awesome."}`)
	tests := []struct {
		name    string
		headers map[string]string
		want    string
	}{
		{"hook and delivery", map[string]string{HeaderHookID: "123", HeaderDelivery: "72d3162e-cc78-11e3-81ab-4c9367dc0958"}, "123:72d3162e-cc78-11e3-81ab-4c9367dc0958"},
		{"delivery only", map[string]string{HeaderDelivery: "72d3162e-cc78-11e3-81ab-4c9367dc0958"}, "72d3162e-cc78-11e3-81ab-4c9367dc0958"},
		{"neither", map[string]string{}, connectors.BodyDeliveryKey(body)},
		{"hook only", map[string]string{HeaderHookID: "123"}, connectors.BodyDeliveryKey(body)},
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
	// Two hooks of one event share the GUID but not the key.
	a, b := http.Header{}, http.Header{}
	a.Set(HeaderDelivery, "g")
	b.Set(HeaderDelivery, "g")
	a.Set(HeaderHookID, "1")
	b.Set(HeaderHookID, "2")
	if ka, kb := (Adapter{}).DeliveryKey(a, body), (Adapter{}).DeliveryKey(b, body); ka == kb {
		t.Errorf("DeliveryKey of two hooks = %v and %v, want different", ka, kb)
	}
}

func TestHeaders(t *testing.T) {
	t.Parallel()
	a := Adapter{}
	if got, want := a.Provider(), connectors.ProviderGitHub; got != want {
		t.Errorf("Provider = %v, want %v", got, want)
	}
	if got, want := a.EventName(headerFor("issues")), "issues"; got != want {
		t.Errorf("EventName = %v, want %v", got, want)
	}
	secret := a.SecretHeaders()
	for _, h := range []string{"X-Hub-Signature", "X-Hub-Signature-256"} {
		if !slices.ContainsFunc(secret, func(s string) bool { return http.CanonicalHeaderKey(s) == http.CanonicalHeaderKey(h) }) {
			t.Errorf("SecretHeaders = %v, missing %v", secret, h)
		}
	}
}

func TestParseFormEncodedDelivery(t *testing.T) {
	t.Parallel()
	raw := fixture(t, "issues.opened.json")
	want, err := Adapter{}.Parse(host, headerFor("issues"), raw)
	if err != nil {
		t.Fatal(err)
	}
	form := []byte("payload=" + url.QueryEscape(string(raw)))
	tests := []struct {
		name, contentType string
		body              []byte
		wantErr           bool
	}{
		{"form", "application/x-www-form-urlencoded", form, false},
		{"form with charset", "application/x-www-form-urlencoded; charset=utf-8", form, false},
		{"json", "application/json", raw, false},
		{"stored without a content type", "", raw, false},
		{"form without payload", "application/x-www-form-urlencoded", []byte("other=1"), true},
		{"json read as form", "application/x-www-form-urlencoded", raw, true},
		{"broken content type", "application/json; =x", raw, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := headerFor("issues")
			if tt.contentType != "" {
				h.Set("Content-Type", tt.contentType)
			}
			got, err := Adapter{}.Parse(host, h, tt.body)
			if tt.wantErr {
				if !errors.Is(err, connectors.ErrMalformedPayload) {
					t.Fatalf("err = %v, want ErrMalformedPayload", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.ExternalID != want.ExternalID || got.Action != want.Action || got.Title != want.Title {
				t.Errorf("event = %s %s %q, want %s %s %q", got.Action, got.ExternalID, got.Title, want.Action, want.ExternalID, want.Title)
			}
		})
	}
}

// An App's deliveries come from the App's one hook: an issue it delivers
// maps to the external ID a repository hook's delivery of it has, and its
// delivery key stays scoped to the hook, so the two hooks' copies of one
// event are two deliveries of one task.
func TestAppDeliveryIdentity(t *testing.T) {
	t.Parallel()
	const guid, repoHook, appHook = "72d3162e-cc78-11e3-81ab-4c9367dc0958", "1", "474747"
	repoHeader, appHeader := headerFor("issues"), headerFor("issues")
	repoHeader.Set(HeaderDelivery, guid)
	repoHeader.Set(HeaderHookID, repoHook)
	appHeader.Set(HeaderDelivery, guid)
	appHeader.Set(HeaderHookID, appHook)
	fromRepo, err := Adapter{}.Parse(host, repoHeader, fixture(t, "issues.opened.json"))
	if err != nil {
		t.Fatalf("Parse repository hook delivery: %v", err)
	}
	fromApp, err := Adapter{}.Parse(host, appHeader, fixture(t, "issues.opened.app.json"))
	if err != nil {
		t.Fatalf("Parse App delivery: %v", err)
	}
	if fromApp.ExternalID != issueID || fromApp.ExternalID != fromRepo.ExternalID || fromApp.EntityKey != fromRepo.EntityKey {
		t.Errorf("App delivery ExternalID, EntityKey = %q, %q; repository hook's %q, %q",
			fromApp.ExternalID, fromApp.EntityKey, fromRepo.ExternalID, fromRepo.EntityKey)
	}
	if fromApp.InstallationID != appInstallation || fromRepo.InstallationID != 0 {
		t.Errorf("InstallationID = %d (App), %d (repository hook); want %d, 0", fromApp.InstallationID, fromRepo.InstallationID, appInstallation)
	}
	if got := (Adapter{}).DeliveryKey(appHeader, nil); got != appHook+":"+guid {
		t.Errorf("App DeliveryKey = %q, want %q", got, appHook+":"+guid)
	}
	if (Adapter{}).DeliveryKey(appHeader, nil) == (Adapter{}).DeliveryKey(repoHeader, nil) {
		t.Errorf("the App's and the repository hook's delivery keys are equal")
	}
}

func TestParseInstallationEdges(t *testing.T) {
	t.Parallel()
	created := fixture(t, "installation.created.json")
	added := fixture(t, "installation_repositories.added.json")
	tests := []struct {
		name, event string
		body        []byte
		wantErr     bool
		wantChange  bool
		wantID      int64
	}{
		{"unknown installation action is ignored", "installation",
			mutate(t, created, func(m map[string]any) { m["action"] = "renamed" }), false, false, appInstallation},
		{"unknown repositories action is ignored", "installation_repositories",
			mutate(t, added, func(m map[string]any) { m["action"] = "moved" }), false, false, appInstallation},
		{"no installation", "installation",
			mutate(t, created, func(m map[string]any) { delete(m, "installation") }), true, false, 0},
		{"installation without id", "installation_repositories",
			mutate(t, added, func(m map[string]any) { delete(obj(m, "installation"), "id") }), true, false, 0},
		{"installation id of the wrong type", "installation",
			mutate(t, created, func(m map[string]any) { obj(m, "installation")["id"] = "one" }), true, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Adapter{}.Parse(host, headerFor(tt.event), tt.body)
			if tt.wantErr {
				if !errors.Is(err, connectors.ErrMalformedPayload) {
					t.Fatalf("Parse error = %v, want ErrMalformedPayload", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if got.Action != connectors.ActionIgnore || (got.Installation != nil) != tt.wantChange || got.InstallationID != tt.wantID {
				t.Errorf("Parse = action %q, installation %+v, installation ID %d", got.Action, got.Installation, got.InstallationID)
			}
		})
	}
}

// A removal that changes the selection to "all" reports the event's own
// selection, not the installation object's older one.
func TestParseInstallationRepositoriesSelection(t *testing.T) {
	t.Parallel()
	body := mutate(t, fixture(t, "installation_repositories.removed.json"), func(m map[string]any) {
		m["repository_selection"] = "all"
	})
	got, err := Adapter{}.Parse(host, headerFor("installation_repositories"), body)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if got.Installation == nil || got.Installation.RepositorySelection != "all" {
		t.Errorf("Installation = %+v, want selection all", got.Installation)
	}
}
