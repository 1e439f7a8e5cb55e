// Package sqlite is the SQLite driver of the store: modernc.org/sqlite (pure
// Go), WAL with synchronous=FULL, one writer connection (BEGIN IMMEDIATE) and
// a pool of readers, goose migrations from migrations/sqlite, and
// constraint attribution by index name read from the schema.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pressly/goose/v3"
	sqlitelib "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/store/sqlstore"
	"github.com/trackergateway/gateway/migrations"
)

// Driver is the SQLite sqlstore.Driver.
type Driver struct {
	path   string  // the database file
	writer *sql.DB // pinned wconn plus one connection for migrations
	reader *sql.DB
	wconn  *sql.Conn
	wmu    chan struct{}
	wstmts map[string]*sql.Stmt // guarded by wmu
	wsync  string               // the writer's synchronous level; guarded by wmu
	// ackWaiting counts acknowledged writes waiting for the writer.
	ackWaiting atomic.Int64
	rstmts     sync.Map // query → *sql.Stmt on reader

	stopCheckpoints context.CancelFunc
	checkpointsDone chan struct{}
	// catchUps counts the checkpoints that caught up under the writer.
	catchUps  atomic.Int64
	closeOnce sync.Once
	closed    chan struct{} // closed by Close: writers fail fast

	mu          sync.Mutex
	subscribers map[string][]func()
	// uniqueIndexes maps "table(col,col)" to the unique index covering it, so
	// SQLite's "UNIQUE constraint failed: t.a, t.b" is attributed by name.
	uniqueIndexes map[string]string

	ownerMu sync.Mutex
	owner   *os.File // the ownership lock file, once claimed (ClaimOwnership)
}

// readers is the size of the reader pool: reads run concurrently with the
// writer and with each other (WAL).
const readers = 8

// Open opens (creating) the database file at path.
//
// The file holds webhook bodies and generated secrets, so what Open creates
// is private to the gateway's user: the directory 0700 and the file 0600
// (SQLite gives the -wal and -shm files the main file's permissions). An
// existing directory or file keeps the permissions it has: they are the
// operator's choice.
func Open(ctx context.Context, path string) (*Driver, error) {
	return open(ctx, path, checkpointing{every: checkpointEvery, restartFrames: walRestartFrames})
}

func open(ctx context.Context, path string, cp checkpointing) (*Driver, error) {
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("create database directory: %w", err)
		}
	}
	if err := createPrivate(path); err != nil {
		return nil, err
	}
	// Commit with fdatasync, as SQLite does in every Linux distribution's
	// build: it flushes the data and the size a commit needs and skips the
	// timestamp update fsync pushes through the file system's journal on
	// every commit, with the same durability. The transpiled library keeps
	// SQLite's source default, fsync, and the switch is process-wide; the
	// gateway's only SQLite is this driver. Where fdatasync does not exist
	// (macOS, Windows) SQLite's own sync stays.
	if _, err := sqlitelib.Fdatasync(true); err != nil && !errors.Is(err, sqlitelib.ErrFdatasyncUnavailable) {
		return nil, fmt.Errorf("sync with fdatasync: %w", err)
	}
	pragmas := []string{"journal_mode(WAL)", "synchronous(FULL)", "foreign_keys(1)", "busy_timeout(10000)"}
	q := url.Values{}
	for _, p := range pragmas {
		q.Add("_pragma", p)
	}
	// Checkpoints run in the background (checkpointLoop), never inside a
	// commit, so they do not stall acknowledgements.
	q.Add("_pragma", "wal_autocheckpoint(0)")
	dsn := "file:" + uriPath(path) + "?" + q.Encode()
	writer, err := openDB(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("open sqlite: %w", err)
	}
	// One writer: SQLite serializes writes anyway; queuing them in-process
	// avoids busy-wait storms under concurrency. The second connection only
	// serves goose's migrations.
	writer.SetMaxOpenConns(2)
	writer.SetConnMaxIdleTime(0)
	rq := url.Values{}
	for _, p := range append(pragmas, "query_only(1)") {
		rq.Add("_pragma", p)
	}
	reader, err := openDB(ctx, "file:"+uriPath(path)+"?"+rq.Encode())
	if err != nil {
		writer.Close()
		return nil, fmt.Errorf("open sqlite reader: %w", err)
	}
	// Readers stay open: database/sql keeps two idle connections by
	// default, and a reader opened again pays its pragmas and re-prepares
	// every statement (that churn was a fifth of processing's CPU).
	reader.SetMaxOpenConns(readers)
	reader.SetMaxIdleConns(readers)
	reader.SetConnMaxIdleTime(0)
	d := &Driver{path: path, writer: writer, reader: reader, subscribers: map[string][]func(){},
		wmu: make(chan struct{}, 1), wstmts: map[string]*sql.Stmt{}, closed: make(chan struct{})}
	if d.wconn, err = writer.Conn(ctx); err != nil {
		writer.Close()
		reader.Close()
		return nil, fmt.Errorf("open sqlite: %w", err)
	}
	// A statement that writes several rows inside a transaction keeps a
	// statement journal, and past 64 KiB SQLite moves it to a temporary file
	// it creates, writes and deletes: a batch of eight receipts' contents
	// already does. In memory a receipt's insert costs up to a fifth less
	// CPU (BenchmarkInsertDeliveries). Only the pinned writer: its statements
	// are bounded batches, where a migration on the other connection may
	// rewrite a whole table.
	if _, err := d.wconn.ExecContext(ctx, `PRAGMA temp_store = MEMORY`); err != nil {
		d.wconn.Close()
		writer.Close()
		reader.Close()
		return nil, fmt.Errorf("open sqlite: keep statement journals in memory: %w", err)
	}
	if err := checkDurability(ctx, d.wconn); err != nil {
		d.wconn.Close()
		writer.Close()
		reader.Close()
		return nil, fmt.Errorf("open sqlite: %w", err)
	}
	loopCtx, stop := context.WithCancel(context.Background())
	d.stopCheckpoints, d.checkpointsDone = stop, make(chan struct{})
	go d.checkpointLoop(loopCtx, cp)
	return d, nil
}

// checkDurability refuses a connection that is not in WAL mode with
// synchronous=FULL: SQLite answers a journal mode it cannot switch to (a
// file system without shared memory, say) by keeping the old one, without
// an error, and every acknowledgement relies on both.
func checkDurability(ctx context.Context, c *sql.Conn) error {
	var mode string
	var sync int
	if err := c.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil {
		return fmt.Errorf("read journal mode: %w", err)
	}
	if err := c.QueryRowContext(ctx, `PRAGMA synchronous`).Scan(&sync); err != nil {
		return fmt.Errorf("read synchronous: %w", err)
	}
	if !strings.EqualFold(mode, "wal") || sync != 2 {
		return fmt.Errorf("journal mode %s with synchronous=%d, want wal with synchronous=2 (FULL)", mode, sync)
	}
	return nil
}

// createPrivate creates an empty database file readable only by its owner,
// unless one exists (SQLite takes an empty file as an empty database).
func createPrivate(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("create database file: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("create database file: %w", err)
	}
	return nil
}

func (d *Driver) Dialect() string { return store.DialectSQLite }

// SharesCommits: concurrent processing transactions share commits
// (sqlstore.CommitSharer); they queue for the one writer anyway.
func (d *Driver) SharesCommits() bool { return true }
func (d *Driver) ForUpdate() string   { return "" }
func (d *Driver) SkipLocked() string  { return "" }

// MinuteOf: times are stored as unix microseconds.
func (d *Driver) MinuteOf(column string) string {
	return "((" + column + " / 60000000) * 60000000)"
}

// LockOutbox is a no-op: SQLite has a single writer.
func (d *Driver) LockOutbox(context.Context, sqlstore.Executor) error { return nil }

func isRead(q string) bool {
	s := strings.TrimSpace(q)
	return len(s) >= 6 && (strings.EqualFold(s[:6], "select") || strings.EqualFold(s[:4], "with"))
}

// The writer is one pinned connection used by one goroutine at a time
// (wmu); its statements are prepared once and cached, and transactions are
// plain BEGIN IMMEDIATE/COMMIT on it, so every statement of a transaction
// reuses a prepared statement (preparing dominated the CPU profile).

// errClosed is what writes get once Close has begun (instead of waiting for
// a writer that will never be free again).
var errClosed = errors.New("sqlite: database is closed")

// acquireWriter takes the writer. Acknowledged writes (inbox commits behind
// a webhook 2xx, REST writes) go first: derived work that gets the writer
// while one waits hands it over, so acknowledgements do not queue behind
// processing transactions.
func (d *Driver) acquireWriter(ctx context.Context) error {
	acknowledged := !store.DeferredSync(ctx)
	if acknowledged {
		d.ackWaiting.Add(1)
		defer d.ackWaiting.Add(-1)
	}
	for {
		select {
		case d.wmu <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		case <-d.closed:
			return errClosed
		}
		if acknowledged || d.ackWaiting.Load() == 0 {
			return nil
		}
		<-d.wmu
		runtime.Gosched()
	}
}

func (d *Driver) releaseWriter() { <-d.wmu }

// writerStmt returns the cached statement for q on the writer; the caller
// holds the writer.
func (d *Driver) writerStmt(ctx context.Context, q string) (*sql.Stmt, error) {
	if st, ok := d.wstmts[q]; ok {
		return st, nil
	}
	st, err := d.wconn.PrepareContext(ctx, rebind(q).sql)
	if err != nil {
		return nil, err
	}
	d.wstmts[q] = st
	return st, nil
}

// readerStmt returns the cached statement for q on the reader pool
// (database/sql prepares it once per pooled connection).
func (d *Driver) readerStmt(ctx context.Context, q string) (*sql.Stmt, error) {
	if st, ok := d.rstmts.Load(q); ok {
		return st.(*sql.Stmt), nil
	}
	st, err := d.reader.PrepareContext(ctx, rebind(q).sql)
	if err != nil {
		return nil, err
	}
	if prev, loaded := d.rstmts.LoadOrStore(q, st); loaded {
		st.Close()
		return prev.(*sql.Stmt), nil
	}
	return st, nil
}

// beginWrite takes the writer and sets its sync level for ctx: FULL unless
// ctx defers sync (store.WithDeferredSync); the pragma cannot change inside a
// transaction, so it is set before each one.
func (d *Driver) beginWrite(ctx context.Context) error {
	if err := d.acquireWriter(ctx); err != nil {
		return err
	}
	level := "FULL"
	if store.DeferredSync(ctx) {
		level = "NORMAL"
	}
	if level == d.wsync { // guarded by the writer
		return nil
	}
	if _, err := d.execWriter(ctx, `PRAGMA synchronous = `+level); err != nil {
		d.wsync = ""
		d.releaseWriter()
		return err
	}
	d.wsync = level
	return nil
}

func (d *Driver) Exec(ctx context.Context, q string, args ...any) (int64, error) {
	if err := d.beginWrite(ctx); err != nil {
		return 0, err
	}
	defer d.releaseWriter()
	return d.execWriter(ctx, q, args...)
}

// uninterrupted returns the context a writer statement runs under: ctx
// without its cancellation, which is checked here instead, before each
// statement. With a context that can end, modernc.org/sqlite starts a
// goroutine per statement to interrupt it, and database/sql one per result
// set to close it; on the writer that was a tenth of processing's CPU
// (docs/benchmarks.md, "Writer statements without a watcher each"). A
// deadline still ends a transaction on the writer at its next statement or
// its COMMIT, a moment late rather than mid-statement. Writer statements
// do not wait for this process (the writer is its only one; WAL readers
// and PASSIVE checkpoints never block it); another process writing the
// same file can make BEGIN IMMEDIATE wait, for at most the busy timeout.
// And each statement is bounded by design, by key or in batches
// (retention's deletes, bulk replay's pages). Readers keep their
// interruption: an operator's filter over a large inbox may need it.
func uninterrupted(ctx context.Context) (context.Context, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return context.WithoutCancel(ctx), nil
}

func (d *Driver) execWriter(ctx context.Context, q string, args ...any) (int64, error) {
	ctx, err := uninterrupted(ctx)
	if err != nil {
		return 0, err
	}
	st, err := d.writerStmt(ctx, q)
	if err != nil {
		return 0, err
	}
	bound, err := convertArgs(q, args)
	if err != nil {
		return 0, err
	}
	res, err := st.ExecContext(ctx, bound...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (d *Driver) queryWriter(ctx context.Context, q string, args ...any) (*rows, error) {
	ctx, err := uninterrupted(ctx)
	if err != nil {
		return nil, err
	}
	return queryStmt(ctx, d.writerStmt, q, args)
}

// queryStmt runs q through the statement cache prepare picks.
func queryStmt(ctx context.Context, prepare func(context.Context, string) (*sql.Stmt, error), q string, args []any) (*rows, error) {
	st, err := prepare(ctx, q)
	if err != nil {
		return nil, err
	}
	bound, err := convertArgs(q, args)
	if err != nil {
		return nil, err
	}
	r, err := st.QueryContext(ctx, bound...)
	if err != nil {
		return nil, err
	}
	return &rows{r: r}, nil
}

func (d *Driver) Query(ctx context.Context, q string, args ...any) (sqlstore.Rows, error) {
	if isRead(q) {
		r, err := queryStmt(ctx, d.readerStmt, q, args)
		if err != nil {
			return nil, err // not a typed nil in the interface
		}
		return r, nil
	}
	if err := d.beginWrite(ctx); err != nil {
		return nil, err
	}
	r, err := d.queryWriter(ctx, q, args...)
	if err != nil {
		d.releaseWriter()
		return nil, err
	}
	r.release = d.releaseWriter
	return r, nil
}

func (d *Driver) QueryRow(ctx context.Context, q string, args ...any) sqlstore.Row {
	return sqlstore.FirstRow(d.Query(ctx, q, args...))
}

// Begin starts a BEGIN IMMEDIATE transaction on the writer.
func (d *Driver) Begin(ctx context.Context) (sqlstore.Tx, error) {
	if err := d.beginWrite(ctx); err != nil {
		return nil, err
	}
	if _, err := d.execWriter(ctx, `BEGIN IMMEDIATE`); err != nil {
		d.releaseWriter()
		return nil, err
	}
	return &sqliteTx{d: d}, nil
}

var uniqueFailed = regexp.MustCompile(`UNIQUE constraint failed: ([\w.]+(?:, [\w.]+)*)`)

// Classify maps SQLite errors to store sentinels; a unique violation is
// attributed to an index name through the schema.
func (d *Driver) Classify(err error) error {
	if err == nil {
		return nil
	}
	var se *sqlitelib.Error
	if !errors.As(err, &se) {
		return err
	}
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_CONSTRAINT:
		if m := uniqueFailed.FindStringSubmatch(se.Error()); m != nil {
			name := d.uniqueIndexName(m[1])
			if name == "uniq_tasks_external_id" {
				return fmt.Errorf("%w: %s", store.ErrExternalIDTaken, name)
			}
			return fmt.Errorf("%w: %s: %v", store.ErrConstraint, name, err)
		}
		return fmt.Errorf("%w: %v", store.ErrConstraint, err)
	case sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_FULL, sqlite3.SQLITE_BUSY, sqlite3.SQLITE_READONLY:
		return fmt.Errorf("%w: %v", store.ErrUnavailable, err)
	}
	return err
}

// uniqueIndexName resolves "tasks.workspace_id, tasks.external_id" to the
// name of the unique index (or constraint) on exactly those columns.
func (d *Driver) uniqueIndexName(cols string) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.uniqueIndexes == nil {
		d.uniqueIndexes = d.loadUniqueIndexes()
	}
	if n, ok := d.uniqueIndexes[normalizeColumns(cols)]; ok {
		return n
	}
	return "unique(" + cols + ")"
}

func normalizeColumns(cols string) string {
	parts := strings.Split(cols, ",")
	table := ""
	var names []string
	for _, p := range parts {
		p = strings.TrimSpace(p)
		t, c, ok := strings.Cut(p, ".")
		if !ok {
			continue
		}
		table = t
		names = append(names, c)
	}
	sort.Strings(names)
	return table + "(" + strings.Join(names, ",") + ")"
}

func (d *Driver) loadUniqueIndexes() map[string]string {
	out := map[string]string{}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rows, err := d.reader.QueryContext(ctx, `SELECT m.name, il.name, il.origin FROM sqlite_master m, pragma_index_list(m.name) il WHERE m.type = 'table' AND il."unique" = 1`)
	if err != nil {
		return out
	}
	type idx struct{ table, name, origin string }
	var idxs []idx
	for rows.Next() {
		var x idx
		if rows.Scan(&x.table, &x.name, &x.origin) == nil {
			idxs = append(idxs, x)
		}
	}
	rows.Close()
	for _, x := range idxs {
		crows, err := d.reader.QueryContext(ctx, `SELECT name FROM pragma_index_info($1)`, x.name)
		if err != nil {
			continue
		}
		var cols []string
		for crows.Next() {
			var c sql.NullString
			if crows.Scan(&c) == nil {
				cols = append(cols, c.String)
			}
		}
		crows.Close()
		sort.Strings(cols)
		key := x.table + "(" + strings.Join(cols, ",") + ")"
		name := x.name
		if x.origin != "c" { // autoindex of a table constraint: keep the table name
			name = key
			if x.origin == "pk" {
				name = x.table + "_pkey"
			}
		}
		// The partial index on (workspace_id, external_id) is the only one on
		// those columns; a named CREATE UNIQUE INDEX wins over autoindexes.
		if _, exists := out[key]; !exists || x.origin == "c" {
			out[key] = name
		}
	}
	return out
}

func (d *Driver) Ping(ctx context.Context) error {
	var one int
	return d.reader.QueryRowContext(ctx, `SELECT 1`).Scan(&one)
}

func (d *Driver) provider() (*goose.Provider, error) {
	sub, err := fs.Sub(migrations.SQLite, "sqlite")
	if err != nil {
		return nil, err
	}
	return goose.NewProvider(goose.DialectSQLite3, d.writer, sub)
}

// Migrate applies pending migrations; re-running is a no-op.
func (d *Driver) Migrate(ctx context.Context) error {
	p, err := d.provider()
	if err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("apply migrations: %w", err)
	}
	d.mu.Lock()
	d.uniqueIndexes = nil
	d.mu.Unlock()
	return nil
}

func (d *Driver) Migrated(ctx context.Context) (bool, error) {
	p, err := d.provider()
	if err != nil {
		return false, err
	}
	pending, err := p.HasPending(ctx)
	return !pending && err == nil, err
}

// Notify wakes in-process subscribers: an SQLite database has one gateway.
func (d *Driver) Notify(_ context.Context, channel string) error {
	d.mu.Lock()
	fns := append([]func(){}, d.subscribers[channel]...)
	d.mu.Unlock()
	for _, fn := range fns {
		fn()
	}
	return nil
}

func (d *Driver) Subscribe(channel string, fn func()) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.subscribers[channel] = append(d.subscribers[channel], fn)
}

// checkpointEvery is how often the WAL is copied into the database.
const checkpointEvery = 250 * time.Millisecond

// walRestartFrames: once a checkpoint has copied a WAL of at least this
// many frames (16 MB), it catches up under the writer, so that the WAL
// starts again from its beginning. At 1,000 webhooks/s that is about once a
// second: each catch-up holds the writer for two fsyncs.
const walRestartFrames = 4096

// checkpointing is how checkpointLoop runs: Open's constants, or a test's.
type checkpointing struct {
	every         time.Duration
	restartFrames int
}

// checkpointLoop copies the WAL into the database every cp.every with a
// PASSIVE checkpoint on the spare writer connection: it never waits for
// readers or the writer, and acknowledgements do not wait for it.
//
// SQLite starts the WAL again from its beginning only when a write
// transaction begins while every frame has been copied. Under steady load
// some receipt always commits while a checkpoint runs, so that never held
// and the WAL grew for as long as the load lasted: 400 MB in a 10 s burst,
// each commit appending to a growing file (docs/benchmarks.md, "The WAL
// starts again under load"). So when a checkpoint has copied every frame it
// saw and the WAL is large, a second one, holding the writer, copies the
// few frames committed meanwhile; the next write transaction then restarts
// the WAL. It takes the writer in turn with acknowledgements, not after
// them: under a steady stream of them it would wait as long as the stream
// lasts, and a short WAL serves the acknowledgements too.
func (d *Driver) checkpointLoop(ctx context.Context, cp checkpointing) {
	defer close(d.checkpointsDone)
	t := time.NewTicker(cp.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			d.checkpoint(ctx, cp.restartFrames)
		}
	}
}

// walCheckpoint is what one PRAGMA wal_checkpoint reported.
type walCheckpoint struct {
	busy   bool
	frames int // in the WAL
	copied int // of them, in the database
}

// checkpoint runs one PASSIVE checkpoint and, when it copied every frame of
// a WAL of restartFrames or more, catches up under the writer (see
// checkpointLoop).
func (d *Driver) checkpoint(ctx context.Context, restartFrames int) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	c, err := d.passiveCheckpoint(ctx)
	if err != nil || c.busy || c.copied < c.frames || c.frames < restartFrames {
		return
	}
	if err := d.acquireWriter(ctx); err != nil {
		return
	}
	defer d.releaseWriter()
	if _, err := d.passiveCheckpoint(ctx); err == nil {
		d.catchUps.Add(1)
	}
}

func (d *Driver) passiveCheckpoint(ctx context.Context) (walCheckpoint, error) {
	var c walCheckpoint
	err := d.writer.QueryRowContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`).Scan(&c.busy, &c.frames, &c.copied)
	return c, err
}

// Close is idempotent. It waits for the writer in use (if any), keeps it
// forever, and closes the connections; later writes fail with errClosed.
func (d *Driver) Close() {
	d.closeOnce.Do(func() {
		close(d.closed)
		d.stopCheckpoints()
		<-d.checkpointsDone
		d.rstmts.Range(func(_, v any) bool { v.(*sql.Stmt).Close(); return true })
		d.wmu <- struct{}{}
		for _, st := range d.wstmts {
			st.Close()
		}
		d.wconn.Close()
		d.reader.Close()
		d.writer.Close()
		d.releaseOwnership()
	})
}

// Placeholders: $N → anonymous ?, the arguments arranged in the order the
// placeholders appear (a reused $N is passed again). Numbered ?N would do
// without arranging, but the driver looks each one's name up in a list, so
// binding a 1,000-parameter multi-row INSERT cost O(n²).
type rebound struct {
	sql    string
	order  []int // argument index of each placeholder, in text order
	params int   // arguments the query takes: the highest $N
}

var rebindCache sync.Map // query → *rebound

func rebind(q string) *rebound {
	if v, ok := rebindCache.Load(q); ok {
		return v.(*rebound)
	}
	rb := &rebound{}
	var b strings.Builder
	b.Grow(len(q))
	for i := 0; i < len(q); i++ {
		if q[i] != '$' {
			b.WriteByte(q[i])
			continue
		}
		j := i + 1
		for j < len(q) && q[j] >= '0' && q[j] <= '9' {
			j++
		}
		n, err := strconv.Atoi(q[i+1 : j])
		if err != nil || n < 1 {
			b.WriteByte(q[i]) // not a placeholder: SQLite reports it
			continue
		}
		b.WriteByte('?')
		rb.order = append(rb.order, n-1)
		rb.params = max(rb.params, n)
		i = j - 1
	}
	rb.sql = b.String()
	rebindCache.Store(q, rb)
	return rb
}

// convertArgs arranges args for q's placeholders; times travel as unix
// microseconds.
func convertArgs(q string, args []any) ([]any, error) {
	rb := rebind(q)
	if len(args) != rb.params {
		return nil, fmt.Errorf("sqlite: query takes %d arguments, got %d", rb.params, len(args))
	}
	out := make([]any, len(rb.order))
	for i, n := range rb.order {
		switch v := args[n].(type) {
		case time.Time:
			out[i] = v.UnixMicro()
		case *time.Time:
			if v == nil {
				out[i] = nil
			} else {
				out[i] = v.UnixMicro()
			}
		default:
			out[i] = args[n]
		}
	}
	return out, nil
}

type timeDest struct {
	t  *time.Time
	pt **time.Time
	n  sql.NullInt64
}

func convertDests(dest []any) ([]any, []*timeDest) {
	var fix []*timeDest
	out := make([]any, len(dest))
	for i, d := range dest {
		switch v := d.(type) {
		case *time.Time:
			td := &timeDest{t: v}
			fix = append(fix, td)
			out[i] = &td.n
		case **time.Time:
			td := &timeDest{pt: v}
			fix = append(fix, td)
			out[i] = &td.n
		default:
			out[i] = d
		}
	}
	return out, fix
}

func applyTimes(fix []*timeDest) {
	for _, f := range fix {
		switch {
		case f.t != nil:
			if f.n.Valid {
				*f.t = time.UnixMicro(f.n.Int64).UTC()
			} else {
				*f.t = time.Time{}
			}
		case f.pt != nil:
			if f.n.Valid {
				t := time.UnixMicro(f.n.Int64).UTC()
				*f.pt = &t
			} else {
				*f.pt = nil
			}
		}
	}
}

type rows struct {
	r       *sql.Rows
	release func() // returns the writer when the rows held it
}

func (r *rows) Next() bool { return r.r.Next() }
func (r *rows) Scan(dest ...any) error {
	conv, fix := convertDests(dest)
	if err := r.r.Scan(conv...); err != nil {
		return err
	}
	applyTimes(fix)
	return nil
}
func (r *rows) Err() error { return r.r.Err() }
func (r *rows) Close() {
	r.r.Close()
	if r.release != nil {
		r.release()
		r.release = nil
	}
}

type sqliteTx struct {
	d    *Driver
	done bool
}

func (t *sqliteTx) Exec(ctx context.Context, q string, args ...any) (int64, error) {
	return t.d.execWriter(ctx, q, args...)
}

func (t *sqliteTx) Query(ctx context.Context, q string, args ...any) (sqlstore.Rows, error) {
	return t.d.queryWriter(ctx, q, args...)
}

func (t *sqliteTx) QueryRow(ctx context.Context, q string, args ...any) sqlstore.Row {
	r, err := t.d.queryWriter(ctx, q, args...)
	if err != nil {
		return sqlstore.FirstRow(nil, err) // not a typed nil in the interface
	}
	return sqlstore.FirstRow(r, nil)
}

func (t *sqliteTx) Commit(ctx context.Context) error {
	if t.done {
		return errors.New("transaction already finished")
	}
	t.done = true
	defer t.d.releaseWriter()
	if _, err := t.d.execWriter(ctx, `COMMIT`); err != nil {
		_, _ = t.d.execWriter(context.WithoutCancel(ctx), `ROLLBACK`)
		return err
	}
	return nil
}

func (t *sqliteTx) Rollback(ctx context.Context) error {
	if t.done {
		return nil
	}
	t.done = true
	defer t.d.releaseWriter()
	_, err := t.d.execWriter(context.WithoutCancel(ctx), `ROLLBACK`)
	return err
}
