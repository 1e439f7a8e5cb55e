//go:build unix

package sqlite

import (
	"errors"
	"os"
	"syscall"
)

// lockExclusive takes f's flock without waiting. flock, not fcntl: an fcntl
// lock belongs to the process and is dropped when any descriptor of the
// file closes, and SQLite uses fcntl locks on the database itself; an
// flock belongs to this descriptor alone.
func lockExclusive(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EWOULDBLOCK):
			return errLockHeld
		}
		return err
	}
}
