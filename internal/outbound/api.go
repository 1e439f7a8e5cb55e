package outbound

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/trackergateway/gateway/internal/events"
	"github.com/trackergateway/gateway/internal/failure"
	"github.com/trackergateway/gateway/internal/httpapi"
	"github.com/trackergateway/gateway/internal/store"
)

// API serves the subscription routes (admin or the workspace's token; a
// workspace or subscription the caller cannot see is a 404). Each route's
// work is a method taking the caller, which the console calls too.
type API struct {
	st        store.Store
	logger    *slog.Logger
	now       func() time.Time
	allowHTTP bool
}

// NewAPI returns the subscription API; allowHTTP is outbound.allow_http.
func NewAPI(st store.Store, logger *slog.Logger, now func() time.Time, allowHTTP bool) *API {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if now == nil {
		now = time.Now
	}
	return &API{st: st, logger: logger, now: func() time.Time { return now().UTC() }, allowHTTP: allowHTTP}
}

// MaxDescriptionBytes bounds a subscription's description.
const MaxDescriptionBytes = 1024

var (
	errWorkspaceNotFound    = failure.New(failure.NotFound, "workspace not found")
	errSubscriptionNotFound = failure.New(failure.NotFound, "subscription not found")
	errEventNotFound        = failure.New(failure.NotFound, "event not found")
)

// SubscriptionJSON is a subscription as the API shows it. Secret is set
// only when it was just made (create, rotate-secret); Types empty means
// every type.
type SubscriptionJSON struct {
	ID                      string     `json:"id"`
	WorkspaceID             string     `json:"workspace_id"`
	URL                     string     `json:"url"`
	Types                   []string   `json:"types"`
	Description             string     `json:"description"`
	Enabled                 bool       `json:"enabled"`
	DisabledReason          string     `json:"disabled_reason,omitempty"`
	Secret                  string     `json:"secret,omitempty"`
	PreviousSecretExpiresAt *time.Time `json:"previous_secret_expires_at,omitempty"`
	FailingSince            *time.Time `json:"failing_since,omitempty"`
	CreatedAt               time.Time  `json:"created_at"`
	UpdatedAt               time.Time  `json:"updated_at"`
}

// ToJSON is s as the API shows it, never with its secret.
func ToJSON(s store.Subscription, now time.Time) SubscriptionJSON {
	out := SubscriptionJSON{ID: s.ID, WorkspaceID: s.WorkspaceID, URL: s.URL, Types: s.Types, Description: s.Description,
		Enabled: s.Enabled, DisabledReason: s.DisabledReason, FailingSince: s.FailingSince,
		CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt}
	if out.Types == nil {
		out.Types = []string{}
	}
	if s.PreviousSecret != "" && s.PreviousSecretExpiresAt != nil && now.Before(*s.PreviousSecretExpiresAt) {
		out.PreviousSecretExpiresAt = s.PreviousSecretExpiresAt
	}
	return out
}

// DeliveryJSON is one event's delivery to a subscription.
type DeliveryJSON struct {
	EventID          string     `json:"event_id"`
	EventType        string     `json:"event_type"`
	TaskID           string     `json:"task_id"`
	Status           string     `json:"status"`
	Attempts         int        `json:"attempts"`
	LastResponseCode *int       `json:"last_response_code"`
	LastError        *string    `json:"last_error"`
	NextAttemptAt    *time.Time `json:"next_attempt_at"`
	LastAttemptAt    *time.Time `json:"last_attempt_at"`
	FinishedAt       *time.Time `json:"finished_at"`
	EventTimestamp   time.Time  `json:"event_timestamp"`
}

// DeliveryToJSON is d as the API shows it: the next attempt of an owed
// delivery only when one is scheduled (not while it waits behind an
// earlier event of its task or for its subscription to be enabled).
func DeliveryToJSON(d store.OutboundDelivery) DeliveryJSON {
	out := DeliveryJSON{EventID: events.FormatID(d.EventID), EventType: d.EventType, TaskID: d.TaskID, Status: d.Status,
		Attempts: d.Attempts, LastAttemptAt: d.LastAttemptAt, FinishedAt: d.FinishedAt, EventTimestamp: d.EventAt}
	if d.LastStatusCode != 0 {
		code := d.LastStatusCode
		out.LastResponseCode = &code
	}
	if d.LastError != "" {
		e := d.LastError
		out.LastError = &e
	}
	if !store.OutboundFinished(d.Status) && d.NextAttemptAt.Before(store.OutboundParked) {
		next := d.NextAttemptAt
		out.NextAttemptAt = &next
	}
	return out
}

func (a *API) serve(w http.ResponseWriter, r *http.Request, status int, fn func(ctx context.Context, p httpapi.Principal) (any, error)) {
	p, _ := httpapi.PrincipalFrom(r.Context())
	out, err := fn(r.Context(), p)
	if err != nil {
		httpapi.WriteError(w, r, a.logger, err)
		return
	}
	if out == nil {
		w.WriteHeader(status)
		return
	}
	httpapi.WriteJSON(w, status, out)
}

func vars(r *http.Request) (ws, sid string) {
	v := mux.Vars(r)
	return v["id"], v["sid"]
}

// visibleWorkspace returns the workspace when p may see it, else 404.
func (a *API) visibleWorkspace(ctx context.Context, p httpapi.Principal, id string) (store.Workspace, error) {
	if !p.CanSee(id) || !httpapi.ValidText(id) {
		return store.Workspace{}, errWorkspaceNotFound
	}
	ws, err := a.st.GetWorkspace(ctx, id)
	return ws, httpapi.Reword(err, errWorkspaceNotFound)
}

// Visible returns subscription sid of workspace ws when p may see it; the
// workspace's 404 or the subscription's otherwise. An empty ws takes the
// subscription's own (the console's pages name it by id alone).
func (a *API) Visible(ctx context.Context, p httpapi.Principal, ws, sid string) (store.Subscription, error) {
	if ws != "" {
		if _, err := a.visibleWorkspace(ctx, p, ws); err != nil {
			return store.Subscription{}, err
		}
	}
	if !httpapi.ValidText(sid) {
		return store.Subscription{}, errSubscriptionNotFound
	}
	s, err := a.st.GetSubscription(ctx, sid)
	if err != nil {
		return s, httpapi.Reword(err, errSubscriptionNotFound)
	}
	if (ws != "" && s.WorkspaceID != ws) || !p.CanSee(s.WorkspaceID) {
		return store.Subscription{}, errSubscriptionNotFound
	}
	return s, nil
}

// newSubscriptionID is "sub_" and 20 random hex digits.
func newSubscriptionID() string {
	var b [10]byte
	_, _ = rand.Read(b[:])
	return "sub_" + hex.EncodeToString(b[:])
}

// checkTypes validates event types, every unknown one named in one 400;
// duplicates are dropped, the order kept.
func checkTypes(ts []string) ([]string, error) {
	var unknown, out []string
	for _, t := range ts {
		switch {
		case !events.KnownType(t):
			unknown = append(unknown, t)
		case !slices.Contains(out, t):
			out = append(out, t)
		}
	}
	if len(unknown) > 0 {
		for i, u := range unknown {
			if !httpapi.ValidText(u) {
				unknown[i] = strings.ToValidUTF8(strings.ReplaceAll(u, "\x00", ""), "\uFFFD")
			}
		}
		return nil, failure.New(failure.Invalid, "unknown event types: %s (known: %s)", strings.Join(unknown, ", "), strings.Join(events.Types, ", "))
	}
	return out, nil
}

func (a *API) checkURL(raw string) error {
	if err := httpapi.CheckText("url", raw); err != nil {
		return err
	}
	if err := CheckURL(raw, a.allowHTTP); err != nil {
		return failure.Wrap(failure.Invalid, err, "%s", strings.TrimPrefix(err.Error(), ErrRefusedDestination.Error()+": "))
	}
	return nil
}

func checkDescription(d string) error {
	if err := httpapi.CheckText("description", d); err != nil {
		return err
	}
	if len(d) > MaxDescriptionBytes {
		return failure.New(failure.Invalid, "description is longer than %d bytes", MaxDescriptionBytes)
	}
	return nil
}

type createBody struct {
	URL         string   `json:"url"`
	Types       []string `json:"types"`
	Description string   `json:"description"`
}

// CreateSubscription creates a subscription (201, its secret shown once).
func (a *API) CreateSubscription(w http.ResponseWriter, r *http.Request) {
	ws, _ := vars(r)
	a.serve(w, r, http.StatusCreated, func(ctx context.Context, p httpapi.Principal) (any, error) {
		if _, err := a.visibleWorkspace(ctx, p, ws); err != nil {
			return nil, err
		}
		var body createBody
		if err := httpapi.DecodeJSON(w, r, &body); err != nil {
			return nil, err
		}
		return a.Create(ctx, p, ws, body.URL, body.Types, body.Description)
	})
}

// Create makes a subscription of workspace ws to url for types (empty:
// every type); the answer holds its secret, shown only here.
func (a *API) Create(ctx context.Context, p httpapi.Principal, ws, rawURL string, types []string, description string) (SubscriptionJSON, error) {
	if _, err := a.visibleWorkspace(ctx, p, ws); err != nil {
		return SubscriptionJSON{}, err
	}
	if rawURL == "" {
		return SubscriptionJSON{}, failure.New(failure.Invalid, "url is required")
	}
	if err := a.checkURL(rawURL); err != nil {
		return SubscriptionJSON{}, err
	}
	types, err := checkTypes(types)
	if err != nil {
		return SubscriptionJSON{}, err
	}
	if err := checkDescription(description); err != nil {
		return SubscriptionJSON{}, err
	}
	now := a.now()
	s := store.Subscription{ID: newSubscriptionID(), WorkspaceID: ws, URL: rawURL, Types: types, Description: description,
		Enabled: true, Secret: NewSecret(), CreatedAt: now, UpdatedAt: now}
	if err := a.st.InsertSubscription(ctx, s); err != nil {
		return SubscriptionJSON{}, err
	}
	a.logger.InfoContext(ctx, "subscription created", "subscription_id", s.ID, "workspace_id", ws, "by", p.Name)
	out := ToJSON(s, now)
	out.Secret = s.Secret
	return out, nil
}

// SubscriptionListJSON is a workspace's subscriptions.
type SubscriptionListJSON struct {
	Subscriptions []SubscriptionJSON `json:"subscriptions"`
}

// ListSubscriptions lists a workspace's subscriptions, oldest first.
func (a *API) ListSubscriptions(w http.ResponseWriter, r *http.Request) {
	ws, _ := vars(r)
	a.serve(w, r, http.StatusOK, func(ctx context.Context, p httpapi.Principal) (any, error) {
		subs, err := a.List(ctx, p, ws)
		if err != nil {
			return nil, err
		}
		out := SubscriptionListJSON{Subscriptions: make([]SubscriptionJSON, 0, len(subs))}
		for _, s := range subs {
			out.Subscriptions = append(out.Subscriptions, ToJSON(s, a.now()))
		}
		return out, nil
	})
}

// List returns workspace ws's subscriptions ("" : of every workspace p
// may see).
func (a *API) List(ctx context.Context, p httpapi.Principal, ws string) ([]store.Subscription, error) {
	if ws != "" {
		if _, err := a.visibleWorkspace(ctx, p, ws); err != nil {
			return nil, err
		}
	}
	subs, err := a.st.ListSubscriptions(ctx, ws)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(subs, func(s store.Subscription) bool { return !p.CanSee(s.WorkspaceID) }), nil
}

// GetSubscription shows one subscription (never its secret).
func (a *API) GetSubscription(w http.ResponseWriter, r *http.Request) {
	ws, sid := vars(r)
	a.serve(w, r, http.StatusOK, func(ctx context.Context, p httpapi.Principal) (any, error) {
		s, err := a.Visible(ctx, p, ws, sid)
		if err != nil {
			return nil, err
		}
		return ToJSON(s, a.now()), nil
	})
}

// Patch is PATCH's body: absent (nil) fields are left as they are.
type Patch struct {
	URL         *string   `json:"url"`
	Types       *[]string `json:"types"`
	Enabled     *bool     `json:"enabled"`
	Description *string   `json:"description"`
}

// UpdateSubscription changes a subscription's URL, types, description or
// enabled state.
func (a *API) UpdateSubscription(w http.ResponseWriter, r *http.Request) {
	ws, sid := vars(r)
	a.serve(w, r, http.StatusOK, func(ctx context.Context, p httpapi.Principal) (any, error) {
		if _, err := a.Visible(ctx, p, ws, sid); err != nil {
			return nil, err
		}
		var body Patch
		if err := httpapi.DecodeJSON(w, r, &body); err != nil {
			return nil, err
		}
		return a.Update(ctx, p, ws, sid, body)
	})
}

// Update applies a patch. Disabling parks the subscription's owed
// deliveries and stops its fan-out where it is; enabling clears the reason
// and the failing run and resumes from there, each task's next owed event
// due at once.
func (a *API) Update(ctx context.Context, p httpapi.Principal, ws, sid string, body Patch) (SubscriptionJSON, error) {
	if body.URL != nil {
		if err := a.checkURL(*body.URL); err != nil {
			return SubscriptionJSON{}, err
		}
	}
	var types []string
	if body.Types != nil {
		var err error
		if types, err = checkTypes(*body.Types); err != nil {
			return SubscriptionJSON{}, err
		}
	}
	if body.Description != nil {
		if err := checkDescription(*body.Description); err != nil {
			return SubscriptionJSON{}, err
		}
	}
	now := a.now()
	var out store.Subscription
	err := a.st.InTx(ctx, func(tx store.Queries) error {
		s, err := tx.LockSubscription(ctx, sid)
		if err != nil || s.WorkspaceID != ws {
			return errSubscriptionNotFound
		}
		if body.URL != nil {
			s.URL = *body.URL
		}
		if body.Types != nil {
			s.Types = types
		}
		if body.Description != nil {
			s.Description = *body.Description
		}
		was := s.Enabled
		if body.Enabled != nil {
			s.Enabled = *body.Enabled
			if s.Enabled {
				s.DisabledReason, s.FailingSince = "", nil
			} else if was {
				s.DisabledReason = ""
			}
		}
		s.UpdatedAt = now
		if err := tx.UpdateSubscription(ctx, s); err != nil {
			return err
		}
		out = s
		switch {
		case was && !s.Enabled:
			return tx.ParkSubscriptionDeliveries(ctx, s.ID)
		case !was && s.Enabled:
			return tx.ResumeSubscription(ctx, s.ID, now)
		}
		return nil
	})
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return SubscriptionJSON{}, errSubscriptionNotFound
		}
		return SubscriptionJSON{}, err
	}
	if body.Enabled != nil {
		_ = a.st.Notify(ctx, store.EventsChannel) // resume the fan-out
		_ = a.st.Notify(ctx, Channel)
	}
	return ToJSON(out, now), nil
}

// DeleteSubscription deletes a subscription and its deliveries (204).
func (a *API) DeleteSubscription(w http.ResponseWriter, r *http.Request) {
	ws, sid := vars(r)
	a.serve(w, r, http.StatusNoContent, func(ctx context.Context, p httpapi.Principal) (any, error) {
		s, err := a.Visible(ctx, p, ws, sid)
		if err != nil {
			return nil, err
		}
		if err := a.st.DeleteSubscription(ctx, s.ID); err != nil {
			return nil, httpapi.Reword(err, errSubscriptionNotFound)
		}
		a.logger.InfoContext(ctx, "subscription deleted", "subscription_id", s.ID, "workspace_id", s.WorkspaceID, "by", p.Name)
		return nil, nil
	})
}

// RotateSecret gives a subscription a new secret (shown once, in the
// answer); the current one keeps signing beside it for RotationOverlap.
func (a *API) RotateSecret(w http.ResponseWriter, r *http.Request) {
	ws, sid := vars(r)
	a.serve(w, r, http.StatusOK, func(ctx context.Context, p httpapi.Principal) (any, error) {
		if _, err := a.Visible(ctx, p, ws, sid); err != nil {
			return nil, err
		}
		now := a.now()
		var out store.Subscription
		err := a.st.InTx(ctx, func(tx store.Queries) error {
			s, err := tx.LockSubscription(ctx, sid)
			if err != nil || s.WorkspaceID != ws {
				return errSubscriptionNotFound
			}
			expires := now.Add(RotationOverlap)
			s.PreviousSecret, s.PreviousSecretExpiresAt, s.Secret = s.Secret, &expires, NewSecret()
			s.UpdatedAt = now
			out = s
			return tx.UpdateSubscription(ctx, s)
		})
		if err != nil {
			return nil, err
		}
		a.logger.InfoContext(ctx, "subscription secret rotated", "subscription_id", out.ID, "by", p.Name)
		j := ToJSON(out, now)
		j.Secret = out.Secret
		return j, nil
	})
}

// DeliveryListJSON is a page of a subscription's deliveries, newest event
// first.
type DeliveryListJSON struct {
	Deliveries []DeliveryJSON `json:"deliveries"`
	NextCursor string         `json:"next_cursor,omitempty"`
}

// ListDeliveries pages through a subscription's deliveries (query:
// status, limit, cursor).
func (a *API) ListDeliveries(w http.ResponseWriter, r *http.Request) {
	ws, sid := vars(r)
	a.serve(w, r, http.StatusOK, func(ctx context.Context, p httpapi.Principal) (any, error) {
		s, err := a.Visible(ctx, p, ws, sid)
		if err != nil {
			return nil, err
		}
		q := r.URL.Query()
		limit, err := httpapi.ParsePageLimit(q.Get("limit"))
		if err != nil {
			return nil, err
		}
		ds, next, err := a.Deliveries(ctx, s.ID, q.Get("status"), limit, q.Get("cursor"))
		if err != nil {
			return nil, err
		}
		out := DeliveryListJSON{Deliveries: make([]DeliveryJSON, 0, len(ds)), NextCursor: next}
		for _, d := range ds {
			out.Deliveries = append(out.Deliveries, DeliveryToJSON(d))
		}
		return out, nil
	})
}

// Deliveries returns a page of a subscription the caller may see (Visible)
// and the next page's cursor ("" on the last).
func (a *API) Deliveries(ctx context.Context, sid, status string, limit int, cursor string) ([]store.OutboundDelivery, string, error) {
	if status != "" && !slices.Contains(store.OutboundStatuses, status) {
		if err := httpapi.CheckText("status", status); err != nil {
			return nil, "", err
		}
		return nil, "", failure.New(failure.Invalid, "status must be one of %s", strings.Join(store.OutboundStatuses, ", "))
	}
	page := store.OutboundDeliveryPage{SubscriptionID: sid, Status: status, Limit: limit + 1}
	if cursor != "" {
		id, err := events.ParseID(cursor)
		if err != nil {
			return nil, "", failure.New(failure.Invalid, "malformed cursor")
		}
		page.BeforeEventID = id
	}
	ds, err := a.st.ListOutboundDeliveries(ctx, page)
	if err != nil {
		return nil, "", err
	}
	ds, next := httpapi.TrimPage(ds, limit, func(d store.OutboundDelivery) string { return events.FormatID(d.EventID) })
	return ds, next, nil
}

type replayBody struct {
	EventID string `json:"event_id"`
	Since   string `json:"since"`
}

// ReplayJSON is a replay's answer: deliveries made due again (or sent for
// the first time), and ones skipped because they are still owed.
type ReplayJSON struct {
	Replayed int `json:"replayed"`
	Skipped  int `json:"skipped"`
}

// ReplayDeliveries sends events again, with the same webhook-id: one
// (event_id) or every event since a time (since: RFC 3339, or a duration
// before now such as 24h).
func (a *API) ReplayDeliveries(w http.ResponseWriter, r *http.Request) {
	ws, sid := vars(r)
	a.serve(w, r, http.StatusOK, func(ctx context.Context, p httpapi.Principal) (any, error) {
		s, err := a.Visible(ctx, p, ws, sid)
		if err != nil {
			return nil, err
		}
		var body replayBody
		if err := httpapi.DecodeJSON(w, r, &body); err != nil {
			return nil, err
		}
		return a.Replay(ctx, p, s, body.EventID, body.Since)
	})
}

// Replay replays on a subscription the caller may see (Visible).
func (a *API) Replay(ctx context.Context, p httpapi.Principal, s store.Subscription, eventID, since string) (ReplayJSON, error) {
	now := a.now()
	r := store.OutboundReplay{SubscriptionID: s.ID, Now: now}
	switch {
	case (eventID == "") == (since == ""):
		return ReplayJSON{}, failure.New(failure.Invalid, "exactly one of event_id and since is required")
	case eventID != "":
		id, err := events.ParseID(eventID)
		if err != nil {
			return ReplayJSON{}, failure.New(failure.Invalid, "event_id must be an event id (evt_ and 16 hex digits)")
		}
		r.EventID = id
	default:
		t, err := ParseSince(since, now)
		if err != nil {
			return ReplayJSON{}, err
		}
		r.Since = t
	}
	res, err := a.st.ReplayOutboundDeliveries(ctx, r)
	if err != nil {
		return ReplayJSON{}, httpapi.Reword(err, errEventNotFound)
	}
	if res.Replayed > 0 {
		_ = a.st.Notify(ctx, Channel)
	}
	a.logger.InfoContext(ctx, "subscription replay", "subscription_id", s.ID, "replayed", res.Replayed, "skipped", res.Skipped, "by", p.Name)
	return ReplayJSON{Replayed: res.Replayed, Skipped: res.Skipped}, nil
}

// ParseSince reads a replay's since: an RFC 3339 time, or a duration before
// now ("24h").
func ParseSince(v string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t.UTC(), nil
	}
	if d, err := time.ParseDuration(v); err == nil && d > 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, failure.New(failure.Invalid, "since must be an RFC 3339 time or a positive duration such as 24h")
}

// Lags reads, per subscription, the commit time of the oldest event it is
// owed and has not been delivered (zero: none).
func (a *API) Lags(ctx context.Context) (map[string]time.Time, error) {
	lags, err := a.st.SubscriptionLags(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]time.Time, len(lags))
	for _, l := range lags {
		out[l.SubscriptionID] = l.Oldest
	}
	return out, nil
}
