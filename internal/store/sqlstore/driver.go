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

// Deferrer is implemented by driver transactions that can hold back a
// statement whose result the caller does not wait for and send it with the
// transaction's next statement that needs an answer, or with its COMMIT, in
// one round trip (PostgreSQL pipelines them). Deferred statements run in the
// order given, before anything issued after them. done, when non-nil, is
// called once the statement has run, with its rows affected or its error,
// and returns the error that fails the transaction (nil accepts the
// result); the driver hands that failure, as a *DeferredError, to the
// statement or Commit that carried it, and every later call of the
// transaction fails with it. A statement sent with COMMIT is judged after the
// commit, which done can then only report, not prevent; callers therefore
// defer only statements whose row count the transaction's own locks make
// certain, or whose shortfall needs no undoing.
type Deferrer interface {
	Defer(query string, args []any, done func(rowsAffected int64, err error) error)
}

// RowDeferrer is a Deferrer that can also hold back a statement that
// answers one row: scan reads it once the statement has run (its error,
// when it failed, comes through scan's Row), in the same order and with the
// same failure rules as Defer. A statement whose answer nothing before
// COMMIT needs can so travel with the COMMIT.
type RowDeferrer interface {
	DeferRow(query string, args []any, scan func(Row) error)
}

// DeferredError is the failure of a deferred statement, surfacing at a later
// call: it already names the statement that failed, so it is passed on as it
// is rather than wrapped again.
type DeferredError struct{ Err error }

func (e *DeferredError) Error() string { return e.Err.Error() }
func (e *DeferredError) Unwrap() error { return e.Err }

// BatchQuery is one read of a batch: its rows are passed to Scan, which reads
// them all.
type BatchQuery struct {
	SQL  string
	Args []any
	Scan func(Rows) error
}

// ScanBatch reads one result set per query, in order: next opens the set of
// the query it is given (the driver's pipeline result, or a plain Query),
// and each set is handed to its Scan and closed. It stops at the first
// error.
func ScanBatch(qs []BatchQuery, next func(BatchQuery) (Rows, error)) error {
	for _, q := range qs {
		rows, err := next(q)
		if err != nil {
			return err
		}
		err = q.Scan(rows)
		rows.Close()
		if err == nil {
			err = rows.Err()
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// Batcher is implemented by executors that can send several reads in one
// round trip (PostgreSQL pipelines them; a transaction also flushes its
// deferred statements ahead of them). The reads run in order.
type Batcher interface {
	QueryBatch(ctx context.Context, qs []BatchQuery) error
}

// FirstRow is the Row of a query's result set, for drivers that answer
// QueryRow with Query: it scans the first row (ErrNoRows when there is none)
// and closes the set; a failed query's error is what Scan returns.
func FirstRow(r Rows, err error) Row {
	if err != nil {
		return errRow{err}
	}
	return firstRow{r}
}

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

type firstRow struct{ r Rows }

func (r firstRow) Scan(dest ...any) error {
	defer r.r.Close()
	if !r.r.Next() {
		if err := r.r.Err(); err != nil {
			return err
		}
		return ErrNoRows
	}
	if err := r.r.Scan(dest...); err != nil {
		return err
	}
	return r.r.Err()
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
	// MinuteOf is the SQL expression of a time column's value truncated to
	// its UTC minute, read back as a time.
	MinuteOf(column string) string
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
