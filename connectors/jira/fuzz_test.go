package jira

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"

	jira "github.com/andygrunwald/go-jira"

	"github.com/trackergateway/gateway/connectors"
	"github.com/trackergateway/gateway/connectors/adaptertest"
)

// FuzzParse: Parse never panics and keeps the adapter contract
// (adaptertest.CheckParsed); a Jira issue's entity is its external ID.
func FuzzParse(f *testing.F) {
	adaptertest.AddFixtures(f, fixtureDir)
	f.Fuzz(func(t *testing.T, body []byte) {
		e, err := Adapter{}.Parse(site, http.Header{}, body)
		adaptertest.CheckParsed(t, connectors.ProviderJira, site, "jira", e, err)
		adaptertest.CheckText(t, "jira", body, e, err)
		if err == nil && e.Action != connectors.ActionIgnore && e.EntityKey != e.ExternalID {
			t.Fatalf("Parse: ExternalID %q, EntityKey %q", e.ExternalID, e.EntityKey)
		}
	})
}

// FuzzDecodeIssue: every issue go-jira decodes as a whole jira.Issue,
// decodeIssue decodes too, to the same values of the members Parse reads
// (it also decodes issues whose other fields go-jira refuses).
func FuzzDecodeIssue(f *testing.F) {
	adaptertest.AddFixtures(f, fixtureDir)
	f.Fuzz(func(t *testing.T, body []byte) {
		raw, err := decodeEnvelope(body)
		if err != nil || isNull(raw.Issue) {
			return
		}
		var full jira.Issue
		if unmarshalIssue(raw.Issue, &full) != nil {
			return
		}
		got, err := decodeIssue(raw.Issue)
		if err != nil {
			t.Fatalf("decodeIssue refused an issue go-jira decodes: %v", err)
		}
		if want := readMembers(&full); !reflect.DeepEqual(readMembers(got), want) {
			t.Fatalf("decodeIssue = %+v, go-jira = %+v", readMembers(got), want)
		}
	})
}

// FuzzDecodeEnvelope: decodeEnvelope accepts exactly the bodies
// encoding/json decodes into the envelope's fields, to the same values, but
// those holding invalid text, which it refuses where encoding/json takes
// them with U+FFFD.
func FuzzDecodeEnvelope(f *testing.F) {
	adaptertest.AddFixtures(f, fixtureDir)
	f.Fuzz(func(t *testing.T, body []byte) {
		var want struct {
			Timestamp          json.Number     `json:"timestamp"`
			WebhookEvent       string          `json:"webhookEvent"`
			IssueEventTypeName string          `json:"issue_event_type_name"`
			User               json.RawMessage `json:"user"`
			Issue              json.RawMessage `json:"issue"`
			Changelog          json.RawMessage `json:"changelog"`
		}
		wantErr := json.Unmarshal(body, &want)
		got, err := decodeEnvelope(body)
		if adaptertest.CheckDecodeRefusesText(t, body, err) {
			return
		}
		switch {
		case (err == nil) != (wantErr == nil):
			t.Fatalf("decodeEnvelope error = %v, encoding/json error = %v", err, wantErr)
		case err != nil:
			return
		case got.Timestamp != want.Timestamp || got.WebhookEvent != want.WebhookEvent ||
			got.IssueEventTypeName != want.IssueEventTypeName || !bytes.Equal(got.User, want.User) ||
			!bytes.Equal(got.Issue, want.Issue) || !bytes.Equal(got.Changelog, want.Changelog):
			t.Fatalf("decodeEnvelope = %+v, encoding/json = %+v", got, want)
		}
	})
}

// readMembers is issue with only the members Parse reads: the reference
// FuzzDecodeIssue holds decodeIssue to, read from go-jira's whole decode.
func readMembers(issue *jira.Issue) *jira.Issue {
	out := &jira.Issue{ID: issue.ID, Key: issue.Key, Self: issue.Self}
	if f := issue.Fields; f != nil {
		out.Fields = &jira.IssueFields{Project: f.Project, Resolution: f.Resolution, Updated: f.Updated,
			Description: f.Description, Summary: f.Summary, Status: f.Status, Labels: f.Labels}
	}
	return out
}

// unmarshalIssue is json.Unmarshal into a whole jira.Issue, whose custom
// field decoding is third-party code: a panic in it is an error here.
func unmarshalIssue(data []byte, issue *jira.Issue) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("go-jira: %v", r)
		}
	}()
	return json.Unmarshal(data, issue)
}

var fuzzSecrets = [][]byte{[]byte("current-secret"), []byte("previous-secret")}

// FuzzVerify: Verify never panics, answers only the verification errors,
// and accepts exactly the SHA-256 signatures of the body under a secret.
func FuzzVerify(f *testing.F) {
	body := []byte(`{"webhookEvent":"jira:issue_created"}`)
	f.Add("sha256="+connectors.HMACSHA256Hex(fuzzSecrets[0], body), body)
	f.Add("sha256="+connectors.HMACSHA256Hex(fuzzSecrets[1], body), body)
	f.Add("sha1=0000000000000000000000000000000000000000", body)
	f.Add("", []byte{})
	f.Fuzz(func(t *testing.T, sig string, body []byte) {
		h := http.Header{}
		h.Set(HeaderSignature, sig)
		err := Adapter{}.Verify(h, body, fuzzSecrets)
		method, hexSig, _ := strings.Cut(strings.TrimSpace(sig), "=")
		valid := false
		if strings.EqualFold(strings.TrimSpace(method), "sha256") {
			for _, s := range fuzzSecrets {
				if strings.EqualFold(strings.TrimSpace(hexSig), connectors.HMACSHA256Hex(s, body)) {
					valid = true
				}
			}
		}
		switch {
		case err == nil && !valid:
			t.Fatalf("Verify accepted %q", sig)
		case err != nil && valid:
			t.Fatalf("Verify(%q) = %v, want nil", sig, err)
		case err != nil && !errors.Is(err, connectors.ErrBadSignature) && !errors.Is(err, connectors.ErrMissingSignature) && !errors.Is(err, connectors.ErrUnsupportedSignature):
			t.Fatalf("Verify = %v, not a verification error", err)
		}
	})
}
