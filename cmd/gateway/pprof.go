//go:build pprof

// Profiling for benchmark investigations only: a build with -tags pprof
// serves net/http/pprof on GATEWAY_PPROF_LISTEN (never in a default build).
package main

import (
	"net/http"
	_ "net/http/pprof"
	"os"
)

func init() {
	if addr := os.Getenv("GATEWAY_PPROF_LISTEN"); addr != "" {
		go func() { _ = http.ListenAndServe(addr, nil) }()
	}
}
