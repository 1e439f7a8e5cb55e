package ingest

import (
	"testing"

	"github.com/trackergateway/gateway/connectors"
)

// classify decides a delivery's kind once, the first that applies in the
// order of the kinds.
func TestClassify(t *testing.T) {
	t.Parallel()
	install := &connectors.InstallationChange{ID: 1, Action: "created"}
	pr := &connectors.Contribution{ID: 7, Kind: connectors.KindPullRequest}
	tests := []struct {
		name string
		ev   connectors.Event
		want deliveryKind
	}{
		{"installation", connectors.Event{Installation: install}, installationChange},
		{"installation before ignore", connectors.Event{Installation: install, Action: connectors.ActionIgnore}, installationChange},
		{"ignore", connectors.Event{Action: connectors.ActionIgnore, Contribution: pr}, unmapped},
		{"link", connectors.Event{Action: connectors.ActionLink}, linkChange},
		{"unlink before contribution", connectors.Event{Action: connectors.ActionUnlink, Contribution: pr}, linkChange},
		{"contribution", connectors.Event{Action: connectors.ActionCreate, Contribution: pr}, contributionChange},
		{"issue", connectors.Event{Action: connectors.ActionCreate}, issueChange},
		{"issue delete", connectors.Event{Action: connectors.ActionDelete}, issueChange},
	}
	for _, tt := range tests {
		if got := classify(tt.ev); got != tt.want {
			t.Fatalf("%s: classify = %v, want %v", tt.name, got, tt.want)
		}
	}
}
