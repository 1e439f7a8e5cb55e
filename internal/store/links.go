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
	LinkID      string // the provider's ID of the link (a Linear attachment ID), unique in a workspace
	ExternalID  string // the external ID
	Provider    string // the contribution's provider: github | gitlab | gitea
	Host        string // lower-case
	Repository  string // lower-case owner/repo or group/project path
	Number      int64
	URL         string
	Removed     bool // a tombstone: the link was removed at UpdatedAt
	UpdatedAt   time.Time
}

// LinkQueries manages contribution links and former source references.
type LinkQueries interface {
	// UpsertContributionLink writes l (insert, or replace every column of the
	// row with the same workspace and link ID) unless the stored row has a
	// later UpdatedAt (equal times are written); applied reports whether it
	// was written. A removal is written as a row with Removed set, so that an
	// older create arriving late does not bring the link back.
	UpsertContributionLink(ctx context.Context, l ContributionLink) (applied bool, err error)
	// ContributionLinksTo lists the workspace's live (not removed) links
	// naming one contribution, ordered by UpdatedAt then LinkID. provider,
	// host and repository are compared exactly (callers pass lower-case host
	// and repository).
	ContributionLinksTo(ctx context.Context, workspaceID, provider, host, repository string, number int64) ([]ContributionLink, error)
	// ContributionLinksFrom lists the live links of one issue, ordered by
	// LinkID.
	ContributionLinksFrom(ctx context.Context, workspaceID, externalID string) ([]ContributionLink, error)
	// InsertRefAlias records ref as a former source reference of taskID
	// unless (workspace, provider, ref) has one already.
	InsertRefAlias(ctx context.Context, workspaceID, provider, ref, taskID string, at time.Time) error
}
