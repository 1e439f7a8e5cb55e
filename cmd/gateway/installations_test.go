package main

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/trackergateway/gateway/internal/ingest"
)

// installationsOf reads GET /api/v1/connections/{conn}/installations.
func (g *gateway) installationsOf(t *testing.T, conn string) []ingest.InstallationJSON {
	t.Helper()
	var l struct {
		Installations []ingest.InstallationJSON `json:"installations"`
	}
	g.getJSON(t, "/api/v1/connections/"+conn+"/installations", &l)
	return l.Installations
}

// TestGitHubAppInstallations: an App's installation deliveries, end to end
// on the real server: each is recorded in its own processing (ignored for
// tasks, outcome action installation), the API, the CLI and a replay see
// the installation's current state.
func TestGitHubAppInstallations(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, dialect string) {
		g := startGateway(t, newDatabaseURL(t, dialect))
		if got := g.installationsOf(t, "github"); len(got) != 0 {
			t.Fatalf("installations before any delivery = %+v, want none", got)
		}
		var added, last delivery
		for _, f := range []string{"installation.created.json", "installation_repositories.added.json",
			"installation_repositories.removed.json", "installation.deleted.json"} {
			d := g.process(t, fixtureHook(t, "github/"+f))
			if d.Status != "ignored" || d.action() != "installation" || !strings.HasPrefix(d.result(), "recorded") {
				t.Fatalf("%s: status %q action %q result %q, want ignored installation recorded…", f, d.Status, d.action(), d.result())
			}
			last = d
			if f == "installation_repositories.added.json" {
				added = d
				if got := g.installationsOf(t, "github"); len(got) != 1 ||
					!slices.Equal(got[0].Repositories, []string{"Codertocat/Hello-World", "Codertocat/Space"}) {
					t.Fatalf("after added: %+v, want Hello-World and Space", got)
				}
			}
		}
		check := func(t *testing.T, what string, got []ingest.InstallationJSON) {
			t.Helper()
			if len(got) != 1 {
				t.Fatalf("%s: installations = %+v, want one", what, got)
			}
			in := got[0]
			if in.ID != 41000001 || in.Account != "Codertocat" || in.AccountType != "User" || in.RepositorySelection != "selected" ||
				!slices.Equal(in.Repositories, []string{"Codertocat/Space"}) || in.Suspended || !in.Deleted || in.DeletedAt == nil ||
				in.UpdatedAt.Format("15:04") != "12:00" || in.LastDeliveryID != last.ID {
				t.Errorf("%s: installation = %+v, want Codertocat's, Space only, deleted at 12:00 by %s", what, in, last.ID)
			}
		}
		check(t, "API", g.installationsOf(t, "github"))
		if ts := g.tasks(t); len(ts) != 0 {
			t.Errorf("tasks = %v, want none", taskSummaries(ts))
		}

		// A replay of an older delivery changes nothing. The replay answers
		// once the delivery is queued again, so it is final once processed.
		if status, body := g.apiDo(t, http.MethodPost, "/api/v1/deliveries/"+added.ID+"/replay", nil); status != http.StatusOK && status != http.StatusAccepted {
			t.Fatalf("replay: %d %s", status, body)
		}
		poll(t, "the replayed delivery", waitTimeout, func() bool {
			d := g.getDelivery(t, added.ID)
			return finalStatus(d.Status)
		})
		check(t, "after a replay", g.installationsOf(t, "github"))

		if status, _ := g.apiDo(t, http.MethodGet, "/api/v1/connections/nope/installations", nil); status != http.StatusNotFound {
			t.Errorf("installations of an unknown connection: %d, want 404", status)
		}

		op := []string{"--url", g.URL, "--admin-token", testAdminToken}
		code, out, errOut := runCLI(t, append([]string{"installations", "--connection", "github", "-o", "json"}, op...)...)
		var l struct {
			Installations []ingest.InstallationJSON `json:"installations"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &l) != nil {
			t.Fatalf("installations -o json: exit %d %s%s", code, out, errOut)
		}
		check(t, "CLI JSON", l.Installations)
		code, out, errOut = runCLI(t, append([]string{"installations", "--connection", "github"}, op...)...)
		if code != 0 || !strings.Contains(out, "ID") || !strings.Contains(out, "41000001") || !strings.Contains(out, "Codertocat (User)") ||
			!strings.Contains(out, "deleted") || !strings.Contains(out, "Codertocat/Space") {
			t.Errorf("installations table: exit %d\n%s%s", code, out, errOut)
		}
		if code, _, errOut := runCLI(t, append([]string{"installations", "--connection", "nope"}, op...)...); code != 1 ||
			!strings.Contains(errOut, "connection not found") {
			t.Errorf("installations of an unknown connection: exit %d %s, want 1 connection not found", code, errOut)
		}
	})
}
