package config

import (
	"errors"
	"fmt"

	"github.com/trackergateway/gateway/connectors"
)

// App is a GitHub App's identity: its numeric ID and its private key,
// from a file or inline (PEM; ${VAR} expansion may fold its line breaks,
// which the loader tolerates). The key itself is read and checked at
// start-up (internal/githubapp), never here: an error about it must not
// quote it.
type App struct {
	ID             int64  `yaml:"id"`
	PrivateKeyFile string `yaml:"private_key_file"`
	PrivateKey     string `yaml:"private_key"`
}

// HasAPIAccess reports whether the gateway can call the connection's
// provider API: with an api_token, or as a GitHub App.
func (c Connection) HasAPIAccess() bool { return c.APIToken != "" || c.App != nil }

// validateApp checks the app key, returning the key at fault with the
// error. An App connection takes its credentials from the App alone (an
// api_token beside it would leave two identities to choose between) and
// recovers the App's own hook, so it lists no repository or organization
// hooks.
func (c Connection) validateApp() (key string, err error) {
	if c.App == nil {
		return "", nil
	}
	a := c.App
	switch {
	case c.Provider != connectors.ProviderGitHub:
		return "app", fmt.Errorf("app: only github connections can be GitHub Apps, not %s", c.Provider)
	case a.ID <= 0:
		return "app", errors.New("app: id must be the App's positive numeric ID (the App's settings page, \"App ID\")")
	case (a.PrivateKeyFile == "") == (a.PrivateKey == ""):
		return "app", errors.New("app: give exactly one of private_key_file and private_key")
	case c.APIToken != "":
		return "api_token", errors.New("api_token: an App connection calls the API with installation tokens; remove api_token")
	case len(c.Hooks) > 0:
		return "hooks", errors.New("hooks: an App connection recovers the App's own hook; remove the repository and organization hooks")
	}
	return "", nil
}
