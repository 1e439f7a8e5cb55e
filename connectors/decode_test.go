package connectors

import (
	"encoding/json"
	"errors"
	"testing"
)

// TestDecodeJSONRefusesInvalidText: a string that is not valid UTF-8 (raw
// bytes, lone surrogate escapes) is refused wherever it is, naming its
// member, where encoding/json would have made U+FFFD of it; valid text,
// surrogate pairs included, decodes as encoding/json decodes it.
func TestDecodeJSONRefusesInvalidText(t *testing.T) {
	t.Parallel()
	type data struct {
		ID     string   `json:"id"`
		Labels []string `json:"labels"`
	}
	type envelope struct {
		Data data `json:"data"`
	}
	tests := []struct {
		name      string
		body      string
		wantField string // "" when the body must decode
	}{
		{"raw 0xff", `{"data":{"id":"coll-` + "\xff" + `"}}`, "data.id"},
		{"raw 0xfe", `{"data":{"id":"coll-` + "\xfe" + `"}}`, "data.id"},
		{"lone high surrogate", `{"data":{"id":"coll-\ud800"}}`, "data.id"},
		{"lone low surrogate", `{"data":{"id":"coll-\udc00"}}`, "data.id"},
		{"reversed pair", `{"data":{"id":"\udc00\ud800"}}`, "data.id"},
		{"truncated UTF-8", `{"data":{"id":"coll-` + "\xe2\x82" + `"}}`, "data.id"},
		{"in a list", `{"data":{"labels":["ok","\ud800"]}}`, "data.labels[1]"},
		{"in a skipped member", `{"sender":{"login":"` + "\xff" + `"},"data":{"id":"x"}}`, "sender.login"},
		{"surrogate pair", `{"data":{"id":"x\ud83d\ude00"}}`, ""},
		{"plain text", `{"data":{"id":"coll-é"}}`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var got envelope
			err := DecodeJSON([]byte(tc.body), &got)
			if tc.wantField == "" {
				var want envelope
				if err := json.Unmarshal([]byte(tc.body), &want); err != nil {
					t.Fatal(err)
				}
				if err != nil || got.Data.ID != want.Data.ID {
					t.Fatalf("DecodeJSON = %q, %v; want %q", got.Data.ID, err, want.Data.ID)
				}
				return
			}
			if !errors.Is(err, ErrInvalidText) {
				t.Fatalf("DecodeJSON error = %v (id %q), want ErrInvalidText", err, got.Data.ID)
			}
			var te *TextError
			if !errors.As(err, &te) || te.Field != tc.wantField {
				t.Fatalf("DecodeJSON error = %v, want field %q", err, tc.wantField)
			}
			if want := tc.wantField + " is not valid UTF-8 text"; err.Error() != want {
				t.Fatalf("error = %q, want %q", err, want)
			}
		})
	}
}

// TestDecodeJSONSyntaxErrorIsNotText: malformed JSON keeps the decoder's
// own error, even when it also holds invalid text.
func TestDecodeJSONSyntaxErrorIsNotText(t *testing.T) {
	t.Parallel()
	for _, body := range []string{`{"id":"x"`, `{"id":"` + "\xff" + `",}`, `{"id":1}`} {
		var v struct {
			ID string `json:"id"`
		}
		err := DecodeJSON([]byte(body), &v)
		if err == nil || errors.Is(err, ErrInvalidText) {
			t.Fatalf("DecodeJSON(%q) = %v, want a non-text error", body, err)
		}
	}
}

// TestDecodeJSONAnyText lets invalid text through, as encoding/json does.
func TestDecodeJSONAnyText(t *testing.T) {
	t.Parallel()
	var v struct {
		Stamp *float64 `json:"webhookTimestamp"`
	}
	if err := DecodeJSONAnyText([]byte(`{"id":"\ud800","webhookTimestamp":5}`), &v); err != nil || v.Stamp == nil || *v.Stamp != 5 {
		t.Fatalf("DecodeJSONAnyText = %v, %v", v.Stamp, err)
	}
}
