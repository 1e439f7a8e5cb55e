// Package leadbatch gathers concurrent calls into batches that one of the
// callers runs: the store's shared commits (one SQLite transaction for the
// processing transactions that queue for the writer), the coordinator's
// creations written at once (one transaction for the creations of a
// workspace) and the store's entity lookups on PostgreSQL (one round trip
// for the lookups of a claim) all work this way.
//
// There is no timer. A call that finds no batch running leads: it runs its
// batch at once, taking whatever has queued meanwhile, so under light load
// nothing waits and under a burst the batches grow by themselves. The
// calls that arrive while a batch runs queue, and the leader goes on
// running them as the next batches (up to MaxLed in a row) rather than
// handing over to a goroutine the scheduler has yet to run; then it hands
// the lead to the first call still queued and returns its own result. A
// single call left queued is handed the lead rather than run by the
// leader, so it runs in its own goroutine and the leader's caller does not
// wait for it.
package leadbatch

import "sync"

// Queue batches calls with members of type M and results of type R. The
// zero value is not usable: Max, MaxLed and Run must be set before the
// first Do.
type Queue[M, R any] struct {
	// Max bounds the members of a batch, and MaxLed the batches one
	// leader runs in a row.
	Max, MaxLed int
	// Run runs a batch and returns each member's result, in order.
	Run func(batch []M) []R

	mu      sync.Mutex
	leading bool
	queue   []*waiter[M, R]
}

type waiter[M, R any] struct {
	m   M
	res chan answer[R] // capacity 1
}

// answer is what a queued call is told: its result, or that it leads.
type answer[R any] struct {
	r    R
	lead bool
}

// Do runs m in the next batch and returns its result.
func (q *Queue[M, R]) Do(m M) R {
	w := &waiter[M, R]{m: m, res: make(chan answer[R], 1)}
	q.mu.Lock()
	lead := !q.leading
	if lead {
		q.leading = true
	} else {
		q.queue = append(q.queue, w)
	}
	q.mu.Unlock()
	if !lead {
		if a := <-w.res; !a.lead {
			return a.r
		}
	}
	return q.lead(w)
}

// Queued is how many calls wait for a batch.
func (q *Queue[M, R]) Queued() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.queue)
}

// lead runs first's batch and the batches that queue behind it, and
// returns first's result.
func (q *Queue[M, R]) lead(first *waiter[M, R]) R {
	defer func() {
		q.mu.Lock()
		defer q.mu.Unlock()
		if len(q.queue) == 0 {
			q.leading = false
			return
		}
		next := q.queue[0]
		q.queue = q.queue[1:]
		next.res <- answer[R]{lead: true}
	}()
	q.mu.Lock()
	batch := q.take(first)
	q.mu.Unlock()
	own := q.run(batch)
	for range q.MaxLed - 1 {
		q.mu.Lock()
		if len(q.queue) < 2 {
			q.mu.Unlock()
			break
		}
		next := q.queue[0]
		q.queue = q.queue[1:]
		batch := q.take(next)
		q.mu.Unlock()
		next.res <- answer[R]{r: q.run(batch)}
	}
	return own
}

// take is first and the queued calls that follow it, up to Max; q.mu held.
func (q *Queue[M, R]) take(first *waiter[M, R]) []*waiter[M, R] {
	n := min(len(q.queue), q.Max-1)
	batch := append([]*waiter[M, R]{first}, q.queue[:n]...)
	q.queue = q.queue[n:]
	return batch
}

// run runs batch, tells every member but the first its result and returns
// the first's.
func (q *Queue[M, R]) run(batch []*waiter[M, R]) R {
	members := make([]M, len(batch))
	for i, w := range batch {
		members[i] = w.m
	}
	results := q.Run(members)
	for i, w := range batch[1:] {
		w.res <- answer[R]{r: results[1+i]}
	}
	return results[0]
}
