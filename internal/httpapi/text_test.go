package httpapi

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/trackergateway/gateway/internal/failure"
	"github.com/trackergateway/gateway/internal/store"
)

func TestCheckText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want string // error message; "" for valid text
	}{
		{"", ""},
		{"eng", ""},
		{"héllo wörld ✓", ""},
		{"tab\tand\nnewline", ""}, // control characters are each field's own rule
		{"a\x00b", "workspace_id contains a NUL character"},
		{"\x00", "workspace_id contains a NUL character"},
		{"\xff\xfe", "workspace_id is not valid UTF-8 text"},
		{"a\xc3", "workspace_id is not valid UTF-8 text"},        // truncated sequence
		{"\xed\xa0\x80", "workspace_id is not valid UTF-8 text"}, // a surrogate
		{"\xff\x00", "workspace_id is not valid UTF-8 text"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%q", tt.in), func(t *testing.T) {
			t.Parallel()
			err := CheckText("workspace_id", tt.in)
			if ValidText(tt.in) != (tt.want == "") {
				t.Errorf("ValidText(%q) = %t, want %t", tt.in, ValidText(tt.in), tt.want == "")
			}
			if tt.want == "" {
				if err != nil {
					t.Fatalf("CheckText(%q) = %v, want nil", tt.in, err)
				}
				return
			}
			if failure.CodeOf(err) != failure.Invalid || failure.MessageOf(err) != tt.want {
				t.Fatalf("CheckText(%q) = %v (code %s), want %s %q", tt.in, err, failure.CodeOf(err), failure.Invalid, tt.want)
			}
		})
	}
}

func TestQueryTextAndCheckTexts(t *testing.T) {
	t.Parallel()
	q, err := url.ParseQuery("connection=gh&bad=%FF&nul=a%00b")
	if err != nil {
		t.Fatal(err)
	}
	if v, err := QueryText(q, "connection"); v != "gh" || err != nil {
		t.Errorf("QueryText(connection) = %q, %v; want gh, nil", v, err)
	}
	if v, err := QueryText(q, "absent"); v != "" || err != nil {
		t.Errorf("QueryText(absent) = %q, %v; want empty, nil", v, err)
	}
	if _, err := QueryText(q, "bad"); failure.MessageOf(err) != "bad is not valid UTF-8 text" {
		t.Errorf("QueryText(bad) = %v, want bad is not valid UTF-8 text", err)
	}
	if _, err := QueryText(q, "nul"); failure.MessageOf(err) != "nul contains a NUL character" {
		t.Errorf("QueryText(nul) = %v, want nul contains a NUL character", err)
	}
}

func TestKeyCursor(t *testing.T) {
	t.Parallel()
	c := EncodeKeyCursor("eng", "github:github.com:issue:1")
	if a, b, ok := DecodeKeyCursor(c); !ok || a != "eng" || b != "github:github.com:issue:1" {
		t.Errorf("DecodeKeyCursor(EncodeKeyCursor) = %q, %q, %t", a, b, ok)
	}
	for _, bad := range []string{
		"!!",   // not base64url
		"ZW5n", // "eng": no separator
		"AA",   // "\x00": empty keys
		"_wD-", // "\xff\x00\xfe": keys that are not UTF-8
		EncodeKeyCursor("eng", "a\x00b"),
	} {
		if a, b, ok := DecodeKeyCursor(bad); ok {
			t.Errorf("DecodeKeyCursor(%q) = %q, %q, true; want false", bad, a, b)
		}
	}
}

// TestInvalidTextIsBadRequest: store.ErrInvalidText (the database refused
// text that slipped past the checks) is a 400, never a 500.
func TestInvalidTextIsBadRequest(t *testing.T) {
	t.Parallel()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/api/v1/x", nil)
	WriteError(rec, req, slog.New(slog.DiscardHandler), fmt.Errorf("get workspace: %w: 22021", store.ErrInvalidText))
	if rec.Code != http.StatusBadRequest {
		t.Errorf("status = %d, want 400", rec.Code)
	}
	var body struct {
		Error string `json:"error"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body.Error == "" || body.Error == "internal error" {
		t.Errorf("body = %s, want a message about the text", rec.Body)
	}
}
