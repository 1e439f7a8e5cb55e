package console

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestReadableBodyIsText: a body that is not valid UTF-8 is shown as its
// base64, so the page stays UTF-8; other bodies as before.
func TestReadableBodyIsText(t *testing.T) {
	t.Parallel()
	tests := []struct{ body, want string }{
		{`{"id":"coll-` + "\xff" + `"}`, "The body is not valid UTF-8; its bytes in base64:\neyJpZCI6ImNvbGwt/yJ9"},
		{`{"a":1}`, "{\n  \"a\": 1\n}"},
		{"plain text", "plain text"},
	}
	for _, tt := range tests {
		got := readableBody([]byte(tt.body))
		if got != tt.want || !utf8.ValidString(got) || strings.ContainsRune(got, utf8.RuneError) {
			t.Errorf("readableBody(%q) = %q, want %q", tt.body, got, tt.want)
		}
	}
}
