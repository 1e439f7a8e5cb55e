package main

import (
	"runtime/debug"

	"github.com/trackergateway/gateway/internal/inbox"
)

// gcPercent is the collector's GOGC unless the environment sets one. At
// Go's default of 100 a gateway's small heap is collected many times a
// second under load, and the marking competes with the database for the
// same cores. At 400 the gateway spent up to a quarter less CPU per task
// and had a shorter acknowledgement tail, for about 50 MB more RSS
// (docs/benchmarks.md, "The collector at GOGC=400"); the soft memory limit
// still bounds the heap under big uploads.
const gcPercent = 400

// collectorSettings is how serve tunes the Go runtime's collector; a zero
// field leaves the runtime's own value.
type collectorSettings struct {
	memoryLimit int64 // bytes, for debug.SetMemoryLimit
	gcPercent   int   // for debug.SetGCPercent
}

// collectorFor returns the settings for a gateway holding at most inflight
// body bytes. A GOMEMLIMIT or GOGC in the process environment (lookup) is
// the operator's choice, which the runtime has applied already, so the
// setting it names is left alone.
func collectorFor(lookup Env, inflight int64) collectorSettings {
	var s collectorSettings
	if _, set := lookup("GOMEMLIMIT"); !set {
		s.memoryLimit = inbox.SoftMemoryLimit(inflight)
	}
	if _, set := lookup("GOGC"); !set {
		s.gcPercent = gcPercent
	}
	return s
}

// apply sets the runtime's collector as s says.
func (s collectorSettings) apply() {
	if s.memoryLimit > 0 {
		debug.SetMemoryLimit(s.memoryLimit)
	}
	if s.gcPercent > 0 {
		debug.SetGCPercent(s.gcPercent)
	}
}
