//go:build !unix

package sqlite

import "os"

// lockExclusive: no flock here, so ownership is never claimed.
func lockExclusive(*os.File) error { return errNoLocks }
