package config

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/trackergateway/gateway/connectors/providers"
)

// Hook is one provider webhook that posts to a connection: where it is
// configured (exactly one of the four owners, the ones its provider has)
// and the provider's ID for it.
type Hook struct {
	// Repository is a GitHub repository hook's owner/repo.
	Repository string `yaml:"repository"`
	// Organization is a GitHub organization hook's organization.
	Organization string `yaml:"organization"`
	// Project is a GitLab project hook's project path or numeric ID.
	Project string `yaml:"project"`
	// Group is a GitLab group hook's group path or numeric ID.
	Group string `yaml:"group"`
	// ID is the provider's hook ID.
	ID int64 `yaml:"id"`
	// App is the GitHub App whose own hook this is. It is never
	// configured: an App connection has the one hook (AppHook), whose ID
	// recovery reads from the App's deliveries.
	App int64 `yaml:"-"`
}

// Hook owner kinds (Hook.Owner): the registry's, and a GitHub App's own
// hook.
const (
	HookRepository   = providers.HookRepository
	HookOrganization = providers.HookOrganization
	HookProject      = providers.HookProject
	HookGroup        = providers.HookGroup
	HookApp          = "app"
)

// Owner names what the hook is configured on: its kind and its name.
func (h Hook) Owner() (kind, name string) {
	if h.App != 0 {
		return HookApp, strconv.FormatInt(h.App, 10)
	}
	for _, o := range []struct{ kind, name string }{
		{HookRepository, h.Repository}, {HookOrganization, h.Organization},
		{HookProject, h.Project}, {HookGroup, h.Group},
	} {
		if o.name != "" {
			return o.kind, o.name
		}
	}
	return "", ""
}

// String is the hook as operators name it: "repository acme/api hook
// 123", "GitHub App 42's hook".
func (h Hook) String() string {
	if h.App != 0 {
		return "GitHub App " + strconv.FormatInt(h.App, 10) + "'s hook"
	}
	kind, name := h.Owner()
	return kind + " " + name + " hook " + strconv.FormatInt(h.ID, 10)
}

// RecoveryHooks are the hooks recovery reads: the configured ones, or a
// GitHub App connection's own hook (its ID not yet known).
func (c Connection) RecoveryHooks() []Hook {
	if c.App != nil {
		return []Hook{{App: c.App.ID}}
	}
	return c.Hooks
}

// RecoveryInterval is recover_every parsed; 0 when recovery does not run
// in the background.
func (c Connection) RecoveryInterval() time.Duration {
	d, _ := time.ParseDuration(c.RecoverEvery)
	return d
}

// validateRecovery checks hooks and recover_every, returning the key at
// fault with the error.
func (c Connection) validateRecovery() (key string, err error) {
	p, _ := providers.Lookup(c.Provider)
	kinds := p.HookOwners
	switch {
	case len(c.Hooks) > 0 && p.Recovery == providers.RecoverReconcile:
		return "hooks", fmt.Errorf("hooks: %s keeps no delivery history to read; recovery lists the items changed through the API with api_token alone", c.Provider)
	case len(c.Hooks) > 0 && kinds == nil:
		return "hooks", fmt.Errorf("hooks: %s connections have none to recover (the provider retries by itself)", c.Provider)
	}
	seen := map[Hook]bool{}
	for _, h := range c.Hooks {
		set := 0
		for _, v := range []string{h.Repository, h.Organization, h.Project, h.Group} {
			if v != "" {
				set++
			}
		}
		kind, name := h.Owner()
		switch {
		case set != 1:
			return "hooks", fmt.Errorf("hooks: each hook needs exactly one of %s", joinOr(kinds))
		case !slices.Contains(kinds, kind):
			return "hooks", fmt.Errorf("hooks: %s hook on %s %q: %s hooks are on %s", c.Provider, kind, name, c.Provider, joinOr(kinds))
		case kind == HookRepository && strings.Count(name, "/") != 1:
			return "hooks", fmt.Errorf("hooks: repository %q must be owner/repo", name)
		case h.ID <= 0:
			return "hooks", fmt.Errorf("hooks: %s %q: id must be the provider's positive hook ID", kind, name)
		case seen[h]:
			return "hooks", fmt.Errorf("hooks: %s listed twice", h)
		}
		seen[h] = true
	}
	if c.RecoverEvery != "" {
		d, err := time.ParseDuration(c.RecoverEvery)
		switch {
		case err != nil:
			return "recover_every", fmt.Errorf("recover_every: %q is not a Go duration (e.g. 10m)", c.RecoverEvery)
		case d < time.Minute:
			return "recover_every", fmt.Errorf("recover_every: %s is shorter than a minute", c.RecoverEvery)
		case p.Recovery == providers.RecoverNone:
			return "recover_every", fmt.Errorf("recover_every: %s retries deliveries by itself; there is nothing to recover", c.Provider)
		case p.Recovery == providers.RecoverReconcile && c.APIToken == "":
			return "recover_every", errors.New("recover_every needs api_token")
		case p.Recovery == providers.RecoverRedeliver && c.App == nil && (c.APIToken == "" || len(c.Hooks) == 0):
			return "recover_every", errors.New("recover_every needs api_token and hooks, or an app")
		}
	}
	return "", nil
}

// joinOr is "a or b".
func joinOr(list []string) string {
	switch len(list) {
	case 0:
		return "nothing"
	case 1:
		return list[0]
	}
	out := list[0]
	for _, v := range list[1 : len(list)-1] {
		out += ", " + v
	}
	return out + " or " + list[len(list)-1]
}
