// Package jira is the Jira webhook adapter: it verifies X-Hub-Signature,
// names deliveries, and maps jira:issue_* deliveries (of each issue the
// members it reads, decoded into go-jira's jira.Issue) to connectors.Event.
package jira

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	jira "github.com/andygrunwald/go-jira"

	"github.com/trackergateway/gateway/connectors"
)

// Header names of Jira webhook deliveries.
const (
	HeaderSignature  = "X-Hub-Signature"
	HeaderIdentifier = "X-Atlassian-Webhook-Identifier"
	// HeaderAuthorization may carry credentials of Jira setups that
	// authenticate webhooks that way; it is never stored or shown.
	HeaderAuthorization = "Authorization"
)

// Jira webhook events the adapter maps.
const (
	EventIssueCreated = "jira:issue_created"
	EventIssueUpdated = "jira:issue_updated"
	EventIssueDeleted = "jira:issue_deleted"
)

// Adapter implements connectors.Adapter for Jira. The zero value is ready
// to use.
type Adapter struct{}

var (
	_ connectors.Adapter         = Adapter{}
	_ connectors.HeaderDescriber = Adapter{}
)

// Provider returns "jira".
func (Adapter) Provider() string { return connectors.ProviderJira }

// Verify checks X-Hub-Signature ("<method>=<hex>"): the method must be
// sha256 (others: ErrUnsupportedSignature), the hex an HMAC-SHA256 of the
// body under one of secrets (constant time); every value of it the request
// carries must verify. Errors are connectors.VerifyError.
func (Adapter) Verify(header http.Header, body []byte, secrets [][]byte) error {
	sigs := connectors.SignatureValues(header, HeaderSignature)
	if len(sigs) == 0 {
		return connectors.MissingSignature(HeaderSignature)
	}
	for _, sig := range sigs {
		method, hexSig, ok := strings.Cut(sig, "=")
		switch {
		case !ok:
			return connectors.SignatureMismatch(HeaderSignature)
		case !strings.EqualFold(strings.TrimSpace(method), "sha256"):
			return connectors.UnsupportedSignature(HeaderSignature+" with a method other than sha256", "sha256=<hex>")
		case connectors.VerifyHMACSHA256(strings.TrimSpace(hexSig), body, secrets) != nil:
			return connectors.SignatureMismatch(HeaderSignature)
		}
	}
	return nil
}

// DeliveryKey is X-Atlassian-Webhook-Identifier (stable across retries),
// else the SHA-256 of the body (Jira Data Center sends no identifier).
func (Adapter) DeliveryKey(header http.Header, body []byte) string {
	if id := strings.TrimSpace(header.Get(HeaderIdentifier)); id != "" {
		return id
	}
	return connectors.BodyDeliveryKey(body)
}

// EventName returns "jira": Jira sends no event header; the event name
// (webhookEvent) is in the body, and Parse puts it in Event.EventName.
func (Adapter) EventName(http.Header) string { return connectors.ProviderJira }

// SecretHeaders lists the signature and authorization headers.
func (Adapter) SecretHeaders() []string { return []string{HeaderSignature, HeaderAuthorization} }

// DeliveryHeaders: Jira Cloud names itself in
// X-Atlassian-Webhook-Identifier; Jira Data Center sends no header of its
// own, and the event is in the body, so nothing is required.
func (Adapter) DeliveryHeaders() connectors.DeliveryHeaders { return deliveryHeaders }

// deliveryHeaders is shared by every call: the receiver asks on every request.
var deliveryHeaders = connectors.DeliveryHeaders{Title: "Jira", Identifying: []string{HeaderIdentifier}}

// Sign sets X-Hub-Signature ("sha256=<hex>"), Content-Type, and
// X-Atlassian-Webhook-Identifier (random) when absent. header must not be
// nil.
func (Adapter) Sign(header http.Header, body []byte, secret []byte) {
	header.Set("Content-Type", "application/json")
	header.Set(HeaderSignature, "sha256="+connectors.HMACSHA256Hex(secret, body))
	if header.Get(HeaderIdentifier) == "" {
		header.Set(HeaderIdentifier, connectors.NewUUID())
	}
}

// Webhook is a Jira issue webhook body. Issue is go-jira's jira.Issue; the
// webhook's changelog is a single history entry ({"id", "items"}), which is
// go-jira's ChangelogHistory (jira.Changelog is the REST API's list of
// histories and would drop the items).
type Webhook struct {
	Timestamp          int64                  `json:"timestamp"` // ms since the epoch
	WebhookEvent       string                 `json:"webhookEvent"`
	IssueEventTypeName string                 `json:"issue_event_type_name"`
	Issue              *jira.Issue            `json:"issue"`
	Changelog          *jira.ChangelogHistory `json:"changelog"`
}

// rawWebhook splits the body so that a part go-jira cannot decode (a time or
// a field in a format it does not expect) does not lose the rest.
type rawWebhook struct {
	Timestamp          json.Number     `json:"-"` // from RawTimestamp
	RawTimestamp       json.RawMessage `json:"timestamp"`
	WebhookEvent       string          `json:"webhookEvent"`
	IssueEventTypeName string          `json:"issue_event_type_name"`
	User               json.RawMessage `json:"user"`
	Issue              json.RawMessage `json:"issue"`
	Changelog          json.RawMessage `json:"changelog"`
}

// decodeEnvelope splits the body with connectors.DecodeJSON, which skips
// encoding/json's pass validating the whole body first, and then reads
// the timestamp as encoding/json reads a json.Number (a number, or a
// string holding one), which the faster decoder does not know
// (FuzzDecodeEnvelope holds both to encoding/json's decode of the same
// fields).
func decodeEnvelope(body []byte) (*rawWebhook, error) {
	var raw rawWebhook
	if err := connectors.DecodeJSON(body, &raw); err != nil {
		return nil, err
	}
	if len(raw.RawTimestamp) > 0 {
		if err := json.Unmarshal(raw.RawTimestamp, &raw.Timestamp); err != nil {
			return nil, fmt.Errorf("timestamp: %w", err)
		}
	}
	return &raw, nil
}

// decode decodes the envelope's parts: the timestamp must be numeric (or
// absent); issue and changelog are decoded with go-jira's types and,
// where those refuse the data, with a lenient decoder that keeps what the
// gateway needs (see decodeIssue). A part that neither can decode is an
// error only for the issue.
func (raw *rawWebhook) decode() (*Webhook, error) {
	w := &Webhook{WebhookEvent: raw.WebhookEvent, IssueEventTypeName: raw.IssueEventTypeName}
	if raw.Timestamp != "" {
		ts, err := raw.Timestamp.Int64()
		if err != nil {
			// 1.550286940507e12 is still a timestamp.
			f, ferr := raw.Timestamp.Float64()
			if ferr != nil || f > 1<<62 || f < -(1<<62) {
				return nil, fmt.Errorf("timestamp: %v", err)
			}
			ts = int64(f)
		}
		w.Timestamp = ts
	}
	if !isNull(raw.Changelog) {
		var c jira.ChangelogHistory
		if err := json.Unmarshal(raw.Changelog, &c); err == nil {
			w.Changelog = &c
		} else if c, ok := lenientChangelog(raw.Changelog); ok {
			w.Changelog = c
		}
	}
	if !isNull(raw.Issue) {
		issue, err := decodeIssue(raw.Issue)
		if err != nil {
			return nil, fmt.Errorf("issue: %v", err)
		}
		w.Issue = issue
	}
	return w, nil
}

func isNull(m json.RawMessage) bool {
	m = bytes.TrimSpace(m)
	return len(m) == 0 || bytes.Equal(m, []byte("null"))
}

// decodeIssue decodes the members of issue JSON that Parse reads into a
// jira.Issue, in go-jira's types (issueMembers). go-jira refuses some data
// real Jira sites send: its jira.Time accepts only
// "2006-01-02T15:04:05.999-0700" (no "Z", no "+00:00"), description must be a
// string (the v3 API's Atlassian Document Format is an object), id must be a
// string. When those members do not decode so, they are decoded leniently
// into a jira.Issue instead.
func decodeIssue(data json.RawMessage) (issue *jira.Issue, err error) {
	var members issueMembers
	if err := connectors.DecodeJSON(data, &members); err == nil {
		return members.issue(), nil
	}
	var lenient lenientIssue
	if err := json.Unmarshal(data, &lenient); err != nil {
		return nil, err
	}
	issue = &jira.Issue{
		ID:   scalarString(lenient.ID),
		Key:  scalarString(lenient.Key),
		Self: scalarString(lenient.Self),
	}
	if f := lenient.Fields; f != nil {
		fields := &jira.IssueFields{
			Summary:     scalarString(f.Summary),
			Description: scalarString(f.Description),
		}
		var labels []string
		if json.Unmarshal(f.Labels, &labels) == nil {
			fields.Labels = labels
		}
		if f.Project != nil {
			fields.Project.Key = scalarString(f.Project.Key)
		}
		if !isNull(f.Resolution) {
			var r jira.Resolution
			_ = json.Unmarshal(f.Resolution, &r)
			fields.Resolution = &r
		}
		if f.Status != nil {
			fields.Status = &jira.Status{Name: scalarString(f.Status.Name)}
			if f.Status.StatusCategory != nil {
				fields.Status.StatusCategory.Key = scalarString(f.Status.StatusCategory.Key)
			}
		}
		issue.Fields = fields
	}
	return issue, nil
}

// issueMembers is the part of an issue Parse reads, in go-jira's types,
// decoded with connectors.DecodeJSON. Decoding a whole jira.Issue cost
// more than the rest of a delivery's parse: IssueFields' own decoder
// decodes every field twice, the second time into a map that collects
// the site's custom fields, which the gateway never reads (185 µs and 600
// allocations for the issue of a 9.6 KB delivery; docs/benchmarks.md,
// "Jira and GitLab payloads decoded for what Parse reads"). Whatever a
// whole jira.Issue decodes, these members decode to the same values
// (FuzzDecodeIssue); an issue whose other fields go-jira would refuse
// decodes here as well.
type issueMembers struct {
	ID     string        `json:"id"`
	Key    string        `json:"key"`
	Self   string        `json:"self"`
	Fields *fieldMembers `json:"fields"`
}

type fieldMembers struct {
	Project     jira.Project     `json:"project"`
	Resolution  *jira.Resolution `json:"resolution"`
	Updated     jira.Time        `json:"updated"`
	Description string           `json:"description"`
	Summary     string           `json:"summary"`
	Status      *jira.Status     `json:"status"`
	Labels      []string         `json:"labels"`
}

// issue is the jira.Issue holding the members.
func (m *issueMembers) issue() *jira.Issue {
	issue := &jira.Issue{ID: m.ID, Key: m.Key, Self: m.Self}
	if f := m.Fields; f != nil {
		issue.Fields = &jira.IssueFields{Project: f.Project, Resolution: f.Resolution, Updated: f.Updated,
			Description: f.Description, Summary: f.Summary, Status: f.Status, Labels: f.Labels}
	}
	return issue
}

// lenientIssue is the part of an issue the gateway uses, each value taken
// as it comes.
type lenientIssue struct {
	ID     json.RawMessage `json:"id"`
	Key    json.RawMessage `json:"key"`
	Self   json.RawMessage `json:"self"`
	Fields *struct {
		Summary     json.RawMessage `json:"summary"`
		Description json.RawMessage `json:"description"`
		Labels      json.RawMessage `json:"labels"`
		Project     *struct {
			Key json.RawMessage `json:"key"`
		} `json:"project"`
		Resolution json.RawMessage `json:"resolution"`
		Status     *struct {
			Name           json.RawMessage `json:"name"`
			StatusCategory *struct {
				Key json.RawMessage `json:"key"`
			} `json:"statusCategory"`
		} `json:"status"`
	} `json:"fields"`
}

// scalarString is a JSON string's value, a number's text, or "" for
// anything else (null, objects, arrays).
func scalarString(m json.RawMessage) string {
	m = bytes.TrimSpace(m)
	if len(m) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(m, &s) == nil {
		return s
	}
	var n json.Number
	if json.Unmarshal(m, &n) == nil {
		return n.String()
	}
	return ""
}

func lenientChangelog(data json.RawMessage) (*jira.ChangelogHistory, bool) {
	var c lenientHistory
	if json.Unmarshal(data, &c) != nil {
		return nil, false
	}
	h := &jira.ChangelogHistory{Id: scalarString(c.ID)}
	for _, it := range c.Items {
		field := scalarString(it.Field)
		if field == "" {
			field = scalarString(it.FieldID)
		}
		item := jira.ChangelogItems{
			Field:      field,
			FromString: scalarString(it.FromString),
			ToString:   scalarString(it.ToString),
		}
		if s := scalarString(it.From); s != "" {
			item.From = s
		}
		if s := scalarString(it.To); s != "" {
			item.To = s
		}
		h.Items = append(h.Items, item)
	}
	return h, true
}

type lenientHistory struct {
	ID    json.RawMessage `json:"id"`
	Items []struct {
		Field      json.RawMessage `json:"field"`
		FieldID    json.RawMessage `json:"fieldId"`
		From       json.RawMessage `json:"from"`
		FromString json.RawMessage `json:"fromString"`
		To         json.RawMessage `json:"to"`
		ToString   json.RawMessage `json:"toString"`
	} `json:"items"`
}

// Parse maps a delivery to an Event (docs/design.md "Events and actions"):
// jira:issue_created → create, jira:issue_updated → update (close when the
// changelog sets a resolution, reopen when it clears it),
// jira:issue_deleted → delete, anything else ignored. host is the Jira site
// ("acme.atlassian.net"). Errors wrap connectors.ErrMalformedPayload.
func (Adapter) Parse(host string, header http.Header, body []byte) (connectors.Event, error) {
	raw, err := decodeEnvelope(body)
	if err != nil {
		return connectors.Event{}, malformed("webhook", "%v", err)
	}
	e := connectors.Event{Provider: connectors.ProviderJira, EventName: raw.WebhookEvent}
	switch raw.WebhookEvent {
	case EventIssueCreated, EventIssueUpdated, EventIssueDeleted:
	default:
		// Comments, worklogs, sprints, …: recorded, not mapped, not decoded
		// further.
		e.Action = connectors.ActionIgnore
		if e.EventName == "" {
			e.EventName = connectors.ProviderJira
		}
		return e, nil
	}
	w, err := raw.decode()
	if err != nil {
		return connectors.Event{}, malformed(e.EventName, "%v", err)
	}
	switch w.WebhookEvent {
	case EventIssueCreated:
		e.Action = connectors.ActionCreate
	case EventIssueUpdated:
		e.Action = connectors.ActionUpdate
		switch resolutionChange(w.Changelog) {
		case resolutionSet:
			e.Action = connectors.ActionClose
		case resolutionCleared:
			e.Action = connectors.ActionReopen
		}
	case EventIssueDeleted:
		e.Action = connectors.ActionDelete
	}
	issue := w.Issue
	if issue == nil {
		return connectors.Event{}, malformed(e.EventName, "no issue")
	}
	id, err := strconv.ParseInt(strings.TrimSpace(issue.ID), 10, 64)
	if err != nil || id <= 0 {
		return connectors.Event{}, malformed(e.EventName, "issue.id %q is not a positive integer", issue.ID)
	}
	key := strings.TrimSpace(issue.Key)
	if key == "" {
		return connectors.Event{}, malformed(e.EventName, "issue.key missing")
	}
	ext := connectors.ProviderJira + ":" + host + ":" + connectors.KindIssue + ":" + strconv.FormatInt(id, 10)
	e.Kind = connectors.KindIssue
	e.ExternalID = ext
	e.EntityKey = ext
	e.Source = connectors.Source{
		Provider: connectors.ProviderJira,
		Kind:     connectors.KindIssue,
		Ref:      key,
		URL:      "https://" + host + "/browse/" + url.PathEscape(key),
	}
	e.Labels = []string{}
	if f := issue.Fields; f != nil {
		e.Title = f.Summary
		e.Description = f.Description
		for _, l := range f.Labels {
			if l != "" {
				e.Labels = append(e.Labels, l)
			}
		}
		e.Repository = f.Project.Key
		e.Closed = f.Resolution != nil || (f.Status != nil && f.Status.StatusCategory.Key == jira.StatusCategoryComplete)
		if w.Timestamp == 0 {
			e.UpdatedAt = time.Time(f.Updated).UTC()
		}
	}
	if e.Repository == "" {
		// The project key is the key's prefix ("PROJ-12" → "PROJ").
		if i := strings.LastIndexByte(key, '-'); i > 0 {
			e.Repository = key[:i]
		}
	}
	if w.Timestamp != 0 {
		e.UpdatedAt = time.UnixMilli(w.Timestamp).UTC()
	}
	switch e.Action {
	case connectors.ActionClose:
		e.Closed = true
	case connectors.ActionReopen:
		e.Closed = false
	}
	return e, nil
}

func malformed(event, format string, args ...any) error {
	return connectors.Malformed("parse jira "+event, format, args...)
}

type resolution int

const (
	resolutionUnchanged resolution = iota
	resolutionSet
	resolutionCleared
)

// resolutionChange reads the changelog's resolution item: set to a value
// (the issue was resolved) or to nothing (it was reopened).
func resolutionChange(c *jira.ChangelogHistory) resolution {
	if c == nil {
		return resolutionUnchanged
	}
	for _, item := range c.Items {
		if !strings.EqualFold(item.Field, "resolution") {
			continue
		}
		if to := changelogValue(item.To); to != "" || item.ToString != "" {
			return resolutionSet
		}
		return resolutionCleared
	}
	return resolutionUnchanged
}

func changelogValue(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	default:
		return fmt.Sprint(v)
	}
}
