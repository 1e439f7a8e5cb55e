package github

import (
	"os"
	"path/filepath"
	"testing"

	gh "github.com/google/go-github/v62/github"

	"github.com/trackergateway/gateway/connectors"
)

// BenchmarkDecodeIssuesEvent decodes the 13.5 KB issues.opened fixture as
// Parse does (connectors.DecodeJSON into issuesEvent), and for comparison into the
// whole of go-github's IssuesEvent, with connectors.DecodeJSON and with go-github's
// own ParseWebHook (encoding/json).
func BenchmarkDecodeIssuesEvent(b *testing.B) {
	benchmarkDecode(b, "issues.opened.json", []decodeVariant{
		{"issuesEvent", func(body []byte) error { return connectors.DecodeJSON(body, new(issuesEvent)) }},
		{"IssuesEvent", func(body []byte) error { return connectors.DecodeJSON(body, new(gh.IssuesEvent)) }},
		{"ParseWebHook", func(body []byte) error { _, err := gh.ParseWebHook("issues", body); return err }},
	})
}

// BenchmarkDecodePullRequestEvent: the 28 KB pull_request.opened fixture
// decoded as Parse does (into pullRequestEvent) and into the whole of
// go-github's PullRequestEvent.
func BenchmarkDecodePullRequestEvent(b *testing.B) {
	benchmarkDecode(b, "pull_request.opened.json", []decodeVariant{
		{"pullRequestEvent", func(body []byte) error { return connectors.DecodeJSON(body, new(pullRequestEvent)) }},
		{"PullRequestEvent", func(body []byte) error { return connectors.DecodeJSON(body, new(gh.PullRequestEvent)) }},
	})
}

type decodeVariant struct {
	name   string
	decode func(body []byte) error
}

// benchmarkDecode runs each variant, as a sub-benchmark of its name, on
// the fixture's body.
func benchmarkDecode(b *testing.B, fixture string, variants []decodeVariant) {
	body, err := os.ReadFile(filepath.Join(fixtureDir, fixture))
	if err != nil {
		b.Fatal(err)
	}
	for _, v := range variants {
		b.Run(v.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := v.decode(body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
