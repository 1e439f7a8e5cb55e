package gitea

import (
	"encoding/json"
	"fmt"
	"testing"

	sdk "code.gitea.io/sdk/gitea"

	"github.com/trackergateway/gateway/connectors"
	"github.com/trackergateway/gateway/connectors/adaptertest"
)

// An issue as GET /repos/{owner}/{repo}/issues answers it.
const apiIssue = `{"id":2,"url":"http://localhost:3000/api/v1/repos/test/repo/issues/2","html_url":"http://localhost:3000/test/repo/issues/2",
"number":2,"user":{"id":1,"login":"user1"},"title":"crash","body":"issue body","labels":[{"id":1,"name":"bug","color":"ee0701"}],
"milestone":null,"assignees":null,"state":"%s","is_locked":false,"comments":0,"created_at":"2024-05-06T10:00:00+02:00",
"updated_at":"2024-05-07T09:15:00+02:00","closed_at":null,"due_date":null,"pull_request":null,
"repository":{"id":1,"name":"repo","owner":"test","full_name":"test/repo"}}`

// A pull request as GET /repos/{owner}/{repo}/pulls answers it.
const apiPullRequest = `{"id":12,"url":"http://localhost:3000/test/repo/pulls/12","number":12,"user":{"id":1,"login":"user1"},
"title":"%s","body":"Fixes #2","labels":[],"state":"%s","draft":false,"html_url":"http://localhost:3000/test/repo/pulls/12",
"mergeable":true,"merged":%t,"merged_at":%s,
"base":{"label":"master","ref":"master","sha":"2020558fe2e34debb818a514715839cabd25e777","repo_id":1,"repo":{"id":1,"name":"repo","full_name":"test/repo"}},
"head":{"label":"test","ref":"test","sha":"2020558fe2e34debb818a514715839cabd25e778","repo_id":1,"repo":{"id":1,"name":"repo","full_name":"test/repo"}},
"created_at":"2024-05-06T11:00:00+02:00","updated_at":"2024-05-07T09:30:00+02:00","closed_at":null}`

func decodeAPI[T any](t *testing.T, format string, args ...any) *T {
	t.Helper()
	v := new(T)
	if err := json.Unmarshal(fmt.Appendf(nil, format, args...), v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestIssueDelivery(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		state  string
		closed bool
	}{{"open", false}, {"closed", true}} {
		t.Run(tc.state, func(t *testing.T) {
			t.Parallel()
			header, body, err := IssueDelivery(decodeAPI[sdk.Issue](t, apiIssue, tc.state))
			if err != nil {
				t.Fatal(err)
			}
			if header.Get(HeaderEvent) != "issues" || header.Get(HeaderEventType) != "issues" || header.Get("Content-Type") != "application/json" ||
				header.Get(HeaderSignature) != "" || header.Get(HeaderDelivery) != "" {
				t.Fatalf("header = %v", header)
			}
			got, err := Adapter{}.Parse(host, header, body)
			if err != nil {
				t.Fatal(err)
			}
			adaptertest.CheckEvent(t, got, adaptertest.Want{Provider: connectors.ProviderGitea, EventName: "issues.edited",
				Action: connectors.ActionUpdate, Kind: connectors.KindIssue, ExternalID: issueID, EntityKey: issueID,
				Repository: repo, Title: issueTitle, Labels: []string{"bug"}, Closed: tc.closed,
				UpdatedAt: mustTime(t, "2024-05-07T07:15:00Z"),
				Source:    connectors.Source{Provider: connectors.ProviderGitea, Kind: connectors.KindIssue, Ref: issueRef, URL: issueURL}})
		})
	}
}

func TestPullRequestDelivery(t *testing.T) {
	t.Parallel()
	mergedAt := "2024-05-07T09:30:00+02:00"
	for _, tc := range []struct {
		name, title, state string
		merged             bool
		mergedAt           string
		wantState          string
		wantDraft          bool
	}{
		{"open", "Fix bug", "open", false, "", "open", false},
		{"open, work in progress title", "WIP: Fix bug", "open", false, "", "open", true},
		{"closed", "Fix bug", "closed", false, "", "closed", false},
		{"merged", "Fix bug", "closed", true, mergedAt, "merged", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			mergedJSON := "null"
			if tc.mergedAt != "" {
				mergedJSON = `"` + tc.mergedAt + `"`
			}
			header, body, err := PullRequestDelivery(decodeAPI[sdk.PullRequest](t, apiPullRequest, tc.title, tc.state, tc.merged, mergedJSON))
			if err != nil {
				t.Fatal(err)
			}
			if header.Get(HeaderEvent) != "pull_request" || header.Get(HeaderEventType) != "pull_request" || header.Get(HeaderSignature) != "" {
				t.Fatalf("header = %v", header)
			}
			got, err := Adapter{}.Parse(host, header, body)
			if err != nil {
				t.Fatal(err)
			}
			updated := "2024-05-07T07:30:00Z"
			want := pr(tc.wantState, tc.title, "Fixes #2", updated, "", tc.wantDraft,
				connectors.Reference{Provider: connectors.ProviderGitea, Ref: issueRef})
			if tc.mergedAt != "" {
				want.MergedAt = mustTime(t, "2024-05-07T07:30:00Z")
			}
			adaptertest.CheckEvent(t, got, adaptertest.Want{Provider: connectors.ProviderGitea, EventName: "pull_request.edited",
				Action: connectors.ActionUpdate, Kind: connectors.KindPullRequest, ExternalID: prID, EntityKey: prID,
				Repository: repo, Title: tc.title, Labels: []string{}, Closed: tc.state == "closed",
				UpdatedAt: mustTime(t, updated), Contribution: want,
				Source: connectors.Source{Provider: connectors.ProviderGitea, Kind: connectors.KindPullRequest, Ref: prRef, URL: prURL}})
		})
	}
}

func TestDeliveryRefusesWhatCannotParse(t *testing.T) {
	t.Parallel()
	withoutRepo := decodeAPI[sdk.Issue](t, apiIssue, "open")
	withoutRepo.Repository = nil
	pullIssue := decodeAPI[sdk.Issue](t, apiIssue, "open")
	pullIssue.PullRequest = &sdk.PullRequestMeta{HasMerged: false}
	withoutBase := decodeAPI[sdk.PullRequest](t, apiPullRequest, "Fix bug", "open", false, "null")
	withoutBase.Base = nil
	tests := []struct {
		name string
		run  func() error
	}{
		{"nil issue", func() error { _, _, err := IssueDelivery(nil); return err }},
		{"issue without repository", func() error { _, _, err := IssueDelivery(withoutRepo); return err }},
		{"issue that is a pull request", func() error { _, _, err := IssueDelivery(pullIssue); return err }},
		{"nil pull request", func() error { _, _, err := PullRequestDelivery(nil); return err }},
		{"pull request without base", func() error { _, _, err := PullRequestDelivery(withoutBase); return err }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if err := tt.run(); err == nil {
				t.Fatal("no error")
			}
		})
	}
}
