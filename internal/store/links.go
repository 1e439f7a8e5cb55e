package store

import (
	"context"
	"time"
)

// ContributionLink is a contribution_links row: a pull or merge request an
// issue names by URL (a Linear attachment), which links to and shows on the
// issue's task.
type ContributionLink struct {
	WorkspaceID string
	// ConnectionID is the connection that recorded the link: a link ID is
	// its provider organisation's, so it is unique per connection. ""
	// marks a row recorded before links were keyed by connection whose
	// connection could not be told (migration 00020); the first write of
	// the same link of the same issue by a connection takes it over.
	ConnectionID string
	LinkID       string // the provider's ID of the link (a Linear attachment ID), unique in a connection
	ExternalID   string // the external ID
	Provider     string // the contribution's provider: github | gitlab | gitea
	Host         string // lower-case
	Repository   string // lower-case owner/repo or group/project path
	Number       int64
	URL          string
	Removed      bool // a tombstone: the link was removed at UpdatedAt
	UpdatedAt    time.Time
}

// LinkQueries manages contribution links and former source references.
type LinkQueries interface {
	// UpsertContributionLink writes l (insert, or replace every column of the
	// row with the same workspace, connection and link ID) unless the stored
	// row has a later UpdatedAt (equal times are written); applied reports
	// whether it was written. A removal is written as a row with Removed
	// set, so that an older create arriving late does not bring the link
	// back. Another connection's row with the same link ID is never
	// touched; a row without a connection ("") of the same workspace, link
	// ID and issue becomes l's connection's first.
	UpsertContributionLink(ctx context.Context, l ContributionLink) (applied bool, err error)
	// ContributionLinksTo lists the workspace's live (not removed) links
	// naming one contribution, whichever connection recorded them, ordered
	// by UpdatedAt, LinkID then ConnectionID. provider, host and repository
	// are compared exactly (callers pass lower-case host and repository).
	ContributionLinksTo(ctx context.Context, workspaceID, provider, host, repository string, number int64) ([]ContributionLink, error)
	// ContributionLinksFrom lists the live links of one issue, ordered by
	// LinkID then ConnectionID.
	ContributionLinksFrom(ctx context.Context, workspaceID, externalID string) ([]ContributionLink, error)
	// InsertRefAlias records ref as a former source reference of taskID
	// unless (workspace, provider, ref) has one already.
	InsertRefAlias(ctx context.Context, workspaceID, provider, ref, taskID string, at time.Time) error
}
