-- +goose Up
-- Durable inbox, per-entity leases, suppressions and transfer aliases.
CREATE TABLE deliveries (
    id                  UUID PRIMARY KEY,
    connection_id       TEXT NOT NULL,
    provider            TEXT NOT NULL,
    event               TEXT NOT NULL,
    delivery_key        TEXT NOT NULL,
    status              TEXT NOT NULL CHECK (status IN
        ('queued', 'processing', 'succeeded', 'ignored', 'suppressed', 'retrying', 'failed')),
    attempts            INTEGER NOT NULL DEFAULT 0,
    last_error          TEXT,
    next_attempt_at     TIMESTAMPTZ NOT NULL,
    lease_owner         TEXT,
    lease_expires_at    TIMESTAMPTZ,
    entity_key          TEXT,
    received_at         TIMESTAMPTZ NOT NULL,
    processed_at        TIMESTAMPTZ,
    outcome_task_id     TEXT,
    outcome_external_id TEXT,
    outcome_action      TEXT,
    outcome_result      TEXT,
    -- The raw delivery goes last: SQLite reads columns in order, and a
    -- column after a large value costs a walk of its overflow pages.
    headers             TEXT NOT NULL,
    body                BYTEA NOT NULL,
    CONSTRAINT uniq_deliveries_key UNIQUE (connection_id, delivery_key)
);
CREATE INDEX idx_deliveries_due ON deliveries (next_attempt_at)
    WHERE status IN ('queued', 'retrying', 'processing');
CREATE INDEX idx_deliveries_received ON deliveries (received_at, id);

CREATE TABLE entity_leases (
    entity_key  TEXT PRIMARY KEY,
    owner       TEXT NOT NULL,
    delivery_id UUID NOT NULL,
    expires_at  TIMESTAMPTZ NOT NULL
);

CREATE TABLE suppressions (
    workspace_id TEXT NOT NULL,
    external_id  TEXT COLLATE "C" NOT NULL,
    task_id      TEXT,
    reason       TEXT NOT NULL,
    created_at   TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (workspace_id, external_id)
);

CREATE TABLE source_aliases (
    workspace_id TEXT NOT NULL,
    external_id  TEXT COLLATE "C" NOT NULL,
    task_id      UUID NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    created_at   TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (workspace_id, external_id)
);
CREATE INDEX idx_source_aliases_task ON source_aliases (task_id);

-- Secrets the zero-config start generated (webhook secrets must survive a
-- restart: trackers keep using them). Never returned by the API.
CREATE TABLE generated_secrets (
    name       TEXT PRIMARY KEY,
    value      TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL
);

-- +goose Down
DROP TABLE generated_secrets;
DROP TABLE source_aliases;
DROP TABLE suppressions;
DROP TABLE entity_leases;
DROP TABLE deliveries;
