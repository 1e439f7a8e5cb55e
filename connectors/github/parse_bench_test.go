package github

import (
	"os"
	"path/filepath"
	"testing"

	gh "github.com/google/go-github/v62/github"
)

// BenchmarkDecodeIssuesEvent decodes the 13.5 KB issues.opened fixture into
// go-github's IssuesEvent: as Parse does (decodeEvent), and as go-github's
// ParseWebHook does with encoding/json, for comparison.
func BenchmarkDecodeIssuesEvent(b *testing.B) {
	body, err := os.ReadFile(filepath.Join(fixtureDir, "issues.opened.json"))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("decodeEvent", func(b *testing.B) {
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
