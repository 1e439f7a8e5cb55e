package ingest

import (
	"context"
	"testing"
	"time"

	"github.com/trackergateway/gateway/internal/config"
	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/store/sqlstore"
	"github.com/trackergateway/gateway/internal/store/storetest"
)

// The console offers a connection's GitHub App installations only when it
// has some to show: an App's connection, or one that recorded installations
// (an App's webhook configured without its credentials). A repository
// hook's connection, or another provider's, has none.
func TestInstallationsOfferedForAppConnections(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		t.Parallel()
		ctx := context.Background()
		at := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
		hook, app, appHookOnly, gl := githubConn(), githubConn(), githubConn(), gitlabConn()
		hook.ID, app.ID, appHookOnly.ID = "gh-hook", "gh-app", "gh-app-hook-only"
		app.App = &config.App{ID: 7}
		conns := map[string]config.Connection{hook.ID: hook, app.ID: app, appHookOnly.ID: appHookOnly, gl.ID: gl}
		s := NewInstallations(st, func(id string) (config.Connection, bool) {
			c, ok := conns[id]
			return c, ok
		}, nil)
		if err := st.ApplyInstallationChange(ctx, store.InstallationChange{ConnectionID: appHookOnly.ID, InstallationID: 41000001,
			Action: "created", AccountLogin: "Codertocat", AccountType: "User", RepositorySelection: "all",
			At: at, ReceivedAt: at, DeliveryID: "d-1"}); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			id   string
			want bool
		}{{hook.ID, false}, {app.ID, true}, {appHookOnly.ID, true}, {gl.ID, false}, {"nope", false}} {
			got, err := s.Offered(ctx, tc.id)
			if err != nil || got != tc.want {
				t.Errorf("Offered(%s) = %v, %v; want %v", tc.id, got, err, tc.want)
			}
		}
	})
}
