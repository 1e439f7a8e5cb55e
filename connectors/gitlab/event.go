package gitlab

import (
	"encoding/json"

	gitlab "gitlab.com/gitlab-org/api/client-go"
)

// EventFromPayload names the X-Gitlab-Event of a webhook body from its
// object_kind (and event_type, which tells a confidential issue or note from
// a public one), for a sender that has the body without its headers. The
// names are the hooks whose object_kind Parse checks; ok is false for any
// other body.
func EventFromPayload(body []byte) (string, bool) {
	var probe struct {
		ObjectKind string `json:"object_kind"`
		EventType  string `json:"event_type"`
	}
	if err := json.Unmarshal(body, &probe); err != nil || probe.ObjectKind == "" {
		return "", false
	}
	switch {
	case probe.ObjectKind == "issue" && probe.EventType == "confidential_issue":
		return string(gitlab.EventConfidentialIssue), true
	case probe.ObjectKind == "note" && probe.EventType == "confidential_note":
		return string(gitlab.EventConfidentialNote), true
	}
	for _, name := range hooksByKind {
		if objectKinds[name] == probe.ObjectKind {
			return string(name), true
		}
	}
	return "", false
}

// hooksByKind lists the public hook of each object_kind in objectKinds (the
// confidential hooks share their object_kind with these).
var hooksByKind = []gitlab.EventType{
	gitlab.EventTypeIssue, gitlab.EventTypeMergeRequest, gitlab.EventTypeNote, gitlab.EventTypePush,
	gitlab.EventTypeTagPush, gitlab.EventTypePipeline, gitlab.EventTypeJob, gitlab.EventTypeWikiPage,
	gitlab.EventTypeDeployment, gitlab.EventTypeRelease, gitlab.EventTypeFeatureFlag, gitlab.EventTypeEmoji,
	gitlab.EventTypeMilestone,
}
