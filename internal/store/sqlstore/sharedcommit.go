package sqlstore

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/trackergateway/gateway/internal/store"
)

// Shared commits (store.WithSharedCommit): the transactions of concurrent
// goroutines run one after another inside one database transaction and
// commit together. A burst of deliveries then costs one BEGIN/COMMIT (and,
// on SQLite, one write of every page the group dirtied) per group rather
// than per transaction, which is where processing spent most of its time.
//
// There is no timer: the first transaction to arrive while a group slot is
// free runs at once, alone; those that arrive while it runs queue, and the
// next group takes all of them. Under light load nothing waits; under a
// burst the groups grow by themselves.
//
// Acknowledged writes (store.WithAcknowledgedSharedCommit: the inbox's
// receipts) queue ahead of derived work and join the group that is running
// when they arrive, if it syncs fully: a receipt then waits for the rest of
// that group, as it would wait for the writer anyway, and pays no commit of
// its own. Otherwise receipts and processing would take turns on SQLite's
// one writer, each with its own BEGIN, COMMIT and fsync; at a steady 500
// webhooks/s the receipts' own commits held the writer about half the time
// and processing fell behind the arrivals. A group that holds an
// acknowledged member takes no derived member after it.

// maxGroupMembers bounds a group, so one commit never holds the writer (or
// PostgreSQL's row locks) for long.
const maxGroupMembers = 64

// CommitSharer is implemented by drivers on which shared commits pay. SQLite
// has one writer, so its transactions run one after another anyway, and a
// group saves each member's BEGIN, COMMIT and write of the pages it
// dirtied. On PostgreSQL a group would run its members' round trips one
// after another on one connection and hold the rows they lock (a
// workspace's task sequence, the outbox's order) until the whole group
// commits, so concurrent transactions on their own connections do better:
// it does not share.
type CommitSharer interface {
	SharesCommits() bool
}

type groupMember struct {
	ctx context.Context
	fn  func(store.Queries) error
	res chan groupResult // capacity 1
	// acknowledged: a caller waits on it (store.WithAcknowledgedSharedCommit).
	acknowledged bool
}

// groupResult is what a queued member is told: its transaction committed
// with the group (err nil) or the commit failed (err), it must run alone,
// or it leads the next group.
type groupResult struct {
	err   error
	alone bool
	lead  bool
}

type committer struct {
	mu      sync.Mutex
	queue   []*groupMember
	enabled bool
	leading bool // a goroutine runs groups (one at a time: one writer)
	// committed counts the groups of two or more that committed together,
	// committedMembers their members.
	committed, committedMembers atomic.Int64
}

func newCommitter(d Driver) *committer {
	c, ok := d.(CommitSharer)
	return &committer{enabled: ok && c.SharesCommits()}
}

// AcquireEntityLease shares a commit like any transaction when ctx asks for
// it and the driver shares commits; otherwise it is one statement.
func (s *Store) AcquireEntityLease(ctx context.Context, entityKey, owner, deliveryID string, now, expires time.Time) (bool, error) {
	if !store.SharedCommit(ctx) || !s.shared.enabled {
		return s.queries.AcquireEntityLease(ctx, entityKey, owner, deliveryID, now, expires)
	}
	var ok bool
	err := s.inSharedTx(ctx, func(tx store.Queries) (err error) {
		ok, err = tx.AcquireEntityLease(ctx, entityKey, owner, deliveryID, now, expires)
		return err
	})
	return ok, err
}

// inSharedTx runs fn in a group transaction (see store.WithSharedCommit).
func (s *Store) inSharedTx(ctx context.Context, fn func(store.Queries) error) error {
	c := s.shared
	m := &groupMember{ctx: ctx, fn: fn, res: make(chan groupResult, 1), acknowledged: store.AcknowledgedSharedCommit(ctx)}
	c.mu.Lock()
	lead := !c.leading
	if lead {
		c.leading = true
	} else {
		c.enqueue(m)
	}
	c.mu.Unlock()
	var r groupResult
	if lead {
		r = s.leadGroup(m)
	} else if r = <-m.res; r.lead {
		r = s.leadGroup(m)
	}
	if r.alone {
		return s.inTx(ctx, fn)
	}
	return r.err
}

// leadGroup runs, in first's goroutine and holding a group slot, first and
// whatever is queued as one transaction, and tells the other members their
// results. While more transactions queue it goes on running them as the
// next groups (up to maxLedGroups), since handing the slot to a waiting
// goroutine would leave the writer idle until the scheduler runs it; then
// it passes the slot to the first member still queued, or frees it, and
// returns first's result.
//
// A group of one is first's own transaction. When any fn of a larger group
// fails (or panics) the transaction rolls back and every member runs alone,
// in its own goroutine, where its own failure (or panic) reaches only its
// own caller. A failed COMMIT is reported to every member as it is: whether
// it took effect is unknown, as for any transaction, so nothing runs again.
func (s *Store) leadGroup(first *groupMember) groupResult {
	c := s.shared
	defer func() {
		c.mu.Lock()
		if len(c.queue) == 0 {
			c.leading = false
			c.mu.Unlock()
			return
		}
		next := c.queue[0]
		c.queue = c.queue[1:]
		c.mu.Unlock()
		next.res <- groupResult{lead: true}
	}()
	c.mu.Lock()
	group := c.takeGroup(first)
	c.mu.Unlock()
	if len(group) == 1 {
		return groupResult{err: s.inTx(first.ctx, first.fn)}
	}
	own := s.runGroup(group)
	for range maxLedGroups - 1 {
		c.mu.Lock()
		if len(c.queue) < 2 {
			// One left runs alone when the slot reaches it: running it
			// here would make it wait for this goroutine's own return.
			c.mu.Unlock()
			break
		}
		next := c.queue[0]
		c.queue = c.queue[1:]
		group := c.takeGroup(next)
		c.mu.Unlock()
		r := s.runGroup(group)
		next.res <- r
	}
	return own
}

// maxLedGroups bounds how many groups one goroutine runs in a row before
// it hands the slot on and returns to its own caller.
const maxLedGroups = 8

// enqueue queues m: an acknowledged member behind the acknowledged ones
// already queued and ahead of the derived ones. c.mu held.
func (c *committer) enqueue(m *groupMember) {
	if !m.acknowledged {
		c.queue = append(c.queue, m)
		return
	}
	i := 0
	for i < len(c.queue) && c.queue[i].acknowledged {
		i++
	}
	c.queue = slices.Insert(c.queue, i, m)
}

// takeGroup is first and up to maxGroupMembers-1 queued members; c.mu held.
// A group with an acknowledged member takes no derived member after it.
func (c *committer) takeGroup(first *groupMember) []*groupMember {
	n := min(len(c.queue), maxGroupMembers-1)
	if first.acknowledged || (n > 0 && c.queue[0].acknowledged) {
		n = c.acknowledgedQueued(n)
	}
	group := append([]*groupMember{first}, c.queue[:n]...)
	c.queue = c.queue[n:]
	return group
}

// acknowledgedQueued is how many of the first n queued members are
// acknowledged. c.mu held.
func (c *committer) acknowledgedQueued(n int) int {
	i := 0
	for i < n && c.queue[i].acknowledged {
		i++
	}
	return i
}

// takeAcknowledged dequeues the acknowledged members queued now, so they
// join a running group that commits with a full sync, up to its bound.
func (c *committer) takeAcknowledged(group []*groupMember) []*groupMember {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.acknowledgedQueued(min(len(c.queue), maxGroupMembers-len(group)))
	joined := slices.Clone(c.queue[:n])
	c.queue = c.queue[n:]
	return joined
}

// runGroup runs a group (of one when a led group's first member is
// acknowledged and derived ones queue behind it), tells every member but
// the first, and those that joined it, their result and returns the
// first's.
func (s *Store) runGroup(group []*groupMember) groupResult {
	group, err := s.groupTx(group)
	r := groupResult{err: err, alone: err == errGroupMember}
	if r.alone {
		r.err = nil
	}
	for _, m := range group[1:] {
		m.res <- r
	}
	return r
}

// errGroupMember: a member's fn failed; the group rolled back.
var errGroupMember = fmt.Errorf("shared transaction member failed")

func (s *Store) groupTx(group []*groupMember) ([]*groupMember, error) {
	// The transaction outlives no member's wish to cancel only through the
	// members' own statements (each fn uses its own ctx); the group's
	// BEGIN/COMMIT run detached, under the statement deadline. It syncs
	// fully unless every member defers its sync; only then may
	// acknowledged members join it while it runs.
	base, full := group[0].ctx, false
	for _, m := range group {
		if !store.DeferredSync(m.ctx) {
			base, full = m.ctx, true
			break
		}
	}
	err := s.inTx(context.WithoutCancel(base), func(q store.Queries) error {
		for i := 0; i < len(group); i++ {
			m := group[i]
			if m.ctx.Err() != nil || runMember(m, q) != nil {
				return errGroupMember
			}
			if i == len(group)-1 && full {
				group = append(group, s.shared.takeAcknowledged(group)...)
			}
		}
		return nil
	})
	if err == nil && len(group) > 1 {
		s.shared.committed.Add(1)
		s.shared.committedMembers.Add(int64(len(group)))
	}
	return group, err
}

// runMember runs a member's fn, a panic becoming an error: the panicking
// member panics again when it runs alone, in its own goroutine.
func runMember(m *groupMember, q store.Queries) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = errGroupMember
		}
	}()
	return m.fn(q)
}

// InsertDeliveries shares a commit like any transaction when ctx asks for it
// (the inbox's receipts: store.WithAcknowledgedSharedCommit) and the driver
// shares commits.
func (s *Store) InsertDeliveries(ctx context.Context, ds []store.Delivery) ([]store.InsertedDelivery, error) {
	if !store.SharedCommit(ctx) || !s.shared.enabled {
		return s.queries.InsertDeliveries(ctx, ds)
	}
	var out []store.InsertedDelivery
	err := s.inSharedTx(ctx, func(tx store.Queries) (err error) {
		out, err = tx.InsertDeliveries(ctx, ds)
		return err
	})
	return out, err
}
