-- +goose Up
-- The events feed (GET /api/v1/workspaces/{id}/events) reads one
-- workspace's events in id order after a cursor. A page filtered by type
-- reads the same index: it bounds its window in the index first, then
-- checks the type of the rows inside it, so no index per type is written
-- with every event.
CREATE INDEX idx_task_events_workspace ON task_events (workspace_id, id);

-- +goose Down
DROP INDEX idx_task_events_workspace;
