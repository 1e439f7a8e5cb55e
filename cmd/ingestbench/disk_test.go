package main

import (
	"path/filepath"
	"testing"
	"time"
)

// TestProbeDisk: the probe syncs at its pace for the phase and leaves
// nothing behind; a directory it cannot write in is reported, not measured.
func TestProbeDisk(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := probeDisk(dir, 100*time.Millisecond)
	if r.writeFailure != nil {
		t.Fatalf("probeDisk: %v", r.writeFailure)
	}
	// How many syncs fit in 100 ms is the disk's business (a stall takes
	// the whole phase); the pacing allows one a millisecond at most.
	if r.syncs.n < 1 || r.syncs.n > 101 || len(r.syncs.d) != r.syncs.n {
		t.Errorf("probeDisk made %d syncs (%d timed) in 100 ms, want 1 to 101, each timed", r.syncs.n, len(r.syncs.d))
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) != 0 {
		t.Errorf("probeDisk left %v", left)
	}
	if r := probeDisk(filepath.Join(dir, "missing"), time.Millisecond); r.writeFailure == nil {
		t.Error("probeDisk in a missing directory reported no failure")
	}
}

func TestDiskDir(t *testing.T) {
	t.Parallel()
	tests := []struct{ url, want string }{
		{"sqlite:/var/lib/gateway/gateway.db", "/var/lib/gateway"},
		{"sqlite:gateway.db", "."},
	}
	for _, tt := range tests {
		if got := diskDir(tt.url); got != tt.want {
			t.Errorf("diskDir(%q) = %q, want %q", tt.url, got, tt.want)
		}
	}
}
