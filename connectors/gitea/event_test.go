package gitea

import (
	"net/http"
	"path/filepath"
	"testing"
)

// Every issues and pull_request fixture names its own event: the part of
// its file name before the first dot. A push body names none.
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
			if eventFor(name) == "push" {
				if ok {
					t.Fatalf("EventFromPayload(push) = %q, true", got)
				}
				return
			}
			if want := eventFor(name); !ok || got != want {
				t.Fatalf("EventFromPayload = %q, %v; want %q, true", got, ok, want)
			}
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
		{"pull request", `{"action":"opened","pull_request":{"id":1}}`, "pull_request", true},
		{"issue", `{"action":"opened","issue":{"id":1}}`, "issues", true},
		{"issue comment", `{"action":"created","issue":{"id":1},"comment":{"id":2}}`, "", false},
		{"review", `{"action":"reviewed","pull_request":{"id":1},"review":{"type":"pull_request_review_approved"}}`, "", false},
		{"null pull request", `{"pull_request":null,"issue":{"id":1}}`, "issues", true},
		{"issue not an object", `{"issue":3}`, "", false},
		{"push", `{"ref":"refs/heads/main","commits":[]}`, "", false},
		{"not JSON", `{`, "", false},
		{"array", `[]`, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := EventFromPayload([]byte(tt.body))
			if got != tt.want || ok != tt.wantOK {
				t.Fatalf("EventFromPayload = %q, %v; want %q, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}
