package linear

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkParse parses the Issue update fixture: the envelope and issue
// decode (decodeWebhook) and the whole Parse of the delivery.
func BenchmarkParse(b *testing.B) {
	body, err := os.ReadFile(filepath.Join(fixtureDir, "issue.update.title-labels.json"))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("decodeWebhook", func(b *testing.B) {
		for b.Loop() {
			if _, _, _, err := decodeWebhook(body); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Parse", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if _, err := (Adapter{}).Parse(workspace, http.Header{}, body); err != nil {
				b.Fatal(err)
			}
		}
	})
}
