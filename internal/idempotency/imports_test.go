package idempotency

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// The identity rules know no provider: the coordinator is given the
// contributions it accepts, and neither it nor anything it imports reaches
// into connectors/.
func TestImportsNoConnectors(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, "github.com/trackergateway/gateway/connectors") {
			t.Errorf("idempotency depends on %s", pkg)
		}
	}
}

func TestValidateContributionUsesTheGivenKinds(t *testing.T) {
	t.Parallel()
	c := New(nil, discardLogger(), time.Now, ContributionKinds{"forge": "change_request", "github": "pull_request"})
	tests := []struct {
		name, provider, kind string
		unsupported          bool
	}{
		{"given provider and kind", "forge", "change_request", false},
		{"given provider, other kind", "forge", "pull_request", true},
		{"registered elsewhere, not given", "gitlab", "merge_request", true},
		{"given github", "github", "pull_request", false},
	}
	for _, tt := range tests {
		r := RemoteContributionRequest{Provider: tt.provider, ContributionKind: tt.kind, ConnectionID: "c", ContributionID: "1"}
		err := c.validateContribution(r)
		if got := errors.Is(err, ErrUnsupportedStep); got != tt.unsupported || (!tt.unsupported && err != nil) {
			t.Errorf("%s: validateContribution(%s, %s) = %v, want unsupported %v", tt.name, tt.provider, tt.kind, err, tt.unsupported)
		}
	}
}
