package main

import (
	"flag"
	"fmt"
	"io"
	"runtime/debug"
)

var versionUsage = usageText{
	line:    "version",
	summary: "Prints the module version and VCS revision this binary was built from, whether the work tree had\nuncommitted changes, and the revision's commit time (\"(devel)\" and \"unknown\" when the build\ndid not record them, as with go run).",
	example: "gateway version",
}

func version(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	if err := parseFlags(fs, versionUsage, args, stdout, stderr); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError(stderr, fs, versionUsage, "unexpected argument %q", fs.Arg(0))
	}
	bi, ok := debug.ReadBuildInfo()
	writeVersion(stdout, newBuildVersion(bi, ok))
	return nil
}

// moduleVersion is the module version of this build ("(devel)" when the
// build did not record one).
func moduleVersion() string {
	bi, ok := debug.ReadBuildInfo()
	return newBuildVersion(bi, ok).module
}

// buildVersion is what the Go toolchain recorded about a build.
type buildVersion struct {
	module, revision, modified, time, goVersion string
}

const unknown = "unknown"

func newBuildVersion(bi *debug.BuildInfo, ok bool) buildVersion {
	v := buildVersion{module: "(devel)", revision: unknown, modified: unknown, time: unknown, goVersion: unknown}
	if !ok || bi == nil {
		return v
	}
	if bi.Main.Version != "" {
		v.module = bi.Main.Version
	}
	if bi.GoVersion != "" {
		v.goVersion = bi.GoVersion
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.revision = s.Value
		case "vcs.modified":
			v.modified = s.Value
		case "vcs.time":
			v.time = s.Value
		}
	}
	return v
}

// writeVersion prints the build's version. Go records no build time of its
// own; vcs.time, the revision's commit time, is the closest it keeps.
func writeVersion(w io.Writer, v buildVersion) {
	fmt.Fprintf(w, "gateway %s\nrevision: %s\nmodified: %s\ncommit time: %s\ngo: %s\n",
		v.module, v.revision, v.modified, v.time, v.goVersion)
}
