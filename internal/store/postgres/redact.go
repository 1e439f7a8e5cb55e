package postgres

import (
	"cmp"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// redacted stands in for a password (pgx's own redaction writes the same).
const redacted = "xxxxx"

var (
	// keyValuePassword is a password=… setting of a URL's query, or one
	// left in a message, in any case, quoted or not. An unquoted value
	// stops at a space, an & or where a quoted string in a message ends.
	keyValuePassword = regexp.MustCompile(`(?i)(\bpassword\s*=\s*)('(?:\\.|[^'\\])*'?|[^\s&'"\x60]*)`)
	// dsnPassword is the password setting of a key/value DSN, where an
	// unquoted value runs to the next space.
	dsnPassword = regexp.MustCompile(`(?i)(\bpassword\s*=\s*)('(?:\\.|[^'\\])*'?|\S*)`)
	// userinfoPassword is the password of a URL's user information, even
	// in a URL too broken to parse.
	userinfoPassword = regexp.MustCompile(`(://[^:/@\s]*:)([^/\s]*)(@)`)
)

// Redact returns msg without the password of the database URL or DSN
// connString: every spelling of it that connString holds (user
// information, a password query parameter in any case, a key/value
// password setting, quoted or not), as given and decoded, and any
// password=… or user:…@ left in msg. Errors of pgx quote the connection
// string, or parts of it, in forms its own redaction misses (a password in
// the query), so whatever reports a connString's error passes it here.
func Redact(msg, connString string) string {
	for _, p := range passwordsOf(connString) {
		msg = strings.ReplaceAll(msg, p, redacted)
	}
	msg = keyValuePassword.ReplaceAllString(msg, "${1}"+redacted)
	return userinfoPassword.ReplaceAllString(msg, "${1}"+redacted+"${3}")
}

// RedactError is err with its message passed through Redact; errors.Is and
// errors.As still see err.
func RedactError(err error, connString string) error {
	if err == nil {
		return nil
	}
	return &redactedError{err: err, msg: Redact(err.Error(), connString)}
}

type redactedError struct {
	err error
	msg string
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// passwordsOf returns the spellings of connString's passwords, longest
// first so that none is left half replaced.
func passwordsOf(connString string) []string {
	var found []string
	add := func(p string) {
		if p == "" {
			return
		}
		found = append(found, p, url.QueryEscape(p), url.PathEscape(p))
		if d, err := url.QueryUnescape(p); err == nil {
			found = append(found, d)
		}
		if d, err := url.PathUnescape(p); err == nil {
			found = append(found, d)
		}
	}
	settings := keyValuePassword
	if !strings.Contains(connString, "://") {
		settings = dsnPassword
	}
	for _, m := range settings.FindAllStringSubmatch(connString, -1) {
		add(m[2])
		if quoted, ok := strings.CutPrefix(m[2], "'"); ok {
			quoted = strings.TrimSuffix(quoted, "'")
			add(quoted)
			add(strings.NewReplacer(`\'`, `'`, `\\`, `\`).Replace(quoted))
		}
	}
	for _, m := range userinfoPassword.FindAllStringSubmatch(connString, -1) {
		add(m[2])
	}
	if u, err := url.Parse(connString); err == nil {
		if p, ok := u.User.Password(); ok {
			add(p)
		}
		for key, values := range u.Query() {
			if strings.EqualFold(key, "password") {
				for _, v := range values {
					add(v)
				}
			}
		}
	}
	found = slices.DeleteFunc(found, func(p string) bool { return p == "" })
	slices.SortFunc(found, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	return slices.Compact(found)
}
