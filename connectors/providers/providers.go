// Package providers is the registry of the providers the gateway accepts
// webhooks from: one descriptor per provider, naming its adapter and
// everything configuration, the inbox, the projection and storage need to
// know about it. Adding a provider means one package under connectors/ and
// one entry here; nothing else switches on provider names.
package providers

import (
	"slices"

	"github.com/trackergateway/gateway/connectors"
	"github.com/trackergateway/gateway/connectors/gitea"
	"github.com/trackergateway/gateway/connectors/github"
	"github.com/trackergateway/gateway/connectors/gitlab"
	"github.com/trackergateway/gateway/connectors/jira"
	"github.com/trackergateway/gateway/connectors/linear"
)

// Provider describes one provider.
type Provider struct {
	// Name is the provider's name in config, delivery rows and task sources.
	Name string
	// Adapter verifies, names and parses the provider's deliveries.
	Adapter connectors.Adapter
	// DefaultHost fills a configured connection's empty host. Empty means a
	// connection must name its host (a Jira site has no public default).
	DefaultHost string
	// HostForm says what a connection's host is, for configuration errors
	// ("the site's host name, such as acme.atlassian.net").
	HostForm string
	// HostInURLPath, when set, is the site whose URLs carry the
	// connection's host as their first path element (linear.app: the
	// workspace's URL key of https://linear.app/acme).
	HostInURLPath string
	// ZeroConfigHostEnv names the environment variable that sets the
	// zero-config connection's host when there is no DefaultHost;
	// ZeroConfigPlaceholderHost is used when it is unset or empty.
	ZeroConfigHostEnv         string
	ZeroConfigPlaceholderHost string
	// SecretEnv names the environment variable holding the webhook secret
	// of the zero-config connection (and the name its generated secret is
	// stored under).
	SecretEnv string
	// EventHeader carries the event name; empty when the provider sends
	// none (Jira names the event in the body).
	EventHeader string
	// EventFromPayload names a delivery's event from its body alone, for a
	// sender without the provider's headers (gateway send): the value of
	// EventHeader, or for a provider without one the event the body names.
	// ok is false when the body does not tell.
	EventFromPayload func(body []byte) (event string, ok bool)
	// SignatureHeader carries the signature or token Verify checks.
	SignatureHeader string
	// DeliveryKeyHeader carries the provider's delivery identity.
	DeliveryKeyHeader string
	// Projection is the provider's PR/MR projection; nil when the provider
	// has no pull or merge requests to project.
	Projection *Projection
	// Recovery is how deliveries the provider failed to make are found
	// again (one of the Recover… kinds).
	Recovery Recovery
	// HookOwners are what the provider's hooks are configured on, the
	// owner kinds of a connection's hooks (RecoverRedeliver only).
	HookOwners []string
	// Installations: the provider's App installations are recorded from
	// its deliveries (Event.Installation) and shown.
	Installations bool
	// IssueKeys: the provider's issues are named by keys of the form
	// TEAM-123 (Source.Ref). A key a pull request names
	// (connectors.JiraKeyReferences) may be an issue of any such provider,
	// so it is looked up among all of them (ReferenceProviders).
	IssueKeys bool
}

// ReferenceProviders are the providers whose task a reference may name:
// for an issue key, every provider with IssueKeys (Jira's and Linear's
// keys look alike); otherwise the reference's own provider.
func ReferenceProviders(ref connectors.Reference) []string {
	p, ok := Lookup(ref.Provider)
	if !ok || !p.IssueKeys {
		return []string{ref.Provider}
	}
	var out []string
	for _, q := range registry {
		if q.IssueKeys {
			out = append(out, q.Name)
		}
	}
	return out
}

// Recovery is how a provider's missed deliveries are recovered.
type Recovery string

const (
	// RecoverNone: the provider retries failed deliveries by itself (Jira).
	RecoverNone Recovery = ""
	// RecoverRedeliver: the provider keeps its hooks' recent delivery
	// attempts and sends one again on request (GitHub, GitLab); recovery
	// needs the hooks' IDs and an API token.
	RecoverRedeliver Recovery = "redeliver"
	// RecoverReconcile: the provider keeps no delivery history; recovery
	// lists the items changed in the window through its API and feeds each
	// state in as a delivery, once per item and update time. It needs an
	// API token only.
	RecoverReconcile Recovery = "reconcile"
)

// Hook owner kinds (HookOwners).
const (
	HookRepository   = "repository"
	HookOrganization = "organization"
	HookProject      = "project"
	HookGroup        = "group"
)

// Projection describes a provider's PR/MR projection.
type Projection struct {
	// Table holds the projected rows.
	Table string
	// ContributionKind is the kind of the projected contributions.
	ContributionKind string
}

// ZeroConfigHost is the host of the provider's zero-config connection:
// DefaultHost, else the ZeroConfigHostEnv value, else the placeholder.
func (p Provider) ZeroConfigHost(lookup func(string) (string, bool)) string {
	if p.DefaultHost != "" {
		return p.DefaultHost
	}
	if p.ZeroConfigHostEnv != "" {
		if h, ok := lookup(p.ZeroConfigHostEnv); ok && h != "" {
			return h
		}
	}
	return p.ZeroConfigPlaceholderHost
}

// registry is in the order All returns: zero-config connections and
// listings follow it.
var registry = []Provider{
	{
		Name:              connectors.ProviderGitHub,
		Adapter:           github.Adapter{},
		DefaultHost:       "github.com",
		HostForm:          "a host name, optionally with a port: github.com, or a GitHub Enterprise Server's (github.example.com)",
		SecretEnv:         "GATEWAY_GITHUB_SECRET",
		EventHeader:       github.HeaderEvent,
		EventFromPayload:  github.EventFromPayload,
		SignatureHeader:   github.HeaderSignature256,
		DeliveryKeyHeader: github.HeaderDelivery,
		Projection:        &Projection{Table: "github_task_prs", ContributionKind: connectors.KindPullRequest},
		Recovery:          RecoverRedeliver,
		HookOwners:        []string{HookRepository, HookOrganization},
		Installations:     true,
	},
	{
		Name:              connectors.ProviderGitLab,
		Adapter:           gitlab.Adapter{},
		DefaultHost:       "gitlab.com",
		HostForm:          "a host name, optionally with a port: gitlab.com, or a self-managed GitLab's (gitlab.example.com)",
		SecretEnv:         "GATEWAY_GITLAB_SECRET",
		EventHeader:       gitlab.HeaderEvent,
		EventFromPayload:  gitlab.EventFromPayload,
		SignatureHeader:   gitlab.HeaderToken,
		DeliveryKeyHeader: gitlab.HeaderIdempotencyKey,
		Projection:        &Projection{Table: "gitlab_task_mrs", ContributionKind: connectors.KindMergeRequest},
		Recovery:          RecoverRedeliver,
		HookOwners:        []string{HookProject, HookGroup},
	},
	{
		Name:                      connectors.ProviderJira,
		Adapter:                   jira.Adapter{},
		ZeroConfigHostEnv:         "GATEWAY_JIRA_SITE",
		ZeroConfigPlaceholderHost: "jira.example.com",
		HostForm:                  "the site's host name, such as acme.atlassian.net",
		SecretEnv:                 "GATEWAY_JIRA_SECRET",
		EventFromPayload:          jira.EventFromPayload,
		SignatureHeader:           jira.HeaderSignature,
		DeliveryKeyHeader:         jira.HeaderIdentifier,
		IssueKeys:                 true,
	},
	{
		// Gitea and Forgejo are self-hosted: no default host.
		Name:                      connectors.ProviderGitea,
		Adapter:                   gitea.Adapter{},
		ZeroConfigHostEnv:         "GATEWAY_GITEA_HOST",
		ZeroConfigPlaceholderHost: "gitea.example.com",
		HostForm:                  "the server's host name, optionally with a port, such as gitea.example.com or gitea.example.com:3000",
		SecretEnv:                 "GATEWAY_GITEA_SECRET",
		EventHeader:               gitea.HeaderEvent,
		EventFromPayload:          gitea.EventFromPayload,
		SignatureHeader:           gitea.HeaderSignature,
		DeliveryKeyHeader:         gitea.HeaderDelivery,
		Projection:                &Projection{Table: "gitea_task_prs", ContributionKind: connectors.KindPullRequest},
		Recovery:                  RecoverReconcile,
	},
	{
		// The host is the workspace's URL key ("acme" of
		// https://linear.app/acme); there is no public default.
		Name:                      connectors.ProviderLinear,
		Adapter:                   linear.Adapter{},
		ZeroConfigHostEnv:         "GATEWAY_LINEAR_ORG",
		ZeroConfigPlaceholderHost: "linear-workspace",
		HostForm:                  "the workspace's URL key, such as acme of https://linear.app/acme",
		HostInURLPath:             "linear.app",
		SecretEnv:                 "GATEWAY_LINEAR_SECRET",
		EventHeader:               linear.HeaderEvent,
		EventFromPayload:          linear.EventFromPayload,
		SignatureHeader:           linear.HeaderSignature,
		DeliveryKeyHeader:         linear.HeaderDelivery,
		Recovery:                  RecoverReconcile,
		IssueKeys:                 true,
	},
}

// All returns every provider, always in the same order (GitHub, GitLab,
// Jira, Gitea, Linear). The slice is the caller's.
func All() []Provider { return slices.Clone(registry) }

// Lookup returns the provider named name.
func Lookup(name string) (Provider, bool) {
	i := slices.IndexFunc(registry, func(p Provider) bool { return p.Name == name })
	if i < 0 {
		return Provider{}, false
	}
	return registry[i], true
}

// Names returns the provider names in registry order.
func Names() []string {
	out := make([]string, len(registry))
	for i, p := range registry {
		out[i] = p.Name
	}
	return out
}

// ContributionKinds returns, for each provider with a PR/MR projection, the
// kind of its projected contributions, keyed by provider name: what the
// creation coordinator may associate with tasks.
func ContributionKinds() map[string]string {
	out := map[string]string{}
	for _, p := range registry {
		if p.Projection != nil {
			out[p.Name] = p.Projection.ContributionKind
		}
	}
	return out
}

// Adapters returns each provider's adapter keyed by provider name.
func Adapters() map[string]connectors.Adapter {
	out := make(map[string]connectors.Adapter, len(registry))
	for _, p := range registry {
		out[p.Name] = p.Adapter
	}
	return out
}
