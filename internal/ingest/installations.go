package ingest

import (
	"fmt"

	"github.com/trackergateway/gateway/connectors"
	"github.com/trackergateway/gateway/internal/config"
)

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
