package jira

import (
	"net/http"
	"testing"

	"github.com/trackergateway/gateway/connectors/adaptertest"
)

// TestParseRefusesInvalidText: a string of the payload that is not valid
// UTF-8 (raw bytes, lone surrogate escapes) fails the parse naming its
// member, where encoding/json would have made U+FFFD of it: two entities
// whose names differ only there must not become one.
func TestParseRefusesInvalidText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		event, fixture, field string
		edit                  func(m map[string]any, v string)
	}{
		{"", "webhook-issue-created.json", "issue.key", func(m map[string]any, v string) { adaptertest.Obj(m, "issue")["key"] = v }},
		{"", "webhook-issue-created.json", "issue.fields.summary", func(m map[string]any, v string) {
			adaptertest.Obj(adaptertest.Obj(m, "issue"), "fields")["summary"] = v
		}},
		{"", "webhook-issue-created.json", "user.name", func(m map[string]any, v string) { adaptertest.Obj(m, "user")["name"] = v }},
	} {
		for way, body := range adaptertest.InvalidTextBodies(t, adaptertest.Fixture(t, fixtureDir, tc.fixture), tc.edit) {
			t.Run(tc.fixture+" "+tc.field+" "+way, func(t *testing.T) {
				t.Parallel()
				e, err := Adapter{}.Parse(site, http.Header{}, body)
				adaptertest.CheckRefusesText(t, tc.field, e, err)
			})
		}
	}
}
