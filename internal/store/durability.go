package store

import "context"

type deferredSyncKey struct{}

// WithDeferredSync marks ctx's writes as derived work whose commit need not
// wait for the disk: processing, recovery and projection transactions, which
// are all re-derivable from the inbox and idempotent. Writes acknowledged to
// a caller — inbox commits behind a webhook 2xx, REST writes — never carry
// it and commit with a full sync (SQLite synchronous=FULL; PostgreSQL
// synchronous_commit=on). Because both logs are sequential, the next full
// commit also makes every deferred commit before it durable, so a power loss
// can only drop a suffix of derived work, which the workers redo; a process
// crash (kill -9) drops nothing.
func WithDeferredSync(ctx context.Context) context.Context {
	return context.WithValue(ctx, deferredSyncKey{}, true)
}

// DeferredSync reports whether ctx carries WithDeferredSync.
func DeferredSync(ctx context.Context) bool {
	v, _ := ctx.Value(deferredSyncKey{}).(bool)
	return v
}

type sharedCommitKey struct{}

// sharedCommit is the value WithSharedCommit and WithAcknowledgedSharedCommit
// put in a context.
type sharedCommit int

const (
	sharedDerived sharedCommit = iota + 1
	sharedAcknowledged
)

// WithSharedCommit lets ctx's transactions share one commit with the
// concurrent transactions of other goroutines that carry it (the workers'
// processing): the store runs them one after another inside a single
// database transaction, so a burst of deliveries pays one commit per group
// instead of one per transaction. Each transaction keeps its own boundary
// towards its caller: InTx returns only once the shared transaction has
// committed, and a transaction whose fn fails is rolled back with the group
// and then run again alone, so its failure never fails the others. fn may
// therefore run more than once and must set, not accumulate, what it hands
// out.
func WithSharedCommit(ctx context.Context) context.Context {
	return context.WithValue(ctx, sharedCommitKey{}, sharedDerived)
}

// WithAcknowledgedSharedCommit is WithSharedCommit for a write a caller is
// waiting on (the inbox's receipts, behind a webhook's 2xx): it joins the
// group that is running, ahead of every derived transaction still queued,
// and that group commits right after it, so the write waits for at most the
// one transaction in progress instead of for a whole group of derived work.
// It commits with a full sync like any acknowledged write.
func WithAcknowledgedSharedCommit(ctx context.Context) context.Context {
	return context.WithValue(ctx, sharedCommitKey{}, sharedAcknowledged)
}

// SharedCommit reports whether ctx carries WithSharedCommit or
// WithAcknowledgedSharedCommit.
func SharedCommit(ctx context.Context) bool {
	_, ok := ctx.Value(sharedCommitKey{}).(sharedCommit)
	return ok
}

// AcknowledgedSharedCommit reports whether ctx carries
// WithAcknowledgedSharedCommit.
func AcknowledgedSharedCommit(ctx context.Context) bool {
	v, _ := ctx.Value(sharedCommitKey{}).(sharedCommit)
	return v == sharedAcknowledged
}
