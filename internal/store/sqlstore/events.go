package sqlstore

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/trackergateway/gateway/internal/store"
)

// insertTaskEvent appends an event; callers hold the outbox lock.
const insertTaskEvent = `INSERT INTO task_events (workspace_id, task_id, revision, type, payload, created_at)
	VALUES ($1, $2, $3, $4, $5, $6)`

func (q queries) AppendTaskEvent(ctx context.Context, e store.TaskEvent) (int64, error) {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	var id int64
	err := q.write(ctx, func(q queries) error {
		if err := q.d.LockOutbox(ctx, q.ex); err != nil {
			return q.wrap("lock outbox", err)
		}
		err := q.ex.QueryRow(ctx, insertTaskEvent+` RETURNING id`,
			e.WorkspaceID, e.TaskID, e.Revision, e.Type, e.Payload, e.CreatedAt).Scan(&id)
		return q.wrap("append task event", err)
	})
	return id, err
}

func (q queries) FinishCreation(ctx context.Context, operationID, outcome string, e store.TaskEvent) error {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	return q.write(ctx, func(q queries) error {
		if err := q.d.LockOutbox(ctx, q.ex); err != nil {
			return q.wrap("lock outbox", err)
		}
		if err := q.execLater(ctx, "append task event", exactlyOne("append task event"), insertTaskEvent,
			e.WorkspaceID, e.TaskID, e.Revision, e.Type, e.Payload, e.CreatedAt); err != nil {
			return err
		}
		return q.execLater(ctx, "complete creation operation", exactlyOne("complete creation operation"),
			`UPDATE task_creation_operations SET state = $2, outcome = $3,
				event_id = (SELECT id FROM task_events WHERE task_id = $4 AND revision = $5),
				lease_owner = NULL, lease_expires_at = NULL, updated_at = $6
			WHERE id = $1`,
			operationID, store.OpCompleted, outcome, e.TaskID, e.Revision, e.CreatedAt)
	})
}

// InsertCompletedOperations assembles each event's payload in SQL from the
// identifier of the task row the transaction has just inserted, so neither
// the events nor the operations (whose event_id is read the way
// FinishCreation reads it) wait for the INSERT's answer: on PostgreSQL the
// workspace row the tasks' numbers came from is held only while the server
// runs them and the COMMIT. Without its task in its workspace an event's
// payload is NULL, which the database refuses (ErrConstraint): the
// transaction fails in the database itself, before a COMMIT travelling in
// the same pipeline. Each kind of row is one statement.
func (q queries) InsertCompletedOperations(ctx context.Context, ops []store.Operation, created []store.CreatedEvent) error {
	if len(ops) != len(created) {
		return fmt.Errorf("insert completed operations: %d operations, %d events", len(ops), len(created))
	}
	if len(ops) == 0 {
		return nil
	}
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	var events, operations strings.Builder
	events.WriteString(`INSERT INTO task_events (workspace_id, task_id, revision, type, payload, created_at) VALUES `)
	operations.WriteString(`INSERT INTO task_creation_operations (` + operationColumns + `) VALUES `)
	eventArgs := make([]any, 0, len(ops)*6)
	opArgs := make([]any, 0, len(ops)*operationArgs)
	for i, op := range ops {
		if i > 0 {
			events.WriteString(", ")
			operations.WriteString(", ")
		}
		e, k := created[i], len(eventArgs)
		// The task is found by its primary key alone: with the workspace in
		// the WHERE clause, PostgreSQL planned a workspace whose statistics
		// showed no tasks yet through a workspace index, and read every
		// task of it for each event (flat cost: 1M deliveries and 100k
		// tasks stored).
		fmt.Fprintf(&events, `($%d, $%d, 1, $%d, $%d || (SELECT CASE WHEN workspace_id = $%d THEN identifier END FROM tasks WHERE id = $%d) || $%d, $%d)`,
			k+1, k+2, k+3, k+4, k+1, k+2, k+5, k+6)
		eventArgs = append(eventArgs, op.WorkspaceID, op.TaskID, store.EventTaskCreated, e.PayloadBefore, e.PayloadAfter, e.CreatedAt)
		row := operationRow(op)
		row[12] = op.TaskID // its event is the task's first revision
		operations.WriteString(operationValues(len(opArgs)+1,
			fmt.Sprintf(`(SELECT id FROM task_events WHERE task_id = $%d AND revision = 1)`, len(opArgs)+13)))
		opArgs = append(opArgs, row...)
	}
	return q.write(ctx, func(q queries) error {
		if err := q.d.LockOutbox(ctx, q.ex); err != nil {
			return q.wrap("lock outbox", err)
		}
		if err := q.execLater(ctx, "append task events", nil, events.String(), eventArgs...); err != nil {
			return err
		}
		return q.execLater(ctx, "insert creation operations", nil, operations.String(), opArgs...)
	})
}

const eventColumns = `id, workspace_id, task_id, revision, type, payload, created_at`

func (q queries) ReadTaskEvents(ctx context.Context, afterID int64, limit int) ([]store.TaskEvent, error) {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	rows, err := q.ex.Query(ctx, `SELECT `+eventColumns+` FROM task_events WHERE id > $1 ORDER BY id LIMIT $2`, afterID, limit)
	if err != nil {
		return nil, q.wrap("read task events", err)
	}
	defer rows.Close()
	var out []store.TaskEvent
	for rows.Next() {
		var e store.TaskEvent
		if err := rows.Scan(&e.ID, &e.WorkspaceID, &e.TaskID, &e.Revision, &e.Type, &e.Payload, &e.CreatedAt); err != nil {
			return nil, q.wrap("scan task event", err)
		}
		out = append(out, e)
	}
	return out, q.wrap("read task events", rows.Err())
}

// ListWorkspaceEvents reads a page through idx_task_events_workspace
// (workspace_id, id). A page filtered by type first finds the end of its
// window, the Scan-th event after AfterID, in the index alone, then reads
// the matching events inside it: a rare type costs at most Scan index
// entries a page, never the whole rest of the workspace.
func (q queries) ListWorkspaceEvents(ctx context.Context, p store.EventPage) ([]store.TaskEvent, int64, error) {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	where := `workspace_id = $1 AND id > $2`
	args := []any{p.WorkspaceID, p.AfterID, p.Limit}
	var scannedTo int64
	if len(p.Types) > 0 && p.Scan > 0 {
		err := q.ex.QueryRow(ctx, `SELECT id FROM task_events WHERE workspace_id = $1 AND id > $2
			ORDER BY id LIMIT 1 OFFSET $3`, p.WorkspaceID, p.AfterID, p.Scan-1).Scan(&scannedTo)
		switch {
		case err == ErrNoRows:
			scannedTo = 0 // fewer events than the window: no bound
		case err != nil:
			return nil, 0, q.wrap("list workspace events", err)
		default:
			where += ` AND id <= $4`
			args = append(args, scannedTo)
		}
	}
	if len(p.Types) > 0 {
		where += ` AND type IN (` + inList(len(args)+1, len(p.Types)) + `)`
		for _, t := range p.Types {
			args = append(args, t)
		}
	}
	rows, err := q.ex.Query(ctx, `SELECT `+eventColumns+` FROM task_events WHERE `+where+` ORDER BY id LIMIT $3`, args...)
	if err != nil {
		return nil, 0, q.wrap("list workspace events", err)
	}
	defer rows.Close()
	var out []store.TaskEvent
	for rows.Next() {
		var e store.TaskEvent
		if err := rows.Scan(&e.ID, &e.WorkspaceID, &e.TaskID, &e.Revision, &e.Type, &e.Payload, &e.CreatedAt); err != nil {
			return nil, 0, q.wrap("scan task event", err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, q.wrap("list workspace events", err)
	}
	return out, scannedTo, nil
}

func (q queries) GetOutboxCursor(ctx context.Context, consumer string) (int64, error) {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	var id int64
	err := q.ex.QueryRow(ctx, `SELECT last_event_id FROM outbox_cursors WHERE consumer = $1`, consumer).Scan(&id)
	if err != nil {
		if err == ErrNoRows {
			return 0, nil
		}
		return 0, q.wrap("get outbox cursor", err)
	}
	return id, nil
}

// SaveOutboxCursor only moves the cursor forward.
func (q queries) SaveOutboxCursor(ctx context.Context, consumer string, lastEventID int64, at time.Time) error {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	_, err := q.ex.Exec(ctx, `INSERT INTO outbox_cursors (consumer, last_event_id, updated_at) VALUES ($1, $2, $3)
		ON CONFLICT (consumer) DO UPDATE SET last_event_id = excluded.last_event_id, updated_at = excluded.updated_at
		WHERE outbox_cursors.last_event_id < excluded.last_event_id`, consumer, lastEventID, at)
	return q.wrap("save outbox cursor", err)
}
