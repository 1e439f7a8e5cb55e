// Package github is the GitHub webhook adapter: it verifies
// X-Hub-Signature-256, names deliveries, and maps "issues", "pull_request"
// and "ping" deliveries (parsed with go-github) to connectors.Event, and
// records what "installation" and "installation_repositories" deliveries
// of a GitHub App say about its installations.
package github

import (
	"bytes"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
	gh "github.com/google/go-github/v62/github"

	"github.com/trackergateway/gateway/connectors"
)

// Header names GitHub sends with every delivery.
const (
	HeaderEvent        = "X-GitHub-Event"
	HeaderDelivery     = "X-GitHub-Delivery"
	HeaderHookID       = "X-GitHub-Hook-ID"
	HeaderSignature256 = "X-Hub-Signature-256"
	// HeaderSignature is the legacy SHA-1 signature; it is never accepted.
	HeaderSignature = "X-Hub-Signature"
)

// Adapter implements connectors.Adapter for GitHub. The zero value is ready
// to use.
type Adapter struct{}

var (
	_ connectors.Adapter         = Adapter{}
	_ connectors.HeaderDescriber = Adapter{}
)

// Provider returns "github".
func (Adapter) Provider() string { return connectors.ProviderGitHub }

// Verify checks X-Hub-Signature-256 ("sha256=<hex HMAC-SHA256(body)>")
// against each secret in constant time; every value of it the request
// carries must match. A request carrying only the SHA-1 X-Hub-Signature is
// refused with ErrUnsupportedSignature (go-github's ValidatePayload would
// accept it, so it is not used here); an unsigned one with
// ErrMissingSignature. Errors are connectors.VerifyError.
func (Adapter) Verify(header http.Header, body []byte, secrets [][]byte) error {
	sigs := connectors.SignatureValues(header, HeaderSignature256)
	if len(sigs) == 0 {
		if len(connectors.SignatureValues(header, HeaderSignature)) > 0 {
			return connectors.UnsupportedSignature(HeaderSignature+" (SHA-1)", HeaderSignature256)
		}
		return connectors.MissingSignature(HeaderSignature256)
	}
	for _, sig := range sigs {
		hexSig, ok := strings.CutPrefix(sig, "sha256=")
		if !ok || connectors.VerifyHMACSHA256(hexSig, body, secrets) != nil {
			return connectors.SignatureMismatch(HeaderSignature256)
		}
	}
	return nil
}

// DeliveryKey is X-GitHub-Hook-ID ":" X-GitHub-Delivery: the delivery GUID
// is shared by every hook an event triggers and reused on manual
// redelivery, so the hook ID tells the hooks apart. Without a hook ID it is
// the GUID alone; without a GUID, the SHA-256 of the body.
func (Adapter) DeliveryKey(header http.Header, body []byte) string {
	guid := strings.TrimSpace(header.Get(HeaderDelivery))
	if guid == "" {
		return connectors.BodyDeliveryKey(body)
	}
	if hook := strings.TrimSpace(header.Get(HeaderHookID)); hook != "" {
		return hook + ":" + guid
	}
	return guid
}

// EventName returns the X-GitHub-Event header ("issues", "pull_request").
func (Adapter) EventName(header http.Header) string {
	return strings.TrimSpace(header.Get(HeaderEvent))
}

// SecretHeaders lists the signature headers.
func (Adapter) SecretHeaders() []string {
	return []string{HeaderSignature, HeaderSignature256}
}

// DeliveryHeaders: GitHub names itself in X-GitHub-Event (Gitea sends it
// too, and says it imitates GitHub) and always sends the event and the
// delivery GUID.
func (Adapter) DeliveryHeaders() connectors.DeliveryHeaders { return deliveryHeaders }

// deliveryHeaders is shared by every call: the receiver asks on every request.
var deliveryHeaders = connectors.DeliveryHeaders{
	Title:       "GitHub",
	Identifying: []string{HeaderEvent, HeaderHookID, HeaderDelivery},
	Required:    [][]string{{HeaderEvent}, {HeaderDelivery}},
}

// Content types GitHub delivers webhooks in, as chosen in the hook's
// settings.
const (
	ContentTypeJSON = "application/json"
	ContentTypeForm = "application/x-www-form-urlencoded"
)

// ContentTypes lists the content types GitHub sends: JSON, or a form whose
// "payload" field holds the JSON (the signature covers the raw form body).
func (Adapter) ContentTypes() []string { return []string{ContentTypeJSON, ContentTypeForm} }

// payload returns the event JSON of a delivery: the body itself, or the
// "payload" field of a form-encoded body. A delivery stored without a
// Content-Type is JSON.
func payload(header http.Header, body []byte) ([]byte, error) {
	mediaType := ContentTypeJSON
	if ct := header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil {
			return nil, fmt.Errorf("content type %q: %w", ct, err)
		}
		mediaType = strings.ToLower(mt)
	}
	if mediaType != ContentTypeForm {
		return body, nil
	}
	// The signature was verified at ingest; no secret here skips it.
	p, err := gh.ValidatePayloadFromBody(mediaType, bytes.NewReader(body), "", nil)
	if err != nil {
		return nil, err
	}
	if len(p) == 0 {
		return nil, errors.New(`form body has no "payload" field`)
	}
	return p, nil
}

// Sign sets X-Hub-Signature-256 for body and secret, Content-Type, and, when
// absent, X-GitHub-Delivery (a fresh GUID) and X-GitHub-Hook-ID ("1"). The
// caller sets X-GitHub-Event. header must not be nil.
func (Adapter) Sign(header http.Header, body []byte, secret []byte) {
	header.Set("Content-Type", "application/json")
	header.Set(HeaderSignature256, "sha256="+connectors.HMACSHA256Hex(secret, body))
	if header.Get(HeaderDelivery) == "" {
		header.Set(HeaderDelivery, connectors.NewUUID())
	}
	if header.Get(HeaderHookID) == "" {
		header.Set(HeaderHookID, "1")
	}
}

// Parse maps a delivery to an Event (docs/design.md "Events and actions"). Events
// other than issues, pull_request and ping are ignored; so are issue and
// pull request actions the gateway does not map. Installation events are
// ignored for tasks and carry the installation's change
// (Event.Installation). Errors wrap
// connectors.ErrMalformedPayload.
func (Adapter) Parse(host string, header http.Header, body []byte) (connectors.Event, error) {
	name := strings.TrimSpace(header.Get(HeaderEvent))
	if name == "" {
		return connectors.Event{}, malformed("delivery", "missing %s header", HeaderEvent)
	}
	body, err := payload(header, body)
	if err != nil {
		return connectors.Event{}, malformed(name, "%v", err)
	}
	switch name {
	case "ping":
		if _, err := gh.ParseWebHook(name, body); err != nil {
			return connectors.Event{}, malformed(name, "%v", err)
		}
		return connectors.Event{Provider: connectors.ProviderGitHub, EventName: name, Action: connectors.ActionIgnore}, nil
	case "issues":
		return parseIssues(host, body)
	case "pull_request":
		return parsePullRequest(host, body)
	case "installation":
		return parseInstallation(host, body)
	case "installation_repositories":
		return parseInstallationRepositories(host, body)
	default:
		return connectors.Event{Provider: connectors.ProviderGitHub, EventName: name, Action: connectors.ActionIgnore}, nil
	}
}

func malformed(event, format string, args ...any) error {
	return connectors.Malformed("parse github "+event, format, args...)
}

var issueActions = map[string]connectors.Action{
	"opened":       connectors.ActionCreate,
	"reopened":     connectors.ActionReopen,
	"edited":       connectors.ActionUpdate,
	"labeled":      connectors.ActionUpdate,
	"unlabeled":    connectors.ActionUpdate,
	"assigned":     connectors.ActionUpdate,
	"unassigned":   connectors.ActionUpdate,
	"milestoned":   connectors.ActionUpdate,
	"demilestoned": connectors.ActionUpdate,
	"pinned":       connectors.ActionUpdate,
	"unpinned":     connectors.ActionUpdate,
	"locked":       connectors.ActionUpdate,
	"unlocked":     connectors.ActionUpdate,
	"closed":       connectors.ActionClose,
	"deleted":      connectors.ActionDelete,
	"transferred":  connectors.ActionTransfer,
}

// pullRequestActions are GitHub's pull_request actions. Every delivery
// carries the whole pull request, so each action that is not an opening, a
// closing or a reopening is an update: one whose opening was missed still
// creates its task or links to the issue it closes.
var pullRequestActions = map[string]connectors.Action{
	"opened":                 connectors.ActionCreate,
	"reopened":               connectors.ActionReopen,
	"closed":                 connectors.ActionClose,
	"edited":                 connectors.ActionUpdate,
	"synchronize":            connectors.ActionUpdate,
	"ready_for_review":       connectors.ActionUpdate,
	"converted_to_draft":     connectors.ActionUpdate,
	"labeled":                connectors.ActionUpdate,
	"unlabeled":              connectors.ActionUpdate,
	"assigned":               connectors.ActionUpdate,
	"unassigned":             connectors.ActionUpdate,
	"locked":                 connectors.ActionUpdate,
	"unlocked":               connectors.ActionUpdate,
	"review_requested":       connectors.ActionUpdate,
	"review_request_removed": connectors.ActionUpdate,
	"auto_merge_enabled":     connectors.ActionUpdate,
	"auto_merge_disabled":    connectors.ActionUpdate,
	"enqueued":               connectors.ActionUpdate,
	"dequeued":               connectors.ActionUpdate,
	"milestoned":             connectors.ActionUpdate,
	"demilestoned":           connectors.ActionUpdate,
}

// transferChanges is the part of an issues payload's "changes" that go-github
// v62's EditChange does not model: the other side of a transfer. Of the
// repositories Parse reads only the new one's name (repositoryName).
type transferChanges struct {
	Changes *struct {
		NewIssue      *gh.Issue       `json:"new_issue"`
		NewRepository *repositoryName `json:"new_repository"`
		OldIssue      *gh.Issue       `json:"old_issue"`
	} `json:"changes"`
}

func eventName(name, action string) string {
	if action == "" {
		return name
	}
	return name + "." + action
}

// issuesEvent is go-github's IssuesEvent with only the members Parse reads.
// The repository object is about a third of an issues payload (some ninety
// members, most of them URLs) and Parse reads only its full_name; of the
// issue it reads ten members, not its user, assignees, milestone or
// reactions. Decoding just those (and skipping the rest, which is still
// checked to be valid JSON) takes a parse from 168 allocations to 26
// (BenchmarkDecodeIssuesEvent); a worker parses every delivery it processes.
type issuesEvent struct {
	eventEnvelope
	Issue *issueMembers `json:"issue,omitempty"`
	// Changes tells an opening by a transfer (changes.old_issue) from the
	// others, which then need no second decode of the payload; kept raw, it
	// accepts whatever go-github's EditChange does.
	Changes *struct {
		OldIssue jsontext.Value `json:"old_issue"`
	} `json:"changes,omitempty"`
}

// openedByTransfer reports whether the payload has a changes.old_issue:
// an opening that continues the old issue's task.
func (ev *issuesEvent) openedByTransfer() bool {
	return ev.Changes != nil && len(ev.Changes.OldIssue) > 0 && ev.Changes.OldIssue.Kind() != 'n'
}

// eventEnvelope is what the trimmed events share: the action, the
// repository's name and, in a GitHub App's deliveries, the installation.
type eventEnvelope struct {
	Action       *string           `json:"action,omitempty"`
	Repo         *repositoryName   `json:"repository,omitempty"`
	Installation *installationName `json:"installation,omitempty"`
}

// installationName is the one member of a payload's installation that
// Parse reads of ordinary deliveries: an App's carry {id, node_id}.
type installationName struct {
	ID *int64 `json:"id,omitempty"`
}

func (e *eventEnvelope) installationID() int64 {
	if e.Installation == nil || e.Installation.ID == nil {
		return 0
	}
	return *e.Installation.ID
}

// GetAction is the action, or "" when there is none, as go-github's
// getters give it.
func (e *eventEnvelope) GetAction() string {
	if e.Action == nil {
		return ""
	}
	return *e.Action
}

// issueMembers are the members of go-github's Issue that Parse reads, with
// go-github's types and JSON names; issue gives them as a *gh.Issue.
type issueMembers struct {
	ID               *int64               `json:"id,omitempty"`
	Number           *int                 `json:"number,omitempty"`
	State            *string              `json:"state,omitempty"`
	Title            *string              `json:"title,omitempty"`
	Body             *string              `json:"body,omitempty"`
	HTMLURL          *string              `json:"html_url,omitempty"`
	RepositoryURL    *string              `json:"repository_url,omitempty"`
	UpdatedAt        *gh.Timestamp        `json:"updated_at,omitempty"`
	Labels           []*gh.Label          `json:"labels,omitempty"`
	PullRequestLinks *gh.PullRequestLinks `json:"pull_request,omitempty"`
}

func (m *issueMembers) issue() *gh.Issue {
	if m == nil {
		return nil
	}
	return &gh.Issue{ID: m.ID, Number: m.Number, State: m.State, Title: m.Title, Body: m.Body,
		HTMLURL: m.HTMLURL, RepositoryURL: m.RepositoryURL, UpdatedAt: m.UpdatedAt, Labels: m.Labels,
		PullRequestLinks: m.PullRequestLinks}
}

// repositoryName is the one member of a payload's repository that Parse
// reads (in eventEnvelope, branchMembers and transferChanges).
type repositoryName struct {
	FullName *string `json:"full_name,omitempty"`
}

func (r *repositoryName) fullName() string {
	if r == nil || r.FullName == nil {
		return ""
	}
	return *r.FullName
}

func parseIssues(host string, body []byte) (connectors.Event, error) {
	const name = "issues"
	ev := new(issuesEvent)
	if err := connectors.DecodeJSON(body, ev); err != nil {
		return connectors.Event{}, malformed(name, "%v", err)
	}
	action := ev.GetAction()
	base := connectors.Event{
		Provider:  connectors.ProviderGitHub,
		EventName: eventName(name, action),
		Action:    connectors.ActionIgnore,
	}
	e, err := mapIssue(host, body, ev, action, base)
	if err != nil {
		return connectors.Event{}, err
	}
	e.InstallationID = ev.installationID()
	return e, nil
}

func mapIssue(host string, body []byte, ev *issuesEvent, action string, base connectors.Event) (connectors.Event, error) {
	issue := ev.Issue.issue()
	if issue == nil {
		return connectors.Event{}, malformed(base.EventName, "no issue")
	}
	mapped, known := issueActions[action]
	repo := repoName(ev.Repo.fullName(), issue)
	if !known || issue.IsPullRequest() {
		// Recorded and ignored; describe the entity when the payload allows
		// it, for the delivery's outcome.
		if issue.GetID() > 0 && issue.GetNumber() > 0 && repo != "" {
			e := describeIssue(host, issue, repo)
			e.Provider, e.EventName, e.Action = base.Provider, base.EventName, connectors.ActionIgnore
			return e, nil
		}
		return base, nil
	}
	if err := checkIssue(issue, repo); err != nil {
		return connectors.Event{}, malformed(base.EventName, "issue: %v", err)
	}
	e := describeIssue(host, issue, repo)
	e.Provider, e.EventName, e.Action = base.Provider, base.EventName, mapped

	switch action {
	case "transferred":
		// Sent for the old issue. The task follows it: ExternalID is the new
		// issue, PreviousExternalID the old one, and the event describes the
		// new issue (its source is the current one).
		var ch transferChanges
		if err := connectors.DecodeJSON(body, &ch); err != nil {
			return connectors.Event{}, malformed(base.EventName, "changes: %v", err)
		}
		if ch.Changes == nil || ch.Changes.NewIssue == nil {
			return connectors.Event{}, malformed(base.EventName, "no changes.new_issue")
		}
		newIssue := ch.Changes.NewIssue
		newRepo := repoName(ch.Changes.NewRepository.fullName(), newIssue)
		if err := checkIssue(newIssue, newRepo); err != nil {
			return connectors.Event{}, malformed(base.EventName, "changes.new_issue: %v", err)
		}
		old := e.ExternalID
		e = describeIssue(host, newIssue, newRepo)
		e.Provider, e.EventName, e.Action = base.Provider, base.EventName, connectors.ActionTransfer
		e.PreviousExternalID = old
		e.EntityKey = old
	case "opened":
		// Opened by a transfer: the new issue continues changes.old_issue.
		// Most openings are not transfers; skip the second decode of the
		// payload unless it holds one.
		if !ev.openedByTransfer() {
			break
		}
		var ch transferChanges
		if err := connectors.DecodeJSON(body, &ch); err != nil {
			return connectors.Event{}, malformed(base.EventName, "changes: %v", err)
		}
		if ch.Changes != nil && ch.Changes.OldIssue != nil {
			id := ch.Changes.OldIssue.GetID()
			if id <= 0 {
				return connectors.Event{}, malformed(base.EventName, "changes.old_issue: missing id")
			}
			old := externalID(host, connectors.KindIssue, id)
			e.PreviousExternalID = old
			e.EntityKey = old
		}
	}
	return e, nil
}

func checkIssue(issue *gh.Issue, repo string) error {
	switch {
	case issue.GetID() <= 0:
		return fmt.Errorf("missing id")
	case issue.GetNumber() <= 0:
		return fmt.Errorf("missing number")
	case repo == "":
		return fmt.Errorf("missing repository")
	}
	return nil
}

// repoName is the repository's "owner/repo", or, when the payload has no
// repository object, the one named by the issue's API repository_url.
func repoName(fullName string, issue *gh.Issue) string {
	if validRepo(fullName) {
		return fullName
	}
	if issue == nil {
		return ""
	}
	u, err := url.Parse(issue.GetRepositoryURL())
	if err != nil {
		return ""
	}
	if n, ok := strings.CutPrefix(u.Path, "/repos/"); ok && validRepo(n) {
		return n
	}
	return ""
}

func validRepo(n string) bool {
	owner, name, ok := strings.Cut(n, "/")
	return ok && owner != "" && name != "" && !strings.Contains(name, "/")
}

func externalID(host, kind string, id int64) string {
	return connectors.ProviderGitHub + ":" + host + ":" + kind + ":" + strconv.FormatInt(id, 10)
}

func labelNames(labels []*gh.Label) []string {
	names := make([]string, 0, len(labels))
	for _, l := range labels {
		if n := l.GetName(); n != "" {
			names = append(names, n)
		}
	}
	return names
}

func describeIssue(host string, issue *gh.Issue, repo string) connectors.Event {
	id := externalID(host, connectors.KindIssue, issue.GetID())
	return connectors.Event{
		Kind:        connectors.KindIssue,
		ExternalID:  id,
		EntityKey:   id,
		Title:       issue.GetTitle(),
		Description: issue.GetBody(),
		Labels:      labelNames(issue.Labels),
		Repository:  repo,
		Source: connectors.Source{
			Provider: connectors.ProviderGitHub,
			Kind:     connectors.KindIssue,
			Ref:      repo + "#" + strconv.Itoa(issue.GetNumber()),
			URL:      issue.GetHTMLURL(),
		},
		UpdatedAt: issue.GetUpdatedAt().Time.UTC(),
		Closed:    issue.GetState() == "closed",
	}
}

// pullRequestEvent is go-github's PullRequestEvent with only the members
// Parse reads, as issuesEvent is its IssuesEvent. A pull request carries
// its user, assignees, reviewers, milestone and, in head and base, two
// more repository objects; Parse reads sixteen members of it.
type pullRequestEvent struct {
	eventEnvelope
	PullRequest *pullRequestMembers `json:"pull_request,omitempty"`
}

// pullRequestMembers are the members of go-github's PullRequest that Parse
// reads; pullRequest gives them as a *gh.PullRequest.
type pullRequestMembers struct {
	ID        *int64         `json:"id,omitempty"`
	Number    *int           `json:"number,omitempty"`
	State     *string        `json:"state,omitempty"`
	Title     *string        `json:"title,omitempty"`
	Body      *string        `json:"body,omitempty"`
	HTMLURL   *string        `json:"html_url,omitempty"`
	Draft     *bool          `json:"draft,omitempty"`
	Merged    *bool          `json:"merged,omitempty"`
	MergedAt  *gh.Timestamp  `json:"merged_at,omitempty"`
	UpdatedAt *gh.Timestamp  `json:"updated_at,omitempty"`
	Labels    []*gh.Label    `json:"labels,omitempty"`
	User      *userLogin     `json:"user,omitempty"`
	Head      *branchMembers `json:"head,omitempty"`
	Base      *branchMembers `json:"base,omitempty"`
}

// userLogin is the one member of a user that Parse reads.
type userLogin struct {
	Login *string `json:"login,omitempty"`
}

// branchMembers are the members of a pull request's head or base that
// Parse reads.
type branchMembers struct {
	Ref  *string         `json:"ref,omitempty"`
	SHA  *string         `json:"sha,omitempty"`
	Repo *repositoryName `json:"repo,omitempty"`
}

func (m *pullRequestMembers) pullRequest() *gh.PullRequest {
	if m == nil {
		return nil
	}
	pr := &gh.PullRequest{ID: m.ID, Number: m.Number, State: m.State, Title: m.Title, Body: m.Body,
		HTMLURL: m.HTMLURL, Draft: m.Draft, Merged: m.Merged, MergedAt: m.MergedAt, UpdatedAt: m.UpdatedAt,
		Labels: m.Labels, Head: m.Head.branch(), Base: m.Base.branch()}
	if m.User != nil {
		pr.User = &gh.User{Login: m.User.Login}
	}
	return pr
}

func (b *branchMembers) branch() *gh.PullRequestBranch {
	if b == nil {
		return nil
	}
	br := &gh.PullRequestBranch{Ref: b.Ref, SHA: b.SHA}
	if b.Repo != nil {
		br.Repo = &gh.Repository{FullName: b.Repo.FullName}
	}
	return br
}

func parsePullRequest(host string, body []byte) (connectors.Event, error) {
	const name = "pull_request"
	ev := new(pullRequestEvent)
	if err := connectors.DecodeJSON(body, ev); err != nil {
		return connectors.Event{}, malformed(name, "%v", err)
	}
	action := ev.GetAction()
	base := connectors.Event{
		Provider:  connectors.ProviderGitHub,
		EventName: eventName(name, action),
		Action:    connectors.ActionIgnore,
	}
	e, err := mapPullRequest(host, ev, action, base)
	if err != nil {
		return connectors.Event{}, err
	}
	e.InstallationID = ev.installationID()
	return e, nil
}

func mapPullRequest(host string, ev *pullRequestEvent, action string, base connectors.Event) (connectors.Event, error) {
	pr := ev.PullRequest.pullRequest()
	if pr == nil {
		return connectors.Event{}, malformed(base.EventName, "no pull_request")
	}
	repo := ev.Repo.fullName()
	if !validRepo(repo) {
		repo = pr.GetBase().GetRepo().GetFullName()
	}
	valid := pr.GetID() > 0 && pr.GetNumber() > 0 && validRepo(repo)
	mapped, known := pullRequestActions[action]
	if !known {
		if valid {
			e := describePullRequest(host, pr, repo)
			e.Provider, e.EventName, e.Action = base.Provider, base.EventName, connectors.ActionIgnore
			return e, nil
		}
		return base, nil
	}
	switch {
	case pr.GetID() <= 0:
		return connectors.Event{}, malformed(base.EventName, "pull_request: missing id")
	case pr.GetNumber() <= 0:
		return connectors.Event{}, malformed(base.EventName, "pull_request: missing number")
	case !validRepo(repo):
		return connectors.Event{}, malformed(base.EventName, "missing repository")
	}
	e := describePullRequest(host, pr, repo)
	e.Provider, e.EventName, e.Action = base.Provider, base.EventName, mapped
	return e, nil
}

func describePullRequest(host string, pr *gh.PullRequest, repo string) connectors.Event {
	id := externalID(host, connectors.KindPullRequest, pr.GetID())
	merged := pr.GetMerged() || (pr.MergedAt != nil && !pr.MergedAt.IsZero())
	state := "open"
	switch {
	case merged:
		state = "merged"
	case pr.GetState() == "closed":
		state = "closed"
	}
	ref := repo + "#" + strconv.Itoa(pr.GetNumber())
	updated := pr.GetUpdatedAt().Time.UTC()
	c := &connectors.Contribution{
		Kind:       connectors.KindPullRequest,
		ID:         pr.GetID(),
		Number:     int64(pr.GetNumber()),
		Repository: repo,
		URL:        pr.GetHTMLURL(),
		Title:      pr.GetTitle(),
		Body:       pr.GetBody(),
		State:      state,
		Draft:      pr.GetDraft(),
		Merged:     merged,
		HeadBranch: pr.GetHead().GetRef(),
		BaseBranch: pr.GetBase().GetRef(),
		HeadSHA:    pr.GetHead().GetSHA(),
		Author:     pr.GetUser().GetLogin(),
		UpdatedAt:  updated,
		References: connectors.MergeReferences(
			connectors.GitHubClosingReferences(pr.GetBody(), host, repo),
			connectors.JiraKeyReferences(pr.GetTitle(), pr.GetHead().GetRef(), pr.GetBody()),
		),
	}
	if pr.MergedAt != nil {
		c.MergedAt = pr.MergedAt.Time.UTC()
	}
	return connectors.Event{
		Kind:        connectors.KindPullRequest,
		ExternalID:  id,
		EntityKey:   id,
		Title:       pr.GetTitle(),
		Description: pr.GetBody(),
		Labels:      labelNames(pr.Labels),
		Repository:  repo,
		Source: connectors.Source{
			Provider: connectors.ProviderGitHub,
			Kind:     connectors.KindPullRequest,
			Ref:      ref,
			URL:      pr.GetHTMLURL(),
		},
		UpdatedAt:    updated,
		Closed:       pr.GetState() == "closed" || merged,
		Contribution: c,
	}
}
