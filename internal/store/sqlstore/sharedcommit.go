package sqlstore

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/trackergateway/gateway/internal/leadbatch"
	"github.com/trackergateway/gateway/internal/store"
)

// Shared commits (store.WithSharedCommit): the transactions of concurrent
// goroutines run one after another inside one database transaction and
// commit together. A burst of deliveries then costs one BEGIN/COMMIT (and,
// on SQLite, one write of every page the group dirtied) per group rather
// than per transaction, which is where processing spent most of its time.
//
// There is no timer (leadbatch.Queue): the first transaction to arrive
// while no group runs runs at once, alone; those that arrive while it runs
// queue, and the next group takes all of them. Under light load nothing
// waits; under a burst the groups grow by themselves.

// maxGroupMembers bounds a group's transactions, so one commit never holds
// the writer (or PostgreSQL's row locks) for long.
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
	// alone runs the member by itself: in a group of one, or after its
	// group rolled back.
	alone func() error
}

// groupResult is what a member is told: its transaction committed with
// the group (err nil) or the commit failed (err), or it must run alone.
type groupResult struct {
	err   error
	alone bool
}

type committer struct {
	enabled bool
	// groups runs the members one group at a time (one writer).
	groups leadbatch.Queue[*groupMember, groupResult]
	// committed counts the groups of two or more that committed together.
	committed atomic.Int64
}

// SerializesWrites reports whether the driver runs writes one at a time
// (SQLite's one writer), as the drivers that share commits do. The inbox
// then holds the workers off for less time after a batch of receipts.
func (s *Store) SerializesWrites() bool { return sharesCommits(s.driver) }

func sharesCommits(d Driver) bool {
	c, ok := d.(CommitSharer)
	return ok && c.SharesCommits()
}

func newCommitter(s *Store) *committer {
	c := &committer{enabled: sharesCommits(s.driver)}
	c.groups = leadbatch.Queue[*groupMember, groupResult]{Max: maxGroupMembers, MaxLed: maxLedGroups, Run: s.runGroup}
	return c
}

// AcquireEntityLeases shares a commit like any transaction when ctx asks
// for it and the driver shares commits; otherwise it is its own statements.
func (s *Store) AcquireEntityLeases(ctx context.Context, owner string, leases []store.EntityLease, now, expires time.Time) ([]bool, error) {
	if !store.SharedCommit(ctx) || !s.shared.enabled {
		return s.queries.AcquireEntityLeases(ctx, owner, leases, now, expires)
	}
	var taken []bool
	err := s.inSharedTx(ctx, func(tx store.Queries) (err error) {
		taken, err = tx.AcquireEntityLeases(ctx, owner, leases, now, expires)
		return err
	})
	return taken, err
}

// inSharedTx runs fn in a group transaction (see store.WithSharedCommit).
func (s *Store) inSharedTx(ctx context.Context, fn func(store.Queries) error) error {
	return s.joinGroup(&groupMember{ctx: ctx, fn: fn, alone: func() error { return s.inTx(ctx, fn) }})
}

// joinGroup runs m in the next group (leadbatch.Queue).
func (s *Store) joinGroup(m *groupMember) error {
	r := s.shared.groups.Do(m)
	if r.alone {
		return m.alone()
	}
	return r.err
}

// maxLedGroups bounds how many groups one goroutine runs in a row before
// it hands the slot on and returns to its own caller.
const maxLedGroups = 8

// runGroup runs a group as one transaction and returns every member's
// result. A group of one runs its member alone (its own transaction).
// When any fn of a larger group fails (or panics) the transaction rolls
// back and every member runs alone, in its own goroutine, where its own
// failure (or panic) reaches only its own caller. A failed COMMIT is
// reported to every member as it is: whether it took effect is unknown,
// as for any transaction, so nothing runs again.
func (s *Store) runGroup(group []*groupMember) []groupResult {
	results := make([]groupResult, len(group))
	if len(group) == 1 {
		results[0] = groupResult{err: group[0].alone()}
		return results
	}
	err := s.groupTx(group)
	r := groupResult{err: err, alone: err == errGroupMember}
	if r.alone {
		r.err = nil
	}
	for i := range results {
		results[i] = r
	}
	return results
}

// errGroupMember: a member's fn failed; the group rolled back.
var errGroupMember = fmt.Errorf("shared transaction member failed")

func (s *Store) groupTx(group []*groupMember) error {
	// The transaction outlives no member's wish to cancel only through the
	// members' own statements (each fn uses its own ctx); the group's
	// BEGIN/COMMIT run detached, under the statement deadline. It syncs
	// fully unless every member defers its sync.
	base := store.SyncingContext(group, func(m *groupMember) context.Context { return m.ctx })
	err := s.inTx(context.WithoutCancel(base), func(q store.Queries) error {
		for _, m := range group {
			if m.ctx.Err() != nil || runMember(m, q) != nil {
				return errGroupMember
			}
		}
		return nil
	})
	if err == nil {
		s.shared.committed.Add(1)
	}
	return err
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
