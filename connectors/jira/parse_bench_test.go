package jira

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"

	jira "github.com/andygrunwald/go-jira"
)

// BenchmarkDecodeIssue decodes the issue of the jira:issue_created fixture
// as Parse does (decodeIssue, the members Parse reads) and, for comparison,
// as a whole jira.Issue; then the whole Parse of the delivery.
func BenchmarkDecodeIssue(b *testing.B) {
	body, err := os.ReadFile(filepath.Join(fixtureDir, "webhook-issue-created.json"))
	if err != nil {
		b.Fatal(err)
	}
	raw, err := decodeEnvelope(body)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("decodeIssue", func(b *testing.B) {
		for b.Loop() {
			if _, err := decodeIssue(raw.Issue); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("jira.Issue", func(b *testing.B) {
		for b.Loop() {
			var issue jira.Issue
			if err := unmarshalIssue(raw.Issue, &issue); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Parse", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if _, err := (Adapter{}).Parse(site, http.Header{}, body); err != nil {
				b.Fatal(err)
			}
		}
	})
}
