// Package gitea is the Gitea webhook adapter, which also serves Forgejo (a
// fork of Gitea that sends the same payloads under both its own and Gitea's
// headers): it verifies X-Gitea-Signature and X-Forgejo-Signature, names
// deliveries, and maps "issues" and "pull_request" deliveries (decoded into
// the Gitea SDK's types) to connectors.Event.
package gitea

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	sdk "code.gitea.io/sdk/gitea"

	"github.com/trackergateway/gateway/connectors"
)

// Header names Gitea sends with every delivery. Forgejo sends the same
// headers and, with the same values, its own X-Forgejo-* ones.
const (
	HeaderEvent     = "X-Gitea-Event"
	HeaderEventType = "X-Gitea-Event-Type"
	HeaderDelivery  = "X-Gitea-Delivery"
	// HeaderSignature is the hex HMAC-SHA256 of the body, without a
	// "sha256=" prefix.
	HeaderSignature = "X-Gitea-Signature"

	HeaderForgejoEvent     = "X-Forgejo-Event"
	HeaderForgejoDelivery  = "X-Forgejo-Delivery"
	HeaderForgejoSignature = "X-Forgejo-Signature"

	// Gitea also signs every delivery in Gogs' and GitHub's headers, for
	// receivers written for those. They are never checked, only kept out of
	// storage: the SHA-1 one is refused when it is all a request carries.
	HeaderGogsSignature   = "X-Gogs-Signature"
	HeaderHubSignature    = "X-Hub-Signature"
	HeaderHubSignature256 = "X-Hub-Signature-256"
)

// Adapter implements connectors.Adapter for Gitea and Forgejo. The zero
// value is ready to use.
type Adapter struct{}

var (
	_ connectors.Adapter         = Adapter{}
	_ connectors.HeaderDescriber = Adapter{}
)

// Provider returns "gitea".
func (Adapter) Provider() string { return connectors.ProviderGitea }

// Verify checks X-Gitea-Signature and X-Forgejo-Signature (each the hex
// HMAC-SHA256 of the body) against each secret in constant time. Forgejo
// sends both; every value of either that the request carries must verify,
// so a request cannot pass on one good signature while carrying a forged
// other (in the other header or repeating the same one). A request signed
// only with the SHA-1 X-Hub-Signature is refused with
// ErrUnsupportedSignature; an unsigned one (Gitea sends empty signature
// headers for a hook without a secret) with ErrMissingSignature. Errors
// are connectors.VerifyError.
func (Adapter) Verify(header http.Header, body []byte, secrets [][]byte) error {
	present := false
	for _, name := range []string{HeaderSignature, HeaderForgejoSignature} {
		for _, sig := range connectors.SignatureValues(header, name) {
			present = true
			if connectors.VerifyHMACSHA256(sig, body, secrets) != nil {
				return connectors.SignatureMismatch(name)
			}
		}
	}
	if present {
		return nil
	}
	if len(connectors.SignatureValues(header, HeaderHubSignature)) > 0 && len(connectors.SignatureValues(header, HeaderHubSignature256)) == 0 {
		return connectors.UnsupportedSignature(HeaderHubSignature+" (SHA-1)", HeaderSignature)
	}
	return connectors.MissingSignature(HeaderSignature, HeaderForgejoSignature)
}

// DeliveryKey is X-Gitea-Delivery, else X-Forgejo-Delivery (the same UUID
// when both are sent), else the SHA-256 of the body. Gitea does not retry a
// failed delivery, and a redelivery from its UI is a new delivery with a new
// UUID; identity by issue and pull request ID makes it harmless.
func (Adapter) DeliveryKey(header http.Header, body []byte) string {
	for _, name := range []string{HeaderDelivery, HeaderForgejoDelivery} {
		if key := strings.TrimSpace(header.Get(name)); key != "" {
			return key
		}
	}
	return connectors.BodyDeliveryKey(body)
}

// EventName returns X-Gitea-Event, else X-Forgejo-Event ("issues",
// "pull_request", "push").
func (Adapter) EventName(header http.Header) string {
	for _, name := range []string{HeaderEvent, HeaderForgejoEvent} {
		if ev := strings.TrimSpace(header.Get(name)); ev != "" {
			return ev
		}
	}
	return ""
}

// SecretHeaders lists every header Gitea and Forgejo put a signature in.
func (Adapter) SecretHeaders() []string {
	return []string{HeaderSignature, HeaderForgejoSignature, HeaderGogsSignature, HeaderHubSignature, HeaderHubSignature256}
}

// DeliveryHeaders: Gitea names itself in X-Gitea-Event (Forgejo in
// X-Forgejo-Event as well) and also sends GitHub's X-GitHub-Event and
// X-GitHub-Delivery; every delivery carries an event and a delivery UUID.
func (Adapter) DeliveryHeaders() connectors.DeliveryHeaders { return deliveryHeaders }

// deliveryHeaders is shared by every call: the receiver asks on every request.
var deliveryHeaders = connectors.DeliveryHeaders{
	Title:       "Gitea",
	Identifying: []string{HeaderEvent, HeaderForgejoEvent, headerGogsEvent, HeaderDelivery, HeaderForgejoDelivery},
	Imitates:    []string{connectors.ProviderGitHub},
	Required:    [][]string{{HeaderEvent, HeaderForgejoEvent}, {HeaderDelivery, HeaderForgejoDelivery}},
}

// headerGogsEvent is Gogs' event header, which Gitea sends too.
const headerGogsEvent = "X-Gogs-Event"

// Sign sets Content-Type, X-Gitea-Signature for body and secret and, when
// absent, X-Gitea-Delivery (a fresh UUID). It does not set
// X-Forgejo-Signature: X-Gitea-Signature is what Gitea and Forgejo both
// send, and Verify needs no more. The caller sets X-Gitea-Event. header
// must not be nil.
func (Adapter) Sign(header http.Header, body []byte, secret []byte) {
	header.Set("Content-Type", "application/json")
	header.Set(HeaderSignature, connectors.HMACSHA256Hex(secret, body))
	if header.Get(HeaderDelivery) == "" {
		header.Set(HeaderDelivery, connectors.NewUUID())
	}
}

// Event names Parse maps. Gitea sends the finer event types (label,
// assignee, milestone, synchronize and review request changes, in
// X-Gitea-Event-Type) under these two in X-Gitea-Event; the finer names are
// accepted too, for a delivery stored or sent with the type as its event.
const (
	eventIssues      = "issues"
	eventPullRequest = "pull_request"
)

var eventKinds = map[string]string{
	eventIssues:                   eventIssues,
	"issue_assign":                eventIssues,
	"issue_label":                 eventIssues,
	"issue_milestone":             eventIssues,
	eventPullRequest:              eventPullRequest,
	"pull_request_assign":         eventPullRequest,
	"pull_request_label":          eventPullRequest,
	"pull_request_milestone":      eventPullRequest,
	"pull_request_sync":           eventPullRequest,
	"pull_request_review_request": eventPullRequest,
}

// Parse maps a delivery to an Event (docs/design.md "Events and actions").
// Events other than issues and pull_request (push, create, issue_comment,
// release, the review events…) are ignored; so are actions the gateway does
// not map. Errors wrap connectors.ErrMalformedPayload.
func (a Adapter) Parse(host string, header http.Header, body []byte) (connectors.Event, error) {
	name := a.EventName(header)
	if name == "" {
		return connectors.Event{}, malformed("delivery", "missing %s header", HeaderEvent)
	}
	switch eventKinds[name] {
	case eventIssues:
		return parseIssues(host, body)
	case eventPullRequest:
		return parsePullRequest(host, body)
	default:
		return connectors.Event{Provider: connectors.ProviderGitea, EventName: name, Action: connectors.ActionIgnore}, nil
	}
}

func malformed(event, format string, args ...any) error {
	return connectors.Malformed("parse gitea "+event, format, args...)
}

// Gitea has no issue transfer: moving a repository keeps its issues and
// their IDs, and issues cannot be moved between repositories, so no action
// maps to connectors.ActionTransfer.
var issueActions = map[string]connectors.Action{
	"opened":        connectors.ActionCreate,
	"reopened":      connectors.ActionReopen,
	"closed":        connectors.ActionClose,
	"deleted":       connectors.ActionDelete,
	"edited":        connectors.ActionUpdate,
	"assigned":      connectors.ActionUpdate,
	"unassigned":    connectors.ActionUpdate,
	"label_updated": connectors.ActionUpdate,
	"label_cleared": connectors.ActionUpdate,
	"milestoned":    connectors.ActionUpdate,
	"demilestoned":  connectors.ActionUpdate,
}

var pullRequestActions = map[string]connectors.Action{
	"opened":                 connectors.ActionCreate,
	"reopened":               connectors.ActionReopen,
	"closed":                 connectors.ActionClose,
	"deleted":                connectors.ActionDelete,
	"edited":                 connectors.ActionUpdate,
	"assigned":               connectors.ActionUpdate,
	"unassigned":             connectors.ActionUpdate,
	"label_updated":          connectors.ActionUpdate,
	"label_cleared":          connectors.ActionUpdate,
	"milestoned":             connectors.ActionUpdate,
	"demilestoned":           connectors.ActionUpdate,
	"synchronized":           connectors.ActionUpdate,
	"reviewed":               connectors.ActionUpdate,
	"review_requested":       connectors.ActionUpdate,
	"review_request_removed": connectors.ActionUpdate,
}

func eventName(name, action string) string {
	if action == "" {
		return name
	}
	return name + "." + action
}

// issuesEvent is Gitea's issues webhook payload (api.IssuePayload) with only
// the members Parse reads; the sender, changes and most of the repository
// and issue are skipped.
type issuesEvent struct {
	Action     string          `json:"action"`
	Issue      *issueMembers   `json:"issue"`
	Repository *repositoryName `json:"repository"`
}

// issueMembers are the members of the SDK's Issue that Parse reads, with the
// SDK's types and JSON names; issue gives them as a *sdk.Issue.
type issueMembers struct {
	ID          int64                `json:"id"`
	HTMLURL     string               `json:"html_url"`
	Index       int64                `json:"number"`
	Title       string               `json:"title"`
	Body        string               `json:"body"`
	Labels      []*sdk.Label         `json:"labels"`
	State       sdk.StateType        `json:"state"`
	Updated     time.Time            `json:"updated_at"`
	PullRequest *sdk.PullRequestMeta `json:"pull_request"`
	Repository  *sdk.RepositoryMeta  `json:"repository"`
}

func (m *issueMembers) issue() *sdk.Issue {
	if m == nil {
		return nil
	}
	return &sdk.Issue{ID: m.ID, HTMLURL: m.HTMLURL, Index: m.Index, Title: m.Title, Body: m.Body, Labels: m.Labels,
		State: m.State, Updated: m.Updated, PullRequest: m.PullRequest, Repository: m.Repository}
}

// repositoryName is the one member of a payload's repository that Parse
// reads.
type repositoryName struct {
	FullName string `json:"full_name"`
}

func (r *repositoryName) fullName() string {
	if r == nil {
		return ""
	}
	return r.FullName
}

func parseIssues(host string, body []byte) (connectors.Event, error) {
	ev := new(issuesEvent)
	if err := connectors.DecodeJSON(body, ev); err != nil {
		return connectors.Event{}, malformed(eventIssues, "%v", err)
	}
	base := connectors.Event{
		Provider:  connectors.ProviderGitea,
		EventName: eventName(eventIssues, ev.Action),
		Action:    connectors.ActionIgnore,
	}
	issue := ev.Issue.issue()
	if issue == nil {
		return connectors.Event{}, malformed(base.EventName, "no issue")
	}
	repo := ev.Repository.fullName()
	if !validRepo(repo) && issue.Repository != nil {
		repo = issue.Repository.FullName
	}
	valid := issue.ID > 0 && issue.Index > 0 && validRepo(repo)
	mapped, known := issueActions[ev.Action]
	if !known || issue.PullRequest != nil {
		// Recorded and ignored (an issues delivery about a pull request is
		// one too); described when the payload allows it, for the
		// delivery's outcome.
		if valid {
			e := describeIssue(host, issue, repo)
			e.Provider, e.EventName, e.Action = base.Provider, base.EventName, connectors.ActionIgnore
			return e, nil
		}
		return base, nil
	}
	if err := checkEntity(issue.ID, issue.Index, repo); err != nil {
		return connectors.Event{}, malformed(base.EventName, "issue: %v", err)
	}
	e := describeIssue(host, issue, repo)
	e.Provider, e.EventName, e.Action = base.Provider, base.EventName, mapped
	return e, nil
}

func checkEntity(id, number int64, repo string) error {
	switch {
	case id <= 0:
		return fmt.Errorf("missing id")
	case number <= 0:
		return fmt.Errorf("missing number")
	case !validRepo(repo):
		return fmt.Errorf("missing repository")
	}
	return nil
}

func validRepo(n string) bool {
	owner, name, ok := strings.Cut(n, "/")
	return ok && owner != "" && name != "" && !strings.Contains(name, "/")
}

func externalID(host, kind string, id int64) string {
	return connectors.ProviderGitea + ":" + host + ":" + kind + ":" + strconv.FormatInt(id, 10)
}

func labelNames(labels []*sdk.Label) []string {
	names := make([]string, 0, len(labels))
	for _, l := range labels {
		if l != nil && l.Name != "" {
			names = append(names, l.Name)
		}
	}
	return names
}

func describeIssue(host string, issue *sdk.Issue, repo string) connectors.Event {
	id := externalID(host, connectors.KindIssue, issue.ID)
	return connectors.Event{
		Kind:        connectors.KindIssue,
		ExternalID:  id,
		EntityKey:   id,
		Title:       issue.Title,
		Description: issue.Body,
		Labels:      labelNames(issue.Labels),
		Repository:  repo,
		Source: connectors.Source{
			Provider: connectors.ProviderGitea,
			Kind:     connectors.KindIssue,
			Ref:      repo + "#" + strconv.FormatInt(issue.Index, 10),
			URL:      issue.HTMLURL,
		},
		UpdatedAt: issue.Updated.UTC(),
		Closed:    issue.State == sdk.StateClosed,
	}
}

// pullRequestEvent is Gitea's pull_request webhook payload
// (api.PullRequestPayload) with only the members Parse reads.
type pullRequestEvent struct {
	Action      string              `json:"action"`
	PullRequest *pullRequestMembers `json:"pull_request"`
	Repository  *repositoryName     `json:"repository"`
}

// pullRequestMembers are the members of the SDK's PullRequest that Parse
// reads; pullRequest gives them as a *sdk.PullRequest. Draft is a pointer,
// unlike the SDK's, because Gitea before 1.22 sends no draft member and
// its absence means "decide from the title".
type pullRequestMembers struct {
	ID        int64          `json:"id"`
	Index     int64          `json:"number"`
	HTMLURL   string         `json:"html_url"`
	Title     string         `json:"title"`
	Body      string         `json:"body"`
	Labels    []*sdk.Label   `json:"labels"`
	State     sdk.StateType  `json:"state"`
	Draft     *bool          `json:"draft"`
	HasMerged bool           `json:"merged"`
	Merged    *time.Time     `json:"merged_at"`
	Updated   *time.Time     `json:"updated_at"`
	Poster    *userLogin     `json:"user"`
	Base      *branchMembers `json:"base"`
	Head      *branchMembers `json:"head"`
}

// userLogin is the one member of a user that Parse reads.
type userLogin struct {
	UserName string `json:"login"`
}

// branchMembers are the members of a pull request's head or base that Parse
// reads.
type branchMembers struct {
	Ref        string          `json:"ref"`
	Sha        string          `json:"sha"`
	Repository *repositoryName `json:"repo"`
}

func (m *pullRequestMembers) pullRequest() *sdk.PullRequest {
	if m == nil {
		return nil
	}
	pr := &sdk.PullRequest{ID: m.ID, Index: m.Index, HTMLURL: m.HTMLURL, Title: m.Title, Body: m.Body, Labels: m.Labels,
		State: m.State, HasMerged: m.HasMerged, Merged: m.Merged, Updated: m.Updated,
		Base: m.Base.branch(), Head: m.Head.branch()}
	pr.Draft = isDraft(m.Draft, m.Title)
	if m.Poster != nil {
		pr.Poster = &sdk.User{UserName: m.Poster.UserName}
	}
	return pr
}

func (b *branchMembers) branch() *sdk.PRBranchInfo {
	if b == nil {
		return nil
	}
	br := &sdk.PRBranchInfo{Ref: b.Ref, Sha: b.Sha}
	if b.Repository != nil {
		br.Repository = &sdk.Repository{FullName: b.Repository.FullName}
	}
	return br
}

// workInProgressPrefixes are Gitea's default [repository.pull-request]
// WORK_IN_PROGRESS_PREFIXES: a pull request whose title starts with one
// (in any case) is a draft. Gitea 1.22 and later report that in the
// payload's draft member, which is used when present.
var workInProgressPrefixes = []string{"WIP:", "[WIP]"}

func isDraft(draft *bool, title string) bool {
	if draft != nil {
		return *draft
	}
	upper := strings.ToUpper(strings.TrimLeft(title, " \t"))
	for _, p := range workInProgressPrefixes {
		if strings.HasPrefix(upper, p) {
			return true
		}
	}
	return false
}

func parsePullRequest(host string, body []byte) (connectors.Event, error) {
	ev := new(pullRequestEvent)
	if err := connectors.DecodeJSON(body, ev); err != nil {
		return connectors.Event{}, malformed(eventPullRequest, "%v", err)
	}
	base := connectors.Event{
		Provider:  connectors.ProviderGitea,
		EventName: eventName(eventPullRequest, ev.Action),
		Action:    connectors.ActionIgnore,
	}
	pr := ev.PullRequest.pullRequest()
	if pr == nil {
		return connectors.Event{}, malformed(base.EventName, "no pull_request")
	}
	repo := ev.Repository.fullName()
	if !validRepo(repo) && pr.Base != nil && pr.Base.Repository != nil {
		repo = pr.Base.Repository.FullName
	}
	mapped, known := pullRequestActions[ev.Action]
	if !known {
		if checkEntity(pr.ID, pr.Index, repo) == nil {
			e := describePullRequest(host, pr, repo)
			e.Provider, e.EventName, e.Action = base.Provider, base.EventName, connectors.ActionIgnore
			return e, nil
		}
		return base, nil
	}
	if err := checkEntity(pr.ID, pr.Index, repo); err != nil {
		return connectors.Event{}, malformed(base.EventName, "pull_request: %v", err)
	}
	e := describePullRequest(host, pr, repo)
	e.Provider, e.EventName, e.Action = base.Provider, base.EventName, mapped
	return e, nil
}

func describePullRequest(host string, pr *sdk.PullRequest, repo string) connectors.Event {
	id := externalID(host, connectors.KindPullRequest, pr.ID)
	merged := pr.HasMerged || (pr.Merged != nil && !pr.Merged.IsZero())
	state := "open"
	switch {
	case merged:
		state = "merged"
	case pr.State == sdk.StateClosed:
		state = "closed"
	}
	var updated time.Time
	if pr.Updated != nil {
		updated = pr.Updated.UTC()
	}
	var head, baseRef, headSHA, author string
	if pr.Head != nil {
		head, headSHA = pr.Head.Ref, pr.Head.Sha
	}
	if pr.Base != nil {
		baseRef = pr.Base.Ref
	}
	if pr.Poster != nil {
		author = pr.Poster.UserName
	}
	c := &connectors.Contribution{
		Kind:       connectors.KindPullRequest,
		ID:         pr.ID,
		Number:     pr.Index,
		Repository: repo,
		URL:        pr.HTMLURL,
		Title:      pr.Title,
		Body:       pr.Body,
		State:      state,
		Draft:      pr.Draft,
		Merged:     merged,
		HeadBranch: head,
		BaseBranch: baseRef,
		HeadSHA:    headSHA,
		Author:     author,
		UpdatedAt:  updated,
		References: connectors.MergeReferences(
			connectors.OwnerRepoClosingReferences(connectors.ProviderGitea, pr.Body, host, repo),
			connectors.JiraKeyReferences(pr.Title, head, pr.Body),
		),
	}
	if pr.Merged != nil {
		c.MergedAt = pr.Merged.UTC()
	}
	return connectors.Event{
		Kind:        connectors.KindPullRequest,
		ExternalID:  id,
		EntityKey:   id,
		Title:       pr.Title,
		Description: pr.Body,
		Labels:      labelNames(pr.Labels),
		Repository:  repo,
		Source: connectors.Source{
			Provider: connectors.ProviderGitea,
			Kind:     connectors.KindPullRequest,
			Ref:      repo + "#" + strconv.FormatInt(pr.Index, 10),
			URL:      pr.HTMLURL,
		},
		UpdatedAt:    updated,
		Closed:       pr.State == sdk.StateClosed || merged,
		Contribution: c,
	}
}
