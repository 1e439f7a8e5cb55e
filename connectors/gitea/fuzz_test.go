package gitea

import (
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"

	sdk "code.gitea.io/sdk/gitea"

	"github.com/trackergateway/gateway/connectors"
	"github.com/trackergateway/gateway/connectors/adaptertest"
)

// FuzzParse: Parse never panics, keeps the adapter contract
// (adaptertest.CheckParsed) for every event, and keys every mapped event by
// its own external ID (Gitea has no transfer).
func FuzzParse(f *testing.F) {
	adaptertest.AddFixtures(f, fixtureDir)
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, event := range []string{"issues", "pull_request", "issue_label", "pull_request_sync", "push"} {
			e, err := Adapter{}.Parse(host, headerFor(event), body)
			adaptertest.CheckParsed(t, connectors.ProviderGitea, host, event, e, err)
			adaptertest.CheckText(t, event, body, e, err)
			if err == nil && e.Action != connectors.ActionIgnore && (e.EntityKey != e.ExternalID || e.PreviousExternalID != "") {
				t.Fatalf("Parse(%q): EntityKey %q, ExternalID %q, PreviousExternalID %q", event, e.EntityKey, e.ExternalID, e.PreviousExternalID)
			}
		}
	})
}

// The reference decoders: Gitea's webhook payloads with the SDK's full
// types, decoded with encoding/json (the SDK has no payload types).
type referenceIssuesEvent struct {
	Action     string          `json:"action"`
	Issue      *sdk.Issue      `json:"issue"`
	Repository *sdk.Repository `json:"repository"`
}

type referencePullRequestEvent struct {
	Action      string           `json:"action"`
	PullRequest *sdk.PullRequest `json:"pull_request"`
	Repository  *sdk.Repository  `json:"repository"`
}

// rawDraft is the pull request's draft member as sent: absent or null
// differs from false.
type rawDraft struct {
	PullRequest *struct {
		Draft *bool `json:"draft"`
	} `json:"pull_request"`
}

// FuzzDecodeEvent: the member-only issuesEvent and pullRequestEvent Parse
// decodes with connectors.DecodeJSON accept every body the reference
// decoders accept, with the same action, repository name and the members of
// the issue or pull request Parse reads (they also accept bodies whose
// members Parse does not read have the wrong types), but a body holding
// invalid text, which they refuse where the reference takes it with U+FFFD.
func FuzzDecodeEvent(f *testing.F) {
	adaptertest.AddFixtures(f, fixtureDir)
	f.Fuzz(func(t *testing.T, body []byte) {
		if adaptertest.InvalidText(body) {
			adaptertest.CheckDecodeRefusesText(t, body, connectors.DecodeJSON(body, new(pullRequestEvent)))
			adaptertest.CheckDecodeRefusesText(t, body, connectors.DecodeJSON(body, new(issuesEvent)))
			return
		}
		var fullPR referencePullRequestEvent
		if err := json.Unmarshal(body, &fullPR); err == nil {
			var trimmed pullRequestEvent
			if err := connectors.DecodeJSON(body, &trimmed); err != nil {
				t.Fatalf("pullRequestEvent refused a body the reference accepts: %v", err)
			}
			var draft rawDraft
			_ = json.Unmarshal(body, &draft)
			var sentDraft *bool
			if draft.PullRequest != nil {
				sentDraft = draft.PullRequest.Draft
			}
			if trimmed.Action != fullPR.Action || trimmed.Repository.fullName() != repoFullName(fullPR.Repository) ||
				!reflect.DeepEqual(trimmed.PullRequest.pullRequest(), readPullRequestMembers(fullPR.PullRequest, sentDraft)) {
				t.Fatalf("pullRequestEvent = %+v, reference = %+v", trimmed, fullPR)
			}
		}
		var full referenceIssuesEvent
		if err := json.Unmarshal(body, &full); err != nil {
			return
		}
		var trimmed issuesEvent
		if err := connectors.DecodeJSON(body, &trimmed); err != nil {
			t.Fatalf("issuesEvent refused a body the reference accepts: %v", err)
		}
		if trimmed.Action != full.Action || trimmed.Repository.fullName() != repoFullName(full.Repository) ||
			!reflect.DeepEqual(trimmed.Issue.issue(), readIssueMembers(full.Issue)) {
			t.Fatalf("issuesEvent = %+v, reference = %+v", trimmed, full)
		}
	})
}

func repoFullName(r *sdk.Repository) string {
	if r == nil {
		return ""
	}
	return r.FullName
}

// readIssueMembers is issue with only the members Parse reads.
func readIssueMembers(issue *sdk.Issue) *sdk.Issue {
	if issue == nil {
		return nil
	}
	return &sdk.Issue{ID: issue.ID, HTMLURL: issue.HTMLURL, Index: issue.Index, Title: issue.Title, Body: issue.Body,
		Labels: issue.Labels, State: issue.State, Updated: issue.Updated, PullRequest: issue.PullRequest, Repository: issue.Repository}
}

// readPullRequestMembers is pr with only the members Parse reads; draft is
// the member as sent, which Parse reads to fall back on the title.
func readPullRequestMembers(pr *sdk.PullRequest, draft *bool) *sdk.PullRequest {
	if pr == nil {
		return nil
	}
	out := &sdk.PullRequest{ID: pr.ID, Index: pr.Index, HTMLURL: pr.HTMLURL, Title: pr.Title, Body: pr.Body, Labels: pr.Labels,
		State: pr.State, Draft: isDraft(draft, pr.Title), HasMerged: pr.HasMerged, Merged: pr.Merged, Updated: pr.Updated,
		Base: readBranch(pr.Base), Head: readBranch(pr.Head)}
	if pr.Poster != nil {
		out.Poster = &sdk.User{UserName: pr.Poster.UserName}
	}
	return out
}

func readBranch(b *sdk.PRBranchInfo) *sdk.PRBranchInfo {
	if b == nil {
		return nil
	}
	out := &sdk.PRBranchInfo{Ref: b.Ref, Sha: b.Sha}
	if b.Repository != nil {
		out.Repository = &sdk.Repository{FullName: b.Repository.FullName}
	}
	return out
}

var fuzzSecrets = [][]byte{[]byte("current-secret"), []byte("previous-secret")}

// FuzzVerify: Verify never panics, answers only the verification errors,
// and accepts exactly requests whose every Gitea or Forgejo signature is the
// SHA-256 HMAC of the body under a secret.
func FuzzVerify(f *testing.F) {
	body := []byte(`{"action":"opened"}`)
	good := connectors.HMACSHA256Hex(fuzzSecrets[0], body)
	f.Add(good, "", "", body)
	f.Add(good, connectors.HMACSHA256Hex(fuzzSecrets[1], body), "", body)
	f.Add("", good, "", body)
	f.Add(good, "00", "", body)
	f.Add("", "", "sha1=0000000000000000000000000000000000000000", body)
	f.Add("zz", "", "", []byte{})
	f.Fuzz(func(t *testing.T, giteaSig, forgejoSig, sha1 string, body []byte) {
		h := http.Header{}
		h.Set(HeaderSignature, giteaSig)
		h.Set(HeaderForgejoSignature, forgejoSig)
		h.Set(HeaderHubSignature, sha1)
		err := Adapter{}.Verify(h, body, fuzzSecrets)
		matches := func(sig string) bool {
			for _, s := range fuzzSecrets {
				if strings.EqualFold(sig, connectors.HMACSHA256Hex(s, body)) {
					return true
				}
			}
			return false
		}
		present, valid := 0, true
		for _, sig := range []string{strings.TrimSpace(giteaSig), strings.TrimSpace(forgejoSig)} {
			if sig == "" {
				continue
			}
			present++
			valid = valid && matches(sig)
		}
		valid = valid && present > 0
		switch {
		case err == nil && !valid:
			t.Fatalf("Verify accepted %q, %q", giteaSig, forgejoSig)
		case err != nil && valid:
			t.Fatalf("Verify(%q, %q) = %v, want nil", giteaSig, forgejoSig, err)
		case err != nil && !errors.Is(err, connectors.ErrBadSignature) && !errors.Is(err, connectors.ErrMissingSignature) && !errors.Is(err, connectors.ErrUnsupportedSignature):
			t.Fatalf("Verify = %v, not a verification error", err)
		}
	})
}

// FuzzVerifyEveryValue: with two values of X-Gitea-Signature (and one of
// X-Forgejo-Signature), Verify accepts exactly the requests whose every
// non-empty value is the HMAC of the body under a secret.
func FuzzVerifyEveryValue(f *testing.F) {
	body := []byte(`{"action":"opened"}`)
	good := connectors.HMACSHA256Hex(fuzzSecrets[0], body)
	f.Add(good, good, "", body)
	f.Add(good, "00", "", body)
	f.Add("", good, good, body)
	f.Add(good, "", connectors.HMACSHA256Hex([]byte("forged"), body), body)
	f.Fuzz(func(t *testing.T, first, second, forgejo string, body []byte) {
		h := http.Header{}
		h.Add(HeaderSignature, first)
		h.Add(HeaderSignature, second)
		h.Set(HeaderForgejoSignature, forgejo)
		err := Adapter{}.Verify(h, body, fuzzSecrets)
		present, valid := 0, true
		for _, sig := range []string{first, second, forgejo} {
			if sig = strings.TrimSpace(sig); sig == "" {
				continue
			}
			present++
			matched := false
			for _, s := range fuzzSecrets {
				matched = matched || strings.EqualFold(sig, connectors.HMACSHA256Hex(s, body))
			}
			valid = valid && matched
		}
		valid = valid && present > 0
		if (err == nil) != valid {
			t.Fatalf("Verify(%q, %q; forgejo %q) = %v, want valid %t", first, second, forgejo, err, valid)
		}
	})
}
