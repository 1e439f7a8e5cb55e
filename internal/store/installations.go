package store

import (
	"context"
	"time"
)

// InstallationChange is one installation or installation_repositories
// delivery of a GitHub App, as ApplyInstallationChange records it.
type InstallationChange struct {
	ConnectionID   string
	InstallationID int64
	// Action is GitHub's: created, deleted, suspend, unsuspend,
	// new_permissions_accepted, added, removed.
	Action              string
	AccountLogin        string
	AccountType         string
	RepositorySelection string
	// Repositories are full names: the whole set for created, the added
	// ones for added.
	Repositories        []string
	RemovedRepositories []string
	// SuspendedAt is the payload's installation.suspended_at (suspend).
	SuspendedAt *time.Time
	// At is the provider's time of the change; DeliveryID and ReceivedAt
	// name the delivery that reported it. (At, ReceivedAt) orders changes:
	// one older than what a row or repository holds is not applied.
	At         time.Time
	DeliveryID string
	ReceivedAt time.Time
}

// Installation is a github_installations row with its current
// repositories.
type Installation struct {
	ConnectionID        string
	InstallationID      int64
	AccountLogin        string
	AccountType         string
	RepositorySelection string
	// Repositories are the full names the installation currently has,
	// sorted.
	Repositories []string
	SuspendedAt  *time.Time
	DeletedAt    *time.Time
	// UpdatedAt is the provider time of the last change applied;
	// LastDeliveryID the delivery that reported it.
	UpdatedAt      time.Time
	LastDeliveryID string
}

// InstallationQueries record GitHub App installations (internal/ingest
// applies installation deliveries, the operator routes read them).
type InstallationQueries interface {
	// ApplyInstallationChange records c. Each statement it runs compares
	// (At, ReceivedAt) with what the row and each repository last took, so
	// changes apply in any order to the same result, and applying one
	// again changes nothing: created sets the account, selection and
	// suspension, clears deleted and makes its repositories the whole set;
	// added and removed change those repositories; deleted marks the
	// installation deleted (a later created re-activates it); suspend and
	// unsuspend set and clear the suspension.
	ApplyInstallationChange(ctx context.Context, c InstallationChange) error
	// ListInstallations returns the connection's installations, deleted
	// ones included, by installation ID.
	ListInstallations(ctx context.Context, connectionID string) ([]Installation, error)
}
