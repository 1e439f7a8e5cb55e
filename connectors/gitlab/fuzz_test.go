package gitlab

import (
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"testing"

	gitlab "gitlab.com/gitlab-org/api/client-go"

	"github.com/trackergateway/gateway/connectors"
	"github.com/trackergateway/gateway/connectors/adaptertest"
)

// FuzzParse: Parse never panics, keeps the adapter contract
// (adaptertest.CheckParsed) for every event type, and never maps a body to
// an entity of another kind than its header names.
func FuzzParse(f *testing.F) {
	adaptertest.AddFixtures(f, fixtureDir)
	f.Fuzz(func(t *testing.T, body []byte) {
		var probe struct {
			ObjectKind string `json:"object_kind"`
		}
		_ = json.Unmarshal(body, &probe)
		for _, event := range []string{"Issue Hook", "Merge Request Hook", "Note Hook", ""} {
			e, err := Adapter{}.Parse(host, headerFor(event), body)
			adaptertest.CheckParsed(t, connectors.ProviderGitLab, host, event, e, err)
			adaptertest.CheckText(t, event, body, e, err)
			// The entity kinds are spelled as GitLab's object kinds.
			if err == nil && e.Action != connectors.ActionIgnore && e.Kind != probe.ObjectKind {
				t.Fatalf("Parse(%q) of an object_kind %q body = a %q event", event, probe.ObjectKind, e.Kind)
			}
		}
	})
}

// FuzzDecodeEvent: every body client-go's ParseWebhook decodes as an
// issue or a merge request event, connectors.DecodeJSON decodes into
// issueEvent or mergeEvent too, to the same values of the members Parse
// reads (it also decodes bodies whose other members client-go refuses),
// but a body holding invalid text, which it refuses where client-go takes
// it with U+FFFD.
func FuzzDecodeEvent(f *testing.F) {
	adaptertest.AddFixtures(f, fixtureDir)
	f.Fuzz(func(t *testing.T, body []byte) {
		if adaptertest.InvalidText(body) {
			adaptertest.CheckDecodeRefusesText(t, body, connectors.DecodeJSON(body, new(issueEvent)))
			adaptertest.CheckDecodeRefusesText(t, body, connectors.DecodeJSON(body, new(mergeEvent)))
			return
		}
		if full, err := gitlab.ParseWebhook(gitlab.EventTypeIssue, body); err == nil {
			var got issueEvent
			if err := connectors.DecodeJSON(body, &got); err != nil {
				t.Fatalf("issueEvent refused a body IssueEvent accepts: %v", err)
			}
			if want := readIssueMembers(full.(*gitlab.IssueEvent)); !reflect.DeepEqual(got, want) {
				t.Fatalf("issueEvent = %+v, IssueEvent's members = %+v", got, want)
			}
		}
		if full, err := gitlab.ParseWebhook(gitlab.EventTypeMergeRequest, body); err == nil {
			var got mergeEvent
			if err := connectors.DecodeJSON(body, &got); err != nil {
				t.Fatalf("mergeEvent refused a body MergeEvent accepts: %v", err)
			}
			if want := readMergeMembers(full.(*gitlab.MergeEvent)); !reflect.DeepEqual(got, want) {
				t.Fatalf("mergeEvent = %+v, MergeEvent's members = %+v", got, want)
			}
		}
	})
}

// readIssueMembers is the members of ev Parse reads, from client-go's whole
// decode: the reference FuzzDecodeEvent holds issueEvent to.
func readIssueMembers(ev *gitlab.IssueEvent) issueEvent {
	var m issueEvent
	a := ev.ObjectAttributes
	m.Project.PathWithNamespace = ev.Project.PathWithNamespace
	m.ObjectAttributes.ID, m.ObjectAttributes.IID, m.ObjectAttributes.MovedToID = a.ID, a.IID, a.MovedToID
	m.ObjectAttributes.Title, m.ObjectAttributes.Description, m.ObjectAttributes.UpdatedAt = a.Title, a.Description, a.UpdatedAt
	m.ObjectAttributes.URL, m.ObjectAttributes.State, m.ObjectAttributes.Action = a.URL, a.State, a.Action
	m.ObjectAttributes.Labels, m.Labels = a.Labels, ev.Labels
	return m
}

// readMergeMembers is readIssueMembers for a merge request event.
func readMergeMembers(ev *gitlab.MergeEvent) mergeEvent {
	var m mergeEvent
	a := ev.ObjectAttributes
	m.User = ev.User
	m.Project.PathWithNamespace = ev.Project.PathWithNamespace
	m.ObjectAttributes.ID, m.ObjectAttributes.IID, m.ObjectAttributes.AuthorID = a.ID, a.IID, a.AuthorID
	m.ObjectAttributes.Title, m.ObjectAttributes.Description, m.ObjectAttributes.UpdatedAt = a.Title, a.Description, a.UpdatedAt
	m.ObjectAttributes.URL, m.ObjectAttributes.State, m.ObjectAttributes.Action = a.URL, a.State, a.Action
	m.ObjectAttributes.SourceBranch, m.ObjectAttributes.TargetBranch = a.SourceBranch, a.TargetBranch
	m.ObjectAttributes.Draft, m.ObjectAttributes.WorkInProgress = a.Draft, a.WorkInProgress
	m.ObjectAttributes.LastCommit.ID = a.LastCommit.ID
	m.ObjectAttributes.Labels, m.Labels = a.Labels, ev.Labels
	return m
}

var fuzzSecrets = [][]byte{[]byte("current-secret"), []byte("previous-secret")}

// FuzzVerify: Verify never panics and accepts exactly the secrets.
func FuzzVerify(f *testing.F) {
	f.Add("current-secret")
	f.Add("previous-secret")
	f.Add("current-secre")
	f.Add("")
	f.Fuzz(func(t *testing.T, token string) {
		h := http.Header{}
		h.Set(HeaderToken, token)
		err := Adapter{}.Verify(h, nil, fuzzSecrets)
		valid := token == "current-secret" || token == "previous-secret"
		switch {
		case err == nil && !valid:
			t.Fatalf("Verify accepted %q", token)
		case err != nil && valid:
			t.Fatalf("Verify(%q) = %v, want nil", token, err)
		case token == "" && !errors.Is(err, connectors.ErrMissingSignature):
			t.Fatalf("Verify(empty) = %v, want %v", err, connectors.ErrMissingSignature)
		case token != "" && !valid && !errors.Is(err, connectors.ErrBadSignature):
			t.Fatalf("Verify(%q) = %v, want %v", token, err, connectors.ErrBadSignature)
		}
	})
}
