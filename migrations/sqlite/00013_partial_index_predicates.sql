-- +goose Up
-- The same partial indexes, their predicates written as ORs of equalities
-- instead of IN lists. SQLite evaluates a constant IN list of more than two
-- values by building a temporary B-tree of the values, each time a
-- statement runs, and it evaluates every partial index's predicate for each
-- row it inserts and for the old and the new row it updates: receiving,
-- claiming and finishing a delivery built 23 such trees, a creation
-- operation's insert and two updates 8 (BenchmarkPartialIndexPredicates in
-- internal/store/sqlite: an insert and two status updates of a delivery
-- 295 µs with the IN lists, 198 µs with the ORs). The tables' CHECK
-- constraints keep their IN lists (3 of the 23 trees, 3 of the 8):
-- changing a CHECK means rebuilding its table.
-- The queries that read these indexes repeat the new predicates word for
-- word, which SQLite needs to choose a partial index.
DROP INDEX idx_deliveries_due;
CREATE INDEX idx_deliveries_due ON deliveries (next_attempt_at)
    WHERE (status = 'queued' OR status = 'retrying' OR status = 'processing');

DROP INDEX idx_deliveries_finished;
CREATE INDEX idx_deliveries_finished ON deliveries (status, processed_at)
    WHERE (status = 'succeeded' OR status = 'ignored' OR status = 'suppressed' OR status = 'failed');

DROP INDEX idx_deliveries_status;
CREATE INDEX idx_deliveries_status ON deliveries (status, received_at, id)
    WHERE (status = 'failed' OR status = 'retrying' OR status = 'ignored' OR status = 'suppressed');

DROP INDEX idx_deliveries_connection_status;
CREATE INDEX idx_deliveries_connection_status ON deliveries (connection_id, status, received_at, id)
    WHERE (status = 'failed' OR status = 'retrying' OR status = 'ignored' OR status = 'suppressed');

DROP INDEX idx_creation_operations_open;
CREATE INDEX idx_creation_operations_open ON task_creation_operations (state, updated_at)
    WHERE (state = 'preparing' OR state = 'preparing-release' OR state = 'completing');

-- +goose Down
DROP INDEX idx_creation_operations_open;
CREATE INDEX idx_creation_operations_open ON task_creation_operations (state, updated_at)
    WHERE state IN ('preparing', 'preparing-release', 'completing');

DROP INDEX idx_deliveries_connection_status;
CREATE INDEX idx_deliveries_connection_status ON deliveries (connection_id, status, received_at, id)
    WHERE status IN ('failed', 'retrying', 'ignored', 'suppressed');

DROP INDEX idx_deliveries_status;
CREATE INDEX idx_deliveries_status ON deliveries (status, received_at, id)
    WHERE status IN ('failed', 'retrying', 'ignored', 'suppressed');

DROP INDEX idx_deliveries_finished;
CREATE INDEX idx_deliveries_finished ON deliveries (status, processed_at)
    WHERE status IN ('succeeded', 'ignored', 'suppressed', 'failed');

DROP INDEX idx_deliveries_due;
CREATE INDEX idx_deliveries_due ON deliveries (next_attempt_at)
    WHERE status IN ('queued', 'retrying', 'processing');
