package postgres

import (
	"strings"
	"testing"
)

func TestRedact(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, conn string
		hidden     []string // the password's spellings, none of which may remain
	}{
		{"userinfo", "postgres://u:Pw-4242@h/db?sslmode=bogus", []string{"Pw-4242"}},
		{"userinfo escaped", "postgres://u:p%40ss-4242@h/db", []string{"p%40ss-4242", "p@ss-4242"}},
		{"userinfo unescaped at", "postgres://u:p@ss-4242@h/db", []string{"p@ss-4242"}},
		{"userinfo unparsable", "postgres://u:sec%zz-4242@h:port/db", []string{"sec%zz-4242"}},
		{"query", "postgres://u@h/db?password=Pw-4242&sslmode=bogus", []string{"Pw-4242"}},
		{"query last", "postgresql://u@h/db?sslmode=bogus&password=Pw-4242", []string{"Pw-4242"}},
		{"query any case", "postgres://u@h/db?PassWord=Pw-4242", []string{"Pw-4242"}},
		{"query escaped", "postgres://u@h/db?password=p%26w%20-4242", []string{"p%26w%20-4242", "p&w -4242", "p%26w+-4242"}},
		{"key/value", "host=h user=u password=Pw-4242 sslmode=bogus", []string{"Pw-4242"}},
		{"key/value with &", "host=h password=a&b-4242 sslmode=bogus", []string{"a&b-4242"}},
		{"key/value quoted", `host=h password='se cret \' 4242' sslmode=bogus`, []string{`'se cret \' 4242'`, `se cret \' 4242`, "se cret ' 4242"}},
		{"key/value spaced", "host=h PASSWORD = Pw-4242", []string{"Pw-4242"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// As pgx and the callers quote it: in the URL, or on its own.
			msg := "cannot parse `" + tt.conn + "`: bad (" + strings.Join(tt.hidden, ", ") + ")"
			got := Redact(msg, tt.conn)
			for _, h := range tt.hidden {
				if strings.Contains(got, h) {
					t.Errorf("Redact(%q) = %q, still holds %q", msg, got, h)
				}
			}
			if !strings.Contains(got, redacted) {
				t.Errorf("Redact(%q) = %q, want %s in its place", msg, got, redacted)
			}
		})
	}
	// Without a password nothing changes.
	for _, conn := range []string{"postgres://u@h:5432/db?sslmode=disable", "sqlite:./data/gateway.db", "host=h user=u"} {
		if got := Redact("open "+conn, conn); got != "open "+conn {
			t.Errorf("Redact(%q) = %q, want it unchanged", conn, got)
		}
	}
}
