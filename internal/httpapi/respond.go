// Package httpapi holds what every HTTP surface shares: the one table that
// maps application errors to statuses, JSON responses, bounded JSON request
// decoding and bearer-token authentication.
package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/trackergateway/gateway/internal/failure"
	"github.com/trackergateway/gateway/internal/store"
)

// statusOf is the one table from error codes to HTTP statuses.
var statusOf = map[failure.Code]int{
	failure.Invalid:              http.StatusBadRequest,
	failure.Unauthorized:         http.StatusUnauthorized,
	failure.Forbidden:            http.StatusForbidden,
	failure.NotFound:             http.StatusNotFound,
	failure.Conflict:             http.StatusConflict,
	failure.TooLarge:             http.StatusRequestEntityTooLarge,
	failure.UnsupportedMediaType: http.StatusUnsupportedMediaType,
	failure.TooManyRequests:      http.StatusTooManyRequests,
	failure.Unavailable:          http.StatusServiceUnavailable,
	failure.Internal:             http.StatusInternalServerError,
}

type storeErrorRow struct {
	sentinel error
	code     failure.Code
	message  string
}

// storeErrors is the one table from the store's sentinels to application
// errors, for a store error that reaches the HTTP layer without a code of
// its own (a handler that names what is missing wraps it with Reword). The
// first match wins: an unreachable database is a 503 whatever else the
// error says, so clients (and trackers) retry.
var storeErrors = []storeErrorRow{
	{store.ErrUnavailable, failure.Unavailable, "storage unavailable"},
	{store.ErrInvalidText, failure.Invalid, "text must be valid UTF-8 without NUL characters"},
	{store.ErrNotFound, failure.NotFound, "not found"},
	{store.ErrExternalIDTaken, failure.Conflict, "external_id is taken"},
	{store.ErrConstraint, failure.Conflict, "conflicts with the stored data"},
}

// Classify turns a store sentinel into its application error (storeErrors);
// an error that already carries a code, or none of the sentinels, is
// returned unchanged.
func Classify(err error) error {
	if e, ok := storeError(err); ok {
		return failure.Wrap(e.code, err, "%s", e.message)
	}
	return err
}

// Reword answers err with the caller's own message when the error table
// gives err the code of with: a handler's 404 can say "task not found"
// while the status still comes from the table. An error that already
// carries a code, or that the table answers with another, is returned
// unchanged.
func Reword(err error, with *failure.Error) error {
	if e, ok := storeError(err); ok && e.code == with.Code {
		return failure.Wrap(with.Code, err, "%s", with.Message)
	}
	return err
}

// storeError returns the storeErrors row of an error without a code.
func storeError(err error) (storeErrorRow, bool) {
	var fe *failure.Error
	if err == nil || errors.As(err, &fe) {
		return storeErrorRow{}, false
	}
	for _, e := range storeErrors {
		if errors.Is(err, e.sentinel) {
			return e, true
		}
	}
	return storeErrorRow{}, false
}

// WriteError answers with {"error": message} and the mapped status. Only 500s
// are logged as errors; their body is generic and the cause stays in the log.
func WriteError(w http.ResponseWriter, r *http.Request, logger *slog.Logger, err error) {
	status, message := ErrorResponse(w, r, logger, err)
	WriteJSON(w, status, map[string]string{"error": message})
}

// ErrorResponse is WriteError for a surface that writes its own body (the
// console's HTML pages): it logs err as WriteError does, sets Retry-After
// when err carries one, and returns the status and the message to show.
func ErrorResponse(w http.ResponseWriter, r *http.Request, logger *slog.Logger, err error) (status int, message string) {
	status, message = Describe(r.Context(), logger, err, "method", r.Method, "path", r.URL.Path)
	if d := failure.RetryAfterOf(err); d > 0 {
		// Whole seconds, rounded up: "Retry-After: 0" would invite a hot loop.
		w.Header().Set("Retry-After", strconv.Itoa(int((d+time.Second-1)/time.Second)))
	}
	return status, message
}

// Describe returns what the error table makes of err: its HTTP status and
// the message a caller is shown (the body's "error"; for other surfaces,
// such as agent tools, the same text). It logs a 5xx as WriteError does,
// with attrs saying where it happened.
func Describe(ctx context.Context, logger *slog.Logger, err error, attrs ...any) (status int, message string) {
	err = Classify(err)
	code := failure.CodeOf(err)
	status = statusOf[code]
	if status == 0 {
		status = http.StatusInternalServerError
	}
	switch {
	case status >= 500 && code == failure.Internal:
		logger.ErrorContext(ctx, "request failed", append(attrs, "error", err)...)
	case status >= 500:
		logger.WarnContext(ctx, "request failed", append(attrs, "error", err)...)
	}
	return status, failure.MessageOf(err)
}

// WriteJSON writes v as JSON with status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// MaxJSONBody caps API request bodies.
const MaxJSONBody = 1 << 20

// DecodeJSON decodes a bounded JSON body into v, refusing unknown fields
// and text that is not valid UTF-8 (CheckJSONText); every failure is a 400
// naming the problem, or a 413 for a body over MaxJSONBody.
func DecodeJSON(w http.ResponseWriter, r *http.Request, v any) error {
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxJSONBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return failure.New(failure.TooLarge, "request body exceeds %d bytes", MaxJSONBody)
		}
		return failure.New(failure.Invalid, "malformed JSON: %v", err)
	}
	return DecodeJSONBytes(raw, v)
}

// DecodeJSONBytes is DecodeJSON for a body already read.
func DecodeJSONBytes(raw []byte, v any) error {
	if err := CheckJSONText(raw); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var typeErr *json.UnmarshalTypeError
		var syntaxErr *json.SyntaxError
		switch {
		case errors.As(err, &typeErr):
			return failure.New(failure.Invalid, "field %q must be %s", typeErr.Field, typeErr.Type.String())
		case errors.As(err, &syntaxErr):
			return failure.New(failure.Invalid, "malformed JSON at offset %d", syntaxErr.Offset)
		default:
			return failure.New(failure.Invalid, "malformed JSON: %v", err)
		}
	}
	if dec.More() {
		return failure.New(failure.Invalid, "malformed JSON: trailing data")
	}
	return nil
}

// Page sizes of every list (docs/design.md: limit default 100, at most 1000).
const (
	DefaultPageSize = 100
	MaxPageSize     = 1000
)

// ParsePageLimit parses a list's limit as the query gives it ("" is the
// default).
func ParsePageLimit(v string) (int, error) {
	if v == "" {
		return DefaultPageSize, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > MaxPageSize {
		return 0, failure.New(failure.Invalid, "limit must be an integer between 1 and %d", MaxPageSize)
	}
	return n, nil
}
