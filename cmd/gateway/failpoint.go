package main

import (
	"fmt"
	"os"
	"slices"

	"github.com/trackergateway/gateway/internal/ingest"
)

// failpointEnv names a point of processing where the gateway kills itself
// with SIGKILL, as a crash there would: the crash tests set it on the
// subprocess they start. Unset, the hook is nil, which costs processing
// one nil check.
const failpointEnv = "GATEWAY_TEST_FAILPOINT"

// failpoints are the names failpointEnv accepts.
var failpoints = []string{ingest.FailAfterDelete}

// failpoint returns the hook of failpointEnv for ingest.Applier.Failpoint,
// nil when it is unset.
func failpoint(env Env) (func(string) error, error) {
	name, ok := env(failpointEnv)
	if !ok || name == "" {
		return nil, nil
	}
	if !slices.Contains(failpoints, name) {
		return nil, fmt.Errorf("%s: unknown failpoint %q (known: %q)", failpointEnv, name, failpoints)
	}
	return func(at string) error {
		if at != name {
			return nil
		}
		if p, err := os.FindProcess(os.Getpid()); err == nil {
			_ = p.Kill()
		}
		select {} // nothing after the failpoint may run
	}, nil
}
