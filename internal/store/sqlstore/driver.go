// Package sqlstore implements store.Store once, over a small Driver that each
// dialect provides (River's driver split): the drivers own connections,
// transactions, error classification, migrations and notifications; the SQL
// here is shared and uses only what both PostgreSQL and SQLite accept, with
// the few dialect differences asked of the driver.
package sqlstore

import (
	"context"
	"errors"
)

// Executor runs statements. Placeholders are $1, $2, …; drivers rewrite them
// when their dialect differs. Time values are time.Time / *time.Time in both
// directions; drivers convert.
type Executor interface {
	Exec(ctx context.Context, query string, args ...any) (int64, error)
	Query(ctx context.Context, query string, args ...any) (Rows, error)
	QueryRow(ctx context.Context, query string, args ...any) Row
}

// Row is one result row; Scan returns ErrNoRows when there was none.
type Row interface {
	Scan(dest ...any) error
}

// Rows is a result set.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

// Tx is a driver transaction.
type Tx interface {
	Executor
	Commit(ctx context.Context) error
	Rollback(ctx context.Context) error
}

// ErrNoRows is what drivers' Row.Scan returns when no row matched.
var ErrNoRows = errors.New("sqlstore: no rows")

// Driver is what a dialect provides.
type Driver interface {
	Dialect() string
	// Executor runs statements outside a transaction.
	Executor
	// Begin starts a write transaction.
	Begin(ctx context.Context) (Tx, error)
	// Classify maps a native error to the store's sentinel errors (wrapping
	// the original), or returns err unchanged.
	Classify(err error) error
	// ForUpdate is the row-lock suffix of a SELECT (" FOR UPDATE" or "").
	ForUpdate() string
	// SkipLocked is the suffix of a claim SELECT (" FOR UPDATE SKIP LOCKED" or "").
	SkipLocked() string
	// LockOutbox serializes outbox appends until the transaction ends so event
	// ids become visible in order.
	LockOutbox(ctx context.Context, tx Executor) error
	Migrate(ctx context.Context) error
	Migrated(ctx context.Context) (bool, error)
	Ping(ctx context.Context) error
	// Notify wakes waiters on channel in every process sharing the database
	// (PostgreSQL); SQLite drivers notify in-process only.
	Notify(ctx context.Context, channel string) error
	// Subscribe registers fn to run on each notification received on channel.
	Subscribe(channel string, fn func())
	Close()
}
