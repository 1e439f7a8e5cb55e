package github

import (
	"errors"
	"slices"

	gh "github.com/google/go-github/v62/github"

	"github.com/trackergateway/gateway/connectors"
)

// installationActions are the actions of the "installation" event that
// change what the gateway records of an installation.
var installationActions = map[string]bool{
	"created":                  true,
	"deleted":                  true,
	"suspend":                  true,
	"unsuspend":                true,
	"new_permissions_accepted": true,
}

// installationRepositoriesActions are those of "installation_repositories".
var installationRepositoriesActions = map[string]bool{"added": true, "removed": true}

// parseInstallation maps an "installation" delivery: an App was installed
// on an account, uninstalled, suspended, unsuspended or given new
// permissions. The event changes no task; it carries the installation's
// change. Installation events are rare, so go-github's InstallationEvent is
// decoded whole.
func parseInstallation(host string, body []byte) (connectors.Event, error) {
	const name = "installation"
	ev := new(gh.InstallationEvent)
	if err := connectors.DecodeJSON(body, ev); err != nil {
		return connectors.Event{}, malformed(name, "%v", err)
	}
	action := ev.GetAction()
	e := connectors.Event{Provider: connectors.ProviderGitHub, EventName: eventName(name, action), Action: connectors.ActionIgnore}
	if !installationActions[action] {
		e.InstallationID = ev.GetInstallation().GetID()
		return e, nil
	}
	change, err := installationChange(ev.Installation, action)
	if err != nil {
		return connectors.Event{}, malformed(e.EventName, "%v", err)
	}
	if action == "created" {
		change.Repositories = repositoryNames(ev.Repositories)
	}
	e.InstallationID, e.Installation = change.ID, change
	e.EntityKey = installationKey(host, change.ID)
	return e, nil
}

// parseInstallationRepositories maps an "installation_repositories"
// delivery: repositories were added to or removed from an installation.
func parseInstallationRepositories(host string, body []byte) (connectors.Event, error) {
	const name = "installation_repositories"
	ev := new(gh.InstallationRepositoriesEvent)
	if err := connectors.DecodeJSON(body, ev); err != nil {
		return connectors.Event{}, malformed(name, "%v", err)
	}
	action := ev.GetAction()
	e := connectors.Event{Provider: connectors.ProviderGitHub, EventName: eventName(name, action), Action: connectors.ActionIgnore}
	if !installationRepositoriesActions[action] {
		e.InstallationID = ev.GetInstallation().GetID()
		return e, nil
	}
	change, err := installationChange(ev.Installation, action)
	if err != nil {
		return connectors.Event{}, malformed(e.EventName, "%v", err)
	}
	// The event's own selection is the one after the change; the
	// installation object may predate it.
	if sel := ev.GetRepositorySelection(); sel != "" {
		change.RepositorySelection = sel
	}
	change.Repositories = repositoryNames(ev.RepositoriesAdded)
	change.RemovedRepositories = repositoryNames(ev.RepositoriesRemoved)
	e.InstallationID, e.Installation = change.ID, change
	e.EntityKey = installationKey(host, change.ID)
	return e, nil
}

func installationChange(inst *gh.Installation, action string) (*connectors.InstallationChange, error) {
	switch {
	case inst == nil:
		return nil, errors.New("no installation")
	case inst.GetID() <= 0:
		return nil, errors.New("installation: missing id")
	}
	c := &connectors.InstallationChange{
		ID:                  inst.GetID(),
		AppID:               inst.GetAppID(),
		Account:             inst.GetAccount().GetLogin(),
		AccountType:         inst.GetAccount().GetType(),
		Action:              action,
		RepositorySelection: inst.GetRepositorySelection(),
	}
	if inst.SuspendedAt != nil {
		c.SuspendedAt = inst.SuspendedAt.Time.UTC()
	}
	if inst.UpdatedAt != nil {
		c.At = inst.UpdatedAt.Time.UTC()
	}
	return c, nil
}

// installationKey serializes the deliveries of one installation, so their
// changes are applied one at a time.
func installationKey(host string, id int64) string {
	return externalID(host, "installation", id)
}

// repositoryNames are the valid full names of repos, sorted, without
// duplicates; nil for none.
func repositoryNames(repos []*gh.Repository) []string {
	var names []string
	for _, r := range repos {
		if n := r.GetFullName(); validRepo(n) {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}
