//go:build unix

package sqlite

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/trackergateway/gateway/internal/store"
)

// TestClaimOwnership: one driver of a file owns it; another, in this
// process or any other, is refused until the owner closes; the lock file
// is private to the gateway's user.
func TestClaimOwnership(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "gateway.db")
	first, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	second, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()

	if owned, err := first.ClaimOwnership(); err != nil || !owned {
		t.Fatalf("first claim = %v, %v; want owned", owned, err)
	}
	if owned, err := first.ClaimOwnership(); err != nil || !owned {
		t.Fatalf("the owner claiming again = %v, %v; want owned", owned, err)
	}
	owned, err := second.ClaimOwnership()
	if !errors.Is(err, store.ErrDatabaseInUse) || owned {
		t.Fatalf("second claim = %v, %v; want refused with ErrDatabaseInUse", owned, err)
	}
	fi, err := os.Stat(path + LockSuffix)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got&0o077 != 0 {
		t.Errorf("lock file mode %o, want no group or other permissions", got)
	}
	// The second driver still works the file: only ownership is refused.
	if err := second.Ping(ctx); err != nil {
		t.Errorf("ping beside the owner: %v", err)
	}

	first.Close()
	if owned, err := second.ClaimOwnership(); err != nil || !owned {
		t.Fatalf("claim once the owner closed = %v, %v; want owned", owned, err)
	}
}
