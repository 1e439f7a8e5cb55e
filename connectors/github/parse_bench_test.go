package github

import (
	"os"
	"path/filepath"
	"testing"

	gh "github.com/google/go-github/v62/github"
)

// BenchmarkDecodeIssuesEvent decodes the 13.5 KB issues.opened fixture as
// Parse does (decodeEvent into issuesEvent), and for comparison into the
// whole of go-github's IssuesEvent, with decodeEvent and with go-github's
// own ParseWebHook (encoding/json).
func BenchmarkDecodeIssuesEvent(b *testing.B) {
	body, err := os.ReadFile(filepath.Join(fixtureDir, "issues.opened.json"))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("issuesEvent", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := decodeEvent(body, new(issuesEvent)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("IssuesEvent", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := decodeEvent(body, new(gh.IssuesEvent)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ParseWebHook", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := gh.ParseWebHook("issues", body); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkDecodePullRequestEvent: the 28 KB pull_request.opened fixture
// decoded as Parse does (into pullRequestEvent) and into the whole of
// go-github's PullRequestEvent.
func BenchmarkDecodePullRequestEvent(b *testing.B) {
	body, err := os.ReadFile(filepath.Join(fixtureDir, "pull_request.opened.json"))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("pullRequestEvent", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := decodeEvent(body, new(pullRequestEvent)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("PullRequestEvent", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := decodeEvent(body, new(gh.PullRequestEvent)); err != nil {
				b.Fatal(err)
			}
		}
	})
}
