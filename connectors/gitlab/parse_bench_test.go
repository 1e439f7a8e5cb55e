package gitlab

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"

	gitlab "gitlab.com/gitlab-org/api/client-go"

	"github.com/trackergateway/gateway/connectors"
)

// BenchmarkDecodeEvent decodes the issue and merge request fixtures as
// Parse does (connectors.DecodeJSON into the members it reads) and, for
// comparison, with client-go's ParseWebhook; then the whole Parse.
func BenchmarkDecodeEvent(b *testing.B) {
	for _, tc := range []struct {
		fixture string
		event   gitlab.EventType
		members func() any
	}{
		{"issue.json", gitlab.EventTypeIssue, func() any { return new(issueEvent) }},
		{"merge_request.json", gitlab.EventTypeMergeRequest, func() any { return new(mergeEvent) }},
	} {
		body, err := os.ReadFile(filepath.Join(fixtureDir, tc.fixture))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(tc.fixture+"/members", func(b *testing.B) {
			for b.Loop() {
				if err := connectors.DecodeJSON(body, tc.members()); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(tc.fixture+"/ParseWebhook", func(b *testing.B) {
			for b.Loop() {
				if _, err := gitlab.ParseWebhook(tc.event, body); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(tc.fixture+"/Parse", func(b *testing.B) {
			header := http.Header{HeaderEvent: {string(tc.event)}}
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if _, err := (Adapter{}).Parse(host, header, body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
