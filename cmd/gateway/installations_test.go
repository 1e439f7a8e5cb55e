package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/trackergateway/gateway/internal/ingest"
	"github.com/trackergateway/gateway/internal/providerapi/githubapptest"
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

// processApp posts the GitHub fixture file to the App connection gh-app as
// the App's hook delivers it, its installation of App app, and waits for
// it to be processed.
func (g *gateway) processApp(t *testing.T, file string, app int64) delivery {
	t.Helper()
	body := mutate(t, readFixture(t, "github/"+file), func(m map[string]any) { obj(t, m, "installation")["app_id"] = app })
	event, _, _ := strings.Cut(file, ".")
	hd := hook{Conn: "github", Event: event, Body: body}.header(githubAppSecret)
	hd.Set("X-GitHub-Hook-ID", fmt.Sprint(appHookID))
	status, resp, err := g.postWebhook("gh-app", hd, body)
	var r receipt
	if err != nil || status != http.StatusAccepted || json.Unmarshal(resp, &r) != nil {
		t.Fatalf("App delivery of %s = %d %s %v, want 202", file, status, resp, err)
	}
	return g.waitDelivery(t, r.DeliveryID)
}

// TestGitHubAppInstallations: an App's installation deliveries, end to end
// on the real server: each is recorded in its own processing (ignored for
// tasks, outcome action installation), the API, the CLI and a replay see
// the installation's current state. Another App's installation, and any
// on a repository-hook connection, are not recorded and say why.
func TestGitHubAppInstallations(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, dialect string) {
		api := newAppGitHub(t)
		g := startGateway(t, newDatabaseURL(t, dialect), "--config", appConfig(t, api.srv.URL, writeKeyFile(t, githubapptest.KeyPEM())))
		if got := g.installationsOf(t, "gh-app"); len(got) != 0 {
			t.Fatalf("installations before any delivery = %+v, want none", got)
		}
		var added, last delivery
		for _, f := range []string{"installation.created.json", "installation_repositories.added.json",
			"installation_repositories.removed.json", "installation.deleted.json"} {
			d := g.processApp(t, f, testAppID)
			if d.Status != "ignored" || d.action() != "installation" || !strings.HasPrefix(d.result(), "recorded") {
				t.Fatalf("%s: status %q action %q result %q, want ignored installation recorded…", f, d.Status, d.action(), d.result())
			}
			last = d
			if f == "installation_repositories.added.json" {
				added = d
				if got := g.installationsOf(t, "gh-app"); len(got) != 1 ||
					!slices.Equal(got[0].Repositories, []string{"Codertocat/Hello-World", "Codertocat/Space"}) {
					t.Fatalf("after added: %+v, want Hello-World and Space", got)
				}
			}
		}
		// Another App's installation at the App connection, and the App's
		// at the repository-hook connection: not recorded.
		other := g.processApp(t, "installation.created.json", testAppID+1)
		hooked := g.process(t, fixtureHook(t, "github/installation.created.json"))
		for _, d := range []struct {
			what string
			d    delivery
			want string
		}{
			{"another App's", other, fmt.Sprintf("is of App %d, not connection \"gh-app\"'s App %d", testAppID+1, testAppID)},
			{"at the repository-hook connection", hooked, `connection "github" is not a GitHub App connection`},
		} {
			if d.d.Status != "ignored" || d.d.action() != "installation" || !strings.HasPrefix(d.d.result(), "not recorded: ") ||
				!strings.Contains(d.d.result(), d.want) {
				t.Errorf("installation %s: status %q action %q result %q, want ignored, not recorded, saying %q",
					d.what, d.d.Status, d.d.action(), d.d.result(), d.want)
			}
		}
		if got := g.installationsOf(t, "github"); len(got) != 0 {
			t.Errorf("the repository-hook connection's installations = %+v, want none", got)
		}
		specClient{t: t, g: g}.call(http.MethodGet, "/api/v1/connections/gh-app/installations", nil, http.StatusOK)
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
		check(t, "API", g.installationsOf(t, "gh-app"))
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
		check(t, "after a replay", g.installationsOf(t, "gh-app"))

		if status, _ := g.apiDo(t, http.MethodGet, "/api/v1/connections/nope/installations", nil); status != http.StatusNotFound {
			t.Errorf("installations of an unknown connection: %d, want 404", status)
		}

		op := []string{"--url", g.URL, "--admin-token", testAdminToken}
		code, out, errOut := runCLI(t, append([]string{"installations", "--connection", "gh-app", "-o", "json"}, op...)...)
		var l struct {
			Installations []ingest.InstallationJSON `json:"installations"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &l) != nil {
			t.Fatalf("installations -o json: exit %d %s%s", code, out, errOut)
		}
		check(t, "CLI JSON", l.Installations)
		code, out, errOut = runCLI(t, append([]string{"installations", "--connection", "gh-app"}, op...)...)
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
