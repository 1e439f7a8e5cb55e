package connectors

import (
	"bytes"
	"errors"
	"io"
	"strconv"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"
)

// ErrInvalidText: a string of a webhook body is not valid UTF-8 (raw bytes
// that are not, or an escaped lone surrogate such as \ud800).
// encoding/json would have turned it into U+FFFD, so two different IDs
// could have become one; DecodeJSON refuses it instead.
var ErrInvalidText = errors.New("not valid UTF-8 text")

// DecodeJSON decodes a webhook body into v as encoding/json would, with
// encoding/json/v2 in its v1 mode (go-json-experiment/json/v1: the same
// values, v1's rules for names and duplicates, and the providers'
// libraries' own UnmarshalJSON methods called): in under half the time and
// a third fewer allocations. Adapters decode the members of a payload they
// read into their provider library's types with it, each held by a fuzz
// test to that library's own decode.
//
// Two v1 rules are left out. v1 reports errors as encoding/json's types,
// and to do so validates the whole body before decoding it, a second pass
// over it that cost a third of the decode; the decoder validates what it
// reads and skips anyway, so the same bodies are refused, only the error's
// type differs, and adapters wrap it as ErrMalformedPayload. And v1 turns
// invalid UTF-8 and lone surrogate escapes into U+FFFD, in the members it
// reads and those it skips alike: here any such string, wherever it is in
// the body, is an error wrapping ErrInvalidText that names the member
// ("data.id is not valid UTF-8 text"), as the REST API refuses such text.
// The check is the tokenizer's own, in the same pass.
func DecodeJSON(body []byte, v any) error {
	err := jsonv2.Unmarshal(body, v, decodeOptions...)
	if err == nil {
		return nil
	}
	if field, ok := invalidText(body, err); ok {
		return &TextError{Field: field}
	}
	return err
}

// DecodeJSONAnyText is DecodeJSON that lets invalid text through, as
// encoding/json does. Only for a value read on the receive path that is
// not content (Linear's signed webhookTimestamp): whether the body's text
// is valid is for Parse to say, in the delivery's outcome.
func DecodeJSONAnyText(body []byte, v any) error {
	return jsonv2.Unmarshal(body, v, anyTextOptions...)
}

var (
	anyTextOptions = []jsonv2.Options{jsonv1.DefaultOptionsV1(), jsonv1.ReportErrorsWithLegacySemantics(false)}
	decodeOptions  = append(anyTextOptions[:len(anyTextOptions):len(anyTextOptions)], jsontext.AllowInvalidUTF8(false))
)

// TextError is DecodeJSON's error for a string that is not valid UTF-8
// text; it wraps ErrInvalidText.
type TextError struct {
	// Field names the string's member as a payload writes it:
	// "data.id", "issue.labels[1].name"; "body" for the document itself.
	Field string
}

func (e *TextError) Error() string { return e.Field + " is " + ErrInvalidText.Error() }

func (e *TextError) Unwrap() error { return ErrInvalidText }

// invalidText reports whether err, the strict decode's error, is a text
// error, and names the member. The strict and the lenient tokenizer differ
// only in the text check, so a body the lenient one reads whole failed the
// strict one on text. Run only when the decode failed.
func invalidText(body []byte, err error) (field string, ok bool) {
	var syntaxErr *jsontext.SyntacticError
	if !errors.As(err, &syntaxErr) {
		return "", false
	}
	dec := jsontext.NewDecoder(bytes.NewReader(body), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	for {
		if _, err := dec.ReadToken(); err != nil {
			if err != io.EOF {
				return "", false
			}
			break
		}
	}
	return fieldPath(syntaxErr.JSONPointer), true
}

// fieldPath names the value a JSON pointer points at: "data.id",
// "labels[1]"; "body" for the whole document.
func fieldPath(p jsontext.Pointer) string {
	var b strings.Builder
	for tok := range p.Tokens() {
		if _, err := strconv.ParseUint(tok, 10, 64); err == nil {
			b.WriteString("[" + tok + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(tok)
	}
	if b.Len() == 0 {
		return "body"
	}
	return b.String()
}
