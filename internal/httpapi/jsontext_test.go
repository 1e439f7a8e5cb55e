package httpapi

import (
	"encoding/json"
	"strconv"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/trackergateway/gateway/internal/failure"
)

func TestCheckJSONText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body string
		field      string // named in the error; "" for a body that passes
	}{
		{"raw byte", `{"external_id":"id-` + "\xff" + `"}`, "external_id"},
		{"truncated sequence", `{"external_id":"id-` + "\xc3" + `"}`, "external_id"},
		{"encoded surrogate", `{"external_id":"` + "\xed\xa0\x80" + `"}`, "external_id"},
		{"lone high surrogate", `{"external_id":"id-\ud800"}`, "external_id"},
		{"lone high surrogate at the end", `{"external_id":"\ud83d"}`, "external_id"},
		{"lone low surrogate", `{"external_id":"id-\udc00"}`, "external_id"},
		{"reversed pair", `{"external_id":"\ude00\ud83d"}`, "external_id"},
		{"high surrogate then a letter", `{"external_id":"\ud83dx"}`, "external_id"},
		{"array element", `{"title":"x","labels":["ok","b\ud800"]}`, "labels[1]"},
		{"nested object", `{"filters":{"status":"` + "\xfe" + `"}}`, "filters.status"},
		{"nested array", `{"a":[{"b":["x","\udfff"]}]}`, "a[0].b[1]"},
		{"member name", `{"` + "\xff" + `":"x"}`, "body"},
		{"top-level string", `"\ud800"`, "body"},
		{"first of two", `{"a":"\ud800","b":"` + "\xff" + `"}`, "a"},

		{"valid escapes", `{"a":"\u00e9\n\"\\\/\t"}`, ""},
		{"replacement character escaped", `{"external_id":"id-\ufffd"}`, ""},
		{"replacement character raw", `{"external_id":"id-` + "\xef\xbf\xbd" + `"}`, ""},
		{"surrogate pair", `{"title":"\ud83d\ude00","labels":["\uD83D\uDE01"]}`, ""},
		{"raw emoji", `{"title":"😀"}`, ""},
		{"duplicate names", `{"a":"x","a":"y"}`, ""},
		{"malformed JSON", `{"a":"` + "\xff", ""},
		{"malformed after invalid text", `{"a":"\ud800",}`, ""},
		{"empty", ``, ""},
		{"numbers and literals", `[1,-2.5e3,true,false,null,{}]`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := CheckJSONText([]byte(tt.body))
			if tt.field == "" {
				if err != nil {
					t.Fatalf("CheckJSONText(%q) = %v, want nil", tt.body, err)
				}
				return
			}
			want := tt.field + " is not valid UTF-8 text"
			if failure.CodeOf(err) != failure.Invalid || failure.MessageOf(err) != want {
				t.Fatalf("CheckJSONText(%q) = %v (code %s), want %s %q", tt.body, err, failure.CodeOf(err), failure.Invalid, want)
			}
		})
	}
}

// DecodeJSON and DecodeJSONBytes refuse what CheckJSONText refuses, before
// encoding/json would have made it U+FFFD.
func TestDecodeJSONBytesRefusesInvalidText(t *testing.T) {
	t.Parallel()
	var v struct {
		Status string `json:"status"`
	}
	err := DecodeJSONBytes([]byte(`{"status":"\udc00"}`), &v)
	if failure.MessageOf(err) != "status is not valid UTF-8 text" {
		t.Fatalf("DecodeJSONBytes = %v (%q), want status is not valid UTF-8 text", err, v.Status)
	}
}

// FuzzCheckJSONText checks CheckJSONText against a plain reading of the
// rule on every document encoding/json accepts: the text is refused exactly
// when the document is not UTF-8 or escapes a lone surrogate.
func FuzzCheckJSONText(f *testing.F) {
	f.Fuzz(func(t *testing.T, raw []byte) {
		err := CheckJSONText(raw)
		var v any
		if json.Unmarshal(raw, &v) != nil {
			return // malformed: the decoder's own error answers it
		}
		if want := validJSONText(raw); (err == nil) != want {
			t.Fatalf("CheckJSONText(%q) = %v, want valid = %t", raw, err, want)
		}
		if err != nil && failure.CodeOf(err) != failure.Invalid {
			t.Fatalf("CheckJSONText(%q) = %v, want an Invalid error", raw, err)
		}
	})
}

// validJSONText is the reference for the fuzz target, for well-formed JSON
// (where a backslash only ever starts an escape in a string).
func validJSONText(raw []byte) bool {
	if !utf8.Valid(raw) {
		return false
	}
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		if raw[i+1] != 'u' {
			i++
			continue
		}
		r := hexRune(raw[i+2 : i+6])
		i += 5
		switch {
		case utf16.IsSurrogate(r) && r < 0xdc00: // high: a low one must follow
			if i+6 >= len(raw) || raw[i+1] != '\\' || raw[i+2] != 'u' {
				return false
			}
			if low := hexRune(raw[i+3 : i+7]); low < 0xdc00 || low > 0xdfff {
				return false
			}
			i += 6
		case utf16.IsSurrogate(r):
			return false
		}
	}
	return true
}

func hexRune(h []byte) rune {
	n, _ := strconv.ParseUint(string(h), 16, 32)
	return rune(n)
}
