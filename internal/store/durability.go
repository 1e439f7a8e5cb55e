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

// SyncingContext is the context a transaction shared by several callers
// commits under: one of a member that does not defer its sync, when any
// does, else the first member's. The shared commit then syncs fully
// unless every member defers its sync. members must not be empty.
func SyncingContext[M any](members []M, ctx func(M) context.Context) context.Context {
	for _, m := range members {
		if c := ctx(m); !DeferredSync(c) {
			return c
		}
	}
	return ctx(members[0])
}

type sharedCommitKey struct{}

// WithSharedCommit lets ctx's transactions share one commit with the
// concurrent transactions of other goroutines that carry it (the workers'
// processing): the store runs them one after another inside a single
// database transaction, so a burst of deliveries pays one commit per group
// instead of one per transaction. Each transaction keeps its own boundary
// towards its caller: InTx returns only once the shared transaction has
// committed, and a transaction whose fn fails is rolled back with the group
// and then run again alone, so its failure never fails the others. fn may
// therefore run more than once and must set, not accumulate, what it hands
// out. Writes acknowledged to a caller never carry it.
func WithSharedCommit(ctx context.Context) context.Context {
	return context.WithValue(ctx, sharedCommitKey{}, true)
}

// SharedCommit reports whether ctx carries WithSharedCommit.
func SharedCommit(ctx context.Context) bool {
	v, _ := ctx.Value(sharedCommitKey{}).(bool)
	return v
}
