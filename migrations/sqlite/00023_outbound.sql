-- +goose Up
-- Task events out: webhook subscriptions and their deliveries
-- (docs/design.md, "Task events out").
--
-- A subscription's position is the last outbox event its fan-out has
-- considered: events after it are owed to it and not yet written below. A
-- disabled subscription is skipped by the fan-out, so its position stays
-- where it stopped and enabling it resumes from there. The secret signs
-- every request; during a rotation the previous one signs beside it until
-- previous_secret_expires_at.
CREATE TABLE outbound_subscriptions (
    id                         TEXT PRIMARY KEY,
    workspace_id               TEXT NOT NULL,
    url                        TEXT NOT NULL,
    types                      TEXT NOT NULL DEFAULT '',
    description                TEXT NOT NULL DEFAULT '',
    enabled                    INTEGER NOT NULL DEFAULT 1,
    disabled_reason            TEXT NOT NULL DEFAULT '',
    secret                     TEXT NOT NULL,
    previous_secret            TEXT,
    previous_secret_expires_at INTEGER,
    failing_since              INTEGER,
    position                   BIGINT NOT NULL,
    created_at                 INTEGER NOT NULL,
    updated_at                 INTEGER NOT NULL
);
CREATE INDEX idx_outbound_subscriptions_workspace ON outbound_subscriptions (workspace_id, created_at, id);

-- One row per (subscription, event) the fan-out found owed. Unfinished rows
-- (pending, retrying) are the work: the due index finds them in the order
-- claims take them; a claimed row's next_attempt_at is its lease expiry,
-- so one predicate finds due and abandoned rows alike. The task index is
-- how the fan-out, the finish and the claims see what a task still owes a
-- subscription (per-task order). Finished rows leave both indexes. The
-- table keeps its rowid: without one its primary key, (subscription,
-- event), is what SQLite's planner picks for the task's lookups, and a
-- lookup then walks every event of the subscription.
CREATE TABLE outbound_deliveries (
    subscription_id  TEXT NOT NULL REFERENCES outbound_subscriptions (id) ON DELETE CASCADE,
    event_id         BIGINT NOT NULL,
    task_id          TEXT NOT NULL,
    event_type       TEXT NOT NULL,
    event_at         INTEGER NOT NULL,
    status           TEXT NOT NULL CHECK (status IN ('pending', 'retrying', 'succeeded', 'failed')),
    attempts         INTEGER NOT NULL DEFAULT 0,
    next_attempt_at  INTEGER NOT NULL,
    last_attempt_at  INTEGER,
    last_status_code INTEGER NOT NULL DEFAULT 0,
    last_error       TEXT NOT NULL DEFAULT '',
    lease_owner      TEXT,
    lease_expires_at INTEGER,
    created_at       INTEGER NOT NULL,
    finished_at      INTEGER,
    PRIMARY KEY (subscription_id, event_id)
);
CREATE INDEX idx_outbound_deliveries_due ON outbound_deliveries (next_attempt_at, event_id)
    WHERE (status = 'pending' OR status = 'retrying');
CREATE INDEX idx_outbound_deliveries_task ON outbound_deliveries (subscription_id, task_id, event_id)
    WHERE (status = 'pending' OR status = 'retrying');

-- +goose Down
DROP TABLE outbound_deliveries;
DROP TABLE outbound_subscriptions;
