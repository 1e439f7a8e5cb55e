// Package connectors turns provider webhook deliveries into normalized
// events: the provider-neutral Event, the Adapter contract, signatures and
// references. Provider packages (github, gitlab, jira, gitea, linear) only verify, parse
// and map, and package providers registers them; nothing under connectors/
// touches SQL or imports the gateway's internal packages. Applying events to
// tasks is internal/ingest's.
package connectors

import (
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Provider names, as used in config, delivery rows and task sources.
const (
	ProviderGitHub = "github"
	ProviderGitLab = "gitlab"
	ProviderJira   = "jira"
	// ProviderGitea also serves Forgejo, which sends Gitea's webhooks.
	ProviderGitea  = "gitea"
	ProviderLinear = "linear"
)

// Entity kinds, as used in external IDs and task sources.
const (
	KindIssue        = "issue"
	KindPullRequest  = "pull_request"
	KindMergeRequest = "merge_request"
)

// Action is what a delivery asks of the gateway, before filters and task
// state are consulted.
type Action string

const (
	// ActionIgnore: the delivery is recorded and nothing else happens (ping,
	// events the gateway does not map, e.g. GitHub's push or a comment).
	ActionIgnore Action = "ignore"
	// ActionCreate: opened/created. Creates the task if the filters match,
	// otherwise nothing; an existing task is updated instead.
	ActionCreate Action = "create"
	// ActionUpdate: edited/labeled/…; creates when no task exists and the
	// filters now match.
	ActionUpdate Action = "update"
	// ActionClose archives the task when the connection's on_close is archive.
	ActionClose Action = "close"
	// ActionReopen unarchives the task.
	ActionReopen Action = "reopen"
	// ActionDelete deletes the task and records a suppression.
	ActionDelete Action = "delete"
	// ActionTransfer aliases ExternalID to the task of PreviousExternalID
	// (the task follows the issue). Sent on the old entity's side.
	ActionTransfer Action = "transfer"
	// ActionLink records Links, the pull and merge requests an issue names
	// (a Linear attachment): each links to the issue's task when it
	// arrives, and shows on it at once when the gateway already has it.
	ActionLink Action = "link"
	// ActionUnlink removes Links (the attachment was removed).
	ActionUnlink Action = "unlink"
)

// Source is the human reference of the provider entity, stored on the task
// and kept current on every event.
type Source struct {
	Provider string `json:"provider"`
	Kind     string `json:"kind"`
	Ref      string `json:"ref"` // owner/repo#12, group/project#4, group/project!4, PROJ-12
	URL      string `json:"url"`
}

// Event is one parsed delivery, provider-neutral.
type Event struct {
	Provider string
	// EventName is the provider's event name ("issues", "Issue Hook",
	// "jira:issue_updated") plus the action when it has one ("issues.opened").
	EventName string
	Action    Action
	Kind      string
	// ExternalID per docs/design.md ("github:<host>:issue:<issue.id>").
	ExternalID string
	// PreviousExternalID is set when this entity continues another one
	// (GitHub transfer, GitLab moved_to_id): the task of PreviousExternalID
	// follows to ExternalID.
	PreviousExternalID string
	// EntityKey serializes processing: every delivery about one entity (and
	// the two sides of a transfer) shares it.
	EntityKey string

	Title       string
	Description string
	Labels      []string
	// Repository is what the connection's repositories filter matches:
	// "owner/repo" (GitHub), project path_with_namespace (GitLab), project
	// key (Jira).
	Repository string
	Source     Source
	// UpdatedAt is the provider's own timestamp of this state (issue/PR
	// updated_at, Jira webhook timestamp); zero when unknown. Older updates
	// than the last applied one are skipped.
	UpdatedAt time.Time
	// Closed reports the entity's state after this event.
	Closed bool

	// FormerRefs are human references the entity had before (a Linear
	// issue's previousIdentifiers after a team move): a pull request naming
	// one still finds the task.
	FormerRefs []string
	// Links are the pull and merge requests the issue names by URL: with
	// ActionLink and ActionUnlink the ones added or removed; on an issue
	// event (recovery reads an issue with its attachments) ones it has.
	Links []ContributionLink

	// Contribution is set for pull/merge request events.
	Contribution *Contribution

	// InstallationID is the GitHub App installation the delivery came
	// through (the payload's installation.id), which names the installation
	// token to answer it with; 0 for repository and organization hooks.
	InstallationID int64
	// Installation is set for deliveries that change a GitHub App
	// installation (installation, installation_repositories). Their Action
	// is ActionIgnore: no task changes, the installation is recorded.
	Installation *InstallationChange
}

// InstallationChange is what an installation delivery says about a GitHub
// App installation.
type InstallationChange struct {
	ID int64
	// AppID is the GitHub App the installation is of (installation.app_id);
	// 0 when the payload names none.
	AppID       int64
	Account     string // account.login of the user or organization
	AccountType string // User | Organization
	// Action is the provider's: created, deleted, suspend, unsuspend,
	// new_permissions_accepted (installation), added, removed
	// (installation_repositories).
	Action string
	// RepositorySelection is "all" or "selected".
	RepositorySelection string
	// Repositories are full names ("owner/repo"): the installation's whole
	// set for created, the added ones for added.
	Repositories []string
	// RemovedRepositories are the full names removed (removed).
	RemovedRepositories []string
	// SuspendedAt is the payload's installation.suspended_at; zero when not
	// suspended.
	SuspendedAt time.Time
	// At is the provider's time of this state (installation.updated_at);
	// zero when the payload has none.
	At time.Time
}

// Contribution is a pull request (GitHub, Gitea) or merge request (GitLab) as the
// webhook payload describes it.
type Contribution struct {
	Kind       string // pull_request | merge_request
	ID         int64  // provider's global ID (pull_request.id / object_attributes.id)
	Number     int64  // PR number / MR iid
	Repository string // owner/repo or project path
	URL        string
	Title      string
	Body       string
	State      string // open | closed | merged
	Draft      bool
	Merged     bool
	MergedAt   time.Time
	HeadBranch string
	BaseBranch string
	HeadSHA    string
	Author     string
	UpdatedAt  time.Time
	// References are the issues this contribution says it closes or mentions
	// (closing keywords in the body; Jira keys in title, branch or body).
	References []Reference
}

// ContributionLink is a pull or merge request an issue names by its URL
// (ParseContributionURL), as a Linear attachment does.
type ContributionLink struct {
	// ID is the provider's ID of the link itself (a Linear attachment's
	// id): a later update or removal names it.
	ID string
	// Provider is the provider whose URL shape it has: github
	// (/owner/repo/pull/N), gitea (/owner/repo/pulls/N) or gitlab
	// (/group/project/-/merge_requests/N).
	Provider   string
	Kind       string // pull_request | merge_request
	Host       string // lower-case, with the port when the URL has one other than its scheme's default
	Repository string // lower-case owner/repo or group/project path
	Number     int64
	URL        string
	// UpdatedAt is the link's own time; later changes win.
	UpdatedAt time.Time
}

// Reference points at an issue by its human reference, which is how PRs name
// issues; it is matched against task sources (Source.Ref).
type Reference struct {
	Provider string // github | gitlab | jira | gitea
	Ref      string // owner/repo#12, group/project#4, PROJ-12 (always fully qualified)
}

// Verification errors. The webhook handler maps every one of them to 401.
var (
	ErrMissingSignature = errors.New("missing signature")
	ErrBadSignature     = errors.New("signature does not match")
	// ErrUnsupportedSignature: e.g. GitHub's SHA-1 X-Hub-Signature without
	// X-Hub-Signature-256; refused even though go-github would accept it.
	ErrUnsupportedSignature = errors.New("unsupported signature method")
	// ErrStaleTimestamp: the signature matched but the timestamp the
	// provider signed inside the body is missing or too far from now (Linear's
	// webhookTimestamp), so the delivery may be a captured one replayed.
	ErrStaleTimestamp = errors.New("webhook timestamp outside the allowed window")
)

// ErrMalformedPayload wraps every parse failure: the delivery can never
// succeed, so it fails without retries.
var ErrMalformedPayload = errors.New("malformed payload")

// Adapter is what the ingest and processing layers need from a provider.
type Adapter interface {
	// Provider returns the provider name.
	Provider() string
	// Verify checks the request signature against each secret in constant
	// time; nil means one matched.
	Verify(header http.Header, body []byte, secrets [][]byte) error
	// DeliveryKey returns the provider's delivery identity (docs/design.md
	// "Delivery keys"); never parses business content beyond hashing.
	DeliveryKey(header http.Header, body []byte) string
	// EventName returns the event type header value ("issues", "Issue Hook");
	// for Jira, which has no event header, "jira".
	EventName(header http.Header) string
	// SecretHeaders lists the headers that carry secrets or signatures and
	// must never be stored or shown.
	SecretHeaders() []string
	// Parse turns a stored delivery into an Event. host is the connection's
	// host/site used in external IDs. Errors wrap ErrMalformedPayload.
	Parse(host string, header http.Header, body []byte) (Event, error)
	// Sign produces the headers a provider would send for body (used by
	// `gateway send` and tests).
	Sign(header http.Header, body []byte, secret []byte)
}

// Restamper is implemented by adapters whose provider signs a timestamp
// inside the body and refuses old ones (Linear): a stored payload must be
// restamped before Sign to be accepted again (gateway send).
type Restamper interface {
	// Restamp returns body with its signed timestamp set to now and every
	// other member kept.
	Restamp(body []byte, now time.Time) ([]byte, error)
}

// Malformed returns a parse error "<context>: malformed payload: <message>"
// wrapping ErrMalformedPayload, and also what an error among args wraps of
// ErrInvalidText, so that a text error stays one however it is worded.
func Malformed(context, format string, args ...any) error {
	e := &malformedError{msg: context + ": " + ErrMalformedPayload.Error() + ": " + fmt.Sprintf(format, args...)}
	for _, a := range args {
		if err, ok := a.(error); ok && errors.Is(err, ErrInvalidText) {
			e.text = true
		}
	}
	return e
}

type malformedError struct {
	msg  string
	text bool
}

func (e *malformedError) Error() string { return e.msg }

func (e *malformedError) Unwrap() []error {
	if e.text {
		return []error{ErrMalformedPayload, ErrInvalidText}
	}
	return []error{ErrMalformedPayload}
}
