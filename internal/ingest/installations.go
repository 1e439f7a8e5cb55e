package ingest

import (
	"context"
	"fmt"
	"strconv"

	"github.com/trackergateway/gateway/connectors"
	"github.com/trackergateway/gateway/internal/config"
	"github.com/trackergateway/gateway/internal/inbox"
	"github.com/trackergateway/gateway/internal/store"
)

// applyInstallation records a GitHub App installation's change. No task
// changes, so the delivery is ignored as far as tasks go (and counted so);
// its outcome names what was recorded, or why nothing was
// (foreignInstallation).
func (a *Applier) applyInstallation(ctx context.Context, d store.Delivery, conn config.Connection, c *connectors.InstallationChange) (inbox.Outcome, error) {
	if why := foreignInstallation(conn, c); why != "" {
		return inbox.Outcome{Status: store.DeliveryIgnored, Action: InstallationAction, Result: "not recorded: " + why}, nil
	}
	at := c.At
	if at.IsZero() {
		at = d.ReceivedAt
	}
	change := store.InstallationChange{ConnectionID: conn.ID, InstallationID: c.ID, Action: c.Action,
		AccountLogin: c.Account, AccountType: c.AccountType, RepositorySelection: c.RepositorySelection,
		Repositories: c.Repositories, RemovedRepositories: c.RemovedRepositories,
		At: at.UTC(), DeliveryID: d.ID, ReceivedAt: d.ReceivedAt.UTC()}
	if !c.SuspendedAt.IsZero() {
		s := c.SuspendedAt.UTC()
		change.SuspendedAt = &s
	}
	if err := a.st.ApplyInstallationChange(ctx, change); err != nil {
		return inbox.Outcome{}, fmt.Errorf("record installation: %w", err)
	}
	return inbox.Outcome{Status: store.DeliveryIgnored, Action: InstallationAction,
		Result: "recorded: installation " + strconv.FormatInt(c.ID, 10) + " " + c.Action}, nil
}

// InstallationAction is the outcome action of a delivery that recorded a
// GitHub App installation's change.
const InstallationAction = "installation"

// foreignInstallation says why an installation change is not the
// connection's to record, "" when it is: only a GitHub App connection
// records installations, and only those of its own App. A repository or
// organization hook may be subscribed to installation events, and a
// webhook URL may be given to another App; either would otherwise show
// installations (and their repositories) the connection has nothing to do
// with, and an installation ID of another App names no token this one can
// mint.
func foreignInstallation(conn config.Connection, c *connectors.InstallationChange) string {
	switch {
	case conn.App == nil:
		return fmt.Sprintf("connection %q is not a GitHub App connection (it has no app: in its configuration); "+
			"only an App connection records installations", conn.ID)
	case c.AppID == 0:
		return fmt.Sprintf("installation %d names no App (installation.app_id); connection %q records its App %d's only",
			c.ID, conn.ID, conn.App.ID)
	case c.AppID != conn.App.ID:
		return fmt.Sprintf("installation %d is of App %d, not connection %q's App %d", c.ID, c.AppID, conn.ID, conn.App.ID)
	}
	return ""
}
