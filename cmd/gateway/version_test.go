package main

import (
	"bytes"
	"runtime/debug"
	"strings"
	"testing"
)

func TestBuildVersion(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		bi   *debug.BuildInfo
		ok   bool
		want string
	}{
		{"no build info", nil, false,
			"gateway (devel)\nrevision: unknown\nmodified: unknown\ncommit time: unknown\ngo: unknown\n"},
		{"go run: no version, no VCS settings", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: ""}}, true,
			"gateway (devel)\nrevision: unknown\nmodified: unknown\ncommit time: unknown\ngo: go1.26.0\n"},
		{"built from a clone", &debug.BuildInfo{GoVersion: "go1.26.0",
			Main: debug.Module{Path: "github.com/trackergateway/gateway", Version: "v0.0.0-20261201144959-6494c76b64d0+dirty"},
			Settings: []debug.BuildSetting{
				{Key: "-buildmode", Value: "exe"},
				{Key: "vcs", Value: "git"},
				{Key: "vcs.revision", Value: "6494c76b64d0d5984ff5c21a6ba14466022c0340"},
				{Key: "vcs.time", Value: "2026-12-01T14:49:59Z"},
				{Key: "vcs.modified", Value: "true"},
			}}, true,
			"gateway v0.0.0-20261201144959-6494c76b64d0+dirty\nrevision: 6494c76b64d0d5984ff5c21a6ba14466022c0340\nmodified: true\ncommit time: 2026-12-01T14:49:59Z\ngo: go1.26.0\n"},
	}
	for _, tt := range tests {
		var out bytes.Buffer
		writeVersion(&out, newBuildVersion(tt.bi, tt.ok))
		if out.String() != tt.want {
			t.Errorf("%s: printed\n%s\nwant\n%s", tt.name, out.String(), tt.want)
		}
	}
}

func TestVersionCommand(t *testing.T) {
	t.Parallel()
	code, out, errOut := runCLI(t, "version")
	if code != 0 || errOut != "" {
		t.Fatalf("gateway version: exit %d, stderr %q; want 0 and nothing", code, errOut)
	}
	var want bytes.Buffer
	bi, ok := debug.ReadBuildInfo()
	writeVersion(&want, newBuildVersion(bi, ok))
	if out != want.String() {
		t.Errorf("gateway version printed\n%s\nwant\n%s", out, want.String())
	}
	if !strings.HasPrefix(out, "gateway ") || !strings.Contains(out, "\nrevision: ") {
		t.Errorf("gateway version printed %q, want the version and revision lines", out)
	}
}
