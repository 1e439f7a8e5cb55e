package ingest

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/trackergateway/gateway/internal/config"
	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/store/sqlstore"
	"github.com/trackergateway/gateway/internal/store/storetest"
)

// fixtureApp is the GitHub App of the installation fixtures.
const fixtureApp = 800001

// appConn is a GitHub App connection of App id.
func appConn(id int64) config.Connection {
	c := githubConn()
	c.App = &config.App{ID: id}
	return c
}

// Installation deliveries record the installation in the same processing,
// change no task, and say so in their outcome.
func TestInstallationDeliveriesRecorded(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		t.Parallel()
		e := newEnv(t, st, appConn(fixtureApp))
		steps := []struct {
			file      string
			repos     []string
			suspended bool
			deleted   bool
		}{
			// In the fixtures' order (fixtures/README.md): 09:00 to 12:00.
			{"installation.created.json", []string{"Codertocat/Hello-World"}, false, false},
			{"installation.suspend.json", []string{"Codertocat/Hello-World"}, true, false},
			{"installation.unsuspend.json", []string{"Codertocat/Hello-World"}, false, false},
			{"installation_repositories.added.json", []string{"Codertocat/Hello-World", "Codertocat/Space"}, false, false},
			{"installation_repositories.removed.json", []string{"Codertocat/Space"}, false, false},
			{"installation.deleted.json", []string{"Codertocat/Space"}, false, true},
		}
		for _, step := range steps {
			d := e.github(step.file)
			out := e.process(d)
			if out.Status != store.DeliveryIgnored || out.Action != InstallationAction || out.Result == "" || out.TaskID != "" {
				t.Fatalf("%s: outcome %+v, want ignored, action installation, a result, no task", step.file, out)
			}
			// Processing it again (a replay) changes nothing.
			e.process(d)
			list, err := st.ListInstallations(context.Background(), "gh-main")
			if err != nil {
				t.Fatal(err)
			}
			if len(list) != 1 {
				t.Fatalf("%s: installations = %+v, want one", step.file, list)
			}
			got := list[0]
			if got.InstallationID != 41000001 || got.AccountLogin != "Codertocat" || !slices.Equal(got.Repositories, step.repos) ||
				(got.SuspendedAt != nil) != step.suspended || (got.DeletedAt != nil) != step.deleted || got.LastDeliveryID != d.ID {
				t.Errorf("%s: installation = %+v, want repositories %v, suspended %v, deleted %v, last delivery %s",
					step.file, got, step.repos, step.suspended, step.deleted, d.ID)
			}
		}
		if n := len(e.tasks()); n != 0 {
			t.Errorf("tasks = %d, want none", n)
		}
	})
}

// Only an App connection records installations, and only its own App's:
// another App's installation, one that names no App, and any on a
// repository-hook connection end ignored, saying why, and record nothing.
func TestInstallationOfAnotherAppIgnored(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		conn   config.Connection
		mutate []func(map[string]any)
		want   string // in the result
	}{
		{"a repository-hook connection", githubConn(), nil, `connection "gh-main" is not a GitHub App connection`},
		{"another App's installation", appConn(4242), nil, "installation 41000001 is of App 800001, not connection \"gh-main\"'s App 4242"},
		{"an installation naming no App", appConn(fixtureApp), []func(map[string]any){func(m map[string]any) {
			delete(m["installation"].(map[string]any), "app_id")
		}}, "installation 41000001 names no App"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
				t.Parallel()
				e := newEnv(t, st, tc.conn)
				for _, f := range []string{"installation.created.json", "installation_repositories.added.json"} {
					out := e.process(e.github(f, tc.mutate...))
					if out.Status != store.DeliveryIgnored || out.Action != InstallationAction ||
						!strings.HasPrefix(out.Result, "not recorded: ") || !strings.Contains(out.Result, tc.want) {
						t.Errorf("%s: outcome %+v, want ignored, not recorded, saying %q", f, out, tc.want)
					}
				}
				list, err := st.ListInstallations(context.Background(), "gh-main")
				if err != nil {
					t.Fatal(err)
				}
				if len(list) != 0 {
					t.Errorf("installations = %+v, want none", list)
				}
			})
		})
	}
}

// An App delivers the issues of every repository it is installed on; the
// connection's repositories filter still decides which become tasks.
func TestAppDeliveryOutsideRepositoryFilter(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		t.Parallel()
		gh := githubConn()
		gh.Repositories = []string{"octo-org/*"}
		e := newEnv(t, st, gh)
		out := e.process(e.github("issues.opened.app.json"))
		if out.Status != store.DeliveryIgnored || len(e.tasks()) != 0 {
			t.Errorf("outcome %+v with %d tasks, want ignored and none", out, len(e.tasks()))
		}
	})
}
