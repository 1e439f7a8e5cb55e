// Package linear is the Linear webhook adapter: it verifies
// Linear-Signature and the webhookTimestamp signed inside the body, names
// deliveries, maps "Issue" deliveries to connectors.Event, and turns issues
// read from Linear's GraphQL API into webhook-shaped deliveries for recovery
// (graphql.go).
package linear

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/trackergateway/gateway/connectors"
)

// Header names of Linear webhook deliveries.
const (
	HeaderSignature = "Linear-Signature"
	HeaderEvent     = "Linear-Event"
	HeaderDelivery  = "Linear-Delivery"
	// HeaderTimestamp is Linear's unsigned copy of the send time; Verify
	// never reads it (anyone can set it), only the body's webhookTimestamp.
	HeaderTimestamp = "Linear-Timestamp"
)

// The webhook types Parse maps; every other one (Comment, IssueLabel,
// Project, Cycle, Reaction, …) is ignored.
const (
	TypeIssue = "Issue"
	// TypeAttachment is a link attached to an issue; one whose URL is a
	// pull or merge request links that PR/MR to the issue's task.
	TypeAttachment = "Attachment"
)

// Bounds on the lists Parse takes from one delivery: far above real ones,
// so a hostile body cannot make one delivery write without end.
const (
	maxFormerRefs = 20
	maxLinks      = 50
)

// Linear's actions on an issue.
const (
	ActionCreate = "create"
	ActionUpdate = "update"
	ActionRemove = "remove"
)

// TimestampWindow is how far the signed webhookTimestamp may be from now,
// either way: Linear's own SDK refuses deliveries outside one minute.
const TimestampWindow = 60 * time.Second

// Adapter implements connectors.Adapter for Linear. The zero value is ready
// to use.
type Adapter struct {
	// Now is the clock Verify holds webhookTimestamp to; nil is time.Now.
	Now func() time.Time
}

var (
	_ connectors.Adapter         = Adapter{}
	_ connectors.Restamper       = Adapter{}
	_ connectors.HeaderDescriber = Adapter{}
)

func (a Adapter) now() time.Time {
	if a.Now == nil {
		return time.Now()
	}
	return a.Now()
}

// Provider returns "linear".
func (Adapter) Provider() string { return connectors.ProviderLinear }

// Verify checks Linear-Signature (the hex HMAC-SHA256 of the body) against
// each secret in constant time, then that the body's webhookTimestamp (Unix
// milliseconds, covered by the signature) is within TimestampWindow of now:
// a captured delivery replayed later is refused with
// connectors.ErrStaleTimestamp, and so is one whose webhookTimestamp is
// missing or not a number. The unsigned Linear-Timestamp header is not read.
//
// Every value of Linear-Signature the request carries must match. Errors
// are connectors.VerifyError.
func (a Adapter) Verify(header http.Header, body []byte, secrets [][]byte) error {
	sigs := connectors.SignatureValues(header, HeaderSignature)
	if len(sigs) == 0 {
		return connectors.MissingSignature(HeaderSignature)
	}
	for _, sig := range sigs {
		if connectors.VerifyHMACSHA256(sig, body, secrets) != nil {
			return connectors.SignatureMismatch(HeaderSignature)
		}
	}
	var signed struct {
		WebhookTimestamp *float64 `json:"webhookTimestamp"`
	}
	// Any text: a body whose strings are not valid UTF-8 is Parse's to
	// refuse, in the delivery's outcome, not a replay.
	if err := connectors.DecodeJSONAnyText(body, &signed); err != nil || signed.WebhookTimestamp == nil {
		return &connectors.VerifyError{Err: connectors.ErrStaleTimestamp,
			Reason: "missing timestamp: the signed body has no numeric webhookTimestamp"}
	}
	// In float milliseconds, so that no value overflows a conversion.
	skew := math.Abs(float64(a.now().UnixMilli()) - *signed.WebhookTimestamp)
	if skew > float64(TimestampWindow.Milliseconds()) {
		return &connectors.VerifyError{Err: connectors.ErrStaleTimestamp,
			Reason: fmt.Sprintf("timestamp outside the window: webhookTimestamp is more than %s from the gateway's clock", TimestampWindow)}
	}
	return nil
}

// DeliveryKey is Linear-Delivery (a UUID per delivery, kept on Linear's
// retries), else the SHA-256 of the body.
func (Adapter) DeliveryKey(header http.Header, body []byte) string {
	if id := strings.TrimSpace(header.Get(HeaderDelivery)); id != "" {
		return id
	}
	return connectors.BodyDeliveryKey(body)
}

// EventName returns the Linear-Event header (the body's type: "Issue",
// "Comment"), else "linear".
func (Adapter) EventName(header http.Header) string {
	if ev := strings.TrimSpace(header.Get(HeaderEvent)); ev != "" {
		return ev
	}
	return connectors.ProviderLinear
}

// SecretHeaders lists the signature header.
func (Adapter) SecretHeaders() []string { return []string{HeaderSignature} }

// DeliveryHeaders: Linear names itself in its Linear-* headers. Nothing is
// required: the body names the event, and a delivery without
// Linear-Delivery is keyed by the body's hash.
func (Adapter) DeliveryHeaders() connectors.DeliveryHeaders { return deliveryHeaders }

// deliveryHeaders is shared by every call: the receiver asks on every request.
var deliveryHeaders = connectors.DeliveryHeaders{
	Title:       "Linear",
	Identifying: []string{HeaderEvent, HeaderDelivery, HeaderSignature},
}

// Sign sets Content-Type and Linear-Signature, and when absent Linear-Event
// (the body's type) and Linear-Delivery (random). header must not be nil.
// The body's webhookTimestamp is what Verify checks: see Restamp.
func (Adapter) Sign(header http.Header, body []byte, secret []byte) {
	header.Set("Content-Type", "application/json")
	header.Set(HeaderSignature, connectors.HMACSHA256Hex(secret, body))
	if header.Get(HeaderEvent) == "" {
		if ev, ok := EventFromPayload(body); ok {
			header.Set(HeaderEvent, ev)
		}
	}
	if header.Get(HeaderDelivery) == "" {
		header.Set(HeaderDelivery, connectors.NewUUID())
	}
}

// Restamp returns body with its top-level webhookTimestamp set to now (Unix
// milliseconds), added when absent; every other member keeps its name,
// order and value. A stored payload is older than TimestampWindow, so
// gateway send restamps it before signing.
func (Adapter) Restamp(body []byte, now time.Time) ([]byte, error) {
	stamp := jsontext.Value(strconv.FormatInt(now.UnixMilli(), 10))
	dec := jsontext.NewDecoder(bytes.NewReader(body))
	var out bytes.Buffer
	enc := jsontext.NewEncoder(&out)
	tok, err := dec.ReadToken()
	if err != nil {
		return nil, fmt.Errorf("restamp: %w", err)
	}
	if tok.Kind() != '{' {
		return nil, errors.New("restamp: body is not a JSON object")
	}
	if err := enc.WriteToken(jsontext.BeginObject); err != nil {
		return nil, fmt.Errorf("restamp: %w", err)
	}
	stamped := false
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil {
			return nil, fmt.Errorf("restamp: %w", err)
		}
		name := tok.String() // before the next read voids tok
		value, err := dec.ReadValue()
		if err != nil {
			return nil, fmt.Errorf("restamp: %w", err)
		}
		// Case-insensitively, as Verify's decoder matches member names.
		if strings.EqualFold(name, "webhookTimestamp") {
			value, stamped = stamp, true
		}
		if err := enc.WriteToken(jsontext.String(name)); err != nil {
			return nil, fmt.Errorf("restamp: %w", err)
		}
		if err := enc.WriteValue(value); err != nil {
			return nil, fmt.Errorf("restamp: %w", err)
		}
	}
	if _, err := dec.ReadToken(); err != nil {
		return nil, fmt.Errorf("restamp: %w", err)
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return nil, errors.New("restamp: data after the JSON object")
	}
	if !stamped {
		if err := enc.WriteToken(jsontext.String("webhookTimestamp")); err != nil {
			return nil, fmt.Errorf("restamp: %w", err)
		}
		if err := enc.WriteValue(stamp); err != nil {
			return nil, fmt.Errorf("restamp: %w", err)
		}
	}
	if err := enc.WriteToken(jsontext.EndObject); err != nil {
		return nil, fmt.Errorf("restamp: %w", err)
	}
	return bytes.TrimSuffix(out.Bytes(), []byte("\n")), nil
}

// webhook is the part of a Linear webhook envelope Parse reads; data is
// decoded by type (issueData for "Issue").
type webhook struct {
	Action           string          `json:"action"`
	Type             string          `json:"type"`
	Data             json.RawMessage `json:"data"`
	WebhookTimestamp *float64        `json:"webhookTimestamp"`
}

// issueData is the part of an issue (the data of an "Issue" delivery) Parse
// reads. number is a GraphQL Float in Linear's schema.
type issueData struct {
	ID          string      `json:"id"`
	Identifier  string      `json:"identifier"`
	Number      float64     `json:"number"`
	Title       string      `json:"title"`
	Description string      `json:"description"`
	URL         string      `json:"url"`
	UpdatedAt   string      `json:"updatedAt"`
	ArchivedAt  *string     `json:"archivedAt"`
	State       *stateData  `json:"state"`
	Team        *teamData   `json:"team"`
	Labels      []labelData `json:"labels"`
	// PreviousIdentifiers are the identifiers the issue had before team
	// moves.
	PreviousIdentifiers []string `json:"previousIdentifiers"`
	// Attachments is not in Linear's Issue webhook: recovery's deliveries
	// (Delivery) carry the issue's attachments here, read from the API.
	Attachments []attachmentData `json:"attachments"`
}

// attachmentData is the part of an attachment (the data of an
// "Attachment" delivery, and an issue's attachments in recovery's
// deliveries) Parse reads.
type attachmentData struct {
	ID         string  `json:"id"`
	IssueID    string  `json:"issueId,omitempty"`
	URL        string  `json:"url"`
	UpdatedAt  string  `json:"updatedAt"`
	ArchivedAt *string `json:"archivedAt,omitempty"`
}

type stateData struct {
	Type string `json:"type"`
}

type teamData struct {
	Key string `json:"key"`
}

type labelData struct {
	Name string `json:"name"`
}

// decodeWebhook decodes the envelope and, for an "Issue" or "Attachment"
// delivery, its data, with connectors.DecodeJSON (FuzzDecodeWebhook holds
// them to encoding/json's decode of the same members). issue is nil but for
// issues, attachment but for attachments.
func decodeWebhook(body []byte) (w *webhook, issue *issueData, attachment *attachmentData, err error) {
	w = &webhook{}
	if err := connectors.DecodeJSON(body, w); err != nil {
		return nil, nil, nil, err
	}
	if isNull(w.Data) {
		return w, nil, nil, nil
	}
	switch w.Type {
	case TypeIssue:
		issue = &issueData{}
		if err := connectors.DecodeJSON(w.Data, issue); err != nil {
			return nil, nil, nil, fmt.Errorf("data: %w", err)
		}
	case TypeAttachment:
		attachment = &attachmentData{}
		if err := connectors.DecodeJSON(w.Data, attachment); err != nil {
			return nil, nil, nil, fmt.Errorf("data: %w", err)
		}
	}
	return w, issue, attachment, nil
}

func isNull(m json.RawMessage) bool {
	m = bytes.TrimSpace(m)
	return len(m) == 0 || bytes.Equal(m, []byte("null"))
}

// Parse maps a delivery to an Event (docs/design.md "Events and actions").
// EventName is type "." action ("Issue.create"). Issue create → create,
// update → update, remove (Linear sends it when an issue is deleted or
// trashed) → delete; any other action on an issue is an update, since the
// data always holds the issue's whole current state. Every other type is
// ignored. host is the workspace's URL key ("acme" of
// https://linear.app/acme). Errors wrap connectors.ErrMalformedPayload.
//
// The external ID is built from the issue's UUID, never its identifier
// ("ENG-123"): moving the issue to another team gives it a new identifier
// (the old one goes to previousIdentifiers), which arrives as an ordinary
// update that changes Source.Ref and Repository while the task keeps its
// identity.
func (Adapter) Parse(host string, header http.Header, body []byte) (connectors.Event, error) {
	w, issue, attachment, err := decodeWebhook(body)
	if err != nil {
		return connectors.Event{}, malformed("webhook", "%v", err)
	}
	if w.Type == "" {
		return connectors.Event{}, malformed("webhook", "no type")
	}
	e := connectors.Event{Provider: connectors.ProviderLinear, EventName: w.Type}
	if w.Action != "" {
		e.EventName += "." + w.Action
	}
	switch w.Type {
	case TypeIssue:
	case TypeAttachment:
		return parseAttachment(host, w, attachment, e)
	default:
		// Comments, labels, projects, cycles, …: recorded, not mapped, not
		// decoded further.
		e.Action = connectors.ActionIgnore
		return e, nil
	}
	switch w.Action {
	case ActionCreate:
		e.Action = connectors.ActionCreate
	case ActionRemove:
		e.Action = connectors.ActionDelete
	default:
		e.Action = connectors.ActionUpdate
	}
	if issue == nil {
		return connectors.Event{}, malformed(e.EventName, "no data")
	}
	id := strings.TrimSpace(issue.ID)
	if id == "" {
		return connectors.Event{}, malformed(e.EventName, "data.id missing")
	}
	if err := checkID("data.id", id); err != nil {
		return connectors.Event{}, malformed(e.EventName, "%v", err)
	}
	var teamKey string
	if issue.Team != nil {
		teamKey = strings.TrimSpace(issue.Team.Key)
	}
	ref := strings.TrimSpace(issue.Identifier)
	if ref == "" {
		if teamKey == "" || issue.Number < 1 || issue.Number > 1<<53 || issue.Number != math.Trunc(issue.Number) {
			return connectors.Event{}, malformed(e.EventName, "data.identifier missing, and no team key and number to build it")
		}
		ref = teamKey + "-" + strconv.FormatInt(int64(issue.Number), 10)
	}
	if teamKey == "" {
		// The team key is the identifier's prefix ("ENG-123" → "ENG").
		if i := strings.LastIndexByte(ref, '-'); i > 0 {
			teamKey = ref[:i]
		} else {
			return connectors.Event{}, malformed(e.EventName, "data.team.key missing")
		}
	}
	ext := connectors.ProviderLinear + ":" + host + ":" + connectors.KindIssue + ":" + id
	e.Kind = connectors.KindIssue
	e.ExternalID = ext
	e.EntityKey = ext
	e.Source = connectors.Source{Provider: connectors.ProviderLinear, Kind: connectors.KindIssue, Ref: ref, URL: issue.URL}
	e.Repository = teamKey
	e.Title = issue.Title
	e.Description = issue.Description
	e.Labels = []string{}
	for _, l := range issue.Labels {
		if l.Name != "" {
			e.Labels = append(e.Labels, l.Name)
		}
	}
	// Closed in a completed or canceled state, and when archived: Linear
	// archives closed issues after a while and hides archived ones from
	// its views; unarchiving (archivedAt back to null) reopens the task
	// unless the state is closed.
	archived := issue.ArchivedAt != nil && *issue.ArchivedAt != ""
	e.Closed = archived || (issue.State != nil && (issue.State.Type == "completed" || issue.State.Type == "canceled"))
	e.UpdatedAt = changedAt(issue.UpdatedAt, w)
	for _, former := range issue.PreviousIdentifiers {
		if former = strings.TrimSpace(former); former != "" && former != ref && !slices.Contains(e.FormerRefs, former) &&
			len(e.FormerRefs) < maxFormerRefs {
			e.FormerRefs = append(e.FormerRefs, former)
		}
	}
	for _, a := range issue.Attachments {
		if l, ok := contributionLink(a, e.UpdatedAt); ok && len(e.Links) < maxLinks {
			e.Links = append(e.Links, l)
		}
	}
	return e, nil
}

// changedAt is the time of a change: the data's updatedAt, else the
// delivery's webhookTimestamp, else zero.
func changedAt(updatedAt string, w *webhook) time.Time {
	if t, err := time.Parse(time.RFC3339Nano, updatedAt); err == nil {
		return t.UTC()
	}
	if w.WebhookTimestamp != nil && *w.WebhookTimestamp > 0 && *w.WebhookTimestamp < 1<<53 {
		return time.UnixMilli(int64(*w.WebhookTimestamp)).UTC()
	}
	return time.Time{}
}

// contributionLink is attachment a as a link to a pull or merge request;
// ok is false when its URL names none. Its time is its own updatedAt, else
// fallback.
func contributionLink(a attachmentData, fallback time.Time) (connectors.ContributionLink, bool) {
	id := strings.TrimSpace(a.ID)
	l, ok := connectors.ParseContributionURL(a.URL)
	if !ok || id == "" {
		return connectors.ContributionLink{}, false
	}
	l.ID = id
	l.UpdatedAt = fallback
	if t, err := time.Parse(time.RFC3339Nano, a.UpdatedAt); err == nil {
		l.UpdatedAt = t.UTC()
	}
	return l, true
}

// parseAttachment maps an "Attachment" delivery: create and update of one
// whose URL is a pull or merge request link it to the issue's task
// (ActionLink); remove, or an update that archives it, unlinks it. Other
// attachments (documents, Slack threads, Sentry issues…) are ignored.
// The event is about the issue: its external ID and entity key are the
// issue's, so it is processed in order with the issue's deliveries.
func parseAttachment(host string, w *webhook, a *attachmentData, e connectors.Event) (connectors.Event, error) {
	if a == nil {
		return connectors.Event{}, malformed(e.EventName, "no data")
	}
	issueID := strings.TrimSpace(a.IssueID)
	if issueID == "" {
		return connectors.Event{}, malformed(e.EventName, "data.issueId missing")
	}
	if strings.TrimSpace(a.ID) == "" {
		return connectors.Event{}, malformed(e.EventName, "data.id missing")
	}
	for _, f := range []struct{ name, id string }{{"data.issueId", issueID}, {"data.id", a.ID}} {
		if err := checkID(f.name, f.id); err != nil {
			return connectors.Event{}, malformed(e.EventName, "%v", err)
		}
	}
	at := changedAt(a.UpdatedAt, w)
	l, ok := contributionLink(*a, at)
	if !ok {
		e.Action = connectors.ActionIgnore
		return e, nil
	}
	archived := a.ArchivedAt != nil && *a.ArchivedAt != ""
	switch {
	case w.Action == ActionRemove || archived:
		e.Action = connectors.ActionUnlink
		if archived {
			// The removal's own time, when it is later than the last edit.
			if t, err := time.Parse(time.RFC3339Nano, *a.ArchivedAt); err == nil && t.After(l.UpdatedAt) {
				l.UpdatedAt = t.UTC()
			}
		}
	case w.Action == ActionCreate || w.Action == ActionUpdate:
		e.Action = connectors.ActionLink
	default:
		e.Action = connectors.ActionIgnore
		return e, nil
	}
	ext := connectors.ProviderLinear + ":" + host + ":" + connectors.KindIssue + ":" + issueID
	e.Kind, e.ExternalID, e.EntityKey = connectors.KindIssue, ext, ext
	e.UpdatedAt = l.UpdatedAt
	e.Links = []connectors.ContributionLink{l}
	return e, nil
}

func malformed(event, format string, args ...any) error {
	return connectors.Malformed("parse linear "+event, format, args...)
}

// checkID refuses an ID with a control character (a NUL, say): no
// external ID may hold one, and PostgreSQL would refuse the NUL in the
// first query that names it, with a less clear reason than this.
func checkID(field, id string) error {
	if i := strings.IndexFunc(id, func(r rune) bool { return r <= 0x1f || r == 0x7f }); i >= 0 {
		return fmt.Errorf("%s contains a control character (U+%04X)", field, id[i])
	}
	return nil
}
