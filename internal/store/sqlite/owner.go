package sqlite

import (
	"errors"
	"fmt"
	"os"

	"github.com/trackergateway/gateway/internal/store"
)

// LockSuffix names the ownership lock file beside a database:
// <path>.lock.
const LockSuffix = ".lock"

// ClaimOwnership makes this process the database's one owner for as long as
// the driver is open: it takes an exclusive advisory lock (flock) on the
// file <path>.lock, created 0600 beside the database and never removed.
// SQLite's own locks cannot say this: they are held per transaction, or,
// with locking_mode=EXCLUSIVE, keep every other process out, where the
// other commands (gateway prune, gateway mcp, gateway send) must still
// open the file beside a running serve. Only serve claims the ownership
// lock, and the kernel releases it when its process ends, kill -9
// included. A lock held by another process (or another driver of this one)
// is store.ErrDatabaseInUse. owned is false where the platform has no such
// lock (then nothing can be proven, and leases keep their expiry).
func (d *Driver) ClaimOwnership() (owned bool, err error) {
	d.ownerMu.Lock()
	defer d.ownerMu.Unlock()
	if d.owner != nil {
		return true, nil
	}
	lockPath := d.path + LockSuffix
	f, err := os.OpenFile(lockPath, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return false, fmt.Errorf("open ownership lock: %w", err)
	}
	switch err := lockExclusive(f); {
	case errors.Is(err, errLockHeld):
		f.Close()
		return false, fmt.Errorf("%w: %s is locked by another process: one gateway serve per SQLite database (PostgreSQL serves replicas)",
			store.ErrDatabaseInUse, lockPath)
	case errors.Is(err, errNoLocks):
		f.Close()
		return false, nil
	case err != nil:
		f.Close()
		return false, fmt.Errorf("lock %s: %w", lockPath, err)
	}
	d.owner = f
	return true, nil
}

var (
	errLockHeld = errors.New("lock held")
	errNoLocks  = errors.New("no advisory locks on this platform")
)

// releaseOwnership closes the lock file, which releases the lock.
func (d *Driver) releaseOwnership() {
	d.ownerMu.Lock()
	defer d.ownerMu.Unlock()
	if d.owner != nil {
		d.owner.Close()
		d.owner = nil
	}
}
