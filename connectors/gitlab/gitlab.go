// Package gitlab is the GitLab webhook adapter: it checks X-Gitlab-Token,
// names deliveries, and maps "Issue Hook" and "Merge Request Hook"
// deliveries (the members it reads, in client-go's types) to
// connectors.Event.
package gitlab

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	gitlab "gitlab.com/gitlab-org/api/client-go"

	"github.com/trackergateway/gateway/connectors"
)

// Header names GitLab sends with every delivery.
const (
	HeaderEvent          = "X-Gitlab-Event"
	HeaderToken          = "X-Gitlab-Token"
	HeaderIdempotencyKey = "Idempotency-Key"
	// HeaderEventUUID is never a delivery key: GitLab recycles it.
	HeaderEventUUID = "X-Gitlab-Event-UUID"
)

// Adapter implements connectors.Adapter for GitLab. The zero value is ready
// to use.
type Adapter struct{}

var (
	_ connectors.Adapter         = Adapter{}
	_ connectors.HeaderDescriber = Adapter{}
)

// Provider returns "gitlab".
func (Adapter) Provider() string { return connectors.ProviderGitLab }

// Verify compares X-Gitlab-Token, a plain shared secret, with each secret
// (SHA-256 digests, constant time); every value of it the request carries
// must match. Errors are connectors.VerifyError.
func (Adapter) Verify(header http.Header, body []byte, secrets [][]byte) error {
	// Not trimmed: the token is compared as sent.
	tokens := header.Values(HeaderToken)
	present := false
	for _, token := range tokens {
		if token == "" {
			continue
		}
		present = true
		if !connectors.EqualToken(token, secrets) {
			return connectors.SignatureMismatch(HeaderToken)
		}
	}
	if !present {
		return connectors.MissingSignature(HeaderToken)
	}
	return nil
}

// DeliveryKey is the Idempotency-Key header (reused by GitLab on resend),
// else the SHA-256 of the body; never X-Gitlab-Event-UUID.
func (Adapter) DeliveryKey(header http.Header, body []byte) string {
	if k := strings.TrimSpace(header.Get(HeaderIdempotencyKey)); k != "" {
		return k
	}
	return connectors.BodyDeliveryKey(body)
}

// EventName returns the X-Gitlab-Event header ("Issue Hook").
func (Adapter) EventName(header http.Header) string {
	return strings.TrimSpace(header.Get(HeaderEvent))
}

// SecretHeaders lists the token header.
func (Adapter) SecretHeaders() []string { return []string{HeaderToken} }

// DeliveryHeaders: GitLab always sends X-Gitlab-Event; it may leave out
// Idempotency-Key (older versions do), and then the body's hash keys the
// delivery.
func (Adapter) DeliveryHeaders() connectors.DeliveryHeaders { return deliveryHeaders }

// deliveryHeaders is shared by every call: the receiver asks on every request.
var deliveryHeaders = connectors.DeliveryHeaders{
	Title:       "GitLab",
	Identifying: []string{HeaderEvent, HeaderEventUUID, headerInstance, headerWebhookUUID},
	Required:    [][]string{{HeaderEvent}},
}

// Headers that name GitLab and nothing else reads.
const (
	headerInstance    = "X-Gitlab-Instance"
	headerWebhookUUID = "X-Gitlab-Webhook-UUID"
)

// Sign sets X-Gitlab-Token to secret, Content-Type, and Idempotency-Key to a
// random UUID when absent. The caller sets X-Gitlab-Event. header must not
// be nil.
func (Adapter) Sign(header http.Header, body []byte, secret []byte) {
	header.Set("Content-Type", "application/json")
	header.Set(HeaderToken, string(secret))
	if header.Get(HeaderIdempotencyKey) == "" {
		header.Set(HeaderIdempotencyKey, connectors.NewUUID())
	}
}

// objectKinds is the body's object_kind of each hook whose kind is fixed:
// the hooks the adapter maps, and the common ones it ignores. System, service
// and member hooks carry several kinds (or none) and are not checked.
var objectKinds = map[gitlab.EventType]string{
	gitlab.EventTypeIssue:         "issue",
	gitlab.EventConfidentialIssue: "issue",
	gitlab.EventTypeMergeRequest:  "merge_request",
	gitlab.EventTypeNote:          "note",
	gitlab.EventConfidentialNote:  "note",
	gitlab.EventTypePush:          "push",
	gitlab.EventTypeTagPush:       "tag_push",
	gitlab.EventTypePipeline:      "pipeline",
	gitlab.EventTypeJob:           "build",
	gitlab.EventTypeWikiPage:      "wiki_page",
	gitlab.EventTypeDeployment:    "deployment",
	gitlab.EventTypeRelease:       "release",
	gitlab.EventTypeFeatureFlag:   "feature_flag",
	gitlab.EventTypeEmoji:         "emoji",
	gitlab.EventTypeMilestone:     "milestone",
}

// Parse maps a delivery to an Event (docs/design.md "Events and actions"). Issue and
// merge request hooks are mapped, every other hook is ignored. Without an
// X-Gitlab-Event header the hook is named from the body's object_kind; with
// one, the body's object_kind must agree with it, so a merge request body
// sent as an issue hook never becomes an issue task. Errors wrap
// connectors.ErrMalformedPayload.
func (Adapter) Parse(host string, header http.Header, body []byte) (connectors.Event, error) {
	name := gitlab.EventType(strings.TrimSpace(header.Get(HeaderEvent)))
	want, checked := objectKinds[name]
	if name == "" || checked {
		var kind struct {
			ObjectKind string `json:"object_kind"`
		}
		if err := connectors.DecodeJSON(body, &kind); err != nil {
			if name == "" {
				return connectors.Event{}, malformed("delivery", "no %s header and %v", HeaderEvent, err)
			}
			return connectors.Event{}, malformed(string(name), "%v", err)
		}
		switch {
		case name == "" && kind.ObjectKind == "issue":
			name = gitlab.EventTypeIssue
		case name == "" && kind.ObjectKind == "merge_request":
			name = gitlab.EventTypeMergeRequest
		case name == "":
			return connectors.Event{}, malformed("delivery", "no %s header and unknown object_kind %q", HeaderEvent, kind.ObjectKind)
		case kind.ObjectKind != want:
			return connectors.Event{}, malformed(string(name), "object_kind %q does not match %s %q", kind.ObjectKind, HeaderEvent, name)
		}
	}
	switch name {
	case gitlab.EventTypeIssue, gitlab.EventConfidentialIssue:
		return parseIssue(host, name, body)
	case gitlab.EventTypeMergeRequest:
		return parseMergeRequest(host, name, body)
	default:
		return connectors.Event{Provider: connectors.ProviderGitLab, EventName: string(name), Action: connectors.ActionIgnore}, nil
	}
}

func malformed(event, format string, args ...any) error {
	return connectors.Malformed("parse gitlab "+event, format, args...)
}

func eventName(name gitlab.EventType, action string) string {
	if action == "" {
		return string(name)
	}
	return string(name) + "." + action
}

func externalID(host, kind string, id int64) string {
	return connectors.ProviderGitLab + ":" + host + ":" + kind + ":" + strconv.FormatInt(id, 10)
}

func labelTitles(top, attrs []*gitlab.EventLabel) []string {
	labels := top
	if labels == nil {
		labels = attrs
	}
	titles := make([]string, 0, len(labels))
	for _, l := range labels {
		if l != nil && l.Title != "" {
			titles = append(titles, l.Title)
		}
	}
	return titles
}

// issueEvent is client-go's IssueEvent with only the members Parse reads,
// in client-go's types. gitlab.ParseWebhook decodes the whole event with
// encoding/json: the project, the user, the changes and some forty
// attributes Parse never reads, after a pass that validates the body.
// Decoding the members with connectors.DecodeJSON takes a fifth of the
// time (docs/benchmarks.md, "Jira and GitLab payloads decoded for what
// Parse reads"). Whatever ParseWebhook decodes, these members decode to
// the same values (FuzzDecodeEvent); a body whose other members
// client-go's types would refuse decodes here as well.
type issueEvent struct {
	Project          projectMembers `json:"project"`
	ObjectAttributes struct {
		ID          int64                `json:"id"`
		IID         int64                `json:"iid"`
		Title       string               `json:"title"`
		Description string               `json:"description"`
		UpdatedAt   string               `json:"updated_at"`
		MovedToID   int64                `json:"moved_to_id"`
		URL         string               `json:"url"`
		State       string               `json:"state"`
		Action      string               `json:"action"`
		Labels      []*gitlab.EventLabel `json:"labels"`
	} `json:"object_attributes"`
	Labels []*gitlab.EventLabel `json:"labels"`
}

// projectMembers is the member of an event's project Parse reads.
type projectMembers struct {
	PathWithNamespace string `json:"path_with_namespace"`
}

// mergeEvent is client-go's MergeEvent with only the members Parse reads
// (see issueEvent).
type mergeEvent struct {
	User             *gitlab.EventUser `json:"user"`
	Project          projectMembers    `json:"project"`
	ObjectAttributes struct {
		ID             int64  `json:"id"`
		IID            int64  `json:"iid"`
		AuthorID       int64  `json:"author_id"`
		Title          string `json:"title"`
		Description    string `json:"description"`
		UpdatedAt      string `json:"updated_at"`
		URL            string `json:"url"`
		State          string `json:"state"`
		Action         string `json:"action"`
		SourceBranch   string `json:"source_branch"`
		TargetBranch   string `json:"target_branch"`
		Draft          bool   `json:"draft"`
		WorkInProgress bool   `json:"work_in_progress"`
		LastCommit     struct {
			ID string `json:"id"`
		} `json:"last_commit"`
		Labels []*gitlab.EventLabel `json:"labels"`
	} `json:"object_attributes"`
	Labels []*gitlab.EventLabel `json:"labels"`
}

func parseIssue(host string, name gitlab.EventType, body []byte) (connectors.Event, error) {
	var ev issueEvent
	if err := connectors.DecodeJSON(body, &ev); err != nil {
		return connectors.Event{}, malformed(string(name), "%v", err)
	}
	attrs := ev.ObjectAttributes
	e := connectors.Event{
		Provider:  connectors.ProviderGitLab,
		EventName: eventName(name, attrs.Action),
	}
	path := ev.Project.PathWithNamespace
	switch {
	case attrs.ID <= 0:
		return connectors.Event{}, malformed(e.EventName, "object_attributes.id missing")
	case attrs.IID <= 0:
		return connectors.Event{}, malformed(e.EventName, "object_attributes.iid missing")
	case path == "":
		return connectors.Event{}, malformed(e.EventName, "project.path_with_namespace missing")
	}
	id := externalID(host, connectors.KindIssue, attrs.ID)
	e.Kind = connectors.KindIssue
	e.ExternalID = id
	e.EntityKey = id
	e.Title = attrs.Title
	e.Description = attrs.Description
	e.Labels = labelTitles(ev.Labels, attrs.Labels)
	e.Repository = path
	e.Source = connectors.Source{
		Provider: connectors.ProviderGitLab,
		Kind:     connectors.KindIssue,
		Ref:      path + "#" + strconv.FormatInt(attrs.IID, 10),
		URL:      attrs.URL,
	}
	e.UpdatedAt = parseTime(attrs.UpdatedAt)
	e.Closed = attrs.State == "closed"

	switch attrs.Action {
	case "open":
		e.Action = connectors.ActionCreate
	case "reopen":
		e.Action = connectors.ActionReopen
		e.Closed = false
	case "close":
		e.Action = connectors.ActionClose
		e.Closed = true
	default: // "update", or no action
		e.Action = connectors.ActionUpdate
	}
	if attrs.MovedToID > 0 && (e.Action == connectors.ActionUpdate || e.Action == connectors.ActionClose) {
		// The issue was moved (GitLab closes the original and sets
		// moved_to_id): the task follows to the new issue. The payload does
		// not describe the new issue, so Title, Source, … are the old
		// issue's until the new issue's own deliveries update them. Closed
		// is about the new issue, which a move leaves open.
		e.Action = connectors.ActionTransfer
		e.PreviousExternalID = id
		e.ExternalID = externalID(host, connectors.KindIssue, attrs.MovedToID)
		e.EntityKey = id
		e.Closed = false
	}
	return e, nil
}

// mergedAt is read beside client-go's MergeEvent, which has no merged_at.
type mergedAt struct {
	ObjectAttributes struct {
		MergedAt json.RawMessage `json:"merged_at"`
	} `json:"object_attributes"`
}

func parseMergeRequest(host string, name gitlab.EventType, body []byte) (connectors.Event, error) {
	var ev mergeEvent
	if err := connectors.DecodeJSON(body, &ev); err != nil {
		return connectors.Event{}, malformed(string(name), "%v", err)
	}
	attrs := ev.ObjectAttributes
	e := connectors.Event{
		Provider:  connectors.ProviderGitLab,
		EventName: eventName(name, attrs.Action),
	}
	path := ev.Project.PathWithNamespace
	switch {
	case attrs.ID <= 0:
		return connectors.Event{}, malformed(e.EventName, "object_attributes.id missing")
	case attrs.IID <= 0:
		return connectors.Event{}, malformed(e.EventName, "object_attributes.iid missing")
	case path == "":
		return connectors.Event{}, malformed(e.EventName, "project.path_with_namespace missing")
	}

	updated := parseTime(attrs.UpdatedAt)
	state := "open" // "opened", and "locked" (an MR being merged)
	switch attrs.State {
	case "closed":
		state = "closed"
	case "merged":
		state = "merged"
	}
	switch attrs.Action {
	case "open":
		e.Action = connectors.ActionCreate
	case "reopen":
		e.Action = connectors.ActionReopen
		state = "open"
	case "close":
		e.Action = connectors.ActionClose
		state = "closed"
	case "merge":
		e.Action = connectors.ActionClose
		state = "merged"
	default: // update, approved, unapproved, approval, unapproval, none
		e.Action = connectors.ActionUpdate
	}
	merged := state == "merged"
	var mergedTime time.Time
	if merged {
		var m mergedAt
		if json.Unmarshal(body, &m) == nil {
			var s string
			if json.Unmarshal(m.ObjectAttributes.MergedAt, &s) == nil {
				mergedTime = parseTime(s)
			}
		}
		if mergedTime.IsZero() && attrs.Action == "merge" {
			// GitLab's merge request hook carries no merged_at; the
			// merge event's updated_at is the time of the merge.
			mergedTime = updated
		}
	}
	// The hook's user is whoever triggered the event; it is the author only
	// when its id is the MR's author_id.
	author := ""
	if ev.User != nil && (attrs.AuthorID == 0 || ev.User.ID == attrs.AuthorID) {
		author = ev.User.Username
	}

	ref := path + "!" + strconv.FormatInt(attrs.IID, 10)
	id := externalID(host, connectors.KindMergeRequest, attrs.ID)
	e.Kind = connectors.KindMergeRequest
	e.ExternalID = id
	e.EntityKey = id
	e.Title = attrs.Title
	e.Description = attrs.Description
	e.Labels = labelTitles(ev.Labels, attrs.Labels)
	e.Repository = path
	e.Source = connectors.Source{
		Provider: connectors.ProviderGitLab,
		Kind:     connectors.KindMergeRequest,
		Ref:      ref,
		URL:      attrs.URL,
	}
	e.UpdatedAt = updated
	e.Closed = state != "open"
	e.Contribution = &connectors.Contribution{
		Kind:       connectors.KindMergeRequest,
		ID:         attrs.ID,
		Number:     attrs.IID,
		Repository: path,
		URL:        attrs.URL,
		Title:      attrs.Title,
		Body:       attrs.Description,
		State:      state,
		Draft:      attrs.Draft || attrs.WorkInProgress,
		Merged:     merged,
		MergedAt:   mergedTime,
		HeadBranch: attrs.SourceBranch,
		BaseBranch: attrs.TargetBranch,
		HeadSHA:    attrs.LastCommit.ID,
		Author:     author,
		UpdatedAt:  updated,
		References: connectors.MergeReferences(
			connectors.GitLabClosingReferences(attrs.Description, host, path),
			connectors.JiraKeyReferences(attrs.Title, attrs.SourceBranch, attrs.Description),
		),
	}
	return e, nil
}

// timeLayouts are the formats GitLab uses in hook payloads: ISO 8601
// ("2013-12-03T17:15:43Z", "2013-12-03T17:15:43.123+02:00") and, in older
// versions and in "changes", "2013-12-03 17:15:43 UTC". client-go leaves
// object_attributes.created_at/updated_at as plain strings (GitLab issue
// #21468), so the adapter parses them.
var timeLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02 15:04:05 MST",
	"2006-01-02 15:04:05 -0700",
	"2006-01-02T15:04:05-0700",
	"2006-01-02T15:04:05.999999999-0700",
	"2006-01-02 15:04:05",
}

// parseTime returns the UTC time of s, or the zero time (unknown) when s is
// empty or in no known format.
func parseTime(s string) time.Time {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}
	}
	for _, layout := range timeLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC()
		}
	}
	return time.Time{}
}
