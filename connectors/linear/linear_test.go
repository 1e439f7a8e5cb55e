package linear

import (
	"encoding/json"
	"errors"
	"net/http"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/trackergateway/gateway/connectors"
	"github.com/trackergateway/gateway/connectors/adaptertest"
)

const workspace = "acme"

var fixtureDir = filepath.Join("..", "..", "fixtures", "linear")

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	return adaptertest.Fixture(t, fixtureDir, name)
}

const (
	issueID  = "linear:acme:issue:539068e2-ae88-4d09-bd75-22eb4a59612f"
	issueURL = "https://linear.app/acme/issue/ENG-123/export-fails-for-large-workspaces"
	renamed  = "Export times out for workspaces over 10k issues"
)

func issueSource(ref, url string) connectors.Source {
	return connectors.Source{Provider: connectors.ProviderLinear, Kind: connectors.KindIssue, Ref: ref, URL: url}
}

type fixtureCase struct {
	file        string
	want        adaptertest.Want
	description string
}

var fixtureCases = []fixtureCase{
	{file: "issue.create.json", description: "Exporting a workspace with more than 10k issues times out.", want: adaptertest.Want{
		EventName: "Issue.create", Action: connectors.ActionCreate, Kind: connectors.KindIssue,
		ExternalID: issueID, EntityKey: issueID, Repository: "ENG", Title: "Export fails for large workspaces",
		Labels: []string{"Bug"}, UpdatedAt: time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC), Source: issueSource("ENG-123", issueURL)}},
	{file: "issue.update.title-labels.json", description: "Exporting a workspace with more than 10k issues times out.", want: adaptertest.Want{
		EventName: "Issue.update", Action: connectors.ActionUpdate, Kind: connectors.KindIssue,
		ExternalID: issueID, EntityKey: issueID, Repository: "ENG", Title: renamed,
		Labels: []string{"Bug", "Performance"}, UpdatedAt: time.Date(2026, 3, 2, 10, 15, 0, 0, time.UTC), Source: issueSource("ENG-123", issueURL)}},
	{file: "issue.update.completed.json", description: "Exporting a workspace with more than 10k issues times out.", want: adaptertest.Want{
		EventName: "Issue.update", Action: connectors.ActionUpdate, Kind: connectors.KindIssue,
		ExternalID: issueID, EntityKey: issueID, Repository: "ENG", Title: renamed, Closed: true,
		Labels: []string{"Bug", "Performance"}, UpdatedAt: time.Date(2026, 3, 3, 16, 30, 0, 0, time.UTC), Source: issueSource("ENG-123", issueURL)}},
	// A team move: new identifier and team, same UUID, so the same task.
	{file: "issue.update.team-moved.json", description: "Exporting a workspace with more than 10k issues times out.", want: adaptertest.Want{
		EventName: "Issue.update", Action: connectors.ActionUpdate, Kind: connectors.KindIssue,
		ExternalID: issueID, EntityKey: issueID, Repository: "OPS", Title: renamed,
		Labels: []string{"Bug", "Performance"}, UpdatedAt: time.Date(2026, 3, 4, 11, 0, 0, 0, time.UTC), FormerRefs: []string{"ENG-123"},
		Source: issueSource("OPS-7", "https://linear.app/acme/issue/OPS-7/export-times-out-for-workspaces-over-10k-issues")}},
	{file: "issue.remove.json", want: adaptertest.Want{
		EventName: "Issue.remove", Action: connectors.ActionDelete, Kind: connectors.KindIssue,
		ExternalID: "linear:acme:issue:8d7c6b5a-4f3e-4d2c-9b1a-0f9e8d7c6b5a", EntityKey: "linear:acme:issue:8d7c6b5a-4f3e-4d2c-9b1a-0f9e8d7c6b5a",
		Repository: "ENG", Title: "Duplicate of ENG-123", Labels: []string{}, UpdatedAt: time.Date(2026, 3, 4, 12, 0, 0, 0, time.UTC),
		Source: issueSource("ENG-124", "https://linear.app/acme/issue/ENG-124/duplicate-of-eng-123")}},
	{file: "comment.create.json", want: adaptertest.Want{EventName: "Comment.create", Action: connectors.ActionIgnore}},
	// A pull request attached to ENG-123, then removed.
	{file: "attachment.create.json", want: adaptertest.Want{
		EventName: "Attachment.create", Action: connectors.ActionLink, Kind: connectors.KindIssue,
		ExternalID: issueID, EntityKey: issueID, UpdatedAt: time.Date(2026, 3, 2, 11, 0, 0, 0, time.UTC),
		Links: []connectors.ContributionLink{helloWorldPR(time.Date(2026, 3, 2, 11, 0, 0, 0, time.UTC))}}},
	{file: "attachment.remove.json", want: adaptertest.Want{
		EventName: "Attachment.remove", Action: connectors.ActionUnlink, Kind: connectors.KindIssue,
		ExternalID: issueID, EntityKey: issueID, UpdatedAt: time.Date(2026, 3, 5, 9, 0, 0, 0, time.UTC),
		Links: []connectors.ContributionLink{helloWorldPR(time.Date(2026, 3, 5, 9, 0, 0, 0, time.UTC))}}},
}

// helloWorldPR is the pull request the attachment fixtures link, at time at.
func helloWorldPR(at time.Time) connectors.ContributionLink {
	return connectors.ContributionLink{ID: "3b9f1c2e-7d4a-4e8b-9c6f-1a2b3c4d5e6f", Provider: connectors.ProviderGitHub,
		Kind: connectors.KindPullRequest, Host: "github.com", Repository: "codertocat/hello-world", Number: 2,
		URL: "https://github.com/Codertocat/Hello-World/pull/2", UpdatedAt: at}
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
			got, err := Adapter{}.Parse(workspace, http.Header{}, fixture(t, tt.file))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			want := tt.want
			want.Provider = connectors.ProviderLinear
			adaptertest.CheckEvent(t, got, want)
			if got.Description != tt.description {
				t.Errorf("Description = %q, want %q", got.Description, tt.description)
			}
		})
	}
}

func mutate(t testing.TB, body []byte, edit func(m map[string]any)) []byte {
	return adaptertest.Mutate(t, body, edit)
}

func data(m map[string]any) map[string]any { return adaptertest.Obj(m, "data") }

func TestParseIssue(t *testing.T) {
	t.Parallel()
	created := fixture(t, "issue.create.json")
	completed := fixture(t, "issue.update.completed.json")
	tests := []struct {
		name       string
		body       []byte
		action     connectors.Action
		closed     bool
		ref        string
		repository string
		updatedAt  time.Time
	}{
		{"canceled", mutate(t, created, func(m map[string]any) {
			m["action"] = "update"
			data(m)["state"] = map[string]any{"id": "s", "name": "Canceled", "type": "canceled"}
		}), connectors.ActionUpdate, true, "ENG-123", "ENG", time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)},
		{"reopened: started state", mutate(t, completed, func(m map[string]any) {
			data(m)["state"] = map[string]any{"id": "s", "name": "In Progress", "type": "started"}
		}), connectors.ActionUpdate, false, "ENG-123", "ENG", time.Date(2026, 3, 3, 16, 30, 0, 0, time.UTC)},
		{"archived in an open state", mutate(t, created, func(m map[string]any) {
			m["action"] = "update"
			data(m)["archivedAt"] = "2026-03-05T00:00:00.000Z"
		}), connectors.ActionUpdate, true, "ENG-123", "ENG", time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)},
		{"another action on an issue is an update", mutate(t, created, func(m map[string]any) { m["action"] = "restore" }),
			connectors.ActionUpdate, false, "ENG-123", "ENG", time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)},
		{"no identifier: team key and number", mutate(t, created, func(m map[string]any) { delete(data(m), "identifier") }),
			connectors.ActionCreate, false, "ENG-123", "ENG", time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)},
		{"no team: the identifier's prefix", mutate(t, created, func(m map[string]any) { delete(data(m), "team") }),
			connectors.ActionCreate, false, "ENG-123", "ENG", time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)},
		{"no updatedAt: webhookTimestamp", mutate(t, created, func(m map[string]any) { delete(data(m), "updatedAt") }),
			connectors.ActionCreate, false, "ENG-123", "ENG", time.UnixMilli(1772442000123)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Adapter{}.Parse(workspace, http.Header{}, tt.body)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if got.Action != tt.action || got.Closed != tt.closed || got.Source.Ref != tt.ref || got.Repository != tt.repository ||
				!got.UpdatedAt.Equal(tt.updatedAt) || got.ExternalID != issueID {
				t.Errorf("Parse = action %v, closed %v, ref %q, repository %q, updated %v, external ID %q; want %v, %v, %q, %q, %v, %q",
					got.Action, got.Closed, got.Source.Ref, got.Repository, got.UpdatedAt, got.ExternalID,
					tt.action, tt.closed, tt.ref, tt.repository, tt.updatedAt, issueID)
			}
		})
	}
}

func TestParseIgnored(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body string
		want string
	}{
		{"issue label", `{"action":"create","type":"IssueLabel","data":{"id":"l","name":"Bug"}}`, "IssueLabel.create"},
		{"project", `{"action":"update","type":"Project","data":{"id":"p"}}`, "Project.update"},
		{"cycle", `{"action":"update","type":"Cycle","data":"not an object"}`, "Cycle.update"},
		{"reaction", `{"action":"create","type":"Reaction","data":{"emoji":"+1"}}`, "Reaction.create"},
		{"document attachment", `{"action":"create","type":"Attachment","data":{"id":"a","url":"https://docs.example.com/spec","issueId":"i"}}`, "Attachment.create"},
		{"attachment restored", `{"action":"restore","type":"Attachment","data":{"id":"a","url":"https://github.com/o/r/pull/1","issueId":"i"}}`, "Attachment.restore"},
		{"no action", `{"type":"Comment"}`, "Comment"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Adapter{}.Parse(workspace, http.Header{}, []byte(tt.body))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if got.Action != connectors.ActionIgnore || got.EventName != tt.want || got.Provider != connectors.ProviderLinear {
				t.Errorf("Parse = %+v, want ignored %q", got, tt.want)
			}
		})
	}
}

func TestParseAttachment(t *testing.T) {
	t.Parallel()
	created := fixture(t, "attachment.create.json")
	at := time.Date(2026, 3, 2, 11, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		body   []byte
		action connectors.Action
		link   connectors.ContributionLink // when linked or unlinked
	}{
		{"update", mutate(t, created, func(m map[string]any) { m["action"] = "update" }), connectors.ActionLink, helloWorldPR(at)},
		{"archived by an update", mutate(t, created, func(m map[string]any) {
			m["action"] = "update"
			data(m)["archivedAt"] = "2026-03-02T12:00:00.000Z"
		}), connectors.ActionUnlink, helloWorldPR(at.Add(time.Hour))},
		{"a GitLab merge request", mutate(t, created, func(m map[string]any) {
			data(m)["url"] = "https://gitlab.example.com/acme/infra/-/merge_requests/9"
		}), connectors.ActionLink, connectors.ContributionLink{ID: "3b9f1c2e-7d4a-4e8b-9c6f-1a2b3c4d5e6f",
			Provider: connectors.ProviderGitLab, Kind: connectors.KindMergeRequest, Host: "gitlab.example.com",
			Repository: "acme/infra", Number: 9, URL: "https://gitlab.example.com/acme/infra/-/merge_requests/9", UpdatedAt: at}},
		{"no updatedAt: the send time", mutate(t, created, func(m map[string]any) { delete(data(m), "updatedAt") }),
			connectors.ActionLink, helloWorldPR(time.UnixMilli(1772449200456).UTC())},
		{"an issue URL", mutate(t, created, func(m map[string]any) {
			data(m)["url"] = "https://github.com/Codertocat/Hello-World/issues/1"
		}), connectors.ActionIgnore, connectors.ContributionLink{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Adapter{}.Parse(workspace, http.Header{}, tt.body)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			adaptertest.CheckParsed(t, connectors.ProviderLinear, workspace, tt.name, got, nil)
			var want []connectors.ContributionLink
			if tt.action != connectors.ActionIgnore {
				want = []connectors.ContributionLink{tt.link}
			}
			if got.Action != tt.action || !slices.Equal(got.Links, want) {
				t.Errorf("Parse = %s %+v, want %s %+v", got.Action, got.Links, tt.action, want)
			}
			if tt.action != connectors.ActionIgnore && (got.ExternalID != issueID || got.EntityKey != issueID) {
				t.Errorf("Parse = %s / %s, want the issue's %s", got.ExternalID, got.EntityKey, issueID)
			}
		})
	}
}

// previousIdentifiers become former references, without the current one,
// repeats or blanks, and at most maxFormerRefs of them; an issue's
// attachments become links, at most maxLinks of them.
func TestParseFormerRefsAndLinksAreBounded(t *testing.T) {
	t.Parallel()
	many := []any{"OPS-7", " ", "ENG-1", "ENG-1"}
	var attachments []any
	for i := range 3 * maxLinks {
		many = append(many, "OLD-"+strconv.Itoa(i))
		attachments = append(attachments, map[string]any{"id": "a" + strconv.Itoa(i),
			"url": "https://github.com/acme/api/pull/" + strconv.Itoa(i+1)})
	}
	body := mutate(t, fixture(t, "issue.update.team-moved.json"), func(m map[string]any) {
		data(m)["previousIdentifiers"] = many
		data(m)["attachments"] = attachments
	})
	got, err := Adapter{}.Parse(workspace, http.Header{}, body)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if len(got.FormerRefs) != maxFormerRefs || got.FormerRefs[0] != "ENG-1" || got.FormerRefs[1] != "OLD-0" {
		t.Errorf("FormerRefs = %v, want %d starting ENG-1, OLD-0", got.FormerRefs, maxFormerRefs)
	}
	if len(got.Links) != maxLinks || got.Links[0].Number != 1 || !got.Links[0].UpdatedAt.Equal(got.UpdatedAt) {
		t.Errorf("Links = %d, first %+v; want %d, the first PR at the issue's time", len(got.Links), got.Links[0], maxLinks)
	}
}

func TestParseMalformed(t *testing.T) {
	t.Parallel()
	created := fixture(t, "issue.create.json")
	tests := []struct {
		name string
		body []byte
	}{
		{"not JSON", []byte(`{"type":`)},
		{"JSON array", []byte(`[]`)},
		{"empty type", mutate(t, created, func(m map[string]any) { m["type"] = "" })},
		{"no type", mutate(t, created, func(m map[string]any) { delete(m, "type") })},
		{"no data", mutate(t, created, func(m map[string]any) { delete(m, "data") })},
		{"data not an object", mutate(t, created, func(m map[string]any) { m["data"] = 5 })},
		{"data.id missing", mutate(t, created, func(m map[string]any) { delete(data(m), "id") })},
		{"data.id blank", mutate(t, created, func(m map[string]any) { data(m)["id"] = " " })},
		{"attachment without issueId", mutate(t, fixture(t, "attachment.create.json"), func(m map[string]any) { delete(data(m), "issueId") })},
		{"attachment without id", mutate(t, fixture(t, "attachment.create.json"), func(m map[string]any) { data(m)["id"] = "" })},
		{"attachment data not an object", mutate(t, fixture(t, "attachment.create.json"), func(m map[string]any) { m["data"] = []any{} })},
		{"no identifier and no team", mutate(t, created, func(m map[string]any) {
			delete(data(m), "identifier")
			delete(data(m), "team")
		})},
		{"no identifier, no number", mutate(t, created, func(m map[string]any) {
			delete(data(m), "identifier")
			delete(data(m), "number")
		})},
		{"identifier without a team prefix, no team", mutate(t, created, func(m map[string]any) {
			data(m)["identifier"] = "123"
			delete(data(m), "team")
		})},
		{"title not a string", mutate(t, created, func(m map[string]any) { data(m)["title"] = 7 })},
		{"webhookTimestamp not a number", mutate(t, created, func(m map[string]any) { m["webhookTimestamp"] = "now" })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Adapter{}.Parse(workspace, http.Header{}, tt.body)
			if !errors.Is(err, connectors.ErrMalformedPayload) {
				t.Errorf("Parse error = %v, want %v", err, connectors.ErrMalformedPayload)
			}
		})
	}
}

// fixedClock is 2026-03-02T09:00:00.123Z, the webhookTimestamp of
// issue.create.json.
var fixedClock = time.UnixMilli(1772442000123)

func clockAt(t time.Time) func() time.Time { return func() time.Time { return t } }

func TestVerify(t *testing.T) {
	t.Parallel()
	secret := []byte("s3cret")
	created := fixture(t, "issue.create.json")
	stamped := func(ts any) []byte {
		return mutate(t, created, func(m map[string]any) { m["webhookTimestamp"] = ts })
	}
	withoutStamp := mutate(t, created, func(m map[string]any) { delete(m, "webhookTimestamp") })
	sign := func(body []byte) string { return connectors.HMACSHA256Hex(secret, body) }
	ms := fixedClock.UnixMilli()
	tests := []struct {
		name    string
		body    []byte
		sig     string
		header  map[string]string
		secrets [][]byte
		want    error
	}{
		{name: "good", body: created, sig: sign(created), secrets: [][]byte{secret}},
		{name: "rotation: old secret listed second", body: created, sig: sign(created), secrets: [][]byte{[]byte("new"), secret}},
		{name: "hex in upper case", body: created, sig: "  " + upper(sign(created)), secrets: [][]byte{secret}},
		{name: "bad signature", body: created, sig: connectors.HMACSHA256Hex([]byte("other"), created), secrets: [][]byte{secret}, want: connectors.ErrBadSignature},
		{name: "missing", body: created, secrets: [][]byte{secret}, want: connectors.ErrMissingSignature},
		{name: "not hex", body: created, sig: "sha256=" + sign(created), secrets: [][]byte{secret}, want: connectors.ErrBadSignature},
		{name: "too short", body: created, sig: sign(created)[:40], secrets: [][]byte{secret}, want: connectors.ErrBadSignature},
		{name: "59 s old", body: stamped(ms - 59_000), sig: sign(stamped(ms - 59_000)), secrets: [][]byte{secret}},
		{name: "59 s ahead", body: stamped(ms + 59_000), sig: sign(stamped(ms + 59_000)), secrets: [][]byte{secret}},
		{name: "61 s old", body: stamped(ms - 61_000), sig: sign(stamped(ms - 61_000)), secrets: [][]byte{secret}, want: connectors.ErrStaleTimestamp},
		{name: "61 s ahead", body: stamped(ms + 61_000), sig: sign(stamped(ms + 61_000)), secrets: [][]byte{secret}, want: connectors.ErrStaleTimestamp},
		{name: "a day old", body: stamped(ms - 86_400_000), sig: sign(stamped(ms - 86_400_000)), secrets: [][]byte{secret}, want: connectors.ErrStaleTimestamp},
		{name: "huge", body: stamped(1e300), sig: sign(stamped(1e300)), secrets: [][]byte{secret}, want: connectors.ErrStaleTimestamp},
		{name: "no webhookTimestamp", body: withoutStamp, sig: sign(withoutStamp), secrets: [][]byte{secret}, want: connectors.ErrStaleTimestamp},
		{name: "webhookTimestamp null", body: stamped(nil), sig: sign(stamped(nil)), secrets: [][]byte{secret}, want: connectors.ErrStaleTimestamp},
		{name: "webhookTimestamp a string", body: stamped(strconv.FormatInt(ms, 10)), sig: sign(stamped(strconv.FormatInt(ms, 10))), secrets: [][]byte{secret}, want: connectors.ErrStaleTimestamp},
		{name: "signed garbage", body: []byte("not json"), sig: sign([]byte("not json")), secrets: [][]byte{secret}, want: connectors.ErrStaleTimestamp},
		{name: "the unsigned header is not trusted", body: stamped(ms - 600_000), sig: sign(stamped(ms - 600_000)),
			header: map[string]string{HeaderTimestamp: strconv.FormatInt(ms, 10)}, secrets: [][]byte{secret}, want: connectors.ErrStaleTimestamp},
		{name: "the unsigned header does not stand in for the body's", body: withoutStamp, sig: sign(withoutStamp),
			header: map[string]string{HeaderTimestamp: strconv.FormatInt(ms, 10)}, secrets: [][]byte{secret}, want: connectors.ErrStaleTimestamp},
		{name: "a bad signature is reported before the timestamp", body: stamped(1), sig: connectors.HMACSHA256Hex([]byte("other"), stamped(1)),
			secrets: [][]byte{secret}, want: connectors.ErrBadSignature},
	}
	a := Adapter{Now: clockAt(fixedClock)}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := http.Header{}
			if tt.sig != "" {
				h.Set(HeaderSignature, tt.sig)
			}
			for k, v := range tt.header {
				h.Set(k, v)
			}
			got := a.Verify(h, tt.body, tt.secrets)
			if !errors.Is(got, tt.want) || (got == nil) != (tt.want == nil) {
				t.Errorf("Verify = %v, want %v", got, tt.want)
			}
		})
	}
}

func upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'f' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

// The zero value checks against the real clock: a fixture is stale now.
func TestVerifyZeroValueUsesTheClock(t *testing.T) {
	t.Parallel()
	secret := []byte("s3cret")
	body := fixture(t, "issue.create.json")
	h := http.Header{}
	Adapter{}.Sign(h, body, secret)
	if err := (Adapter{}).Verify(h, body, [][]byte{secret}); !errors.Is(err, connectors.ErrStaleTimestamp) {
		t.Errorf("Verify of a stored fixture = %v, want %v", err, connectors.ErrStaleTimestamp)
	}
}

func TestSign(t *testing.T) {
	t.Parallel()
	body := fixture(t, "issue.create.json")
	secret := []byte("s3cret")
	h := http.Header{}
	Adapter{}.Sign(h, body, secret)
	if err := (Adapter{Now: clockAt(fixedClock)}).Verify(h, body, [][]byte{secret}); err != nil {
		t.Errorf("Verify(Sign) = %v, want nil", err)
	}
	if got := h.Get(HeaderDelivery); len(got) != 36 {
		t.Errorf("%s = %q, want a UUID", HeaderDelivery, got)
	}
	if got, want := h.Get(HeaderEvent), "Issue"; got != want {
		t.Errorf("%s = %q, want %q", HeaderEvent, got, want)
	}
	if got, want := h.Get("Content-Type"), "application/json"; got != want {
		t.Errorf("Content-Type = %v, want %v", got, want)
	}
	h2 := http.Header{}
	h2.Set(HeaderDelivery, "retry-1")
	h2.Set(HeaderEvent, "Comment")
	Adapter{}.Sign(h2, body, secret)
	if got, want := h2.Get(HeaderDelivery), "retry-1"; got != want {
		t.Errorf("%s = %v, want %v", HeaderDelivery, got, want)
	}
	if got, want := h2.Get(HeaderEvent), "Comment"; got != want {
		t.Errorf("%s = %v, want %v", HeaderEvent, got, want)
	}
}

// A stored fixture, restamped and signed, verifies now; only
// webhookTimestamp changed.
func TestRestamp(t *testing.T) {
	t.Parallel()
	secret := []byte("s3cret")
	now := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	a := Adapter{Now: clockAt(now)}
	tests := []struct {
		name string
		body []byte
	}{
		{"fixture", fixture(t, "issue.update.team-moved.json")},
		{"ignored type", fixture(t, "comment.create.json")},
		{"no webhookTimestamp", []byte(`{"type":"Issue","data":{"id":"x"}}`)},
		{"empty object", []byte(`{}`)},
		{"other spelling", []byte(`{"WebhookTimestamp":1,"type":"Issue"}`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			before := a.Verify(signed(tt.body, secret), tt.body, [][]byte{secret})
			if !errors.Is(before, connectors.ErrStaleTimestamp) {
				t.Fatalf("Verify before Restamp = %v, want %v", before, connectors.ErrStaleTimestamp)
			}
			body, err := a.Restamp(tt.body, now)
			if err != nil {
				t.Fatalf("Restamp: %v", err)
			}
			if err := a.Verify(signed(body, secret), body, [][]byte{secret}); err != nil {
				t.Errorf("Verify after Restamp = %v, want nil; body %s", err, body)
			}
			var was, is map[string]json.RawMessage
			if err := json.Unmarshal(tt.body, &was); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(body, &is); err != nil {
				t.Fatal(err)
			}
			for k := range was {
				if k == "webhookTimestamp" || k == "WebhookTimestamp" {
					continue
				}
				if !jsonEqual(t, was[k], is[k]) {
					t.Errorf("member %s = %s, was %s", k, is[k], was[k])
				}
			}
			if len(is) != len(was) && !(len(is) == len(was)+1 && is["webhookTimestamp"] != nil && was["webhookTimestamp"] == nil) {
				t.Errorf("members %v, were %v", slices.Sorted(mapsKeys(is)), slices.Sorted(mapsKeys(was)))
			}
		})
	}
}

func signed(body, secret []byte) http.Header {
	h := http.Header{}
	Adapter{}.Sign(h, body, secret)
	return h
}

func jsonEqual(t *testing.T, a, b json.RawMessage) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

func mapsKeys(m map[string]json.RawMessage) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func TestRestampRefuses(t *testing.T) {
	t.Parallel()
	for _, body := range []string{``, `[]`, `"x"`, `{"a":`, `{"a":1}{}`, `{"a":1,"a":2}`} {
		if got, err := (Adapter{}).Restamp([]byte(body), fixedClock); err == nil {
			t.Errorf("Restamp(%q) = %s, want an error", body, got)
		}
	}
}

func TestDeliveryKey(t *testing.T) {
	t.Parallel()
	body := fixture(t, "issue.create.json")
	tests := []struct {
		name, header, want string
	}{
		{"header", "5d1e2c3b-7a6f-4e8d-9c0b-1a2f3e4d5c6b", "5d1e2c3b-7a6f-4e8d-9c0b-1a2f3e4d5c6b"},
		{"header with spaces", " d-1 ", "d-1"},
		{"no header: the body's hash", "", connectors.BodyDeliveryKey(body)},
	}
	for _, tt := range tests {
		h := http.Header{}
		if tt.header != "" {
			h.Set(HeaderDelivery, tt.header)
		}
		if got := (Adapter{}).DeliveryKey(h, body); got != tt.want {
			t.Errorf("%s: DeliveryKey = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestEventName(t *testing.T) {
	t.Parallel()
	tests := []struct {
		header, want string
	}{
		{"Issue", "Issue"},
		{"Comment", "Comment"},
		{"", "linear"},
		{"  ", "linear"},
	}
	for _, tt := range tests {
		h := http.Header{}
		h.Set(HeaderEvent, tt.header)
		if got := (Adapter{}).EventName(h); got != tt.want {
			t.Errorf("EventName(%q) = %v, want %v", tt.header, got, tt.want)
		}
	}
}

func TestHeaders(t *testing.T) {
	t.Parallel()
	a := Adapter{}
	if got, want := a.Provider(), connectors.ProviderLinear; got != want {
		t.Errorf("Provider = %v, want %v", got, want)
	}
	if got, want := a.SecretHeaders(), []string{"Linear-Signature"}; !slices.Equal(got, want) {
		t.Errorf("SecretHeaders = %v, want %v", got, want)
	}
}
