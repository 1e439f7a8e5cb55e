package httpapi

import (
	"encoding/base64"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
)

// TrimPage cuts rows, read with one more than limit to learn whether a next
// page exists, to the page, and returns the cursor after its last row ("" on
// the last page).
func TrimPage[T any](rows []T, limit int, cursorAfter func(T) string) ([]T, string) {
	if len(rows) <= limit {
		return rows, ""
	}
	rows = rows[:limit]
	return rows, cursorAfter(rows[limit-1])
}

// EncodeCursor is the opaque list cursor after a row ordered by (time, id):
// base64url of "<unix micros>:<uuid>".
func EncodeCursor(t time.Time, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(t.UnixMicro(), 10) + ":" + id))
}

// DecodeCursor parses EncodeCursor's form; ok is false for anything else
// (the caller answers 400 with its own message).
func DecodeCursor(c string) (t time.Time, id string, ok bool) {
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return time.Time{}, "", false
	}
	micros, id, found := strings.Cut(string(raw), ":")
	us, perr := strconv.ParseInt(micros, 10, 64)
	// Canonical UUIDs only: the id is compared with stored text.
	if !found || perr != nil || len(id) != 36 || uuid.Validate(id) != nil {
		return time.Time{}, "", false
	}
	return time.UnixMicro(us).UTC(), id, true
}

// EncodeKeyCursor is the opaque list cursor after a row ordered by two text
// keys: base64url of "<first>\x00<second>" (stored text never holds NUL).
func EncodeKeyCursor(first, second string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(first + "\x00" + second))
}

// DecodeKeyCursor parses EncodeKeyCursor's form; ok is false for anything
// else, including empty keys and keys that are not storable text (they
// would reach SQL).
func DecodeKeyCursor(c string) (first, second string, ok bool) {
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return "", "", false
	}
	first, second, found := strings.Cut(string(raw), "\x00")
	if !found || first == "" || second == "" || !ValidText(first) || !ValidText(second) {
		return "", "", false
	}
	return first, second, true
}
