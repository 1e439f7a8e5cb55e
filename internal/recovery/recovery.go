// Package recovery finds webhook deliveries a provider failed to make to
// the gateway and asks the provider to send them again, exactly once
// (docs/design.md, "Missed deliveries"). GitHub does not retry a failed
// delivery; it keeps three days of them and redelivers one on request.
// GitLab keeps recent hook events and resends one on request.
//
// A delivery is missing when every attempt the provider made failed and
// the inbox does not hold it. Each redelivery request is recorded durably
// (store.ClaimRedelivery) in its own commit before the provider is asked,
// unique per connection, hook and GUID: repeated runs, the background job
// and several replicas never ask twice, and a crash after asking cannot
// lead to a second ask. A request the provider then fails to accept is
// reported and kept, never retried automatically.
package recovery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/trackergateway/gateway/connectors"
	"github.com/trackergateway/gateway/connectors/providers"
	"github.com/trackergateway/gateway/internal/config"
	"github.com/trackergateway/gateway/internal/failure"
	"github.com/trackergateway/gateway/internal/metrics"
	"github.com/trackergateway/gateway/internal/providerapi"
	"github.com/trackergateway/gateway/internal/store"
)

// Windows of a run.
const (
	// MaxWindow is how far back a run may look: GitHub keeps three days
	// of hook deliveries.
	MaxWindow = 72 * time.Hour
	// DefaultWindow is a run's window when none is given.
	DefaultWindow = 24 * time.Hour
)

// Bounds of a run: the provider's API is untrusted input, so no answer
// it gives keeps a run going without end (docs/design.md, "Missed
// deliveries"). A run that reaches one stops and says so in Unfinished.
const (
	// DefaultMaxPages is the most pages of one hook's deliveries a run
	// reads: 200 pages of 100, more than a busy hook gets in three days.
	DefaultMaxPages = 200
	// DefaultMaxRun bounds a run asked for through the API or the
	// console: it answers within the server's 60 s write timeout.
	DefaultMaxRun = 45 * time.Second
	// MaxBackgroundRun bounds a background run; a shorter recover_every
	// bounds it to one interval.
	MaxBackgroundRun = 10 * time.Minute
)

// Why a run stopped before it finished a hook (Unfinished.Reason).
const (
	// StopRepeatedCursor: the provider gave as the next page one the run
	// had read already.
	StopRepeatedCursor = "repeated_cursor"
	// StopPageLimit: the hook had more than MaxPages pages in the window.
	StopPageLimit = "page_limit"
	// StopResponseTooLarge: an answer was larger than
	// providerapi.MaxResponseBody.
	StopResponseTooLarge = "response_too_large"
	// StopRedirectRefused: the API redirected to another host (or too
	// often), which the gateway does not follow.
	StopRedirectRefused = "redirect_refused"
	// StopDeadline: the run's time was up; the hooks after this one were
	// not checked.
	StopDeadline = "deadline"
	// StopRateLimited: the provider asked the run to wait longer than it
	// will; the hooks after this one were not checked.
	StopRateLimited = "rate_limited"
	// StopProviderError: the provider failed otherwise (a wrong hook ID,
	// a token without access).
	StopProviderError = "provider_error"
)

// Store is what recovery needs of the store.
type Store interface {
	HeldDeliveryKeys(ctx context.Context, connectionID string, keys []string) (map[string]bool, error)
	ClaimRedelivery(ctx context.Context, r store.Redelivery) (bool, error)
	AnswerRedelivery(ctx context.Context, r store.Redelivery) error
	ReleaseRedelivery(ctx context.Context, connectionID string, hookID int64, guid string) error
	ListRedeliveries(ctx context.Context, connectionID string, hookID int64, guids []string) (map[string]store.Redelivery, error)
	AcquireJobLease(ctx context.Context, name, owner string, now, expires time.Time) (bool, error)
	ReleaseJobLease(ctx context.Context, name, owner string) error

	// Reconciliation records the changed items' states as deliveries.
	InsertDeliveries(ctx context.Context, ds []store.Delivery) ([]store.InsertedDelivery, error)
	Notify(ctx context.Context, channel string) error
	LookupTaskByExternalID(ctx context.Context, workspaceID, externalID string) (store.Task, error)
	GetSuppression(ctx context.Context, workspaceID, externalID string) (store.Suppression, error)
}

// attempt is one delivery attempt as the provider lists it.
type attempt struct {
	id          int64
	guid        string
	deliveredAt time.Time
	statusCode  int // 0 when no response came
	event       string
	action      string
}

func (a attempt) succeeded() bool { return a.statusCode >= 200 && a.statusCode < 300 }

// hookAPI is a provider's API for the hooks of one connection.
type hookAPI interface {
	// page lists the page of the hook's delivery attempts at cursor (""
	// the first), newest first, and the next page's cursor ("" when this
	// is the last).
	page(ctx context.Context, hook config.Hook, cursor string) (attempts []attempt, next string, err error)
	// redeliver asks the provider to deliver a again.
	redeliver(ctx context.Context, hook config.Hook, a attempt) error
	// inboxKeys are the delivery keys under which the inbox holds a
	// delivery of the hook with this GUID.
	inboxKeys(hook config.Hook, guid string) []string
	// state reads the hook's provider-side state.
	state(ctx context.Context, hook config.Hook) (HookState, error)
}

// Options of a run.
type Options struct {
	// Since is how far back the run looks (at most MaxWindow).
	Since  time.Duration
	DryRun bool
}

// How a run recovered (Result.Method).
const (
	// MethodRedeliver: the provider listed its hooks' delivery attempts
	// and was asked to send the missing ones again.
	MethodRedeliver = "redeliver"
	// MethodReconcile: the provider listed the items changed in the
	// window, and the states the gateway did not have were recorded as
	// deliveries (reconcile.go).
	MethodReconcile = "reconcile"
)

// Result is a run's answer (docs/design.md, "Missed deliveries").
type Result struct {
	// Method is how the connection's provider is recovered: redeliver or
	// reconcile. Under reconcile, Checked counts the changed items
	// listed, Missing the states the gateway did not have, Redelivered
	// the ones this run recorded as deliveries, and each Delivery is one
	// such state: GUID its delivery key, DeliveredAt the item's update
	// time.
	Method string `json:"method"`
	// Checked counts the deliveries (GUIDs) the providers listed in the
	// window.
	Checked int `json:"checked"`
	// Missing counts those whose every attempt failed and that the inbox
	// does not hold.
	Missing int `json:"missing"`
	// Redelivered counts the redeliveries this run asked for; nil in a
	// dry run, which counts in WouldRedeliver what it would ask for (nil
	// in a real run), so a dry run never reads as done.
	Redelivered    *int `json:"redelivered,omitempty"`
	WouldRedeliver *int `json:"would_redeliver,omitempty"`
	// Deliveries are the missing deliveries, newest first.
	Deliveries []Delivery `json:"deliveries"`
	// Skipped counts the listed items a reconciliation could not read (a
	// malformed item, one without a repository or an update time, one
	// dated more than a day ahead of the gateway's clock); it records the
	// others. SkippedItems names them (the first MaxSkippedItems) and why.
	Skipped      int           `json:"skipped"`
	SkippedItems []SkippedItem `json:"skipped_items,omitempty"`
	// Unfinished says where and why the run stopped before it finished
	// (a hook it could not read, a rate limit that outlasted its
	// patience, one of the run's bounds); empty when it finished.
	Unfinished []Unfinished `json:"unfinished,omitempty"`
}

// SkippedItem is a listed item a run could not read.
type SkippedItem struct {
	// Item names it as the provider does ("issue ENG-3
	// (2f1e3c1a-…)", "issue 13 at https://gitea.example.com").
	Item   string `json:"item"`
	Reason string `json:"reason"`
}

// Unfinished is a hook the run did not finish. What the run read of it
// before it stopped is still checked and reported.
type Unfinished struct {
	// Hook names the hook ("repository acme/api hook 11").
	Hook   string `json:"hook"`
	HookID int64  `json:"hook_id"`
	// Reason is one of the Stop… codes.
	Reason string `json:"reason"`
	// Error says what happened (never with the token).
	Error string `json:"error"`
}

// Delivery is one missing delivery.
type Delivery struct {
	GUID        string    `json:"guid"`
	HookID      int64     `json:"hook_id"`
	DeliveryID  int64     `json:"delivery_id"`
	Event       string    `json:"event"`
	Action      string    `json:"action"`
	DeliveredAt time.Time `json:"delivered_at"`
	StatusCode  int       `json:"status_code"`
	// Redelivered: this run asked for it and the provider accepted; nil
	// in a dry run, which says in WouldRedeliver whether it would ask
	// (nil in a real run).
	Redelivered    *bool `json:"redelivered,omitempty"`
	WouldRedeliver *bool `json:"would_redeliver,omitempty"`
	// Request is the recorded redelivery request's status (requested,
	// accepted, failed) when one exists, from this run or an earlier one.
	Request string `json:"request,omitempty"`
	// Error is why the provider did not accept the request.
	Error string `json:"error,omitempty"`
}

// Count is the redeliveries the run asked for, or a dry run would ask for.
func (r Result) Count() int {
	switch {
	case r.WouldRedeliver != nil:
		return *r.WouldRedeliver
	case r.Redelivered != nil:
		return *r.Redelivered
	}
	return 0
}

// Asked says whether the run asked for the delivery's redelivery and the
// provider accepted, or a dry run would ask for it.
func (d Delivery) Asked() bool {
	return (d.Redelivered != nil && *d.Redelivered) || (d.WouldRedeliver != nil && *d.WouldRedeliver)
}

// ErrRateLimited: a provider asked the run to wait longer than it will.
var ErrRateLimited = errors.New("rate limited")

// Recoverer runs recovery for the configured connections.
type Recoverer struct {
	st     Store
	conns  func(id string) (config.Connection, bool)
	logger *slog.Logger
	now    func() time.Time

	// HTTPClient calls the provider APIs (its Transport is wrapped to
	// count requests in Metrics).
	HTTPClient *http.Client
	// Apps are the GitHub App connections' credentials: an App's own hook
	// is read and redelivered as the App.
	Apps    *providerapi.GitHubApps
	Metrics *metrics.Metrics
	// MaxWait is the longest a provider may make a request wait (a
	// Retry-After, a rate-limit reset); beyond it the run stops and
	// reports what it did not finish. The API answers within its write
	// timeout, so it is short.
	MaxWait time.Duration
	// MaxElapsed bounds the retries of one provider request.
	MaxElapsed time.Duration
	// MaxPages is the most pages of one hook's deliveries a run reads.
	MaxPages int
	// MaxRun bounds a run through Recover.
	MaxRun time.Duration

	// timer waits between retries (backoff's; tests record the waits).
	timer backoff.Timer
	// apis builds a connection's hook API, listers the change listing of
	// a provider that keeps no delivery history (tests may replace them).
	apis    map[string]func(r *Recoverer, conn config.Connection) (hookAPI, error)
	listers map[string]func(r *Recoverer, conn config.Connection) (changeLister, error)
}

// New returns a Recoverer over the connections conns finds.
func New(st Store, conns func(id string) (config.Connection, bool), logger *slog.Logger, now func() time.Time) *Recoverer {
	return &Recoverer{st: st, conns: conns, logger: logger, now: func() time.Time { return now().UTC() },
		HTTPClient: &http.Client{Timeout: 30 * time.Second}, MaxWait: 20 * time.Second, MaxElapsed: 30 * time.Second,
		MaxPages: DefaultMaxPages, MaxRun: DefaultMaxRun,
		apis: map[string]func(r *Recoverer, conn config.Connection) (hookAPI, error){
			connectors.ProviderGitHub: newGitHubAPI,
			connectors.ProviderGitLab: newGitLabAPI,
		},
		listers: map[string]func(r *Recoverer, conn config.Connection) (changeLister, error){
			connectors.ProviderGitea:  newGiteaLister,
			connectors.ProviderLinear: newLinearLister,
		}}
}

// WindowHint says why a run of the connection looks back at most
// MaxWindow, in its provider's terms: a refused since says it, and the
// console's form shows it.
func (r *Recoverer) WindowHint(connectionID string) string {
	conn, ok := r.conns(connectionID)
	p, known := providers.Lookup(conn.Provider)
	switch {
	case !ok || !known:
		return "the longest window a run reads"
	case conn.Provider == connectors.ProviderGitHub:
		return "GitHub keeps three days of hook deliveries"
	case p.Recovery == providers.RecoverReconcile:
		return "a run lists what changed at the provider within it, up to three days back"
	}
	return "the provider keeps only recent hook deliveries: run it soon after an outage"
}

// Recoverable says why the connection cannot be recovered (unknown, of a
// provider that retries by itself, without what its recovery needs), nil
// when it can: the console shows it before anyone asks.
func (r *Recoverer) Recoverable(connectionID string) error {
	_, err := r.checkConnection(connectionID)
	return err
}

// checkConnection finds the connection, refusing one that cannot be
// recovered.
func (r *Recoverer) checkConnection(connectionID string) (config.Connection, error) {
	conn, ok := r.conns(connectionID)
	if !ok {
		return conn, failure.New(failure.NotFound, "connection not found")
	}
	p, _ := providers.Lookup(conn.Provider)
	switch p.Recovery {
	case providers.RecoverReconcile:
		if conn.APIToken == "" {
			return conn, failure.New(failure.Invalid, "connection %q: recovery lists what %s changed through its API and needs api_token in its configuration", conn.ID, conn.Provider)
		}
		return conn, nil
	case providers.RecoverRedeliver:
		var missing []string
		if conn.APIToken == "" && conn.App == nil {
			missing = append(missing, "api_token")
		}
		if len(conn.RecoveryHooks()) == 0 {
			missing = append(missing, "hooks")
		}
		if len(missing) > 0 {
			return conn, failure.New(failure.Invalid, "connection %q: recovery needs api_token and hooks, or an app, in its configuration (it has no %s)",
				conn.ID, strings.Join(missing, " and no "))
		}
		return conn, nil
	}
	return conn, failure.New(failure.Invalid, "connection %q: %s retries deliveries by itself; there is nothing to recover", conn.ID, conn.Provider)
}

// hookAPIFor checks the connection can be recovered and builds its hook
// API; a connection recovered by reconciliation has none (nil).
func (r *Recoverer) hookAPIFor(connectionID string) (config.Connection, hookAPI, error) {
	conn, err := r.checkConnection(connectionID)
	if err != nil {
		return conn, nil, err
	}
	build, ok := r.apis[conn.Provider]
	if !ok {
		return conn, nil, nil
	}
	api, err := build(r, conn)
	if err != nil {
		return conn, nil, fmt.Errorf("connection %s api: %w", conn.ID, err)
	}
	return conn, api, nil
}

// Recover runs recovery once for a connection, within MaxRun.
func (r *Recoverer) Recover(ctx context.Context, connectionID string, opts Options) (Result, error) {
	return r.recover(ctx, connectionID, opts, r.MaxRun)
}

// errRunDeadline is the cause of a run's context ending at its deadline.
var errRunDeadline = errors.New("run deadline")

// recover runs recovery once for a connection, within maxRun: a run that
// reaches it stops between two requests (on the recoverer's clock), or
// in one (its context ends), and reports what it found until then.
func (r *Recoverer) recover(ctx context.Context, connectionID string, opts Options, maxRun time.Duration) (Result, error) {
	if opts.Since == 0 {
		opts.Since = DefaultWindow
	}
	if opts.Since < 0 || opts.Since > MaxWindow {
		return Result{}, failure.New(failure.Invalid, "since must be positive and at most 72h (%s)", r.WindowHint(connectionID))
	}
	conn, api, err := r.hookAPIFor(connectionID)
	if err != nil {
		return Result{}, err
	}
	runCtx, cancel := context.WithTimeoutCause(ctx, maxRun, errRunDeadline)
	defer cancel()
	res := Result{Method: MethodRedeliver, Deliveries: []Delivery{}}
	if opts.DryRun {
		res.WouldRedeliver = new(int)
	} else {
		res.Redelivered = new(int)
	}
	run := runBounds{since: r.now().Add(-opts.Since), deadline: r.now().Add(maxRun)}
	if build, ok := r.listers[conn.Provider]; ok && api == nil {
		return r.recoverChanges(ctx, runCtx, run, conn, build, opts.DryRun, maxRun, res)
	}
	for _, hook := range conn.RecoveryHooks() {
		hook, err := r.resolveHook(runCtx, api, hook)
		if err == nil {
			err = r.recoverHook(runCtx, run, conn, api, hook, opts.DryRun, &res)
		}
		if err == nil {
			continue
		}
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		reason := stopReason(runCtx, err)
		if reason == "" {
			return res, err
		}
		u := Unfinished{Hook: hook.String(), HookID: hook.ID, Reason: reason, Error: redact(err.Error(), conn.APIToken)}
		if reason == StopDeadline && !errors.As(err, new(*stopError)) {
			u.Error = fmt.Sprintf("the run's %s were up", maxRun)
		}
		res.Unfinished = append(res.Unfinished, u)
		r.logger.Warn("recovery stopped before it finished", "connection", conn.ID, "hook_id", hook.ID, "reason", reason, "error", u.Error)
		if reason == StopRateLimited || reason == StopDeadline {
			// The other hooks share the token and its limit, and the run
			// its time.
			break
		}
	}
	return res, nil
}

// recoverChanges runs a reconciliation (reconcile.go) in the run's
// context, reporting a stop as recover does a hook's.
func (r *Recoverer) recoverChanges(ctx, runCtx context.Context, run runBounds, conn config.Connection,
	build func(*Recoverer, config.Connection) (changeLister, error), dryRun bool, maxRun time.Duration, res Result) (Result, error) {
	res.Method = MethodReconcile
	lister, err := build(r, conn)
	if err != nil {
		return res, fmt.Errorf("connection %s api: %w", conn.ID, err)
	}
	err = r.reconcile(runCtx, run, conn, lister, dryRun, &res)
	if err == nil {
		return res, nil
	}
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	reason := stopReason(runCtx, err)
	if reason == "" {
		return res, err
	}
	u := Unfinished{Hook: lister.source(), Reason: reason, Error: redact(err.Error(), conn.APIToken)}
	if reason == StopDeadline && !errors.As(err, new(*stopError)) {
		u.Error = fmt.Sprintf("the run's %s were up", maxRun)
	}
	res.Unfinished = append(res.Unfinished, u)
	r.logger.Warn("recovery stopped before it finished", "connection", conn.ID, "reason", reason, "error", u.Error)
	return res, nil
}

// ownHookAPI is a hook API whose hook is the provider's to name: a GitHub
// App's own hook, whose ID is read from its deliveries.
type ownHookAPI interface {
	ownHook(ctx context.Context) (config.Hook, error)
}

// resolveHook is hook with what its API knows of it (an App hook's ID); a
// failure to learn it is the provider's.
func (r *Recoverer) resolveHook(ctx context.Context, api hookAPI, hook config.Hook) (config.Hook, error) {
	own, ok := api.(ownHookAPI)
	if !ok || hook.App == 0 {
		return hook, nil
	}
	found, err := own.ownHook(ctx)
	if err != nil {
		return hook, &providerError{fmt.Errorf("find the App's hook: %w", err)}
	}
	return found, nil
}

// runBounds are a run's window and deadline.
type runBounds struct {
	since, deadline time.Time
}

// stopError is a run's bound reached (a Stop… reason).
type stopError struct {
	reason string
	msg    string
}

func (e *stopError) Error() string { return e.msg }

// stopReason is why err stops the hook (a Stop… code), "" when it ends
// the run as a failure (the store failed).
func stopReason(runCtx context.Context, err error) string {
	var se *stopError
	var pe *providerError
	switch {
	case errors.As(err, &se):
		return se.reason
	case runCtx.Err() != nil && context.Cause(runCtx) == errRunDeadline:
		return StopDeadline
	case errors.Is(err, ErrRateLimited):
		return StopRateLimited
	case errors.Is(err, providerapi.ErrForeignHost), errors.Is(err, providerapi.ErrTooManyRedirects):
		return StopRedirectRefused
	case errors.Is(err, providerapi.ErrResponseTooLarge):
		return StopResponseTooLarge
	case errors.As(err, &pe):
		return StopProviderError
	}
	return ""
}

// listAttempts pages through the hook's delivery attempts made at or
// after since, newest first, within the run's bounds (pageThrough).
func (r *Recoverer) listAttempts(ctx context.Context, run runBounds, api hookAPI, hook config.Hook) ([]attempt, error) {
	page := func(ctx context.Context, _ time.Time, cursor string) ([]attempt, string, error) {
		return api.page(ctx, hook, cursor)
	}
	return pageThrough(r, ctx, run, "deliveries", page, func(a attempt) bool { return !a.deliveredAt.Before(run.since) })
}

// providerError is a failure of the provider's API: the run reports it
// and goes on with the next hook, where a store failure ends the run.
type providerError struct{ err error }

func (e *providerError) Error() string { return e.err.Error() }
func (e *providerError) Unwrap() error { return e.err }

// recoverHook checks one hook's deliveries in the run's window and
// redelivers the missing ones, adding to res. A listing that stopped
// early is still checked as far as it got; the stop is returned.
func (r *Recoverer) recoverHook(ctx context.Context, run runBounds, conn config.Connection, api hookAPI, hook config.Hook, dryRun bool, res *Result) error {
	attempts, listErr := r.listAttempts(ctx, run, api, hook)
	if listErr != nil {
		if ctx.Err() != nil {
			return listErr
		}
		listErr = &providerError{fmt.Errorf("list deliveries: %w", listErr)}
		if len(attempts) == 0 {
			return listErr
		}
	}
	// The attempts are newest first, so each GUID's first attempt seen is
	// its latest, the one to redeliver.
	latest := map[string]attempt{}
	var order []string
	delivered := map[string]bool{}
	for _, a := range attempts {
		if _, seen := latest[a.guid]; !seen {
			latest[a.guid] = a
			order = append(order, a.guid)
		}
		delivered[a.guid] = delivered[a.guid] || a.succeeded()
	}
	res.Checked += len(order)
	var failed, keys []string
	for _, g := range order {
		if !delivered[g] {
			failed = append(failed, g)
			keys = append(keys, api.inboxKeys(hook, g)...)
		}
	}
	if len(failed) == 0 {
		return listErr
	}
	held, err := r.st.HeldDeliveryKeys(ctx, conn.ID, keys)
	if err != nil {
		return fmt.Errorf("held delivery keys: %w", err)
	}
	var missing []string
	for _, g := range failed {
		inInbox := false
		for _, k := range api.inboxKeys(hook, g) {
			inInbox = inInbox || held[k]
		}
		if !inInbox {
			missing = append(missing, g)
		}
	}
	if len(missing) == 0 {
		return listErr
	}
	requested, err := r.st.ListRedeliveries(ctx, conn.ID, hook.ID, missing)
	if err != nil {
		return fmt.Errorf("list redeliveries: %w", err)
	}
	res.Missing += len(missing)
	// stopped is why the run asks nothing more (a rate limit); the rest
	// are still listed.
	var stopped error
	for _, g := range missing {
		a := latest[g]
		d := Delivery{GUID: g, HookID: hook.ID, DeliveryID: a.id, Event: a.event, Action: a.action,
			DeliveredAt: a.deliveredAt, StatusCode: a.statusCode}
		if dryRun {
			d.WouldRedeliver = new(bool)
		} else {
			d.Redelivered = new(bool)
		}
		if before, ok := requested[g]; ok {
			d.Request, d.Error = before.Status, before.Error
		} else if dryRun {
			*d.WouldRedeliver = true
		} else if stopped == nil && !r.now().Before(run.deadline) {
			stopped = &stopError{StopDeadline, "the run's time was up before it asked for every missing delivery"}
		} else if stopped == nil {
			stopped = r.ask(ctx, conn, api, hook, a, &d)
			var pe *providerError
			if stopped != nil && !errors.As(stopped, &pe) {
				return stopped
			}
		}
		switch {
		case d.WouldRedeliver != nil && *d.WouldRedeliver:
			*res.WouldRedeliver++
		case d.Redelivered != nil && *d.Redelivered:
			*res.Redelivered++
		}
		res.Deliveries = append(res.Deliveries, d)
	}
	if stopped != nil {
		return stopped
	}
	return listErr
}

// ask claims the redelivery of a and, when this run won the claim, asks
// the provider and records its answer in d and in the store. It returns an
// error only when the run must stop (the store failed, or a rate limit
// outlasted MaxWait, in which case the claim is released: nothing was
// asked).
func (r *Recoverer) ask(ctx context.Context, conn config.Connection, api hookAPI, hook config.Hook, a attempt, d *Delivery) error {
	rec := store.Redelivery{ConnectionID: conn.ID, HookID: hook.ID, GUID: a.guid, ProviderDeliveryID: a.id,
		Event: a.event, RequestedAt: r.now()}
	claimed, err := r.st.ClaimRedelivery(ctx, rec)
	if err != nil {
		return fmt.Errorf("claim redelivery: %w", err)
	}
	if !claimed {
		// Another run or replica got there first.
		d.Request = store.RedeliveryRequested
		return nil
	}
	askErr := api.redeliver(ctx, hook, a)
	if errors.Is(askErr, ErrRateLimited) {
		// Every answer was a rate-limit refusal: the provider did nothing,
		// so a later run may ask. Anything else (an error, a lost
		// connection, a cancelled run) may have reached the provider and
		// stays recorded.
		if err := r.st.ReleaseRedelivery(context.WithoutCancel(ctx), conn.ID, hook.ID, a.guid); err != nil {
			return fmt.Errorf("release redelivery: %w", err)
		}
		return &providerError{fmt.Errorf("redeliver %s: %w", a.guid, askErr)}
	}
	at := r.now()
	rec.AnsweredAt, rec.Status = &at, store.RedeliveryAccepted
	if askErr != nil {
		rec.Status, rec.Error = store.RedeliveryFailed, redact(askErr.Error(), conn.APIToken)
		r.logger.Warn("redelivery request failed", "connection", conn.ID, "hook_id", hook.ID, "guid", a.guid, "error", rec.Error)
	} else {
		*d.Redelivered = true
		r.Metrics.MissedDeliveryRedelivered(conn.ID)
		r.logger.Info("missed delivery redelivered", "connection", conn.ID, "hook_id", hook.ID, "guid", a.guid, "event", a.event)
	}
	d.Request, d.Error = rec.Status, rec.Error
	// The answer is recorded even when the run was cancelled meanwhile.
	if err := r.st.AnswerRedelivery(context.WithoutCancel(ctx), rec); err != nil {
		return fmt.Errorf("answer redelivery: %w", err)
	}
	return nil
}

// redact removes the API token from a provider error.
func redact(msg, token string) string {
	if token == "" {
		return msg
	}
	return strings.ReplaceAll(msg, token, "[redacted]")
}
