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
    enabled                    BOOLEAN NOT NULL DEFAULT TRUE,
    disabled_reason            TEXT NOT NULL DEFAULT '',
    secret                     TEXT NOT NULL,
    previous_secret            TEXT,
    previous_secret_expires_at TIMESTAMPTZ,
    failing_since              TIMESTAMPTZ,
    position                   BIGINT NOT NULL,
    created_at                 TIMESTAMPTZ NOT NULL,
    updated_at                 TIMESTAMPTZ NOT NULL
);
CREATE INDEX idx_outbound_subscriptions_workspace ON outbound_subscriptions (workspace_id, created_at, id);

-- One row per (subscription, event) the fan-out found owed. Unfinished rows
-- (pending, retrying) are the work: the due index finds them in the order
-- claims take them; a claimed row's next_attempt_at is its lease expiry,
-- so one predicate finds due and abandoned rows alike. The task index is
-- how the fan-out, the finish and the claims see what a task still owes a
-- subscription (per-task order). Finished rows leave both indexes.
CREATE TABLE outbound_deliveries (
    subscription_id  TEXT NOT NULL REFERENCES outbound_subscriptions (id) ON DELETE CASCADE,
    event_id         BIGINT NOT NULL,
    task_id          TEXT NOT NULL,
    event_type       TEXT NOT NULL,
    event_at         TIMESTAMPTZ NOT NULL,
    status           TEXT NOT NULL CHECK (status IN ('pending', 'retrying', 'succeeded', 'failed')),
    attempts         INTEGER NOT NULL DEFAULT 0,
    next_attempt_at  TIMESTAMPTZ NOT NULL,
    last_attempt_at  TIMESTAMPTZ,
    last_status_code INTEGER NOT NULL DEFAULT 0,
    last_error       TEXT NOT NULL DEFAULT '',
    lease_owner      TEXT,
    lease_expires_at TIMESTAMPTZ,
    created_at       TIMESTAMPTZ NOT NULL,
    finished_at      TIMESTAMPTZ,
    PRIMARY KEY (subscription_id, event_id)
);
CREATE INDEX idx_outbound_deliveries_due ON outbound_deliveries (next_attempt_at, event_id)
    WHERE (status = 'pending' OR status = 'retrying');
CREATE INDEX idx_outbound_deliveries_task ON outbound_deliveries (subscription_id, task_id, event_id)
    WHERE (status = 'pending' OR status = 'retrying');

-- +goose Down
DROP TABLE outbound_deliveries;
DROP TABLE outbound_subscriptions;
