package gitlab

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
		{"Issue Hook", "issue.json", "project.path_with_namespace", func(m map[string]any, v string) { adaptertest.Obj(m, "project")["path_with_namespace"] = v }},
		{"Issue Hook", "issue.json", "object_attributes.title", func(m map[string]any, v string) { adaptertest.Obj(m, "object_attributes")["title"] = v }},
		{"Merge Request Hook", "merge_request.json", "object_attributes.source_branch", func(m map[string]any, v string) { adaptertest.Obj(m, "object_attributes")["source_branch"] = v }},
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
