package httpapi

import (
	"bytes"
	"errors"
	"io"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/trackergateway/gateway/internal/failure"
)

// CheckJSONText returns a 400 naming the field when a JSON document holds a
// string that is not valid text: raw bytes that are not UTF-8, or a \u
// escape of a lone UTF-16 surrogate. encoding/json decodes both into U+FFFD,
// so without this check different identifiers would arrive as one. A
// document that is malformed in any other way passes: the decoder that reads
// it next names that problem in its own words.
func CheckJSONText(raw []byte) error {
	field, ok := firstInvalidText(raw)
	if !ok {
		return nil
	}
	return failure.New(failure.Invalid, "%s is not valid UTF-8 text", field)
}

// firstInvalidText returns the path of the first string in raw that is not
// valid text. The tokenizer validates UTF-8 and surrogate escapes by
// default; a second, lenient pass tells a text error from a syntax error,
// since the two passes differ only in that check.
func firstInvalidText(raw []byte) (field string, found bool) {
	strictErr := walkTokens(raw)
	if strictErr == nil {
		return "", false
	}
	if walkTokens(raw, jsontext.AllowInvalidUTF8(true)) != nil {
		return "", false // malformed JSON: not this check's to describe
	}
	var syntaxErr *jsontext.SyntacticError
	if !errors.As(strictErr, &syntaxErr) {
		return "", false
	}
	return fieldPath(syntaxErr.JSONPointer), true
}

// walkTokens reads every token of raw. Duplicate names are allowed, as
// encoding/json allows them.
func walkTokens(raw []byte, opts ...jsontext.Options) error {
	dec := jsontext.NewDecoder(bytes.NewReader(raw), append([]jsontext.Options{jsontext.AllowDuplicateNames(true)}, opts...)...)
	for {
		if _, err := dec.ReadToken(); err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
	}
}

// fieldPath names the value a JSON pointer points at as a caller wrote it:
// "external_id", "labels[1]", "filters.status". A pointer to nothing (the
// whole document) is "body".
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
