package inbox

import (
	"context"
	"time"
)

// jobRunner runs a claim's jobs (preparing and processing its deliveries)
// on goroutines that wait a moment for the next job once they finish,
// instead of starting a goroutine per job. A job's parse and its SQL run
// deep call stacks, and a new goroutine reaches that depth by copying its
// stack as it grows, again for every delivery: runtime.newstack was 5.8%
// of the gateway's CPU in a drain (docs/benchmarks.md, "Goroutines that
// keep their stacks"). A goroutine that waits for the next job keeps its
// grown stack. A job never waits for a goroutine: when none is idle a new
// one starts, so jobs that wait for one another (the members of a shared
// commit) cannot deadlock on the runner.
type jobRunner struct {
	jobs chan func() // unbuffered: a send succeeds only into an idle goroutine
	idle time.Duration
}

// jobRunnerIdle is how long a goroutine waits for the next job: long
// enough to outlast the gaps between claims under load, short enough that
// a burst's goroutines do not linger.
const jobRunnerIdle = 2 * time.Second

func newJobRunner(idle time.Duration) *jobRunner {
	return &jobRunner{jobs: make(chan func()), idle: idle}
}

// Go runs f on an idle goroutine, or on a new one. A goroutine started
// here waits for more jobs until ctx ends or idle passes without one.
func (r *jobRunner) Go(ctx context.Context, f func()) {
	select {
	case r.jobs <- f:
	default:
		go r.serve(ctx, f)
	}
}

func (r *jobRunner) serve(ctx context.Context, f func()) {
	timer := time.NewTimer(r.idle)
	defer timer.Stop()
	for {
		f()
		timer.Reset(r.idle)
		select {
		case f = <-r.jobs:
		case <-timer.C:
			return
		case <-ctx.Done():
			return
		}
	}
}
