package github

import (
	"encoding/json"
)

// EventFromPayload names the X-GitHub-Event of a webhook body from its shape,
// for a sender that has the body without its headers (GitHub does not repeat
// the event in the body). It knows the events Parse maps (issues,
// pull_request, ping, installation, installation_repositories) and the
// comment and review events whose bodies look like theirs, so those are
// never mistaken for them; ok is false for any other body.
func EventFromPayload(body []byte) (string, bool) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return "", false
	}
	has := func(key string) bool {
		v, ok := top[key]
		return ok && string(v) != "null"
	}
	switch {
	case has("zen") && has("hook_id"):
		return "ping", true
	case !has("action"):
		return "", false
	case has("pull_request") && has("review"):
		return "pull_request_review", true
	case has("pull_request") && has("comment"):
		return "pull_request_review_comment", true
	case has("pull_request"):
		return "pull_request", true
	case has("issue") && has("comment"):
		return "issue_comment", true
	case has("issue"):
		return "issues", true
	case has("installation") && (has("repositories_added") || has("repositories_removed")):
		return "installation_repositories", true
	case has("installation") && describesInstallation(top["installation"]):
		// An App's other deliveries carry the installation as {id,
		// node_id}; only installation events describe it whole.
		return "installation", true
	}
	return "", false
}

func describesInstallation(inst json.RawMessage) bool {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(inst, &members); err != nil {
		return false
	}
	_, ok := members["account"]
	return ok
}
