package main

// kill -9 during a stream of deliveries: nothing acknowledged is lost and no
// task is duplicated.

import (
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// crashIssue is the i-th distinct issue of the stream.
func crashIssue(t testing.TB, i int) (hook, string) {
	id := int64(7_000_000 + i)
	h := hook{Conn: "github", Event: "issues", Key: fmt.Sprintf("crash-%04d", i),
		Body: githubIssueOpened(t, id, int64(1000+i), fmt.Sprintf("Crash test issue %d", i))}
	return h, "github:github.com:issue:" + strconv.FormatInt(id, 10)
}

// drainTimeout bounds the wait for every delivery to be processed after a
// restart: on PostgreSQL, deliveries the killed process had claimed wait
// out their 30s lease, creations it left open wait for the recoverer's 30s
// grace (a SQLite gateway takes them back at start-up).
const drainTimeout = 4 * time.Minute

// TestCrashRecovery streams distinct issue-opened deliveries at a gateway
// subprocess from a few goroutines, SIGKILLs it mid-stream, restarts it on
// the same database and resends what was not acknowledged: every
// acknowledged delivery ends processed, and each issue has exactly one task.
func TestCrashRecovery(t *testing.T) {
	t.Parallel()
	const (
		n       = 300
		senders = 4
		killAt  = n / 3 // acknowledgements before the kill
	)
	forEachDialect(t, func(t *testing.T, dialect string) {
		dbURL := newDatabaseURL(t, dialect)
		cfg := writeConfig(t)
		hooks := make([]hook, n)
		exts := make([]string, n)
		for i := range n {
			hooks[i], exts[i] = crashIssue(t, i)
		}

		first := startProcess(t, dbURL, cfg, "gateway-1")
		acked := make([]bool, n) // index i is written by the one sender that posts it
		var acks atomic.Int64
		var killOnce sync.Once
		next := make(chan int)
		go func() {
			for i := range n {
				next <- i
			}
			close(next)
		}()
		var wg sync.WaitGroup
		for range senders {
			wg.Go(func() {
				for i := range next {
					h := hooks[i]
					status, _, err := first.postWebhook(h.Conn, h.header(githubSecret), h.Body)
					if err != nil || status != http.StatusAccepted {
						continue // not acknowledged: resent after the restart
					}
					acked[i] = true
					if acks.Add(1) == killAt {
						killOnce.Do(func() { _ = first.cmd.Process.Signal(syscall.SIGKILL) })
					}
				}
			})
		}
		wg.Wait()
		<-first.exited
		if ws, ok := first.state.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			t.Fatalf("first gateway ended with %v, want killed by SIGKILL", first.state)
		}
		var unacked []int
		for i, ok := range acked {
			if !ok {
				unacked = append(unacked, i)
			}
		}
		t.Logf("%d deliveries acknowledged before the kill, %d not", n-len(unacked), len(unacked))
		if len(unacked) == 0 {
			t.Fatal("every delivery was acknowledged: the kill did not land mid-stream")
		}

		// Restart on the same database; the provider resends what it was not
		// told about (the same delivery IDs).
		second := startProcess(t, dbURL, cfg, "gateway-2")
		t.Logf("after the restart: deliveries by status %v", statusCounts(second.deliveries(t)))
		duplicates := 0
		for _, i := range unacked {
			if r := second.deliver(t, hooks[i]); r.Status == "duplicate" {
				duplicates++ // committed before the kill, the answer lost
			}
		}
		t.Logf("resent %d deliveries after the restart; %d were already committed", len(unacked), duplicates)

		all := second.waitIdle(t, drainTimeout)
		byKey := map[string]delivery{}
		for _, d := range all {
			if _, dup := byKey[d.DeliveryKey]; dup {
				t.Errorf("delivery key %s has two rows", d.DeliveryKey)
			}
			byKey[d.DeliveryKey] = d
		}
		if len(all) != n {
			t.Errorf("deliveries = %d rows, want %d", len(all), n)
		}
		for i, h := range hooks {
			d, ok := byKey["1:"+h.Key]
			switch {
			case !ok:
				t.Errorf("delivery %s (acknowledged %t) is missing", h.Key, acked[i])
			case d.Status != "succeeded":
				t.Errorf("delivery %s (acknowledged %t): status %q last_error %q, want succeeded", h.Key, acked[i], d.Status, str(d.LastError))
			}
		}
		checkOneTaskEach(t, second.gateway, exts)
	})
}

func statusCounts(ds []delivery) map[string]int {
	out := map[string]int{}
	for _, d := range ds {
		out[d.Status]++
	}
	return out
}

// checkOneTaskEach requires exactly one task per external ID of want and no
// other task.
func checkOneTaskEach(t *testing.T, g *gateway, want []string) {
	t.Helper()
	count := map[string]int{}
	tasks := g.tasks(t)
	for _, tk := range tasks {
		count[tk.ExternalID]++
	}
	for _, ext := range want {
		if count[ext] != 1 {
			t.Errorf("external ID %s has %d tasks, want 1", ext, count[ext])
		}
		delete(count, ext)
	}
	for ext, c := range count {
		t.Errorf("unexpected task(s) for %q: %d", ext, c)
	}
	if len(tasks) != len(want) {
		t.Errorf("tasks = %d, want %d", len(tasks), len(want))
	}
}
