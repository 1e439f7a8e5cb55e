package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
)

// profileSenders starts a CPU profile of this process (the senders) for the
// current run when --senders-profile names a directory, and returns what
// stops it. Both throughput runs are profiled alike, so the profiles tell
// where the senders' CPU per acknowledgement differs between them.
func (b *bench) profileSenders() (stop func()) {
	if b.profileDir == "" {
		return func() {}
	}
	path := filepath.Join(b.profileDir, fmt.Sprintf("run-%d.pprof", b.run_))
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "senders profile:", err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintln(os.Stderr, "senders profile:", err)
		f.Close()
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "senders profile:", err)
			return
		}
		fmt.Printf("senders' CPU profile of run %d: %s\n", b.run_, path)
	}
}
