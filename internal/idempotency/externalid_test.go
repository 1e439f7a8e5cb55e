package idempotency

import (
	"strings"
	"testing"

	"github.com/trackergateway/gateway/internal/failure"
)

func TestNormalizeExternalID(t *testing.T) {
	t.Parallel()
	max := strings.Repeat("a", MaxExternalIDBytes)
	tests := []struct {
		name    string
		raw     string
		want    string
		wantErr string // substring of the error; "" means success
	}{
		{name: "plain", raw: "ext-1", want: "ext-1"},
		{name: "jira key", raw: "jira:PROJ-1234", want: "jira:PROJ-1234"},
		{name: "path-like", raw: "gh-issue/kdlbs/kandev#2325", want: "gh-issue/kdlbs/kandev#2325"},
		{name: "uuid", raw: "0b7c3c5e-7a8d-4a5e-9f1c-2c1f6d7e8a9b", want: "0b7c3c5e-7a8d-4a5e-9f1c-2c1f6d7e8a9b"},
		{name: "non-ASCII letters verbatim", raw: "tâche-ü-日本", want: "tâche-ü-日本"},
		{name: "case kept", raw: "EXT-1", want: "EXT-1"},
		{name: "empty is absent", raw: "", want: ""},
		{name: "spaces only is absent", raw: "   ", want: ""},
		{name: "unicode spaces only is absent", raw: "\u00a0\u2003\u3000", want: ""},
		{name: "ASCII spaces trimmed", raw: "  ext-1  ", want: "ext-1"},
		{name: "unicode White_Space trimmed", raw: "\u00a0\u2028ext-1\u3000\u205f", want: "ext-1"},
		{name: "NEL is White_Space, not an ASCII control", raw: "\u0085ext-1", want: "ext-1"},
		{name: "zero-width space is not White_Space", raw: "\u200bext-1", want: "\u200bext-1"},
		{name: "inner spaces kept", raw: " a  b ", want: "a  b"},
		{name: "255 bytes", raw: max, want: max},
		{name: "255 bytes after trimming", raw: "  " + max + "\u3000", want: max},
		{name: "256 bytes", raw: max + "a", wantErr: "256 bytes"},
		{name: "256 bytes of two-byte runes", raw: strings.Repeat("é", 128), wantErr: "256 bytes"},
		{name: "trailing newline rejected before trimming", raw: "ext-1\n", wantErr: "control character"},
		{name: "leading carriage return", raw: "\rext-1", wantErr: "control character"},
		{name: "tab alone", raw: "\t", wantErr: "control character"},
		{name: "tab among spaces", raw: "  \t  ", wantErr: "control character"},
		{name: "NUL", raw: "ext\x001", wantErr: "control character"},
		{name: "unit separator U+001F", raw: "ext\x1f", wantErr: "control character"},
		{name: "DEL U+007F", raw: "ext\x7f", wantErr: "control character"},
		// Rule 1 runs before rule 4: an over-long value with a control
		// character reports the control character.
		{name: "control character wins over length", raw: strings.Repeat("a", 300) + "\n", wantErr: "control character"},
		{name: "space is not a control character", raw: "a b", want: "a b"},
		{name: "invalid UTF-8", raw: "ext-\xff", wantErr: "not valid UTF-8"},
		{name: "control character wins over invalid UTF-8", raw: "\xff\n", wantErr: "control character"},
		{name: "invalid UTF-8 wins over length", raw: strings.Repeat("a", 300) + "\xc3", wantErr: "not valid UTF-8"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := NormalizeExternalID(tc.raw)
			if tc.wantErr != "" {
				if err == nil {
					t.Fatalf("NormalizeExternalID(%q) = %q, nil; want error containing %q", tc.raw, got, tc.wantErr)
				}
				if !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("NormalizeExternalID(%q) error = %q, want it to contain %q", tc.raw, err, tc.wantErr)
				}
				if code := failure.CodeOf(err); code != failure.Invalid {
					t.Errorf("NormalizeExternalID(%q) error code = %v, want %v", tc.raw, code, failure.Invalid)
				}
				return
			}
			if err != nil {
				t.Fatalf("NormalizeExternalID(%q) error = %v", tc.raw, err)
			}
			if got != tc.want {
				t.Errorf("NormalizeExternalID(%q) = %q, want %q", tc.raw, got, tc.want)
			}
		})
	}
}

func TestOutcomeTuples(t *testing.T) {
	t.Parallel()
	tests := []struct {
		o                              Outcome
		name                           string
		deduplicated, creationComplete bool
	}{
		{Created, "created", false, true},
		{FoundSettled, "found_settled", true, true},
		{FoundUnsettled, "found_unsettled", true, false},
		{CreatedIdentityLost, "created_identity_lost", false, true},
	}
	for _, tc := range tests {
		if got := tc.o.String(); got != tc.name {
			t.Errorf("Outcome(%d).String() = %q, want %q", int(tc.o), got, tc.name)
		}
		if got := tc.o.Deduplicated(); got != tc.deduplicated {
			t.Errorf("%s.Deduplicated() = %v, want %v", tc.name, got, tc.deduplicated)
		}
		if got := tc.o.CreationComplete(); got != tc.creationComplete {
			t.Errorf("%s.CreationComplete() = %v, want %v", tc.name, got, tc.creationComplete)
		}
		if got := parseOutcome(tc.name); got != tc.o {
			t.Errorf("parseOutcome(%q) = %v, want %v", tc.name, got, tc.o)
		}
	}
}
