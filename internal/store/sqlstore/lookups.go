package sqlstore

import (
	"context"

	"github.com/trackergateway/gateway/internal/leadbatch"
	"github.com/trackergateway/gateway/internal/store"
)

// Every delivery a worker processes looks its entity up before anything
// else, and the deliveries of a claim do so at the same moment. Where the
// driver sends reads in one round trip (PostgreSQL), concurrent lookups
// therefore share one: the first runs at once, alone, and those that
// arrive meanwhile are sent together next (leadbatch). A round trip costs
// both processes a write and a read on the socket and the server a wake-up,
// more than the two index reads it carries. SQLite reads in process, each
// statement on a reader of its own, so there lookups stay apart.
const (
	maxLookupBatch = 32
	maxLedLookups  = 4
)

type lookupMember struct {
	ctx                     context.Context
	workspaceID, externalID string
}

// lookupResult is a member's entity, or that it must look itself up alone
// (its batch failed, so whose read failed is unknown).
type lookupResult struct {
	e     store.SourceEntity
	err   error
	alone bool
}

// newLookups is the queue of s's lookups, nil where the driver does not
// batch reads.
func newLookups(s *Store) *leadbatch.Queue[lookupMember, lookupResult] {
	if _, ok := s.driver.(Batcher); !ok {
		return nil
	}
	return newLookupQueue(s)
}

func newLookupQueue(s *Store) *leadbatch.Queue[lookupMember, lookupResult] {
	return &leadbatch.Queue[lookupMember, lookupResult]{Max: maxLookupBatch, MaxLed: maxLedLookups, Run: s.lookupBatch}
}

// LookupSourceEntity reads the suppression, alias and task of externalID,
// in a round trip shared with the lookups running at the same time where
// the driver batches reads.
func (s *Store) LookupSourceEntity(ctx context.Context, workspaceID, externalID string) (store.SourceEntity, error) {
	if s.lookups == nil {
		return s.queries.LookupSourceEntity(ctx, workspaceID, externalID)
	}
	r := s.lookups.Do(lookupMember{ctx: ctx, workspaceID: workspaceID, externalID: externalID})
	if r.alone {
		return s.queries.LookupSourceEntity(ctx, workspaceID, externalID)
	}
	return r.e, r.err
}

// lookupBatch reads the entities of the members whose callers still wait
// in one round trip. It runs under no member's cancellation (the batch has
// its statements' deadline) but with the first member's values, which
// choose the pool. A member whose caller has gone reads alone (and answers
// its cancellation), a member left alone in its batch reads as it would
// alone, and a failed batch tells every member to read alone.
func (s *Store) lookupBatch(batch []lookupMember) []lookupResult {
	results := make([]lookupResult, len(batch))
	live := leadbatch.Waiting(batch, func(m lookupMember) context.Context { return m.ctx },
		func(i int) { results[i].alone = true })
	switch len(live) {
	case 0:
		return results
	case 1:
		// Read here, not by the caller: the lookups that queue meanwhile
		// wait for this one and then go together.
		m := batch[live[0]]
		results[live[0]].e, results[live[0]].err = s.queries.LookupSourceEntity(m.ctx, m.workspaceID, m.externalID)
		return results
	}
	var qs []BatchQuery
	for _, i := range live {
		qs = append(qs, lookupQueries(batch[i].workspaceID, batch[i].externalID, &results[i].e)...)
	}
	ctx := context.WithoutCancel(batch[live[0]].ctx)
	if err := s.queries.batch(ctx, qs...); err != nil {
		for _, i := range live {
			results[i] = lookupResult{alone: true}
		}
	}
	return results
}
