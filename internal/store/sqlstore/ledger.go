package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/trackergateway/gateway/internal/store"
)

const operationColumns = `id, workspace_id, task_id, state, plan_json, manifest_sha256, actor_json,
	actor_binding_sha256, completion_token_sha256, external_id, release_applied, outcome, event_id,
	recovery_action, generation, lease_owner, lease_expires_at, error, created_at, updated_at`

func scanOperation(r Row) (store.Operation, error) {
	var op store.Operation
	var ext, outcome, action, owner, errText sql.NullString
	var eventID sql.NullInt64
	err := r.Scan(&op.ID, &op.WorkspaceID, &op.TaskID, &op.State, &op.PlanJSON, &op.ManifestSHA256, &op.ActorJSON,
		&op.ActorBindingSHA256, &op.CompletionTokenSHA256, &ext, &op.ReleaseApplied, &outcome, &eventID,
		&action, &op.Generation, &owner, &op.LeaseExpiresAt, &errText, &op.CreatedAt, &op.UpdatedAt)
	op.ExternalID, op.Outcome, op.RecoveryAction, op.LeaseOwner, op.Error = ext.String, outcome.String, action.String, owner.String, errText.String
	op.EventID = eventID.Int64
	return op, err
}

func (q queries) InsertOperation(ctx context.Context, op store.Operation) error {
	return q.execLater(ctx, "insert creation operation", nil,
		`INSERT INTO task_creation_operations (`+operationColumns+`) VALUES `+operationValues(1, `$13`), operationRow(op)...)
}

// operationArgs is the number of operationColumns.
const operationArgs = 20

// operationValues is one row of the operations' INSERT, its placeholders
// numbered from first and eventID as the value of event_id (the 13th,
// whose own placeholder is first+12).
func operationValues(first int, eventID string) string {
	return valuesRow(first, operationArgs, 12, eventID)
}

// operationRow is op's values in operationColumns order.
func operationRow(op store.Operation) []any {
	return []any{op.ID, op.WorkspaceID, op.TaskID, op.State, op.PlanJSON, op.ManifestSHA256, op.ActorJSON,
		op.ActorBindingSHA256, op.CompletionTokenSHA256, nullString(op.ExternalID), op.ReleaseApplied,
		nullString(op.Outcome), nullInt(op.EventID), nullString(op.RecoveryAction), op.Generation,
		nullString(op.LeaseOwner), op.LeaseExpiresAt, nullString(op.Error), op.CreatedAt, op.UpdatedAt}
}

func nullInt(n int64) any {
	if n == 0 {
		return nil
	}
	return n
}

func (q queries) GetOperation(ctx context.Context, id string) (store.Operation, error) {
	if !isCanonicalUUID(id) {
		return store.Operation{}, fmt.Errorf("get creation operation: %w", store.ErrNotFound)
	}
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	op, err := scanOperation(q.ex.QueryRow(ctx, `SELECT `+operationColumns+` FROM task_creation_operations WHERE id = $1`, id))
	return op, q.wrap("get creation operation", err)
}

func (q queries) LockOperationAndSteps(ctx context.Context, id string) (store.Operation, []store.CreationStep, error) {
	if !isCanonicalUUID(id) {
		return store.Operation{}, nil, fmt.Errorf("lock creation operation: %w", store.ErrNotFound)
	}
	var op store.Operation
	var steps []store.CreationStep
	err := q.batch(ctx, q.lockOperationQuery(id, &op), q.lockStepsQuery(id, &steps))
	return op, steps, q.wrap("lock creation operation", err)
}

// LockCreation locks in the documented order: operation, task, steps.
func (q queries) LockCreation(ctx context.Context, id string) (store.Operation, []store.CreationStep, *store.Task, error) {
	var task *store.Task
	op, steps, _, err := q.lockCreation(ctx, id, &task)
	return op, steps, task, err
}

func (q queries) LockCreationTaskExists(ctx context.Context, id string) (store.Operation, []store.CreationStep, bool, error) {
	return q.lockCreation(ctx, id, nil)
}

// lockCreation locks the operation, its task and its steps, in the lock
// order, and reports whether the task row exists; with task non-nil it
// reads the task's columns into *task (nil when the row is gone). Where
// reads are not pipelined it reads them as readCreation does.
func (q queries) lockCreation(ctx context.Context, id string, task **store.Task) (store.Operation, []store.CreationStep, bool, error) {
	if !isCanonicalUUID(id) {
		return store.Operation{}, nil, false, fmt.Errorf("lock creation: %w", store.ErrNotFound)
	}
	if !q.pipelines() {
		return q.readCreation(ctx, id, task)
	}
	var op store.Operation
	var steps []store.CreationStep
	exists := false
	columns, scanTask := `id`, func(r Rows) error {
		exists = r.Next()
		return r.Err()
	}
	if task != nil {
		columns, scanTask = taskColumns, func(r Rows) error {
			err := optionalTask(task)(r)
			exists = *task != nil
			return err
		}
	}
	err := q.batch(ctx, q.lockOperationQuery(id, &op),
		BatchQuery{SQL: `SELECT ` + columns + ` FROM tasks
			WHERE id = (SELECT task_id FROM task_creation_operations WHERE id = $1)` + q.d.ForUpdate(),
			Args: []any{id}, Scan: scanTask},
		q.lockStepsQuery(id, &steps))
	return op, steps, exists, q.wrap("lock creation", err)
}

// pipelines reports whether q sends a batch of reads in one round trip
// (Batcher: PostgreSQL); elsewhere each statement is paid for apart.
func (q queries) pipelines() bool {
	_, ok := q.ex.(Batcher)
	return ok
}

// readCreationSQL is the operation with whether its task and any step
// exist.
const readCreationSQL = `SELECT ` + operationColumns + `,
	EXISTS (SELECT 1 FROM tasks WHERE id = task_creation_operations.task_id),
	EXISTS (SELECT 1 FROM task_creation_steps WHERE operation_id = $1)
	FROM task_creation_operations WHERE id = $1`

// readCreation is lockCreation where statements are not pipelined: on
// SQLite every statement costs the one writer its own run through the
// driver, and a write transaction already excludes every other writer, so
// there are no row locks to take in order. It reads the operation with
// whether its task and any step exist, then the task's columns only when
// asked for and present, and the steps only when there are some: one
// statement for phase A of a creation that plans no step, two for phase B,
// instead of three each.
func (q queries) readCreation(ctx context.Context, id string, task **store.Task) (store.Operation, []store.CreationStep, bool, error) {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	var hasTask, hasSteps bool
	op, err := scanOperation(withColumns{q.ex.QueryRow(ctx, readCreationSQL, id), []any{&hasTask, &hasSteps}})
	if err != nil {
		return store.Operation{}, nil, false, q.wrap("lock creation", err)
	}
	var steps []store.CreationStep
	var reads []BatchQuery
	if task != nil && hasTask {
		reads = append(reads, BatchQuery{SQL: `SELECT ` + taskColumns + ` FROM tasks WHERE id = $1`,
			Args: []any{op.TaskID}, Scan: optionalTask(task)})
	}
	if hasSteps {
		reads = append(reads, q.lockStepsQuery(id, &steps))
	}
	if len(reads) > 0 {
		if err := q.batch(ctx, reads...); err != nil {
			return store.Operation{}, nil, false, q.wrap("lock creation", err)
		}
	}
	return op, steps, hasTask, nil
}

// withColumns is a Row whose Scan also fills extra, the columns that follow
// the caller's.
type withColumns struct {
	Row
	extra []any
}

func (r withColumns) Scan(dest ...any) error { return r.Row.Scan(append(dest, r.extra...)...) }

func (q queries) lockOperationQuery(id string, op *store.Operation) BatchQuery {
	return BatchQuery{SQL: `SELECT ` + operationColumns + ` FROM task_creation_operations WHERE id = $1` + q.d.ForUpdate(),
		Args: []any{id}, Scan: requiredRow(func(r Row) (err error) {
			*op, err = scanOperation(r)
			return err
		})}
}

func (q queries) lockStepsQuery(id string, steps *[]store.CreationStep) BatchQuery {
	return BatchQuery{SQL: stepsByOperation + q.d.ForUpdate(), Args: []any{id}, Scan: func(r Rows) error {
		var err error
		*steps, err = scanCreationSteps(r)
		return err
	}}
}

func (q queries) UpdateOperation(ctx context.Context, op store.Operation) error {
	return q.execLater(ctx, "update creation operation", exactlyOne("update creation operation"),
		`UPDATE task_creation_operations SET state = $2, release_applied = $3, outcome = $4,
		event_id = $5, recovery_action = $6, generation = $7, lease_owner = $8, lease_expires_at = $9,
		error = $10, external_id = $11, updated_at = $12 WHERE id = $1`,
		op.ID, op.State, op.ReleaseApplied, nullString(op.Outcome), nullInt(op.EventID), nullString(op.RecoveryAction),
		op.Generation, nullString(op.LeaseOwner), op.LeaseExpiresAt, nullString(op.Error), nullString(op.ExternalID), op.UpdatedAt)
}

// listOpenOperations repeats idx_creation_operations_open's predicate word
// for word, as SQLite needs to read a partial index: $1 stale before, $2
// now, $3 the limit.
const listOpenOperations = `SELECT ` + operationColumns + ` FROM task_creation_operations
		WHERE (state = 'preparing' OR state = 'preparing-release' OR state = 'completing') AND updated_at < $1
		  AND (lease_expires_at IS NULL OR lease_expires_at < $2)
		ORDER BY updated_at LIMIT $3`

func (q queries) ListOpenOperations(ctx context.Context, staleBefore, now time.Time, limit int) ([]store.Operation, error) {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	rows, err := q.ex.Query(ctx, listOpenOperations, staleBefore, now, limit)
	if err != nil {
		return nil, q.wrap("list open operations", err)
	}
	defer rows.Close()
	var out []store.Operation
	for rows.Next() {
		op, err := scanOperation(rows)
		if err != nil {
			return nil, q.wrap("scan creation operation", err)
		}
		out = append(out, op)
	}
	return out, q.wrap("list open operations", rows.Err())
}

const stepColumns = `operation_id, kind, step_key, request_json, request_sha256, idempotency_key, state,
	attempt, claim_owner, claim_generation, lease_expires_at, evidence_json, evidence_sha256,
	provider_handle, ownership_marker, compensation, disposition, error, created_at, updated_at`

func (q queries) InsertCreationStep(ctx context.Context, s store.CreationStep) error {
	return q.execLater(ctx, "insert creation step", nil, `INSERT INTO task_creation_steps (`+stepColumns+`) VALUES
		($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20)`,
		s.OperationID, s.Kind, s.StepKey, s.RequestJSON, s.RequestSHA256, s.IdempotencyKey, s.State,
		s.Attempt, nullString(s.ClaimOwner), s.ClaimGeneration, s.LeaseExpiresAt, nullString(s.EvidenceJSON),
		nullString(s.EvidenceSHA256), nullString(s.ProviderHandle), s.OwnershipMarker, s.Compensation,
		s.Disposition, nullString(s.Error), s.CreatedAt, s.UpdatedAt)
}

const stepsByOperation = `SELECT ` + stepColumns + ` FROM task_creation_steps WHERE operation_id = $1
	ORDER BY kind, step_key`

func (q queries) ListCreationSteps(ctx context.Context, operationID string) ([]store.CreationStep, error) {
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	rows, err := q.ex.Query(ctx, stepsByOperation+q.d.ForUpdate(), operationID)
	if err != nil {
		return nil, q.wrap("list creation steps", err)
	}
	defer rows.Close()
	out, err := scanCreationSteps(rows)
	if err == nil {
		err = rows.Err()
	}
	return out, q.wrap("list creation steps", err)
}

func scanCreationSteps(rows Rows) ([]store.CreationStep, error) {
	var out []store.CreationStep
	for rows.Next() {
		var s store.CreationStep
		var owner, ev, evh, handle, errText sql.NullString
		if err := rows.Scan(&s.OperationID, &s.Kind, &s.StepKey, &s.RequestJSON, &s.RequestSHA256, &s.IdempotencyKey,
			&s.State, &s.Attempt, &owner, &s.ClaimGeneration, &s.LeaseExpiresAt, &ev, &evh, &handle,
			&s.OwnershipMarker, &s.Compensation, &s.Disposition, &errText, &s.CreatedAt, &s.UpdatedAt); err != nil {
			return nil, err
		}
		s.ClaimOwner, s.EvidenceJSON, s.EvidenceSHA256, s.ProviderHandle, s.Error = owner.String, ev.String, evh.String, handle.String, errText.String
		out = append(out, s)
	}
	return out, nil
}

func (q queries) UpdateCreationStep(ctx context.Context, s store.CreationStep) error {
	return q.execLater(ctx, "update creation step", exactlyOne("update creation step"),
		`UPDATE task_creation_steps SET state = $4, attempt = $5, claim_owner = $6,
		claim_generation = $7, lease_expires_at = $8, evidence_json = $9, evidence_sha256 = $10,
		provider_handle = $11, compensation = $12, disposition = $13, error = $14, updated_at = $15
		WHERE operation_id = $1 AND kind = $2 AND step_key = $3`,
		s.OperationID, s.Kind, s.StepKey, s.State, s.Attempt, nullString(s.ClaimOwner), s.ClaimGeneration,
		s.LeaseExpiresAt, nullString(s.EvidenceJSON), nullString(s.EvidenceSHA256), nullString(s.ProviderHandle),
		s.Compensation, s.Disposition, nullString(s.Error), s.UpdatedAt)
}
