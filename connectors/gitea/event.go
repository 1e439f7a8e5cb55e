package gitea

import (
	"encoding/json"
)

// EventFromPayload names the X-Gitea-Event of a webhook body from its shape,
// for a sender that has the body without its headers (Gitea does not repeat
// the event in the body): "pull_request" for a body with a pull_request
// object, "issues" for one with an issue object. A comment or review body
// also carries the issue or pull request it is about and is never named
// after it; ok is false for those and any other body.
func EventFromPayload(body []byte) (string, bool) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return "", false
	}
	isObject := func(key string) bool {
		v, ok := top[key]
		return ok && len(v) > 0 && v[0] == '{'
	}
	has := func(key string) bool {
		v, ok := top[key]
		return ok && string(v) != "null"
	}
	switch {
	case has("comment") || has("review"):
		return "", false
	case isObject("pull_request"):
		return eventPullRequest, true
	case isObject("issue"):
		return eventIssues, true
	}
	return "", false
}
