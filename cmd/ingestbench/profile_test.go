package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestProfileSenders: with a directory, a run leaves a CPU profile named
// after it (gzip, as runtime/pprof writes it); without one, nothing.
func TestProfileSenders(t *testing.T) {
	// Not parallel: the process has one CPU profiler.
	tests := []struct {
		name    string
		dir     bool
		wantRun bool
	}{
		{"directory given", true, true},
		{"no directory", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmp := t.TempDir()
			b := &bench{run_: 7}
			if tt.dir {
				b.profileDir = tmp
			}
			b.profileSenders()()
			raw, err := os.ReadFile(filepath.Join(tmp, "run-7.pprof"))
			if got := err == nil; got != tt.wantRun {
				t.Fatalf("profile written = %v, want %v (%v)", got, tt.wantRun, err)
			}
			if tt.wantRun && !bytes.HasPrefix(raw, []byte{0x1f, 0x8b}) {
				t.Errorf("profile starts %x, want gzip", raw[:min(len(raw), 4)])
			}
		})
	}
}
