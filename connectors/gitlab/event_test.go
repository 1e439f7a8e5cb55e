package gitlab

import (
	"path/filepath"
	"testing"

	gitlab "gitlab.com/gitlab-org/api/client-go"
)

// Every fixture's object_kind names the hook GitLab sends it as, and Parse
// accepts the body under that name.
func TestEventFromPayloadFixtures(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join(fixtureDir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures in %s: %v", fixtureDir, err)
	}
	for _, path := range files {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, ok := EventFromPayload(fixture(t, name))
			if want := eventFor(name); !ok || got != want {
				t.Fatalf("EventFromPayload = %q, %v; want %q, true", got, ok, want)
			}
			if _, err := (Adapter{}).Parse(host, headerFor(got), fixture(t, name)); err != nil {
				t.Fatalf("Parse with the inferred event: %v", err)
			}
		})
	}
}

func TestEventFromPayloadKinds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		body   string
		want   string
		wantOK bool
	}{
		{`{"object_kind":"issue","event_type":"issue"}`, "Issue Hook", true},
		{`{"object_kind":"issue","event_type":"confidential_issue"}`, "Confidential Issue Hook", true},
		{`{"object_kind":"merge_request"}`, "Merge Request Hook", true},
		{`{"object_kind":"note","event_type":"note"}`, "Note Hook", true},
		{`{"object_kind":"note","event_type":"confidential_note"}`, "Confidential Note Hook", true},
		{`{"object_kind":"push"}`, "Push Hook", true},
		{`{"object_kind":"tag_push"}`, "Tag Push Hook", true},
		{`{"object_kind":"pipeline"}`, "Pipeline Hook", true},
		{`{"object_kind":"build"}`, "Job Hook", true},
		{`{"object_kind":"wiki_page"}`, "Wiki Page Hook", true},
		{`{"object_kind":"deployment"}`, "Deployment Hook", true},
		{`{"object_kind":"release"}`, "Release Hook", true},
		{`{"object_kind":"feature_flag"}`, "Feature Flag Hook", true},
		{`{"object_kind":"emoji"}`, "Emoji Hook", true},
		{`{"object_kind":"milestone"}`, "Milestone Hook", true},
		{`{"object_kind":"something_new"}`, "", false},
		{`{"action":"opened"}`, "", false},
		{`not json`, "", false},
	}
	for _, tt := range tests {
		got, ok := EventFromPayload([]byte(tt.body))
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("EventFromPayload(%s) = %q, %v; want %q, %v", tt.body, got, ok, tt.want, tt.wantOK)
		}
	}
	// Each inferred hook is one whose object_kind Parse checks.
	for _, tt := range tests {
		got, ok := EventFromPayload([]byte(tt.body))
		if ok {
			if _, checked := objectKinds[gitlab.EventType(got)]; !checked {
				t.Errorf("%q is not a hook Parse knows", got)
			}
		}
	}
}
