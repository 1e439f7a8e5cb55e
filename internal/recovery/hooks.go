package recovery

import (
	"context"
	"time"
)

// HookState is a configured hook as its provider sees it (GET
// /api/v1/connections/{id}/hooks), so an operator sees a hook the provider
// switched off.
type HookState struct {
	// Kind is where the hook is configured: repository, organization,
	// project or group; Owner names it.
	Kind  string `json:"kind"`
	Owner string `json:"owner"`
	ID    int64  `json:"id"`
	// Active is false when the provider does not deliver through the
	// hook (GitHub: switched off; GitLab: disabled, or temporarily
	// disabled until DisabledUntil).
	Active bool `json:"active"`
	// Events are the events the hook is subscribed to.
	Events []string `json:"events"`
	// LastResponse is GitHub's record of the hook's last delivery.
	LastResponse *LastResponse `json:"last_response,omitempty"`
	// AlertStatus is GitLab's state of the hook: executable, disabled or
	// temporarily_disabled.
	AlertStatus string `json:"alert_status,omitempty"`
	// DisabledUntil is when GitLab delivers through a temporarily
	// disabled hook again.
	DisabledUntil *time.Time `json:"disabled_until,omitempty"`
	// Error is why the state could not be read (the rest is then empty).
	Error string `json:"error,omitempty"`
}

// LastResponse is the answer the hook's last delivery got.
type LastResponse struct {
	Code    *int   `json:"code"`
	Status  string `json:"status"`
	Message string `json:"message"`
}

// Hooks reads each configured hook's state from its provider; a hook whose
// state cannot be read carries the error.
func (r *Recoverer) Hooks(ctx context.Context, connectionID string) ([]HookState, error) {
	conn, api, err := r.hookAPIFor(connectionID)
	if err != nil {
		return nil, err
	}
	out := make([]HookState, 0, len(conn.RecoveryHooks()))
	for _, h := range conn.RecoveryHooks() {
		h, err := r.resolveHook(ctx, api, h)
		var st HookState
		if err == nil {
			st, err = api.state(ctx, h)
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			st = HookState{Events: []string{}, Error: redact(err.Error(), conn.APIToken)}
		}
		st.Kind, st.Owner = h.Owner()
		st.ID = h.ID
		out = append(out, st)
	}
	return out, nil
}
