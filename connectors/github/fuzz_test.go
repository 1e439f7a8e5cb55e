package github

import (
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"

	gh "github.com/google/go-github/v62/github"

	"github.com/trackergateway/gateway/connectors"
	"github.com/trackergateway/gateway/connectors/adaptertest"
)

// FuzzParse: Parse never panics and keeps the adapter contract
// (adaptertest.CheckParsed) for every event type.
func FuzzParse(f *testing.F) {
	adaptertest.AddFixtures(f, fixtureDir)
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, event := range []string{"issues", "pull_request", "ping", "installation", "installation_repositories"} {
			e, err := Adapter{}.Parse(host, headerFor(event), body)
			adaptertest.CheckParsed(t, connectors.ProviderGitHub, host, event, e, err)
			adaptertest.CheckText(t, event, body, e, err)
		}
	})
}

// FuzzDecodeEvent: connectors.DecodeJSON accepts exactly the bodies go-github's
// ParseWebHook accepts but those holding invalid text, which it refuses
// where go-github takes them with U+FFFD, and gives the same event for them. The trimmed
// issuesEvent and pullRequestEvent Parse decodes accept every body
// IssuesEvent and PullRequestEvent accept, with the same action,
// repository name and the members of the issue or pull request Parse reads
// (they also accept bodies whose members Parse does not read have the
// wrong types), and the same installation ID.
func FuzzDecodeEvent(f *testing.F) {
	adaptertest.AddFixtures(f, fixtureDir)
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, tc := range []struct {
			event string
			into  func() any
		}{
			{"issues", func() any { return new(gh.IssuesEvent) }},
			{"pull_request", func() any { return new(gh.PullRequestEvent) }},
			{"installation", func() any { return new(gh.InstallationEvent) }},
			{"installation_repositories", func() any { return new(gh.InstallationRepositoriesEvent) }},
		} {
			want, wantErr := gh.ParseWebHook(tc.event, body)
			got := tc.into()
			err := connectors.DecodeJSON(body, got)
			if adaptertest.CheckDecodeRefusesText(t, body, err) {
				continue
			}
			switch {
			case (err == nil) != (wantErr == nil):
				t.Fatalf("%s: DecodeJSON error = %v, ParseWebHook error = %v", tc.event, err, wantErr)
			case err == nil && !reflect.DeepEqual(got, want):
				t.Fatalf("%s: DecodeJSON = %+v, ParseWebHook = %+v", tc.event, got, want)
			}
		}
		if adaptertest.InvalidText(body) {
			return
		}
		if want, err := gh.ParseWebHook("pull_request", body); err == nil {
			full := want.(*gh.PullRequestEvent)
			var trimmed pullRequestEvent
			if err := connectors.DecodeJSON(body, &trimmed); err != nil {
				t.Fatalf("pullRequestEvent refused a body PullRequestEvent accepts: %v", err)
			}
			if !reflect.DeepEqual(trimmed.Action, full.Action) ||
				!reflect.DeepEqual(trimmed.PullRequest.pullRequest(), readPullRequestMembers(full.PullRequest)) ||
				trimmed.Repo.fullName() != full.GetRepo().GetFullName() ||
				trimmed.installationID() != full.GetInstallation().GetID() {
				t.Fatalf("pullRequestEvent = %+v, PullRequestEvent = %+v", trimmed, full)
			}
		}
		want, err := gh.ParseWebHook("issues", body)
		if err != nil {
			return
		}
		full := want.(*gh.IssuesEvent)
		var trimmed issuesEvent
		if err := connectors.DecodeJSON(body, &trimmed); err != nil {
			t.Fatalf("issuesEvent refused a body IssuesEvent accepts: %v", err)
		}
		if !reflect.DeepEqual(trimmed.Action, full.Action) || !reflect.DeepEqual(trimmed.Issue.issue(), readMembers(full.Issue)) ||
			trimmed.Repo.fullName() != full.GetRepo().GetFullName() || trimmed.installationID() != full.GetInstallation().GetID() {
			t.Fatalf("issuesEvent = %+v, IssuesEvent = %+v", trimmed, full)
		}
	})
}

// readMembers is issue with only the members Parse reads, from go-github's
// full decode.
func readMembers(issue *gh.Issue) *gh.Issue {
	if issue == nil {
		return nil
	}
	return &gh.Issue{ID: issue.ID, Number: issue.Number, State: issue.State, Title: issue.Title, Body: issue.Body,
		HTMLURL: issue.HTMLURL, RepositoryURL: issue.RepositoryURL, UpdatedAt: issue.UpdatedAt, Labels: issue.Labels,
		PullRequestLinks: issue.PullRequestLinks}
}

// readPullRequestMembers is pr with only the members Parse reads, from
// go-github's full decode.
func readPullRequestMembers(pr *gh.PullRequest) *gh.PullRequest {
	if pr == nil {
		return nil
	}
	out := &gh.PullRequest{ID: pr.ID, Number: pr.Number, State: pr.State, Title: pr.Title, Body: pr.Body,
		HTMLURL: pr.HTMLURL, Draft: pr.Draft, Merged: pr.Merged, MergedAt: pr.MergedAt, UpdatedAt: pr.UpdatedAt,
		Labels: pr.Labels, Head: readBranch(pr.Head), Base: readBranch(pr.Base)}
	if pr.User != nil {
		out.User = &gh.User{Login: pr.User.Login}
	}
	return out
}

func readBranch(b *gh.PullRequestBranch) *gh.PullRequestBranch {
	if b == nil {
		return nil
	}
	out := &gh.PullRequestBranch{Ref: b.Ref, SHA: b.SHA}
	if b.Repo != nil {
		out.Repo = &gh.Repository{FullName: b.Repo.FullName}
	}
	return out
}

var fuzzSecrets = [][]byte{[]byte("current-secret"), []byte("previous-secret")}

// FuzzVerify: Verify never panics, answers only the verification errors,
// and accepts exactly the SHA-256 signatures of the body under a secret.
func FuzzVerify(f *testing.F) {
	body := []byte(`{"zen":"Design for failure."}`)
	f.Add("sha256="+connectors.HMACSHA256Hex(fuzzSecrets[0], body), "", body)
	f.Add("sha256="+connectors.HMACSHA256Hex(fuzzSecrets[1], body), "", body)
	f.Add("", "sha1=0000000000000000000000000000000000000000", body)
	f.Add("sha256=zz", "", []byte{})
	f.Fuzz(func(t *testing.T, sig256, sig1 string, body []byte) {
		h := http.Header{}
		h.Set(HeaderSignature256, sig256)
		h.Set(HeaderSignature, sig1)
		err := Adapter{}.Verify(h, body, fuzzSecrets)
		valid := false
		for _, s := range fuzzSecrets {
			if strings.EqualFold(strings.TrimSpace(sig256), "sha256="+connectors.HMACSHA256Hex(s, body)) {
				valid = true
			}
		}
		switch {
		case err == nil && !valid:
			t.Fatalf("Verify accepted %q", sig256)
		case err != nil && valid && strings.HasPrefix(strings.TrimSpace(sig256), "sha256="):
			t.Fatalf("Verify(%q) = %v, want nil", sig256, err)
		case err != nil && !errors.Is(err, connectors.ErrBadSignature) && !errors.Is(err, connectors.ErrMissingSignature) && !errors.Is(err, connectors.ErrUnsupportedSignature):
			t.Fatalf("Verify = %v, not a verification error", err)
		}
	})
}
