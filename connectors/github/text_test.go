package github

import (
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
		{"issues", "issues.opened.json", "repository.full_name", func(m map[string]any, v string) { adaptertest.Obj(m, "repository")["full_name"] = v }},
		{"issues", "issues.opened.json", "issue.title", func(m map[string]any, v string) { adaptertest.Obj(m, "issue")["title"] = v }},
		{"pull_request", "pull_request.opened.json", "pull_request.head.ref", func(m map[string]any, v string) {
			adaptertest.Obj(adaptertest.Obj(m, "pull_request"), "head")["ref"] = v
		}},
		{"issues", "issues.opened.json", "sender.login", func(m map[string]any, v string) { adaptertest.Obj(m, "sender")["login"] = v }},
	} {
		for way, body := range adaptertest.InvalidTextBodies(t, adaptertest.Fixture(t, fixtureDir, tc.fixture), tc.edit) {
			t.Run(tc.fixture+" "+tc.field+" "+way, func(t *testing.T) {
				t.Parallel()
				e, err := Adapter{}.Parse(host, headerFor(tc.event), body)
				adaptertest.CheckRefusesText(t, tc.field, e, err)
			})
		}
	}
}
