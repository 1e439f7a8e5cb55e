// Package failure holds the application error codes (after WTF Dial's
// wtf.Error): packages return *Error for anything a caller should see, and
// internal/httpapi maps codes to HTTP statuses in one table. Any other error
// is internal: logged, and answered with a generic body.
package failure

import (
	"errors"
	"fmt"
	"time"
)

// Code classifies an application error.
type Code string

const (
	Invalid      Code = "invalid"      // 400
	Unauthorized Code = "unauthorized" // 401
	// Forbidden: a console form posted without its session's CSRF token,
	// or from another origin.
	Forbidden Code = "forbidden" // 403
	NotFound  Code = "not_found" // 404
	Conflict  Code = "conflict"  // 409
	TooLarge  Code = "too_large" // 413
	// UnsupportedMediaType: a webhook body in a content type its provider
	// never sends.
	UnsupportedMediaType Code = "unsupported_media_type" // 415
	// TooManyRequests: a client address over its authentication-failure
	// budget.
	TooManyRequests Code = "too_many_requests" // 429
	Unavailable     Code = "unavailable"       // 503
	Internal        Code = "internal"          // 500
)

// Error is an application error whose message is safe to show to the caller.
type Error struct {
	Code    Code
	Message string
	// Err is the cause, for logs and errors.Is; never shown.
	Err error
	// RetryAfter, when positive, is sent as the Retry-After header (429,
	// 503): when the caller may try again.
	RetryAfter time.Duration
}

func (e *Error) Error() string {
	if e.Err != nil {
		return e.Message + ": " + e.Err.Error()
	}
	return e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// New returns an *Error with a formatted message.
func New(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Wrap returns an *Error whose cause is err.
func Wrap(code Code, err error, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Err: err}
}

// WithRetryAfter returns e with RetryAfter set to d.
func (e *Error) WithRetryAfter(d time.Duration) *Error {
	e.RetryAfter = d
	return e
}

// RetryAfterOf returns the RetryAfter of the first *Error in err's chain.
func RetryAfterOf(err error) time.Duration {
	var e *Error
	if errors.As(err, &e) {
		return e.RetryAfter
	}
	return 0
}

// CodeOf returns the code of the first *Error in err's chain, or Internal.
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return Internal
}

// MessageOf returns the caller-safe message of err.
func MessageOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return "internal error"
}
