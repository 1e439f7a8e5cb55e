// Package postgres is the PostgreSQL driver of the store: pgx/v5 with
// pgxpool, goose migrations from migrations/postgres, LISTEN/NOTIFY for
// cross-replica wake-ups, and error classification by constraint name.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/store/sqlstore"
	"github.com/trackergateway/gateway/internal/tracing"
	"github.com/trackergateway/gateway/migrations"
)

// outboxLockKey is the advisory lock that orders outbox appends.
const outboxLockKey = 7_424_301

// Driver is the PostgreSQL sqlstore.Driver.
type Driver struct {
	pool *pgxpool.Pool
	// deferred serves store.WithDeferredSync work: its sessions run with
	// synchronous_commit=off, so derived work costs no extra round trip.
	deferred *pgxpool.Pool
	logger   *slog.Logger
	schema   string

	mu          sync.Mutex
	subscribers map[string][]func()
	listening   map[string]bool
	stopListen  context.CancelFunc
	listenDone  chan struct{}
	// interruptWait ends the listener's current wait, so that it LISTENs
	// to a channel subscribed while it waited.
	interruptWait context.CancelFunc

	notifyPending map[string]bool // guarded by mu
	notifyKick    chan struct{}   // capacity 1
	stopNotify    context.CancelFunc
	notifyDone    chan struct{}
}

// Options tunes the pool.
type Options struct {
	// Schema, when set, becomes the search_path (tests isolate by schema).
	Schema   string
	MaxConns int32
}

// Open connects to url; when ctx carries a tracer provider
// (tracing.WithProvider), statements run under a span are traced. The pool is lazy: an unreachable server is reported
// by Ping and by each query as store.ErrUnavailable, never at Open.
func Open(ctx context.Context, url string, opts Options, logger *slog.Logger) (*Driver, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("parse database url: %w", err)
	}
	if opts.Schema != "" {
		cfg.ConnConfig.RuntimeParams["search_path"] = opts.Schema
	}
	// Durability is a non-negotiable: never let a server default weaken it.
	cfg.ConnConfig.RuntimeParams["synchronous_commit"] = "on"
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	} else if cfg.MaxConns < 16 {
		cfg.MaxConns = 16
	}
	cfg.ConnConfig.ConnectTimeout = 5 * time.Second
	// With tracing on (a provider in ctx), each statement of traced work
	// is a span under it.
	if tp := tracing.Provider(ctx); tp != nil {
		cfg.ConnConfig.Tracer = newSpanTracer(tp)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open postgres pool: %w", err)
	}
	dcfg := cfg.Copy()
	dcfg.ConnConfig.RuntimeParams["synchronous_commit"] = "off"
	dcfg.MaxConns = deferredConns(cfg.MaxConns)
	deferred, err := pgxpool.NewWithConfig(ctx, dcfg)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("open postgres pool: %w", err)
	}
	d := &Driver{pool: pool, deferred: deferred, logger: logger, schema: opts.Schema, subscribers: map[string][]func(){},
		listening: map[string]bool{}, notifyPending: map[string]bool{}, notifyKick: make(chan struct{}, 1),
		notifyDone: make(chan struct{})}
	var notifyCtx context.Context
	notifyCtx, d.stopNotify = context.WithCancel(context.Background())
	go d.notifyLoop(notifyCtx)
	return d, nil
}

// deferredConns sizes the deferred pool: an eighth of the main pool, at
// least two. Every connection of it is a server process running processing
// statements, and the server's CPU is shared among its busy processes, so
// the more processing runs at once the longer an inbox commit waits behind
// it. Since creations are written in batches, processing needs few of
// them: at 1,000 acks/s (2-core machine, server on it, default pool of
// 16, four alternating rounds) 4 connections gave an ack p50 of 3.2–5.0 ms
// and a p99 of 19–53 ms, 2 gave 1.7–3.2 and 10–25 ms, with the same drain
// (median 1,610 against 1,613 tasks/s); 1 connection cut the p99 to 8 ms
// but the drain by a quarter (docs/benchmarks.md, "Processing's share of
// PostgreSQL, again").
func deferredConns(main int32) int32 { return max(main/8, 2) }

// Pool exposes the pool to tests that need raw access.
func (d *Driver) Pool() *pgxpool.Pool { return d.pool }

func (d *Driver) Dialect() string { return store.DialectPostgres }

// ForUpdate locks rows as FOR NO KEY UPDATE: the protocols never change a
// key, and unlike FOR UPDATE it does not block the FOR KEY SHARE locks that
// foreign-key checks take (inserting a task must not wait for a create that
// holds its workspace's sequence).
func (d *Driver) ForUpdate() string  { return " FOR NO KEY UPDATE" }
func (d *Driver) SkipLocked() string { return " FOR UPDATE SKIP LOCKED" }

// MinuteOf truncates in UTC, whatever the session's time zone.
func (d *Driver) MinuteOf(column string) string {
	return "(date_trunc('minute', " + column + " AT TIME ZONE 'UTC') AT TIME ZONE 'UTC')"
}

func (d *Driver) Exec(ctx context.Context, q string, args ...any) (int64, error) {
	return execOn(ctx, d.poolFor(ctx), q, args...)
}

func (d *Driver) Query(ctx context.Context, q string, args ...any) (sqlstore.Rows, error) {
	return queryOn(ctx, d.poolFor(ctx), q, args...)
}

func (d *Driver) QueryRow(ctx context.Context, q string, args ...any) sqlstore.Row {
	return row{d.poolFor(ctx).QueryRow(ctx, q, args...)}
}

// Begin starts a READ COMMITTED transaction; the protocols take explicit row
// locks (FOR UPDATE) in the documented order. It holds a connection but
// sends nothing: BEGIN travels with the transaction's first statement.
func (d *Driver) Begin(ctx context.Context) (sqlstore.Tx, error) {
	conn, err := d.poolFor(ctx).Acquire(ctx)
	if err != nil {
		return nil, err
	}
	return &pgTx{conn: conn, deferredConn: store.DeferredSync(ctx)}, nil
}

// QueryBatch sends the reads in one round trip on a pooled connection.
func (d *Driver) QueryBatch(ctx context.Context, qs []sqlstore.BatchQuery) error {
	b := &pgx.Batch{}
	for _, q := range qs {
		b.Queue(q.SQL, q.Args...)
	}
	br := d.poolFor(ctx).SendBatch(ctx, b)
	return scanBatch(br, qs)
}

// scanBatch reads one result set per query from br, then closes it.
func scanBatch(br pgx.BatchResults, qs []sqlstore.BatchQuery) error {
	err := sqlstore.ScanBatch(qs, func(sqlstore.BatchQuery) (sqlstore.Rows, error) {
		r, err := br.Query()
		if err != nil {
			return nil, err
		}
		return rows{r}, nil
	})
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return err
}

// LockOutbox takes the outbox's transaction-scoped advisory lock; in a
// pipelined transaction it travels with the INSERT it guards.
func (d *Driver) LockOutbox(ctx context.Context, ex sqlstore.Executor) error {
	const lock = `SELECT pg_advisory_xact_lock($1)`
	if t, ok := ex.(sqlstore.Deferrer); ok {
		t.Defer(lock, []any{int64(outboxLockKey)}, nil)
		return nil
	}
	_, err := ex.Exec(ctx, lock, int64(outboxLockKey))
	return err
}

// Classify maps pgx errors to store sentinels. A unique violation is
// ErrExternalIDTaken only when the constraint is uniq_tasks_external_id.
func (d *Driver) Classify(err error) error {
	if err == nil {
		return nil
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case pgErr.Code == "23505" && pgErr.ConstraintName == "uniq_tasks_external_id":
			return fmt.Errorf("%w: %s", store.ErrExternalIDTaken, pgErr.ConstraintName)
		case len(pgErr.Code) == 5 && pgErr.Code[:2] == "23":
			return fmt.Errorf("%w: %s: %s", store.ErrConstraint, pgErr.ConstraintName, pgErr.Message)
		case pgErr.Code[:2] == "08" || pgErr.Code == "57P01" || pgErr.Code == "57P02" || pgErr.Code == "57P03":
			return fmt.Errorf("%w: %v", store.ErrUnavailable, err)
		case isInvalidText(pgErr):
			return fmt.Errorf("%w: %s: %s", store.ErrInvalidText, pgErr.Code, pgErr.Message)
		}
		return err
	}
	var netErr net.Error
	var connErr *pgconn.ConnectError
	if errors.As(err, &connErr) || errors.As(err, &netErr) || pgconn.SafeToRetry(err) {
		return fmt.Errorf("%w: %v", store.ErrUnavailable, err)
	}
	return err
}

// isInvalidText reports PostgreSQL refusing text SQLite would have stored:
// invalid UTF-8 or NUL ("invalid byte sequence for encoding \"UTF8\": 0x00"
// is 22021; "\u0000 cannot be converted to text" in JSON is 22P05).
func isInvalidText(e *pgconn.PgError) bool {
	return e.Code == codeCharacterNotInRepertoire || e.Code == codeUntranslatableCharacter ||
		strings.Contains(e.Message, "invalid byte sequence for encoding")
}

// SQLSTATEs of text PostgreSQL cannot store.
const (
	codeCharacterNotInRepertoire = "22021"
	codeUntranslatableCharacter  = "22P05"
)

// poolFor picks the pool by the sync level ctx asks for.
func (d *Driver) poolFor(ctx context.Context) *pgxpool.Pool {
	if store.DeferredSync(ctx) {
		return d.deferred
	}
	return d.pool
}

func (d *Driver) Ping(ctx context.Context) error { return d.pool.Ping(ctx) }

func (d *Driver) provider() (*goose.Provider, func(), error) {
	sub, err := fs.Sub(migrations.Postgres, "postgres")
	if err != nil {
		return nil, nil, err
	}
	// Replicas migrating one schema serialize on goose's advisory lock; a
	// separate schema (tests) gets its own lock ID, so it never waits out
	// goose's 5-second retry behind an unrelated schema's migration.
	// Poll the lock every second (goose waits 5 s between tries), so
	// replicas starting together are not staggered by seconds.
	lockOpts := []lock.SessionLockerOption{lock.WithLockTimeout(1, 300)}
	if d.schema != "" {
		h := fnv.New64a()
		h.Write([]byte("goose:" + d.schema))
		lockOpts = append(lockOpts, lock.WithLockID(int64(h.Sum64()>>1)))
	}
	locker, err := lock.NewPostgresSessionLocker(lockOpts...)
	if err != nil {
		return nil, nil, err
	}
	db := stdlib.OpenDBFromPool(d.pool)
	p, err := goose.NewProvider(goose.DialectPostgres, db, sub, goose.WithSessionLocker(locker))
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	return p, func() { db.Close() }, nil
}

// Migrate applies pending migrations; replicas starting together serialize on
// goose's session lock, and re-running is a no-op.
func (d *Driver) Migrate(ctx context.Context) error {
	p, closeDB, err := d.provider()
	if err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	defer closeDB()
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("apply migrations: %w", err)
	}
	return nil
}

func (d *Driver) Migrated(ctx context.Context) (bool, error) {
	p, closeDB, err := d.provider()
	if err != nil {
		return false, err
	}
	defer closeDB()
	pending, err := p.HasPending(ctx)
	return !pending && err == nil, err
}

// notifyInterval spaces the NOTIFYs this process sends: each is a commit
// that signals every listening backend, and the inbox asks for one after
// nearly every commit (at 500 deliveries/s, one per delivery).
const notifyInterval = 5 * time.Millisecond

// Notify wakes this process's subscribers at once and, through pg_notify,
// every other replica's within notifyInterval: requests arriving while a
// NOTIFY is due coalesce into it. It never blocks on the database.
func (d *Driver) Notify(_ context.Context, channel string) error {
	d.wake(channel)
	d.mu.Lock()
	d.notifyPending[channel] = true
	d.mu.Unlock()
	select {
	case d.notifyKick <- struct{}{}:
	default:
	}
	return nil
}

// notifyLoop sends the pending NOTIFYs, at most one round per
// notifyInterval, until ctx ends.
func (d *Driver) notifyLoop(ctx context.Context) {
	defer close(d.notifyDone)
	for {
		select {
		case <-ctx.Done():
			return
		case <-d.notifyKick:
		}
		d.mu.Lock()
		channels := make([]string, 0, len(d.notifyPending))
		for ch := range d.notifyPending {
			channels = append(channels, ch)
		}
		clear(d.notifyPending)
		d.mu.Unlock()
		// One statement for every channel due (the inbox's and the task
		// events' are both due under load): one commit, not one each.
		calls := make([]string, len(channels))
		args := make([]any, len(channels))
		for i, ch := range channels {
			calls[i], args[i] = fmt.Sprintf("pg_notify($%d, '')", i+1), ch
		}
		if len(channels) > 0 {
			nctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			if _, err := d.pool.Exec(nctx, `SELECT `+strings.Join(calls, ", "), args...); err != nil && ctx.Err() == nil {
				// Best effort: other replicas' workers also poll.
				d.logger.Warn("notify other replicas failed", "channels", strings.Join(channels, ","), "error", err)
			}
			cancel()
		}
		t := time.NewTimer(notifyInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// Subscribe runs fn on each notification on channel, starting the listener
// connection on first use.
func (d *Driver) Subscribe(channel string, fn func()) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.subscribers[channel] = append(d.subscribers[channel], fn)
	if !d.listening[channel] && d.interruptWait != nil {
		// A channel the listener's connection does not LISTEN to yet.
		d.interruptWait()
	}
	d.listening[channel] = true
	if d.stopListen == nil {
		ctx, cancel := context.WithCancel(context.Background())
		d.stopListen = cancel
		d.listenDone = make(chan struct{})
		go d.listen(ctx)
	}
}

// listen holds one connection in LISTEN on every subscribed channel and
// reconnects with a pause when it breaks.
func (d *Driver) listen(ctx context.Context) {
	defer close(d.listenDone)
	for ctx.Err() == nil {
		err := d.listenOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		d.logger.Debug("listen connection lost", "error", err)
		// Wake everyone: notifications may have been missed while down.
		d.wakeAll()
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

func (d *Driver) listenOnce(ctx context.Context) error {
	conn, err := d.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	listened := map[string]bool{}
	for {
		// LISTEN to every subscribed channel this connection does not
		// yet: all of them at first, then any subscribed since.
		d.mu.Lock()
		var channels []string
		for ch := range d.listening {
			if !listened[ch] {
				channels = append(channels, ch)
			}
		}
		waitCtx, interrupt := context.WithCancel(ctx)
		d.interruptWait = interrupt
		d.mu.Unlock()
		for _, ch := range channels {
			if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{ch}.Sanitize()); err != nil {
				interrupt()
				conn.Conn().Close(context.Background())
				return err
			}
			listened[ch] = true
		}
		if len(channels) > 0 {
			// Anything notified before LISTEN took effect was missed:
			// wake everyone once so they look.
			d.wakeAll()
		}
		n, err := conn.Conn().WaitForNotification(waitCtx)
		interrupted := waitCtx.Err() != nil && ctx.Err() == nil
		interrupt()
		switch {
		case err == nil:
			d.wake(n.Channel)
		case interrupted && !conn.Conn().IsClosed():
			// Subscribe asked for another channel: LISTEN to it on the
			// same connection.
		default:
			conn.Conn().Close(context.Background())
			return err
		}
	}
}

func (d *Driver) wake(channel string) {
	d.mu.Lock()
	fns := append([]func(){}, d.subscribers[channel]...)
	d.mu.Unlock()
	for _, fn := range fns {
		fn()
	}
}

func (d *Driver) wakeAll() {
	d.mu.Lock()
	var fns []func()
	for _, s := range d.subscribers {
		fns = append(fns, s...)
	}
	d.mu.Unlock()
	for _, fn := range fns {
		fn()
	}
}

func (d *Driver) Close() {
	d.mu.Lock()
	stop, done := d.stopListen, d.listenDone
	d.mu.Unlock()
	if stop != nil {
		stop()
		<-done
	}
	d.stopNotify()
	<-d.notifyDone
	d.deferred.Close()
	d.pool.Close()
}

type pgExecutor interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func execOn(ctx context.Context, ex pgExecutor, q string, args ...any) (int64, error) {
	tag, err := ex.Exec(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

func queryOn(ctx context.Context, ex pgExecutor, q string, args ...any) (sqlstore.Rows, error) {
	r, err := ex.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return rows{r}, nil
}

type row struct{ r pgx.Row }

func (r row) Scan(dest ...any) error {
	err := r.r.Scan(dest...)
	if errors.Is(err, pgx.ErrNoRows) {
		return sqlstore.ErrNoRows
	}
	return err
}

type rows struct{ r pgx.Rows }

func (r rows) Next() bool             { return r.r.Next() }
func (r rows) Scan(dest ...any) error { return r.r.Scan(dest...) }
func (r rows) Err() error             { return r.r.Err() }
func (r rows) Close()                 { r.r.Close() }

// pgTx is a transaction on one pooled connection. Its BEGIN and its
// deferred statements travel in one pipeline with the next statement that
// needs an answer, and COMMIT carries whatever is still deferred, so a
// transaction costs one round trip per answer it waits for.
type pgTx struct {
	conn    *pgxpool.Conn
	begun   bool // BEGIN has been sent
	pending []deferredStmt
	err     error // the first failure; the transaction can only roll back
	done    bool
	// deferredConn: conn is the deferred pool's (synchronous_commit off).
	deferredConn bool
}

func commitResult(br pgx.BatchResults) error {
	tag, err := br.Exec()
	if err == nil && tag.String() == "ROLLBACK" {
		err = pgx.ErrTxCommitRollback
	}
	return err
}

type deferredStmt struct {
	sql  string
	args []any
	done func(rowsAffected int64, err error) error
	// scan, when set, reads the statement's one row instead (DeferRow).
	scan func(sqlstore.Row) error
}

var (
	_ sqlstore.Deferrer    = (*pgTx)(nil)
	_ sqlstore.RowDeferrer = (*pgTx)(nil)
	_ sqlstore.Batcher     = (*pgTx)(nil)
	_ sqlstore.Batcher     = (*Driver)(nil)
)

var errTxDone = errors.New("transaction already finished")

// rollbackTimeout bounds the ROLLBACK of an abandoned transaction; a server
// that does not answer loses the connection instead.
const rollbackTimeout = 5 * time.Second

func (t *pgTx) Defer(query string, args []any, done func(int64, error) error) {
	t.pending = append(t.pending, deferredStmt{sql: query, args: args, done: done})
}

func (t *pgTx) DeferRow(query string, args []any, scan func(sqlstore.Row) error) {
	t.pending = append(t.pending, deferredStmt{sql: query, args: args, scan: scan})
}

// direct reports whether a statement can go straight to the connection:
// nothing is waiting to be sent ahead of it.
func (t *pgTx) direct() bool { return t.begun && len(t.pending) == 0 && t.err == nil && !t.done }

// flush sends BEGIN (once) and the deferred statements, then whatever queue
// adds, in one pipeline; it reads the results of its own part and returns
// the batch positioned at the caller's first statement.
func (t *pgTx) flush(ctx context.Context, queue func(*pgx.Batch)) (pgx.BatchResults, error) {
	if t.done {
		return nil, errTxDone
	}
	if t.err != nil {
		return nil, t.err
	}
	b := &pgx.Batch{}
	begin := !t.begun
	if begin {
		b.Queue("BEGIN")
	}
	pending := t.pending
	t.pending = nil
	for _, p := range pending {
		b.Queue(p.sql, p.args...)
	}
	if queue != nil {
		queue(b)
	}
	t.begun = true
	br := t.conn.SendBatch(ctx, b)
	if begin {
		if _, err := br.Exec(); err != nil {
			return nil, t.fail(br, err)
		}
	}
	for _, p := range pending {
		if err := p.read(br); err != nil {
			return nil, t.fail(br, &sqlstore.DeferredError{Err: err})
		}
	}
	return br, nil
}

// read reads the deferred statement's result from br and judges it.
func (p deferredStmt) read(br pgx.BatchResults) error {
	if p.scan != nil {
		return p.scan(row{br.QueryRow()})
	}
	tag, err := br.Exec()
	if p.done != nil {
		err = p.done(tag.RowsAffected(), err)
	}
	return err
}

func (t *pgTx) fail(br pgx.BatchResults, err error) error {
	_ = br.Close()
	t.err = err
	return err
}

func (t *pgTx) Exec(ctx context.Context, q string, args ...any) (int64, error) {
	if t.direct() {
		return execOn(ctx, t.conn, q, args...)
	}
	br, err := t.flush(ctx, func(b *pgx.Batch) { b.Queue(q, args...) })
	if err != nil {
		return 0, err
	}
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

func (t *pgTx) Query(ctx context.Context, q string, args ...any) (sqlstore.Rows, error) {
	if t.direct() {
		return queryOn(ctx, t.conn, q, args...)
	}
	br, err := t.flush(ctx, func(b *pgx.Batch) { b.Queue(q, args...) })
	if err != nil {
		return nil, err
	}
	r, err := br.Query()
	if err != nil {
		_ = br.Close()
		return nil, err
	}
	return batchRows{rows: rows{r}, br: br}, nil
}

func (t *pgTx) QueryRow(ctx context.Context, q string, args ...any) sqlstore.Row {
	if t.direct() {
		return row{t.conn.QueryRow(ctx, q, args...)}
	}
	return sqlstore.FirstRow(t.Query(ctx, q, args...))
}

func (t *pgTx) QueryBatch(ctx context.Context, qs []sqlstore.BatchQuery) error {
	br, err := t.flush(ctx, func(b *pgx.Batch) {
		for _, q := range qs {
			b.Queue(q.SQL, q.Args...)
		}
	})
	if err != nil {
		return err
	}
	return scanBatch(br, qs)
}

// Commit sends what is still deferred together with COMMIT.
func (t *pgTx) Commit(ctx context.Context) error {
	if t.done {
		return errTxDone
	}
	defer t.release(ctx)
	if t.err != nil {
		return t.err
	}
	if !t.begun && len(t.pending) == 0 {
		return nil // nothing was sent: nothing to commit
	}
	br, err := t.flush(ctx, func(b *pgx.Batch) { b.Queue("COMMIT") })
	if err != nil {
		return err
	}
	err = commitResult(br)
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return err
}

// Rollback rolls back what the transaction sent.
func (t *pgTx) Rollback(ctx context.Context) error {
	if !t.done {
		t.release(ctx)
	}
	return nil
}

// release ends the transaction: a connection still inside one is rolled
// back (the pool would otherwise discard it), then returned.
func (t *pgTx) release(ctx context.Context) {
	t.done = true
	t.pending = nil
	if t.conn.Conn().PgConn().TxStatus() != 'I' {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
		_, _ = t.conn.Exec(rctx, "ROLLBACK")
		cancel()
	}
	t.conn.Release()
}

// batchRows are a pipeline's last result set; closing them ends the batch.
type batchRows struct {
	rows
	br pgx.BatchResults
}

func (r batchRows) Close() {
	r.rows.Close()
	_ = r.br.Close()
}
