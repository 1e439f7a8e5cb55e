package main

import "flag"

// secretString is a string flag whose value may be a secret (a token, a
// database URL with a password), its default taken from the environment:
// -h shows the default redacted, or not at all, never as given.
type secretString struct {
	p      *string
	redact func(string) string
}

func (s secretString) String() string {
	if s.p == nil { // the flag package's zero value, for -h
		return ""
	}
	return s.redact(*s.p)
}

func (s secretString) Set(v string) error {
	*s.p = v
	return nil
}

// secretFlag registers a secretString flag holding value until set.
func secretFlag(fs *flag.FlagSet, p *string, name, value, usage string, redact func(string) string) {
	*p = value
	fs.Var(secretString{p: p, redact: redact}, name, usage)
}

// hidden shows nothing of a token.
func hidden(string) string { return "" }
