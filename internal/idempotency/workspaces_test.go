package idempotency

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/trackergateway/gateway/internal/failure"
	"github.com/trackergateway/gateway/internal/store/sqlstore"
	"github.com/trackergateway/gateway/internal/store/storetest"
)

// Creations plan against a workspace snapshot for workspaceTTL: reads
// within it reuse the snapshot, the first after it reads the workspace
// again, and a missing workspace is never kept.
func TestWorkspaceSnapshots(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		clock := newTestClock()
		counted := &countingStore{Store: st}
		c := New(counted, discardLogger(), clock.Now, testContributionKinds)
		create := func(workspaceID string) error {
			req := createRequest(fmt.Sprintf("ext-%d", clock.Now().UnixNano()))
			req.WorkspaceID = workspaceID
			_, err := c.Create(ctx, req)
			return err
		}
		steps := []struct {
			name      string
			advance   time.Duration
			workspace string
			wantReads int64
			wantErr   failure.Code
		}{
			{"first creation reads the workspace", 0, testWS, 1, ""},
			{"within the TTL the snapshot answers", workspaceTTL / 2, testWS, 1, ""},
			{"after the TTL the workspace is read again", workspaceTTL, testWS, 2, ""},
			{"a missing workspace is read", 0, "later", 3, failure.NotFound},
			{"and read again, not kept as missing", 0, "later", 4, ""},
		}
		for _, step := range steps {
			clock.Advance(step.advance)
			if step.name == "and read again, not kept as missing" {
				storetest.SeedWorkspace(t, st, "later")
			}
			err := create(step.workspace)
			switch {
			case step.wantErr == "" && err != nil:
				t.Fatalf("%s: Create: %v", step.name, err)
			case step.wantErr != "" && failure.CodeOf(err) != step.wantErr:
				t.Fatalf("%s: Create = %v, want %s", step.name, err, step.wantErr)
			}
			if got := counted.workspaceReads.Load(); got != step.wantReads {
				t.Errorf("%s: workspace reads = %d, want %d", step.name, got, step.wantReads)
			}
		}
	})
}
