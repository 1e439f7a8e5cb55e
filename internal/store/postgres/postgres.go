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
}

// Options tunes the pool.
type Options struct {
	// Schema, when set, becomes the search_path (tests isolate by schema).
	Schema   string
	MaxConns int32
}

// Open connects to url. The pool is lazy: an unreachable server is reported
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
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open postgres pool: %w", err)
	}
	dcfg := cfg.Copy()
	dcfg.ConnConfig.RuntimeParams["synchronous_commit"] = "off"
	dcfg.MaxConns = max(cfg.MaxConns/2, 4)
	deferred, err := pgxpool.NewWithConfig(ctx, dcfg)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("open postgres pool: %w", err)
	}
	return &Driver{pool: pool, deferred: deferred, logger: logger, schema: opts.Schema, subscribers: map[string][]func(){}, listening: map[string]bool{}}, nil
}

// Pool exposes the pool to tests that need raw access.
func (d *Driver) Pool() *pgxpool.Pool { return d.pool }

func (d *Driver) Dialect() string { return store.DialectPostgres }

// ForUpdate locks rows as FOR NO KEY UPDATE: the protocols never change a
// key, and unlike FOR UPDATE it does not block the FOR KEY SHARE locks that
// foreign-key checks take (inserting a task must not wait for a create that
// holds its workspace's sequence).
func (d *Driver) ForUpdate() string  { return " FOR NO KEY UPDATE" }
func (d *Driver) SkipLocked() string { return " FOR UPDATE SKIP LOCKED" }

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
// locks (FOR UPDATE) in the documented order.
func (d *Driver) Begin(ctx context.Context) (sqlstore.Tx, error) {
	tx, err := d.poolFor(ctx).Begin(ctx)
	if err != nil {
		return nil, err
	}
	return &pgTx{tx: tx}, nil
}

func (d *Driver) LockOutbox(ctx context.Context, ex sqlstore.Executor) error {
	_, err := ex.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(outboxLockKey))
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

// Notify sends pg_notify; every replica's listener (this one included) wakes
// its local subscribers.
func (d *Driver) Notify(ctx context.Context, channel string) error {
	_, err := d.pool.Exec(ctx, `SELECT pg_notify($1, '')`, channel)
	return err
}

// Subscribe runs fn on each notification on channel, starting the listener
// connection on first use.
func (d *Driver) Subscribe(channel string, fn func()) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.subscribers[channel] = append(d.subscribers[channel], fn)
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
	d.mu.Lock()
	channels := make([]string, 0, len(d.listening))
	for ch := range d.listening {
		channels = append(channels, ch)
	}
	d.mu.Unlock()
	for _, ch := range channels {
		if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{ch}.Sanitize()); err != nil {
			conn.Conn().Close(context.Background())
			return err
		}
	}
	// Anything notified before LISTEN took effect was missed: wake everyone
	// once so they look.
	d.wakeAll()
	for {
		n, err := conn.Conn().WaitForNotification(ctx)
		if err != nil {
			conn.Conn().Close(context.Background())
			return err
		}
		d.wake(n.Channel)
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

type pgTx struct{ tx pgx.Tx }

func (t *pgTx) Exec(ctx context.Context, q string, args ...any) (int64, error) {
	return execOn(ctx, t.tx, q, args...)
}
func (t *pgTx) Query(ctx context.Context, q string, args ...any) (sqlstore.Rows, error) {
	return queryOn(ctx, t.tx, q, args...)
}
func (t *pgTx) QueryRow(ctx context.Context, q string, args ...any) sqlstore.Row {
	return row{t.tx.QueryRow(ctx, q, args...)}
}
func (t *pgTx) Commit(ctx context.Context) error   { return t.tx.Commit(ctx) }
func (t *pgTx) Rollback(ctx context.Context) error { return t.tx.Rollback(ctx) }
