package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/trackergateway/gateway/internal/store"
)

// insertChunk bounds the rows of one multi-row INSERT (and so the number of
// distinct statements the drivers prepare and cache). Batches of up to 128
// concurrent receipts, the usual ones, are one statement (measured on
// PostgreSQL: 32 rows a statement 45% of the ceiling, 64 48%, 128 51%).
const insertChunk = 128

// InsertDeliveries is the group commit of the inbox: every input in one
// transaction, so one fsync acknowledges the whole batch, written with
// multi-row INSERTs (one round trip per chunk, not per delivery). Each
// delivery is two rows, the delivery and its content (delivery_contents),
// and a duplicate gets neither. On PostgreSQL a chunk is one statement
// (the content's INSERT in a data-modifying WITH), so a batch that fits one
// chunk needs no explicit transaction: the statement is its own, and its
// commit travels with it (one round trip in all). SQLite has no
// data-modifying WITH: there a chunk is two statements in a transaction.
func (q queries) InsertDeliveries(ctx context.Context, ds []store.Delivery) ([]store.InsertedDelivery, error) {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	out := make([]store.InsertedDelivery, len(ds))
	if len(ds) <= insertChunk && q.d.Dialect() == store.DialectPostgres {
		return out, q.insertDeliveryChunk(ctx, ds, out)
	}
	err := q.write(ctx, func(q queries) error {
		for start := 0; start < len(ds); start += insertChunk {
			end := min(start+insertChunk, len(ds))
			if err := q.insertDeliveryChunk(ctx, ds[start:end], out[start:end]); err != nil {
				return err
			}
		}
		return nil
	})
	return out, err
}

type deliveryKey struct{ connection, key string }

// A chunk's arguments: seven per delivery for its deliveries row (id,
// connection, provider, event, key, received_at, trace context), then three per delivery
// for its content (headers, body, encoding); a content repeats its row's id.
const (
	rowArgsPer     = 7
	contentArgsPer = 3
)

// insertContents writes the content of each delivery of the chunk that was
// inserted (not a duplicate): SQLite's statement after the rows'.
func (q queries) insertContents(ctx context.Context, ds []store.Delivery, ids []string, contentArgs []any, inserted map[deliveryKey]string) error {
	var b strings.Builder
	b.WriteString(`INSERT INTO delivery_contents (delivery_id, headers, body, body_encoding) VALUES `)
	var args []any
	for i, d := range ds {
		if inserted[deliveryKey{d.ConnectionID, d.DeliveryKey}] != ids[i] {
			continue
		}
		if len(args) > 0 {
			b.WriteString(", ")
		}
		n := len(args)
		fmt.Fprintf(&b, "($%d, $%d, $%d, $%d)", n+1, n+2, n+3, n+4)
		args = append(args, ids[i])
		args = append(args, contentArgs[contentArgsPer*i:contentArgsPer*(i+1)]...)
	}
	if len(args) == 0 {
		return nil
	}
	_, err := q.ex.Exec(ctx, b.String(), args...)
	return q.wrap("insert delivery contents", err)
}

func (q queries) insertDeliveryChunk(ctx context.Context, ds []store.Delivery, out []store.InsertedDelivery) error {
	postgres := q.d.Dialect() == store.DialectPostgres
	var rowsSQL, contentSQL strings.Builder
	rowsSQL.WriteString(`INSERT INTO deliveries (id, connection_id, provider, event, delivery_key,
		status, attempts, next_attempt_at, received_at, trace_context) VALUES `)
	rowArgs := make([]any, 0, len(ds)*rowArgsPer)
	contentArgs := make([]any, 0, len(ds)*contentArgsPer)
	ids := make([]string, len(ds))
	for i, d := range ds {
		ids[i] = d.ID
		if ids[i] == "" {
			ids[i] = store.TimeOrderedID()
		}
		if i > 0 {
			rowsSQL.WriteString(", ")
		}
		body, encoding := d.Body, d.BodyEncoding
		if encoding == "" {
			body, encoding = store.EncodeDeliveryBody(body)
		}
		r, c := rowArgsPer*i, rowArgsPer*len(ds)+contentArgsPer*i
		fmt.Fprintf(&rowsSQL, "($%d, $%d, $%d, $%d, $%d, 'queued', 0, $%d, $%d, $%d)", r+1, r+2, r+3, r+4, r+5, r+6, r+6, r+7)
		if postgres { // the contents' VALUES of the WITH below
			if i > 0 {
				contentSQL.WriteString(", ")
			}
			fmt.Fprintf(&contentSQL, "($%d::uuid, $%d::text, $%d::bytea, $%d::text)", r+1, c+1, c+2, c+3)
		}
		rowArgs = append(rowArgs, ids[i], d.ConnectionID, d.Provider, d.Event, d.DeliveryKey, d.ReceivedAt,
			nullString(d.TraceContext))
		contentArgs = append(contentArgs, d.Headers, body, encoding)
	}
	rowsSQL.WriteString(` ON CONFLICT (connection_id, delivery_key) DO NOTHING RETURNING id, connection_id, delivery_key`)
	query, queryArgs := rowsSQL.String(), rowArgs
	if postgres {
		query = `WITH inserted AS (` + query + `),
			contents AS (INSERT INTO delivery_contents (delivery_id, headers, body, body_encoding)
				SELECT c.id, c.headers, c.body, c.body_encoding
				FROM (VALUES ` + contentSQL.String() + `) AS c (id, headers, body, body_encoding)
				JOIN inserted ON inserted.id = c.id)
			SELECT id, connection_id, delivery_key FROM inserted`
		queryArgs = append(rowArgs, contentArgs...)
	}
	rows, err := q.ex.Query(ctx, query, queryArgs...)
	if err != nil {
		return q.wrap("insert deliveries", err)
	}
	inserted := map[deliveryKey]string{}
	for rows.Next() {
		var id string
		var k deliveryKey
		if err := rows.Scan(&id, &k.connection, &k.key); err != nil {
			rows.Close()
			return q.wrap("scan inserted delivery", err)
		}
		inserted[k] = id
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return q.wrap("insert deliveries", err)
	}
	if !postgres {
		if err := q.insertContents(ctx, ds, ids, contentArgs, inserted); err != nil {
			return err
		}
	}
	for i, d := range ds {
		k := deliveryKey{d.ConnectionID, d.DeliveryKey}
		if id, ok := inserted[k]; ok {
			// The first of equal keys in a chunk is the one inserted.
			out[i] = store.InsertedDelivery{ID: id, Duplicate: id != ids[i]}
			continue
		}
		var id string
		if err := q.ex.QueryRow(ctx, `SELECT id FROM deliveries WHERE connection_id = $1 AND delivery_key = $2`,
			d.ConnectionID, d.DeliveryKey).Scan(&id); err != nil {
			return q.wrap("find duplicate delivery", err)
		}
		out[i] = store.InsertedDelivery{ID: id, Duplicate: true}
	}
	return nil
}

const deliverySummaryColumns = `id, connection_id, provider, event, delivery_key, status, attempts, last_error,
	next_attempt_at, lease_owner, lease_expires_at, entity_key, received_at, processed_at,
	outcome_task_id, outcome_external_id, outcome_action, outcome_result, trace_context`

// deliveryContentColumns (of delivery_contents) follow deliverySummaryColumns
// when a read needs the raw delivery; scanDelivery decodes the body.
const deliveryContentColumns = `headers, body, body_encoding`

func scanDelivery(r Row, withContent bool) (store.Delivery, error) {
	var d store.Delivery
	var lastErr, owner, entity, taskID, extID, action, result, traceContext sql.NullString
	var encoding string
	dest := []any{&d.ID, &d.ConnectionID, &d.Provider, &d.Event, &d.DeliveryKey, &d.Status, &d.Attempts, &lastErr,
		&d.NextAttemptAt, &owner, &d.LeaseExpiresAt, &entity, &d.ReceivedAt, &d.ProcessedAt,
		&taskID, &extID, &action, &result, &traceContext}
	if withContent {
		dest = append(dest, &d.Headers, &d.Body, &encoding)
	}
	if err := r.Scan(dest...); err != nil {
		return d, err
	}
	d.LastError, d.LeaseOwner, d.EntityKey = lastErr.String, owner.String, entity.String
	d.OutcomeTaskID, d.OutcomeExternalID, d.OutcomeAction, d.OutcomeResult = taskID.String, extID.String, action.String, result.String
	d.TraceContext = traceContext.String
	if withContent {
		body, err := store.DecodeDeliveryBody(d.Body, encoding)
		if err != nil {
			return d, err
		}
		d.Body = body
	}
	return d, nil
}

func (q queries) GetDelivery(ctx context.Context, id string) (store.Delivery, error) {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	if _, err := uuid.Parse(id); err != nil {
		return store.Delivery{}, fmt.Errorf("get delivery: %w", store.ErrNotFound)
	}
	d, err := scanDelivery(q.ex.QueryRow(ctx, `SELECT `+deliverySummaryColumns+`, `+deliveryContentColumns+`
		FROM deliveries JOIN delivery_contents ON delivery_id = id WHERE id = $1`, id), true)
	return d, q.wrap("get delivery", err)
}

// rareStatuses is the predicate of the partial status indexes. The
// partial indexes' predicates are ORs, not IN lists, on SQLite (migration
// 00013 says why); PostgreSQL, whose indexes kept their IN lists, proves
// either form from the other.
const rareStatuses = "(status = 'failed' OR status = 'retrying' OR status = 'ignored' OR status = 'suppressed')"

// pendingStatuses is the predicate of the partial index of due deliveries
// (idx_deliveries_due, which the workers' claim reads).
const pendingStatuses = "(status = 'queued' OR status = 'retrying' OR status = 'processing')"

// deliveryWhere renders a filter's predicates, numbering arguments from
// those already in args. Each filter has an index ending in (received_at,
// id) (migrations 00008, 00010 and 00021), so a page reads matching rows newest
// first and stops when it is full; the status indexes hold only the rare
// statuses, and the common ones read the received-time index. error_contains has none a B-tree could give: it
// walks the partial index of rows holding an error, newest first.
//
// events, when it holds more than one, are the stored events f.Event names
// (eventFamily), matched in place of f.Event; keys are the ways a stored key
// matches f.DeliveryKey (keyMatches), any of them.
func deliveryWhere(dialect string, f store.DeliveryFilter, events []string, keys []keyMatch, args []any) ([]string, []any) {
	var where []string
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	switch f.Status {
	case "":
	case store.DeliveryFailed, store.DeliveryRetrying, store.DeliveryIgnored, store.DeliverySuppressed:
		// A literal of the closed set: a bound parameter would hide the
		// status from both planners.
		where = append(where, "status = '"+f.Status+"'")
		where = partialIndexTerm(dialect, where, rareStatuses)
	case store.DeliveryQueued, store.DeliveryProcessing:
		// The backlog, read through the due index (deliveryPage).
		where = append(where, "status = '"+f.Status+"'")
		where = partialIndexTerm(dialect, where, pendingStatuses)
	default:
		where = append(where, "status = "+arg(f.Status))
	}
	if f.ConnectionID != "" {
		where = append(where, "connection_id = "+arg(f.ConnectionID))
	}
	switch {
	case len(events) > 1:
		in := make([]string, len(events))
		for i, e := range events {
			in[i] = arg(e)
		}
		where = append(where, "event IN ("+strings.Join(in, ", ")+")")
	case f.Event != "":
		where = append(where, "event = "+arg(f.Event))
	}
	if f.ExternalID != "" {
		where = append(where, "outcome_external_id = "+arg(f.ExternalID))
	}
	var anyKey []string
	for _, k := range keys {
		term := providerKeyExpr(dialect) + " = " + arg(k.id)
		if k.exact != "" {
			term += " AND delivery_key = " + arg(k.exact)
		}
		anyKey = append(anyKey, term)
	}
	switch len(anyKey) {
	case 0:
	case 1:
		where = append(where, anyKey[0])
	default:
		where = append(where, "(("+strings.Join(anyKey, ") OR (")+"))")
	}
	if !f.ReceivedAfter.IsZero() {
		where = append(where, "received_at >= "+arg(f.ReceivedAfter))
	}
	if !f.ReceivedBefore.IsZero() {
		where = append(where, "received_at <= "+arg(f.ReceivedBefore))
	}
	if f.ErrorContains != "" {
		// LIKE with the pattern's own wildcards escaped; LOWER on both sides
		// so each database folds case the same way for both.
		where = append(where, "last_error IS NOT NULL",
			`LOWER(last_error) LIKE LOWER(`+arg("%"+likeEscaper.Replace(f.ErrorContains)+"%")+`) ESCAPE '\'`)
	}
	if f.BeforeID != "" {
		// The redundant bound is what both planners turn into an index
		// range: the OR alone would be a filter over every newer row.
		t, id := arg(f.BeforeReceivedAt), arg(f.BeforeID)
		where = append(where, fmt.Sprintf("received_at <= %s AND (received_at < %s OR (received_at = %s AND id < %s))", t, t, t, id))
	}
	return where, args
}

// partialIndexTerm adds, on SQLite, the WHERE of the partial index the
// status filter should read, word for word: SQLite uses a partial index
// only when the query repeats its WHERE. PostgreSQL proves that status = x
// implies it, and must not be given it: it would multiply the two
// selectivities, expect a hundredth of the rows, and choose to sort the
// matches rather than read them in order (13 ms instead of 1 at a million
// deliveries).
func partialIndexTerm(dialect string, where []string, term string) []string {
	if dialect == store.DialectSQLite {
		where = append(where, term)
	}
	return where
}

// keyMatch is one way a stored delivery key matches a delivery_key filter:
// its provider ID (providerKeyExpr) is id, and when exact is set the key
// is exact.
type keyMatch struct{ id, exact string }

// keyMatches are the ways a stored key matches the filter value k: being
// k, or a prefix, ':' and k. Each is one value of
// idx_deliveries_provider_key: a key that is k has k's provider ID (k
// itself when k has no ':'); a key that ends in ':' and k has k as its
// provider ID. When k has no ':' the two are one.
func keyMatches(k string) []keyMatch {
	if k == "" {
		return nil
	}
	if _, id, prefixed := strings.Cut(k, ":"); prefixed {
		return []keyMatch{{id: id, exact: k}, {id: k}}
	}
	return []keyMatch{{id: k}}
}

// providerKeyExpr is the provider's own delivery ID in a stored delivery
// key: what follows its first ':' (GitHub's keys are "<hook id>:<GUID>"),
// or the whole key when it has none. It is word for word the expression of
// idx_deliveries_provider_key (migration 00021): both planners use an index
// on an expression only for that same expression.
func providerKeyExpr(dialect string) string {
	if dialect == store.DialectPostgres {
		return "substr(delivery_key, strpos(delivery_key, ':') + 1)"
	}
	return "substr(delivery_key, instr(delivery_key, ':') + 1)"
}

var likeEscaper = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)

// deliveryPage is the query of one page of f, newest first, reading no
// further than stop when it is set. events are the stored events f.Event
// names (eventFamily): with more than one, the page is the newest of each
// event's own page, each read in the order of idx_deliveries_event, so it
// costs the page times the family's size in events, never its rows. A
// delivery key that matches in two ways (keyMatches) is read the same way,
// each way's page in the order of idx_deliveries_provider_key.
func deliveryPage(dialect, columns string, f store.DeliveryFilter, events []string, stop *store.DeliveryPosition) (string, []any) {
	if len(events) == 1 {
		// The family's one stored event, which may be an action of the
		// event named ("issues.opened" for "issues").
		f.Event = events[0]
	}
	keys := keyMatches(f.DeliveryKey)
	if len(events) < 2 && len(keys) < 2 {
		return deliveryPageOf(dialect, columns, f, keys, stop, nil)
	}
	if len(events) < 2 {
		events = []string{f.Event}
	}
	if len(keys) == 0 {
		keys = []keyMatch{{}}
	}
	var branches []string
	var args []any
	for _, e := range events {
		for _, k := range keys {
			one := f
			one.Event = e
			var branch string
			branch, args = deliveryPageOf(dialect, columns, one, oneKey(k), stop, args)
			branches = append(branches, fmt.Sprintf(`SELECT * FROM (%s) AS branch%d`, branch, len(branches)))
		}
	}
	args = append(args, f.Limit)
	return `SELECT ` + columns + ` FROM (` + strings.Join(branches, ` UNION ALL `) + `) AS family` +
		fmt.Sprintf(` ORDER BY received_at DESC, id DESC LIMIT $%d`, len(args)), args
}

// oneKey is k as the keys of one branch: none when k is the zero value.
func oneKey(k keyMatch) []keyMatch {
	if k == (keyMatch{}) {
		return nil
	}
	return []keyMatch{k}
}

// deliveryPageOf is the query of one page of f, matching f.Event and any of
// keys, its arguments numbered from those already in args.
func deliveryPageOf(dialect, columns string, f store.DeliveryFilter, keys []keyMatch, stop *store.DeliveryPosition, args []any) (string, []any) {
	where, args := deliveryWhere(dialect, f, nil, keys, args)
	if stop != nil {
		t, id := fmt.Sprintf("$%d", len(args)+1), fmt.Sprintf("$%d", len(args)+2)
		args = append(args, stop.ReceivedAt, stop.ID)
		where = append(where, fmt.Sprintf("received_at >= %s AND (received_at > %s OR (received_at = %s AND id >= %s))", t, t, t, id))
	}
	query := `SELECT ` + columns + ` FROM deliveries`
	if len(where) > 0 {
		query += ` WHERE ` + strings.Join(where, " AND ")
	}
	if f.Status == store.DeliveryQueued || f.Status == store.DeliveryProcessing {
		// The backlog is read whole through the index of due deliveries
		// and sorted: left to itself SQLite reads the inbox newest first
		// to avoid the sort, which finds an empty backlog only at the end.
		// The page then costs the backlog's size, not the inbox's.
		query = `WITH backlog AS MATERIALIZED (` + query + `) SELECT ` + columns + ` FROM backlog`
	}
	args = append(args, f.Limit)
	return query + fmt.Sprintf(` ORDER BY received_at DESC, id DESC LIMIT $%d`, len(args)), args
}

// eventFamilyQuery finds the distinct events in [$1, $2) as a skip scan of
// idx_deliveries_event: one probe per event, never its rows. The column
// compares bytes on both dialects (COLLATE "C" on PostgreSQL, migration
// 00016), as the range needs.
const eventFamilyQuery = `WITH RECURSIVE family(event) AS (
	SELECT MIN(event) FROM deliveries WHERE event >= $1 AND event < $2
	UNION ALL
	SELECT (SELECT MIN(event) FROM deliveries WHERE event > family.event AND event < $2)
	FROM family WHERE family.event IS NOT NULL
)
SELECT event FROM family WHERE event IS NOT NULL`

// eventFamily returns the stored events a filter's event names: itself and
// its actions (event + "." + action, and theirs). They lie in [event,
// event + "/"), '/' being the byte after '.', with the names that only
// begin with the event's ("issues-x"; "issues_comment" lies beyond).
// Without an event filter it returns nil.
func (q queries) eventFamily(ctx context.Context, event string) ([]string, error) {
	if event == "" {
		return nil, nil
	}
	rows, err := q.ex.Query(ctx, eventFamilyQuery, event, event+"/")
	if err != nil {
		return nil, q.wrap("find the event's actions", err)
	}
	defer rows.Close()
	var events []string
	for rows.Next() {
		var e string
		if err := rows.Scan(&e); err != nil {
			return nil, q.wrap("scan event", err)
		}
		if e == event || strings.HasPrefix(e, event+".") {
			events = append(events, e)
		}
	}
	return events, q.wrap("find the event's actions", rows.Err())
}

func (q queries) ListDeliveries(ctx context.Context, f store.DeliveryFilter) (store.DeliveryPage, error) {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	var page store.DeliveryPage
	events, err := q.eventFamily(ctx, f.Event)
	if err != nil || (f.Event != "" && len(events) == 0) {
		return page, err
	}
	var stop *store.DeliveryPosition
	if f.ErrorContains != "" && f.ErrorScanLimit > 0 {
		if stop, err = q.errorScanStop(ctx, f, events); err != nil {
			return page, err
		}
	}
	query, args := deliveryPage(q.d.Dialect(), deliverySummaryColumns, f, events, stop)
	rows, err := q.ex.Query(ctx, query, args...)
	if err != nil {
		return page, q.wrap("list deliveries", err)
	}
	defer rows.Close()
	for rows.Next() {
		d, err := scanDelivery(rows, false)
		if err != nil {
			return page, q.wrap("scan delivery", err)
		}
		page.Deliveries = append(page.Deliveries, d)
	}
	if stop != nil && len(page.Deliveries) < f.Limit {
		page.ScanStop = stop
	}
	return page, q.wrap("list deliveries", rows.Err())
}

// errorScanStop is the ErrorScanLimit-th delivery holding an error that the
// page's other filters match, newest first, or nil when there are fewer:
// the page then reads no further. It walks the partial index of rows
// holding an error (idx_deliveries_errors), and never the error texts.
func (q queries) errorScanStop(ctx context.Context, f store.DeliveryFilter, events []string) (*store.DeliveryPosition, error) {
	scan := f
	scan.ErrorContains = ""
	if len(events) == 1 {
		scan.Event = events[0] // as deliveryPage reads it
	}
	where, args := deliveryWhere(q.d.Dialect(), scan, events, keyMatches(f.DeliveryKey), nil)
	where = append(where, "last_error IS NOT NULL")
	args = append(args, f.ErrorScanLimit-1)
	var p store.DeliveryPosition
	err := q.ex.QueryRow(ctx, `SELECT received_at, id FROM deliveries WHERE `+strings.Join(where, " AND ")+
		fmt.Sprintf(` ORDER BY received_at DESC, id DESC LIMIT 1 OFFSET $%d`, len(args)), args...).Scan(&p.ReceivedAt, &p.ID)
	if errors.Is(err, ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, q.wrap("bound the error scan", err)
	}
	return &p, nil
}

// claimDeliveries is the claim's UPDATE: $1 now, $2 the owner, $3 the lease
// expiry, $4 the limit; skipLocked is the driver's SkipLocked.
//
// A delivery is free when its entity holds no live lease, or holds the
// delivery's own (entity_key is the lease table's key: one lease per
// entity). The two lease subqueries are uncorrelated on purpose: each runs
// once per claim into a hash, whatever the planner believes about
// entity_leases. A correlated NOT EXISTS left PostgreSQL free to plan a
// sequential scan of the lease table per candidate row, which it did once
// autovacuum had analyzed the table while nearly empty: the table churns
// (a row per processed delivery), so its dead rows made every claim scan it
// dozens of times over.
func claimDeliveries(skipLocked string) string {
	return `UPDATE deliveries SET status = 'processing', attempts = attempts + 1,
			lease_owner = $2, lease_expires_at = $3, next_attempt_at = $3
		WHERE id IN (SELECT id FROM deliveries d
			WHERE ` + pendingStatuses + ` AND d.next_attempt_at <= $1
			  AND (d.entity_key IS NULL
			       OR d.entity_key NOT IN (SELECT entity_key FROM entity_leases WHERE expires_at > $1)
			       OR (d.entity_key, d.id) IN (SELECT entity_key, delivery_id FROM entity_leases WHERE expires_at > $1))
			ORDER BY d.next_attempt_at LIMIT $4` + skipLocked + `)
		RETURNING ` + deliverySummaryColumns
}

// ClaimDeliveries is one UPDATE of the rows its subquery picks (PostgreSQL:
// FOR UPDATE SKIP LOCKED, so concurrent claimers take different rows). A
// processing row's next_attempt_at is its lease expiry, so one predicate
// finds due, retrying and abandoned deliveries alike.
func (q queries) ClaimDeliveries(ctx context.Context, owner string, now time.Time, lease time.Duration, limit int) ([]store.Delivery, error) {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	expires := now.Add(lease)
	rows, err := q.ex.Query(ctx, claimDeliveries(q.d.SkipLocked()), now, owner, expires, limit)
	if err != nil {
		return nil, q.wrap("claim deliveries", err)
	}
	var out []store.Delivery
	for rows.Next() {
		d, err := scanDelivery(rows, false)
		if err != nil {
			rows.Close()
			return nil, q.wrap("scan claimed delivery", err)
		}
		out = append(out, d)
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(out) == 0 {
		return nil, q.wrap("claim deliveries", err)
	}
	// RETURNING has no order: oldest received first.
	slices.SortFunc(out, func(a, b store.Delivery) int {
		return cmp.Or(a.ReceivedAt.Compare(b.ReceivedAt), cmp.Compare(a.ID, b.ID))
	})
	// The raw deliveries are read after the claim commits: they never change
	// once stored, and reading bodies inside the claim would hold SQLite's
	// single writer for it.
	return out, q.loadContent(ctx, out)
}

// inList is "$first, …" for n placeholders numbered from first.
func inList(first, n int) string {
	marks := make([]string, n)
	for i := range marks {
		marks[i] = fmt.Sprintf("$%d", first+i)
	}
	return strings.Join(marks, ", ")
}

// valuesRow is "($first, …)" for n placeholders numbered from first, but
// with expr in place of the at-th (from 0), whose number expr may use.
func valuesRow(first, n, at int, expr string) string {
	var b strings.Builder
	b.WriteString("(")
	for c := range n {
		if c > 0 {
			b.WriteString(", ")
		}
		if c == at {
			b.WriteString(expr)
			continue
		}
		fmt.Fprintf(&b, "$%d", first+c)
	}
	b.WriteString(")")
	return b.String()
}

// loadContent fills headers and body of claimed deliveries in one query.
func (q queries) loadContent(ctx context.Context, ds []store.Delivery) error {
	args := make([]any, len(ds))
	byID := make(map[string]*store.Delivery, len(ds))
	for i := range ds {
		args[i] = ds[i].ID
		byID[ds[i].ID] = &ds[i]
	}
	rows, err := q.ex.Query(ctx, `SELECT delivery_id, `+deliveryContentColumns+` FROM delivery_contents WHERE delivery_id IN (`+inList(1, len(ds))+`)`, args...)
	if err != nil {
		return q.wrap("read claimed deliveries", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, headers, encoding string
		var body []byte
		if err := rows.Scan(&id, &headers, &body, &encoding); err != nil {
			return q.wrap("scan claimed delivery", err)
		}
		if body, err = store.DecodeDeliveryBody(body, encoding); err != nil {
			return fmt.Errorf("read claimed delivery %s: %w", id, err)
		}
		if d := byID[id]; d != nil {
			d.Headers, d.Body = headers, body
		}
	}
	return q.wrap("read claimed deliveries", rows.Err())
}

// maxLeasesPerStatement bounds the rows of one lease statement (four
// arguments each, under SQLite's and PostgreSQL's argument limits).
const maxLeasesPerStatement = 500

// AcquireEntityLeases takes each lease with one upsert per chunk: a row is
// written, and returned, where no lease holds the entity, where its lease
// has expired, or where it is this owner's for this delivery already.
func (q queries) AcquireEntityLeases(ctx context.Context, owner string, leases []store.EntityLease, now, expires time.Time) ([]bool, error) {
	taken := make([]bool, len(leases))
	index := make(map[string]int, len(leases)) // entity key → its first lease
	var asked []int
	for i, l := range leases {
		if _, dup := index[l.EntityKey]; !dup {
			index[l.EntityKey] = i
			asked = append(asked, i)
		}
	}
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	for len(asked) > 0 {
		chunk := asked[:min(len(asked), maxLeasesPerStatement)]
		asked = asked[len(chunk):]
		var sql strings.Builder
		sql.WriteString(`INSERT INTO entity_leases (entity_key, owner, delivery_id, expires_at) VALUES `)
		args := []any{now, owner, expires}
		for n, i := range chunk {
			if n > 0 {
				sql.WriteString(", ")
			}
			fmt.Fprintf(&sql, "($%d, $2, $%d, $3)", len(args)+1, len(args)+2)
			args = append(args, leases[i].EntityKey, leases[i].DeliveryID)
		}
		sql.WriteString(` ON CONFLICT (entity_key) DO UPDATE SET owner = excluded.owner, delivery_id = excluded.delivery_id, expires_at = excluded.expires_at
		WHERE entity_leases.expires_at <= $1 OR (entity_leases.owner = excluded.owner AND entity_leases.delivery_id = excluded.delivery_id)
		RETURNING entity_key`)
		if err := q.takeLeases(ctx, sql.String(), args, index, taken); err != nil {
			return nil, q.wrap("acquire entity leases", err)
		}
	}
	return taken, nil
}

// takeLeases runs one lease statement, marking the leases it took.
func (q queries) takeLeases(ctx context.Context, query string, args []any, index map[string]int, taken []bool) error {
	rows, err := q.ex.Query(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var key string
		if err := rows.Scan(&key); err != nil {
			return err
		}
		taken[index[key]] = true
	}
	return rows.Err()
}

// finishDelivery records a processed delivery's state and outcome under the
// lease its owner holds. Its guard appends an empty string to status, as
// requeueDeliveries does, so that the row is found by its primary key: on a
// large inbox PostgreSQL's generic plan otherwise looks it up through the
// small partial index of pending deliveries (whose predicate the guard
// implies) and filters the whole backlog for every delivery it finishes
// (measured: 9.5 ms per delivery with 1M stored and a backlog of 6,000,
// against 0.05 ms by key).
const finishDelivery = `UPDATE deliveries SET status = $3, attempts = $4, last_error = $5, next_attempt_at = $6,
	lease_owner = NULL, lease_expires_at = NULL, entity_key = $7, processed_at = $8, event = $9,
	outcome_task_id = $10, outcome_external_id = $11, outcome_action = $12, outcome_result = $13
	WHERE id = $1 AND lease_owner = $2 AND status || '' = 'processing'`

// FinishDelivery is one round trip on PostgreSQL: both writes travel with
// the COMMIT, and a lost lease is known once it has run. Releasing this
// owner's entity lease for the delivery even then is what a worker that
// lost its claim should do anyway.
func (q queries) FinishDelivery(ctx context.Context, d store.Delivery, owner string) error {
	lost, err := q.FinishDeliveries(ctx, []store.Delivery{d}, owner)
	if err == nil && lost[0] {
		return fmt.Errorf("finish delivery: lease lost: %w", store.ErrNotFound)
	}
	return err
}

// FinishDeliveries writes a worker's batch in one transaction (one round
// trip on PostgreSQL, every write travelling with the COMMIT).
func (q queries) FinishDeliveries(ctx context.Context, ds []store.Delivery, owner string) ([]bool, error) {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	updated := make([]int64, len(ds))
	err := q.write(ctx, func(q queries) error {
		for i, d := range ds {
			updated[i] = -1
			err := q.execLater(ctx, "finish delivery", func(n int64) error { updated[i] = n; return nil },
				finishDelivery,
				d.ID, owner, d.Status, d.Attempts, nullString(d.LastError), d.NextAttemptAt, nullString(d.EntityKey), d.ProcessedAt, d.Event,
				nullString(d.OutcomeTaskID), nullString(d.OutcomeExternalID), nullString(d.OutcomeAction), nullString(d.OutcomeResult))
			if err != nil {
				return err
			}
		}
		return q.releaseEntityLeases(ctx, owner, ds)
	})
	if err != nil {
		return nil, err
	}
	lost := make([]bool, len(ds))
	for i, n := range updated {
		lost[i] = n == 0
	}
	return lost, nil
}

// releaseEntityLeases deletes the entity leases owner holds for ds, in one
// statement per chunk rather than one per delivery. A lease matches on its
// entity key (the primary key the statement looks rows up by) and on its
// delivery being one of ds: a lease the owner holds for a delivery not in
// ds stays, and one it holds for a delivery of ds is released whichever
// entity of ds it is on (that delivery is finished either way).
func (q queries) releaseEntityLeases(ctx context.Context, owner string, ds []store.Delivery) error {
	var leased []store.Delivery
	for _, d := range ds {
		if d.EntityKey != "" {
			leased = append(leased, d)
		}
	}
	for len(leased) > 0 {
		chunk := leased[:min(len(leased), maxLeasesPerStatement)]
		leased = leased[len(chunk):]
		args := make([]any, 1, 1+2*len(chunk))
		args[0] = owner
		for _, d := range chunk {
			args = append(args, d.EntityKey)
		}
		for _, d := range chunk {
			args = append(args, d.ID)
		}
		query := `DELETE FROM entity_leases WHERE owner = $1 AND entity_key IN (` + inList(2, len(chunk)) +
			`) AND delivery_id IN (` + inList(2+len(chunk), len(chunk)) + `)`
		if err := q.execLater(ctx, "release entity leases", nil, query, args...); err != nil {
			return err
		}
	}
	return nil
}

// requeueDeliveries is the replay UPDATE, of one delivery or of a batch:
// it guards on a finished status in its own predicate, so a worker's claim
// and the replay serialize on the row (PostgreSQL re-checks the predicate
// once the claim's row lock is released; SQLite has one writer), and the
// one that comes second sees the other's status. $1 is now; the caller
// appends the ids it selects. The guard appends an empty string to status
// so that no planner looks the rows up by status: SQLite, given a batch of
// a thousand ids, would otherwise walk every finished delivery in the
// status index (measured: 52 s instead of seconds for 100k at 200k stored).
const requeueDeliveries = `UPDATE deliveries SET status = 'queued', attempts = 0, last_error = NULL,
	next_attempt_at = $1, lease_owner = NULL, lease_expires_at = NULL, processed_at = NULL,
	outcome_task_id = NULL, outcome_external_id = NULL, outcome_action = NULL, outcome_result = NULL
	WHERE status || '' IN ` + finishedList + ` AND `

func (q queries) RequeueDelivery(ctx context.Context, id string, now time.Time) (store.Delivery, bool, error) {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	if _, err := uuid.Parse(id); err != nil {
		return store.Delivery{}, false, fmt.Errorf("requeue delivery: %w", store.ErrNotFound)
	}
	d, err := scanDelivery(q.ex.QueryRow(ctx, requeueDeliveries+`id = $2 RETURNING `+deliverySummaryColumns, now, id), false)
	if err == nil {
		return d, true, nil
	}
	if !errors.Is(err, ErrNoRows) {
		return store.Delivery{}, false, q.wrap("requeue delivery", err)
	}
	// Nothing matched: tell a delivery that has not finished from none.
	d, err = scanDelivery(q.ex.QueryRow(ctx, `SELECT `+deliverySummaryColumns+` FROM deliveries WHERE id = $1`, id), false)
	return d, false, q.wrap("requeue delivery", err)
}

// requeueBatch bounds the deliveries one statement of a bulk replay reads
// and requeues: each batch is its own short transaction, so ingest and
// workers interleave with a long replay instead of waiting for all of it.
const requeueBatch = 1000

// RequeueDeliveries pages through the matching deliveries newest first
// (keyset, as the list does) and requeues each page's finished ones with
// one UPDATE under RequeueDelivery's guard: a delivery a worker claimed
// after the page was read is not finished any more and is skipped.
func (q queries) RequeueDeliveries(ctx context.Context, r store.BulkRequeue) (store.BulkRequeueResult, error) {
	var res store.BulkRequeueResult
	f := r.Filter
	f.BeforeID, f.BeforeReceivedAt = "", time.Time{}
	events, err := q.eventFamily(ctx, f.Event)
	if err != nil || (f.Event != "" && len(events) == 0) {
		return res, err
	}
	var shown []string
	for res.Matched < r.Max {
		f.Limit = min(requeueBatch, r.Max-res.Matched)
		ids, statuses, last, err := q.matchPage(ctx, f, events)
		if err != nil {
			return res, err
		}
		res.Matched += len(ids)
		for _, id := range ids[:min(len(ids), r.Show-len(shown))] {
			shown = append(shown, id)
		}
		var finished []string
		for i, id := range ids {
			if store.IsFinished(statuses[i]) {
				finished = append(finished, id)
			}
		}
		if r.DryRun {
			res.Requeued += len(finished)
		} else if len(finished) > 0 {
			n, err := q.requeueIDs(ctx, r.Now, finished)
			if err != nil {
				return res, err
			}
			res.Requeued += n
		}
		if len(ids) < f.Limit {
			break
		}
		f.BeforeReceivedAt, f.BeforeID = last.ReceivedAt, last.ID
	}
	res.Skipped = res.Matched - res.Requeued
	res.Shown, err = q.deliveriesByID(ctx, shown)
	return res, err
}

// matchPage reads the ids and statuses of one page of f, and its last row.
func (q queries) matchPage(ctx context.Context, f store.DeliveryFilter, events []string) ([]string, []string, store.Delivery, error) {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	var last store.Delivery
	query, args := deliveryPage(q.d.Dialect(), `id, status, received_at`, f, events, nil)
	rows, err := q.ex.Query(ctx, query, args...)
	if err != nil {
		return nil, nil, last, q.wrap("match deliveries", err)
	}
	defer rows.Close()
	var ids, statuses []string
	for rows.Next() {
		var status string
		if err := rows.Scan(&last.ID, &status, &last.ReceivedAt); err != nil {
			return nil, nil, last, q.wrap("scan matched delivery", err)
		}
		ids, statuses = append(ids, last.ID), append(statuses, status)
	}
	return ids, statuses, last, q.wrap("match deliveries", rows.Err())
}

// requeueIDs requeues the finished deliveries among ids in one statement.
func (q queries) requeueIDs(ctx context.Context, now time.Time, ids []string) (int, error) {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	args := make([]any, 0, len(ids)+1)
	args = append(args, now)
	for _, id := range ids {
		args = append(args, id)
	}
	n, err := q.ex.Exec(ctx, RequeueBatchStatement(len(ids)), args...)
	return int(n), q.wrap("requeue deliveries", err)
}

// RequeueBatchStatement is the UPDATE that requeues a batch of n ids ($2
// to $n+1; $1 is now). Exported for the test of its plan.
func RequeueBatchStatement(n int) string {
	return requeueDeliveries + `id IN (` + inList(2, n) + `)`
}

// deliveriesByID reads the summaries of ids, in the order given.
func (q queries) deliveriesByID(ctx context.Context, ids []string) ([]store.Delivery, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	rows, err := q.ex.Query(ctx, `SELECT `+deliverySummaryColumns+` FROM deliveries WHERE id IN (`+inList(1, len(ids))+`)`, args...)
	if err != nil {
		return nil, q.wrap("read deliveries", err)
	}
	defer rows.Close()
	byID := make(map[string]store.Delivery, len(ids))
	for rows.Next() {
		d, err := scanDelivery(rows, false)
		if err != nil {
			return nil, q.wrap("scan delivery", err)
		}
		byID[d.ID] = d
	}
	if err := rows.Err(); err != nil {
		return nil, q.wrap("read deliveries", err)
	}
	out := make([]store.Delivery, 0, len(ids))
	for _, id := range ids {
		if d, ok := byID[id]; ok {
			out = append(out, d)
		}
	}
	return out, nil
}

const nextDeliveryDue = `SELECT MIN(next_attempt_at) FROM deliveries WHERE ` + pendingStatuses

func (q queries) NextDeliveryDue(ctx context.Context) (time.Time, error) {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	var t *time.Time
	err := q.ex.QueryRow(ctx, nextDeliveryDue).Scan(&t)
	if err != nil || t == nil {
		return time.Time{}, q.wrap("next delivery due", err)
	}
	return *t, nil
}

// DeliveryPageQuery is the statement ListDeliveries runs for f (with no
// error scan bound), for tests and benchmarks that look at its plan.
// events are the stored events f.Event names (nil: f.Event alone).
func DeliveryPageQuery(dialect string, f store.DeliveryFilter, events []string) (string, []any) {
	return deliveryPage(dialect, deliverySummaryColumns, f, events, nil)
}

// EventFamilyQuery is the statement that finds the stored events of an
// event filter ($1 the event, $2 the event + "/"), for tests that look at
// its plan.
const EventFamilyQuery = eventFamilyQuery
