package gitea

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/trackergateway/gateway/connectors"
)

// BenchmarkDecodeIssuesEvent decodes the issues.opened fixture as Parse does
// (connectors.DecodeJSON into issuesEvent), and for comparison into the
// reference decoder's SDK types with connectors.DecodeJSON and with
// encoding/json.
func BenchmarkDecodeIssuesEvent(b *testing.B) {
	benchmarkDecode(b, "issues.opened.json", []decodeVariant{
		{"issuesEvent", func(body []byte) error { return connectors.DecodeJSON(body, new(issuesEvent)) }},
		{"referenceIssuesEvent", func(body []byte) error { return connectors.DecodeJSON(body, new(referenceIssuesEvent)) }},
		{"encoding/json", func(body []byte) error { return json.Unmarshal(body, new(referenceIssuesEvent)) }},
	})
}

// BenchmarkDecodePullRequestEvent: the pull_request.opened fixture decoded
// as Parse does (into pullRequestEvent) and into the SDK's full types.
func BenchmarkDecodePullRequestEvent(b *testing.B) {
	benchmarkDecode(b, "pull_request.opened.json", []decodeVariant{
		{"pullRequestEvent", func(body []byte) error { return connectors.DecodeJSON(body, new(pullRequestEvent)) }},
		{"referencePullRequestEvent", func(body []byte) error { return connectors.DecodeJSON(body, new(referencePullRequestEvent)) }},
	})
}

// BenchmarkParse is the whole of Parse on each mapped fixture kind.
func BenchmarkParse(b *testing.B) {
	for _, tc := range []struct{ event, fixture string }{
		{"issues", "issues.opened.json"},
		{"pull_request", "pull_request.closed.merged.json"},
	} {
		body, err := os.ReadFile(filepath.Join(fixtureDir, tc.fixture))
		if err != nil {
			b.Fatal(err)
		}
		h := headerFor(tc.event)
		b.Run(tc.event, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := (Adapter{}).Parse(host, h, body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
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
