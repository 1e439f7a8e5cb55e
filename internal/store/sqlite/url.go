package sqlite

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// URLScheme starts a SQLite database URL: sqlite:PATH or sqlite://PATH.
const URLScheme = "sqlite:"

// ParseURL returns the database file path of a SQLite database URL,
// sqlite:PATH or sqlite://PATH (sqlite:///var/lib/gateway.db is the
// absolute /var/lib/gateway.db, sqlite://data/gateway.db the relative
// data/gateway.db). PATH is a file path taken as written ('#' and '%' are
// part of the name); a '?' starts parameters, and none is accepted: the
// driver always opens the file in WAL mode with synchronous=FULL, readable
// by its owner only, and a parameter would at best be ignored, at worst
// become part of the file name.
func ParseURL(raw string) (string, error) {
	rest, ok := strings.CutPrefix(raw, URLScheme)
	if !ok {
		return "", fmt.Errorf("sqlite database url: must start with %s", URLScheme)
	}
	path := strings.TrimPrefix(rest, "//")
	if p, query, found := strings.Cut(path, "?"); found {
		return "", fmt.Errorf("sqlite database url: %s (accepted parameters: none; the form is sqlite:PATH, and the file is always opened in WAL mode with synchronous=FULL, readable by its owner only)",
			paramsNamed(query))
	} else if p == "" {
		return "", fmt.Errorf("sqlite database url %q: no file path (the form is sqlite:PATH, e.g. sqlite:./data/gateway.db)", raw)
	}
	return path, nil
}

// paramsNamed names the parameters of a refused query.
func paramsNamed(query string) string {
	var names []string
	if q, err := url.ParseQuery(query); err == nil {
		for k := range q {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	switch len(names) {
	case 0:
		return "unexpected '?' (a SQLite URL takes no parameters)"
	case 1:
		return fmt.Sprintf("unknown parameter %q", names[0])
	}
	return fmt.Sprintf("unknown parameters %q", names)
}

// uriPath escapes a file path for the file: URI the driver opens, where
// SQLite decodes %HH and ends the path at '?' or '#': so the file opened
// is the one named, whatever characters its name holds.
func uriPath(path string) string {
	return strings.NewReplacer("%", "%25", "?", "%3F", "#", "%23").Replace(path)
}
