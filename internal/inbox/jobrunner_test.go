package inbox

import (
	"bytes"
	"context"
	"runtime"
	"sync"
	"testing"
	"time"
)

// goroutineID is the running goroutine's number, from its stack header
// ("goroutine 12 [running]:"): which goroutine ran a job.
func goroutineID() string {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	id, _, _ := bytes.Cut(bytes.TrimPrefix(buf, []byte("goroutine ")), []byte(" "))
	return string(id)
}

// TestJobRunnerReusesIdleGoroutines: a job sent while a goroutine waits
// runs on that goroutine (which keeps its grown stack), and the goroutine
// stops waiting once its context ends.
func TestJobRunnerReusesIdleGoroutines(t *testing.T) {
	t.Parallel()
	r := newJobRunner(time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ran := make(chan string, 1)
	r.Go(ctx, func() { ran <- goroutineID() })
	first := <-ran
	// A job given before the first goroutine waits again runs on a new
	// one; once it waits (first in line), the next job is its.
	waitFor(t, "a job on the idle goroutine "+first, func() bool {
		r.Go(ctx, func() { ran <- goroutineID() })
		return <-ran == first
	})
	cancel()
	waitNoneIdle(t, r, "the idle goroutine to stop once its context ended")
}

// waitNoneIdle waits until no goroutine of r takes a job sent to it.
func waitNoneIdle(t *testing.T, r *jobRunner, what string) {
	t.Helper()
	waitFor(t, what, func() bool {
		select {
		case r.jobs <- func() {}:
			return false
		default:
			return true
		}
	})
}

// TestJobRunnerIdleGoroutineStops: a goroutine that gets no job for the
// idle time stops.
func TestJobRunnerIdleGoroutineStops(t *testing.T) {
	t.Parallel()
	r := newJobRunner(time.Millisecond)
	done := make(chan struct{})
	r.Go(context.Background(), func() { close(done) })
	<-done
	waitNoneIdle(t, r, "the idle goroutine to stop after its idle time")
}

// TestJobRunnerNeverWaitsForAGoroutine: jobs that wait for one another all
// run, as the members of a shared commit do: with none idle, each job gets
// a goroutine of its own.
func TestJobRunnerNeverWaitsForAGoroutine(t *testing.T) {
	t.Parallel()
	r := newJobRunner(time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const n = 16
	var arrived, all sync.WaitGroup
	arrived.Add(n)
	all.Add(n)
	for range n {
		r.Go(ctx, func() {
			defer all.Done()
			arrived.Done()
			arrived.Wait() // every job waits until all have started
		})
	}
	finished := make(chan struct{})
	go func() { all.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(testPollDeadline):
		t.Fatal("jobs that wait for one another did not all run")
	}
}
