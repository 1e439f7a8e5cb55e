package github

import (
	"net/http"
	"path/filepath"
	"testing"
)

// Every fixture names its own event: the part of its file name before the
// first dot is the X-GitHub-Event GitHub sent it with.
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
			// The inferred event is one Parse accepts for the body.
			h := http.Header{}
			h.Set(HeaderEvent, got)
			if _, err := (Adapter{}).Parse(host, h, fixture(t, name)); err != nil {
				t.Fatalf("Parse with the inferred event: %v", err)
			}
		})
	}
}

func TestEventFromPayloadShapes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body string
		want       string
		wantOK     bool
	}{
		{"ping", `{"zen":"Keep it logically awesome.","hook_id":1,"hook":{}}`, "ping", true},
		{"issues", `{"action":"opened","issue":{"id":1},"repository":{}}`, "issues", true},
		{"issue comment", `{"action":"created","issue":{"id":1},"comment":{"id":2}}`, "issue_comment", true},
		{"pull request", `{"action":"opened","number":1,"pull_request":{"id":1}}`, "pull_request", true},
		{"review", `{"action":"submitted","pull_request":{"id":1},"review":{"id":2}}`, "pull_request_review", true},
		{"review comment", `{"action":"created","pull_request":{"id":1},"comment":{"id":2}}`, "pull_request_review_comment", true},
		{"installation", `{"action":"created","installation":{"id":1,"account":{"login":"o"}},"repositories":[]}`, "installation", true},
		{"installation repositories", `{"action":"added","installation":{"id":1},"repositories_added":[]}`, "installation_repositories", true},
		{"app push", `{"action":"created","installation":{"id":1,"node_id":"x"},"ref":"refs/heads/main"}`, "", false},
		{"issue without action", `{"issue":{"id":1}}`, "", false},
		{"null issue", `{"action":"opened","issue":null}`, "", false},
		{"push", `{"ref":"refs/heads/main","before":"0","after":"1","commits":[]}`, "", false},
		{"not an object", `[1,2]`, "", false},
		{"not json", `issues`, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := EventFromPayload([]byte(tt.body))
			if got != tt.want || ok != tt.wantOK {
				t.Fatalf("EventFromPayload(%s) = %q, %v; want %q, %v", tt.body, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}
