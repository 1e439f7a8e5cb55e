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
