package recovery

import (
	"strings"
	"testing"
	"time"

	"github.com/trackergateway/gateway/internal/config"
	"github.com/trackergateway/gateway/internal/failure"
	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/store/storetest"
)

// A window beyond 72h is refused in the terms of the connection's provider:
// GitHub's three days of hook deliveries only for GitHub; a provider whose
// changes are listed (Gitea, Forgejo, Linear) is told that, and GitLab that
// it keeps recent hook events only. The console's form shows the same words.
func TestWindowRefusedInTheProvidersTerms(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, store.DialectSQLite)
	rec := newRecoverer(st,
		config.Connection{ID: "gh", Provider: "github", APIToken: "t", Hooks: []config.Hook{repoHook}},
		config.Connection{ID: "gl", Provider: "gitlab", APIToken: "t", Hooks: []config.Hook{{Project: "acme/api", ID: 3}}},
		config.Connection{ID: "gitea", Provider: "gitea", APIToken: "t"},
		config.Connection{ID: "linear", Provider: "linear", APIToken: "t"})
	tests := []struct {
		connection string
		want       string
	}{
		{"gh", "GitHub keeps three days of hook deliveries"},
		{"gl", "the provider keeps only recent hook deliveries: run it soon after an outage"},
		{"gitea", "a run lists what changed at the provider within it, up to three days back"},
		{"linear", "a run lists what changed at the provider within it, up to three days back"},
		{"nope", "the longest window a run reads"},
	}
	for _, tc := range tests {
		_, err := rec.Recover(t.Context(), tc.connection, Options{Since: 73 * time.Hour})
		msg := failure.MessageOf(err)
		if failure.CodeOf(err) != failure.Invalid || msg != "since must be positive and at most 72h ("+tc.want+")" {
			t.Errorf("%s: 73h refused with %v (%q), want a 400 saying %q", tc.connection, failure.CodeOf(err), msg, tc.want)
		}
		if tc.connection != "gh" && strings.Contains(msg, "GitHub") {
			t.Errorf("%s: %q speaks of GitHub", tc.connection, msg)
		}
		if got := rec.WindowHint(tc.connection); got != tc.want {
			t.Errorf("WindowHint(%s) = %q, want %q", tc.connection, got, tc.want)
		}
	}
}
