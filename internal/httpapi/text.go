package httpapi

import (
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/trackergateway/gateway/internal/failure"
)

// Text that reaches SQL must be storable on both databases: SQLite keeps any
// bytes, PostgreSQL refuses invalid UTF-8 and NUL in text. Every request
// input is checked here first so both dialects answer alike, never a
// database error:
//
//   - a JSON field or query parameter that is not storable text is a 400
//     naming it (CheckText, QueryText);
//   - a path identifier that is not storable text names nothing that can
//     exist: the route answers its usual 404 (ValidText).

// ValidText reports whether s is valid UTF-8 without a NUL character.
func ValidText(s string) bool {
	return utf8.ValidString(s) && strings.IndexByte(s, 0) < 0
}

// CheckText returns a 400 naming field when s is not storable text.
func CheckText(field, s string) error {
	if !utf8.ValidString(s) {
		return failure.New(failure.Invalid, "%s is not valid UTF-8 text", field)
	}
	if strings.IndexByte(s, 0) >= 0 {
		return failure.New(failure.Invalid, "%s contains a NUL character", field)
	}
	return nil
}

// QueryText returns the query parameter name, checked with CheckText.
func QueryText(q url.Values, name string) (string, error) {
	v := q.Get(name)
	if err := CheckText(name, v); err != nil {
		return "", err
	}
	return v, nil
}
