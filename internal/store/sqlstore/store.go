package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/trackergateway/gateway/internal/leadbatch"
	"github.com/trackergateway/gateway/internal/store"
)

// QueryTimeout bounds every statement (and every transaction) whose context
// carries no earlier deadline.
const QueryTimeout = 30 * time.Second

// Store implements store.Store over a Driver.
type Store struct {
	queries
	driver Driver

	mu      sync.Mutex
	waiters map[string]chan struct{}
	shared  *committer
	lookups *leadbatch.Queue[lookupMember, lookupResult] // nil: lookups go alone
}

var _ store.Store = (*Store)(nil)

// New wraps a driver.
func New(d Driver) *Store {
	s := &Store{queries: queries{ex: d, d: d}, driver: d, waiters: map[string]chan struct{}{}}
	s.shared = newCommitter(s)
	s.lookups = newLookups(s)
	return s
}

// Driver returns the underlying driver (tests, benchmarks).
func (s *Store) Driver() Driver { return s.driver }

func (s *Store) Dialect() string                   { return s.driver.Dialect() }
func (s *Store) Migrate(ctx context.Context) error { return s.driver.Migrate(ctx) }
func (s *Store) Close()                            { s.driver.Close() }
func (s *Store) Notify(ctx context.Context, ch string) error {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	return s.driver.Notify(ctx, ch)
}

func (s *Store) Ping(ctx context.Context) error {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	if err := s.driver.Ping(ctx); err != nil {
		return fmt.Errorf("ping: %w", s.classify(err))
	}
	return nil
}

func (s *Store) Migrated(ctx context.Context) (bool, error) {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	ok, err := s.driver.Migrated(ctx)
	if err != nil {
		return false, fmt.Errorf("migration status: %w", s.classify(err))
	}
	return ok, nil
}

func (s *Store) ProbeDurableWrite(ctx context.Context, at time.Time) error {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	if _, err := s.driver.Exec(ctx, `INSERT INTO readiness_probe (id, probed_at) VALUES (1, $1)
		ON CONFLICT (id) DO UPDATE SET probed_at = excluded.probed_at`, at.UTC()); err != nil {
		return fmt.Errorf("probe durable write: %w", s.classify(err))
	}
	return nil
}

// InTx runs fn in one transaction; a panic or error rolls it back. With
// store.WithSharedCommit the transaction may share its commit with
// concurrent ones (sharedcommit.go).
func (s *Store) InTx(ctx context.Context, fn func(tx store.Queries) error) error {
	if store.SharedCommit(ctx) && s.shared.enabled {
		return s.inSharedTx(ctx, fn)
	}
	return s.inTx(ctx, fn)
}

func (s *Store) inTx(ctx context.Context, fn func(tx store.Queries) error) error {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	tx, err := s.driver.Begin(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", s.classify(err))
	}
	var appended bool
	if err := s.runInTx(ctx, tx, &appended, fn); err != nil {
		_ = tx.Rollback(context.WithoutCancel(ctx))
		return err
	}
	// A failed COMMIT ends the transaction in both drivers.
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit: %w", s.classify(err))
	}
	if appended {
		notifyEvents(ctx, s.driver)
	}
	return nil
}

// runInTx runs fn on tx; a panic rolls tx back and goes on. appended is
// set when fn appended to the outbox.
func (s *Store) runInTx(ctx context.Context, tx Tx, appended *bool, fn func(store.Queries) error) error {
	defer func() {
		if p := recover(); p != nil {
			_ = tx.Rollback(context.WithoutCancel(ctx))
			panic(p)
		}
	}()
	return fn(queries{ex: tx, d: outboxWatch{Driver: s.driver, appended: appended}, inTx: true})
}

// outboxWatch is the driver as one transaction sees it: it remembers that
// the transaction took the outbox lock, which every append to the outbox
// takes, so the store can tell the outbound fan-out once it commits
// (store.EventsChannel), whichever statement appended.
type outboxWatch struct {
	Driver
	appended *bool
}

func (w outboxWatch) LockOutbox(ctx context.Context, tx Executor) error {
	*w.appended = true
	return w.Driver.LockOutbox(ctx, tx)
}

// notifyEvents wakes the outbound fan-out (this process at once, other
// replicas through the driver). Best effort: the fan-out also polls.
func notifyEvents(ctx context.Context, d Driver) {
	_ = d.Notify(context.WithoutCancel(ctx), store.EventsChannel)
}

// WaitForNotification waits for the next Notify on channel from any process
// sharing the database (PostgreSQL) or this one (SQLite).
func (s *Store) WaitForNotification(ctx context.Context, channel string) error {
	s.mu.Lock()
	ch, ok := s.waiters[channel]
	if !ok {
		ch = make(chan struct{})
		s.waiters[channel] = ch
		s.driver.Subscribe(channel, func() { s.broadcast(channel) })
	}
	s.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *Store) broadcast(channel string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ch, ok := s.waiters[channel]; ok {
		close(ch)
		s.waiters[channel] = make(chan struct{})
	}
}

// queries implements store.Queries on an Executor: the pool, or a transaction.
type queries struct {
	ex   Executor
	d    Driver
	inTx bool
}

func withDeadline(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, QueryTimeout)
}

func (q queries) classify(err error) error {
	if errors.Is(err, ErrNoRows) {
		return store.ErrNotFound
	}
	var deferred *DeferredError
	if errors.As(err, &deferred) {
		// Named (and mostly classified already) by its own statement.
		return q.d.Classify(deferred.Err)
	}
	return q.d.Classify(err)
}

func (s *Store) classify(err error) error { return s.queries.classify(err) }

// wrap adds context to a classified error; a deferred statement's failure
// keeps the context of the statement that failed.
func (q queries) wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	var deferred *DeferredError
	if errors.As(err, &deferred) {
		return q.classify(err)
	}
	return fmt.Errorf("%s: %w", what, q.classify(err))
}

// execLater runs a write that answers nothing but its rows affected, which
// check (when non-nil) judges. Inside a transaction that can defer
// (Deferrer: PostgreSQL), the write travels with the transaction's next
// statement that needs an answer, or with its COMMIT, so only rows the
// transaction has locked or written itself, whose count is certain, go
// through here with a check that can fail.
func (q queries) execLater(ctx context.Context, what string, check func(rowsAffected int64) error, query string, args ...any) error {
	done := func(n int64, err error) error {
		if err != nil {
			return q.wrap(what, err)
		}
		if check != nil {
			return check(n)
		}
		return nil
	}
	if d, ok := q.ex.(Deferrer); ok && q.inTx {
		d.Defer(query, args, done)
		return nil
	}
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	return done(q.ex.Exec(ctx, query, args...))
}

// queryLater runs a statement that answers one row, read by scan, which
// nothing in the transaction waits for: inside a transaction that can defer
// it (RowDeferrer: PostgreSQL) it travels like execLater's writes, so scan
// may run as late as the COMMIT.
func (q queries) queryLater(ctx context.Context, what string, scan func(Row) error, query string, args ...any) error {
	read := func(r Row) error {
		if err := scan(r); err != nil {
			return q.wrap(what, err)
		}
		return nil
	}
	if d, ok := q.ex.(RowDeferrer); ok && q.inTx {
		d.DeferRow(query, args, read)
		return nil
	}
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	return read(q.ex.QueryRow(ctx, query, args...))
}

// exactlyOne checks a write to one row that must exist.
func exactlyOne(what string) func(int64) error {
	return func(n int64) error {
		if n == 0 {
			return fmt.Errorf("%s: %w", what, store.ErrNotFound)
		}
		return nil
	}
}

// batch runs reads in one round trip where the executor can (Batcher), in
// order one after another elsewhere.
func (q queries) batch(ctx context.Context, qs ...BatchQuery) error {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	if b, ok := q.ex.(Batcher); ok {
		return b.QueryBatch(ctx, qs)
	}
	return ScanBatch(qs, func(bq BatchQuery) (Rows, error) { return q.ex.Query(ctx, bq.SQL, bq.Args...) })
}

// requiredRow is a batch Scan for a read that must find a row: scan gets
// the first one, and no row is ErrNoRows.
func requiredRow(scan func(Row) error) func(Rows) error {
	return func(r Rows) error { return scan(FirstRow(r, nil)) }
}

// optionalTask is a batch Scan that leaves *dst nil when no task matched.
func optionalTask(dst **store.Task) func(Rows) error {
	return func(r Rows) error {
		t, err := scanTask(FirstRow(r, nil))
		switch {
		case errors.Is(err, ErrNoRows):
			return nil
		case err != nil:
			return err
		}
		*dst = &t
		return nil
	}
}

// write runs fn in a transaction unless q already is one, so that multi-
// statement writes are atomic whichever way they are called.
func (q queries) write(ctx context.Context, fn func(queries) error) error {
	if q.inTx {
		return fn(q)
	}
	tx, err := q.d.Begin(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", q.classify(err))
	}
	var appended bool
	if err := fn(queries{ex: tx, d: outboxWatch{Driver: q.d, appended: &appended}, inTx: true}); err != nil {
		_ = tx.Rollback(context.WithoutCancel(ctx))
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit: %w", q.classify(err))
	}
	if appended {
		notifyEvents(ctx, q.d)
	}
	return nil
}

func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}
