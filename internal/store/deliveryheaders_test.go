package store_test

import (
	"strings"
	"testing"

	"github.com/trackergateway/gateway/internal/store"
)

func TestDecodeDeliveryHeaders(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, raw string
		want      string // the X-Github-Event value
		err       string
	}{
		{"none stored", "", "", ""},
		{"stored object", `{"X-Github-Event":["issues"],"Content-Type":["application/json"]}`, "issues", ""},
		{"damaged row", `{"X-Github-Event":`, "", "decode headers: "},
	}
	for _, tt := range tests {
		h, err := store.DecodeDeliveryHeaders(tt.raw)
		if tt.err != "" {
			if err == nil || !strings.HasPrefix(err.Error(), tt.err) {
				t.Fatalf("%s: err = %v, want prefix %q", tt.name, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if h == nil {
			t.Fatalf("%s: nil header", tt.name)
		}
		if got := h.Get("X-GitHub-Event"); got != tt.want {
			t.Fatalf("%s: X-GitHub-Event = %q, want %q", tt.name, got, tt.want)
		}
	}
}
