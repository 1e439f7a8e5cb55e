package jira

import (
	"encoding/json"
	"errors"
	"net/http"
	"path/filepath"
	"slices"
	"testing"
	"time"

	jira "github.com/andygrunwald/go-jira"

	"github.com/trackergateway/gateway/connectors"
	"github.com/trackergateway/gateway/connectors/adaptertest"
)

const site = "some-instance-test.atlassian.net"

var fixtureDir = filepath.Join("..", "..", "fixtures", "jira")

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	return adaptertest.Fixture(t, fixtureDir, name)
}

const (
	tesID  = "jira:some-instance-test.atlassian.net:issue:10040"
	tesURL = "https://some-instance-test.atlassian.net/browse/TES-41"
)

type fixtureCase struct {
	file        string
	eventName   string
	action      connectors.Action
	externalID  string
	ref         string
	url         string
	repository  string
	title       string
	description string
	labels      []string
	closed      bool
	timestamp   int64
}

var fixtureCases = []fixtureCase{
	{file: "webhook-issue-created.json", eventName: "jira:issue_created", action: connectors.ActionCreate,
		externalID: tesID, ref: "TES-41", url: tesURL, repository: "TES", title: "Unit test summary",
		description: "Unit test description, not that long", labels: []string{"test-label"}, timestamp: 1550286113023},
	{file: "webhook-issue-updated-renamed.json", eventName: "jira:issue_updated", action: connectors.ActionUpdate,
		externalID: tesID, ref: "TES-41", url: tesURL, repository: "TES", title: "Unit test summary 1",
		description: "Unit test description, not that long", labels: []string{"test-label"}, timestamp: 1550286471789},
	{file: "webhook-issue-updated-labels.json", eventName: "jira:issue_updated", action: connectors.ActionUpdate,
		externalID: tesID, ref: "TES-41", url: tesURL, repository: "TES", title: "Unit test summary 1",
		description: "Unit test description, not that long, a little longer now", labels: []string{"sad", "test-label"}, timestamp: 1550351530065},
	{file: "webhook-issue-updated-resolved.json", eventName: "jira:issue_updated", action: connectors.ActionClose,
		externalID: tesID, ref: "TES-41", url: tesURL, repository: "TES", title: "Unit test summary 1",
		description: "Unit test description, not that long, a little longer now", labels: []string{"test-label"}, closed: true, timestamp: 1550286940507},
	{file: "webhook-issue-updated-reopened.json", eventName: "jira:issue_updated", action: connectors.ActionReopen,
		externalID: tesID, ref: "TES-41", url: tesURL, repository: "TES", title: "Unit test summary 1",
		description: "Unit test description, not that long, a little longer now", labels: []string{"test-label"}, timestamp: 1550287200000},
	{file: "webhook-issue-deleted.json", eventName: "jira:issue_deleted", action: connectors.ActionDelete,
		externalID: "jira:some-instance-test.atlassian.net:issue:10303", ref: "IDT-19",
		url: "https://some-instance-test.atlassian.net/browse/IDT-19", repository: "IDT", title: "hey",
		description: "descxyvccfgf f+xbsdz 511f+", labels: []string{}, timestamp: 1562177136176},
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
			body := fixture(t, tt.file)
			// go-jira decodes every real fixture: the lenient decoder is
			// not what makes them pass.
			var full struct {
				Issue *json.RawMessage `json:"issue"`
			}
			if err := json.Unmarshal(body, &full); err != nil || full.Issue == nil {
				t.Fatalf("fixture has no issue: %v", err)
			}
			var ji jira.Issue
			if err := unmarshalIssue(*full.Issue, &ji); err != nil {
				t.Errorf("go-jira cannot decode the issue: %v", err)
			}

			got, err := Adapter{}.Parse(site, http.Header{}, body)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			checkEvent(t, got, tt)
		})
	}
}

func checkEvent(t *testing.T, got connectors.Event, want fixtureCase) {
	t.Helper()
	adaptertest.CheckEvent(t, got, adaptertest.Want{Provider: connectors.ProviderJira, EventName: want.eventName,
		Action: want.action, Kind: connectors.KindIssue, ExternalID: want.externalID, EntityKey: want.externalID,
		Repository: want.repository, Title: want.title, Labels: want.labels, Closed: want.closed,
		UpdatedAt: time.UnixMilli(want.timestamp),
		Source:    connectors.Source{Provider: connectors.ProviderJira, Kind: connectors.KindIssue, Ref: want.ref, URL: want.url}})
	if got.Description != want.description {
		t.Errorf("Description = %q, want %q", got.Description, want.description)
	}
}

func mutate(t testing.TB, body []byte, edit func(m map[string]any)) []byte {
	return adaptertest.Mutate(t, body, edit)
}

func obj(m map[string]any, key string) map[string]any { return adaptertest.Obj(m, key) }

func fields(m map[string]any) map[string]any {
	return obj(obj(m, "issue"), "fields")
}

// TestParseLenient: data go-jira's types refuse (times without its exact
// layout, a v3 ADF description, a numeric id) still map.
func TestParseLenient(t *testing.T) {
	t.Parallel()
	base := fixture(t, "webhook-issue-updated-resolved.json")
	tests := []struct {
		name        string
		edit        func(m map[string]any)
		description string
	}{
		{"created in RFC 3339", func(m map[string]any) { fields(m)["created"] = "2019-02-15T19:01:52Z" }, "Unit test description, not that long, a little longer now"},
		{"updated with a colon in the offset", func(m map[string]any) { fields(m)["updated"] = "2019-02-15T19:15:40.477-08:00" }, "Unit test description, not that long, a little longer now"},
		{"ADF description", func(m map[string]any) {
			fields(m)["description"] = map[string]any{"type": "doc", "version": 1, "content": []any{}}
		}, ""},
		{"numeric id", func(m map[string]any) { obj(m, "issue")["id"] = 10040 }, "Unit test description, not that long, a little longer now"},
		{"changelog item with odd types", func(m map[string]any) {
			obj(m, "changelog")["items"] = []any{map[string]any{"field": "resolution", "to": 10000, "toString": 7}}
		}, "Unit test description, not that long, a little longer now"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Adapter{}.Parse(site, http.Header{}, mutate(t, base, tt.edit))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			checkEvent(t, got, fixtureCase{
				eventName: "jira:issue_updated", action: connectors.ActionClose, externalID: tesID,
				ref: "TES-41", url: tesURL, repository: "TES", title: "Unit test summary 1",
				description: tt.description, labels: []string{"test-label"}, closed: true, timestamp: 1550286940507,
			})
		})
	}
}

func TestParseUpdates(t *testing.T) {
	t.Parallel()
	resolved := fixture(t, "webhook-issue-updated-resolved.json")
	renamed := fixture(t, "webhook-issue-updated-renamed.json")
	tests := []struct {
		name   string
		body   []byte
		action connectors.Action
		closed bool
	}{
		{"status done without a resolution change", mutate(t, resolved, func(m map[string]any) { delete(m, "changelog") }), connectors.ActionUpdate, true},
		{"status done, no resolution", mutate(t, resolved, func(m map[string]any) {
			delete(m, "changelog")
			fields(m)["resolution"] = nil
		}), connectors.ActionUpdate, true},
		{"resolution cleared to empty strings", mutate(t, renamed, func(m map[string]any) {
			obj(m, "changelog")["items"] = []any{map[string]any{"field": "resolution", "from": "10000", "fromString": "Done", "to": "", "toString": ""}}
		}), connectors.ActionReopen, false},
		{"field name in another case", mutate(t, renamed, func(m map[string]any) {
			obj(m, "changelog")["items"] = []any{map[string]any{"field": "Resolution", "to": "10000", "toString": "Done"}}
		}), connectors.ActionClose, true},
		{"no changelog", mutate(t, renamed, func(m map[string]any) { delete(m, "changelog") }), connectors.ActionUpdate, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Adapter{}.Parse(site, http.Header{}, tt.body)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if got.Action != tt.action {
				t.Errorf("Action = %v, want %v", got.Action, tt.action)
			}
			if got.Closed != tt.closed {
				t.Errorf("Closed = %v, want %v", got.Closed, tt.closed)
			}
		})
	}
}

func TestParseTimestamp(t *testing.T) {
	t.Parallel()
	base := fixture(t, "webhook-issue-created.json")
	tests := []struct {
		name string
		edit func(m map[string]any)
		want time.Time
	}{
		{"timestamp", func(map[string]any) {}, time.UnixMilli(1550286113023)},
		{"no timestamp: fields.updated", func(m map[string]any) { delete(m, "timestamp") },
			time.Date(2019, 2, 16, 3, 1, 52, 971e6, time.UTC)},
		{"float timestamp", func(m map[string]any) { m["timestamp"] = 1.550286113023e12 }, time.UnixMilli(1550286113023)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Adapter{}.Parse(site, http.Header{}, mutate(t, base, tt.edit))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if !got.UpdatedAt.Equal(tt.want) {
				t.Errorf("UpdatedAt = %v, want %v", got.UpdatedAt, tt.want)
			}
		})
	}
}

func TestParseIgnored(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body []byte
		want string
	}{
		{"comment", []byte(`{"timestamp":1,"webhookEvent":"comment_created","comment":{"id":"1"}}`), "comment_created"},
		{"worklog", []byte(`{"webhookEvent":"jira:worklog_updated","issue":"not an object"}`), "jira:worklog_updated"},
		{"no event", []byte(`{}`), "jira"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Adapter{}.Parse(site, http.Header{}, tt.body)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if got.Action != connectors.ActionIgnore {
				t.Errorf("Action = %v, want %v", got.Action, connectors.ActionIgnore)
			}
			if got.EventName != tt.want {
				t.Errorf("EventName = %v, want %v", got.EventName, tt.want)
			}
		})
	}
}

func TestParseMalformed(t *testing.T) {
	t.Parallel()
	created := fixture(t, "webhook-issue-created.json")
	tests := []struct {
		name string
		body []byte
	}{
		{"not JSON", []byte(`{"webhookEvent":`)},
		{"JSON array", []byte(`[]`)},
		{"timestamp not a number", mutate(t, created, func(m map[string]any) { m["timestamp"] = "yesterday" })},
		{"no issue", mutate(t, created, func(m map[string]any) { delete(m, "issue") })},
		{"issue not an object", mutate(t, created, func(m map[string]any) { m["issue"] = 5 })},
		{"issue id missing", mutate(t, created, func(m map[string]any) { delete(obj(m, "issue"), "id") })},
		{"issue id zero", mutate(t, created, func(m map[string]any) { obj(m, "issue")["id"] = "0" })},
		{"issue id not a number", mutate(t, created, func(m map[string]any) { obj(m, "issue")["id"] = "TES-41" })},
		{"issue key missing", mutate(t, created, func(m map[string]any) { delete(obj(m, "issue"), "key") })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Adapter{}.Parse(site, http.Header{}, tt.body)
			if !errors.Is(err, connectors.ErrMalformedPayload) {
				t.Errorf("Parse error = %v, want %v", err, connectors.ErrMalformedPayload)
			}
		})
	}
}

func TestVerify(t *testing.T) {
	t.Parallel()
	body := fixture(t, "webhook-issue-created.json")
	secret := []byte("s3cret")
	hexSig := connectors.HMACSHA256Hex(secret, body)
	tests := []struct {
		name    string
		sig     string
		secrets [][]byte
		want    error
	}{
		{"good", "sha256=" + hexSig, [][]byte{secret}, nil},
		{"method in upper case", "SHA256=" + hexSig, [][]byte{secret}, nil},
		{"rotation: old secret listed second", "sha256=" + hexSig, [][]byte{[]byte("new"), secret}, nil},
		{"wrong secret", "sha256=" + hexSig, [][]byte{[]byte("other")}, connectors.ErrBadSignature},
		{"not hex", "sha256=nothex", [][]byte{secret}, connectors.ErrBadSignature},
		{"no method", hexSig, [][]byte{secret}, connectors.ErrBadSignature},
		{"sha1", "sha1=" + hexSig[:40], [][]byte{secret}, connectors.ErrUnsupportedSignature},
		{"sha512", "sha512=" + hexSig + hexSig, [][]byte{secret}, connectors.ErrUnsupportedSignature},
		{"missing", "", [][]byte{secret}, connectors.ErrMissingSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := http.Header{}
			if tt.sig != "" {
				h.Set(HeaderSignature, tt.sig)
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
	body := fixture(t, "webhook-issue-created.json")
	secret := []byte("s3cret")
	h := http.Header{}
	Adapter{}.Sign(h, body, secret)
	if err := (Adapter{}).Verify(h, body, [][]byte{secret}); err != nil {
		t.Errorf("Verify(Sign) = %v, want nil", err)
	}
	if got := h.Get(HeaderIdentifier); len(got) != 36 {
		t.Errorf("%s = %q, want a UUID", HeaderIdentifier, got)
	}
	if got, want := h.Get("Content-Type"), "application/json"; got != want {
		t.Errorf("Content-Type = %v, want %v", got, want)
	}
	h2 := http.Header{}
	h2.Set(HeaderIdentifier, "retry-1")
	Adapter{}.Sign(h2, body, secret)
	if got, want := h2.Get(HeaderIdentifier), "retry-1"; got != want {
		t.Errorf("%s = %v, want %v", HeaderIdentifier, got, want)
	}
}

func TestDeliveryKey(t *testing.T) {
	t.Parallel()
	body := fixture(t, "webhook-issue-created.json")
	h := http.Header{}
	if got, want := (Adapter{}).DeliveryKey(h, body), connectors.BodyDeliveryKey(body); got != want {
		t.Errorf("DeliveryKey without identifier = %v, want %v", got, want)
	}
	h.Set(HeaderIdentifier, "c8d3b3b4-0d62-4a5d-9c9e-6e7f8a9b0c1d")
	if got, want := (Adapter{}).DeliveryKey(h, body), "c8d3b3b4-0d62-4a5d-9c9e-6e7f8a9b0c1d"; got != want {
		t.Errorf("DeliveryKey = %v, want %v", got, want)
	}
}

func TestHeaders(t *testing.T) {
	t.Parallel()
	a := Adapter{}
	if got, want := a.Provider(), connectors.ProviderJira; got != want {
		t.Errorf("Provider = %v, want %v", got, want)
	}
	if got, want := a.EventName(http.Header{}), "jira"; got != want {
		t.Errorf("EventName = %v, want %v", got, want)
	}
	if got, want := a.SecretHeaders(), []string{"X-Hub-Signature", "Authorization"}; !slices.Equal(got, want) {
		t.Errorf("SecretHeaders = %v, want %v", got, want)
	}
}
