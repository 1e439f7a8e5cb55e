-- +goose Up
-- Creation ledger (docs/design.md, "The creation ledger"), the outbox and the
-- remote-contribution effect authority.
CREATE TABLE task_creation_operations (
    id                      TEXT PRIMARY KEY,
    workspace_id            TEXT NOT NULL,
    task_id                 TEXT NOT NULL,
    state                   TEXT NOT NULL CHECK (state IN
        ('preparing', 'preparing-release', 'completing', 'completed', 'aborted')),
    plan_json               TEXT NOT NULL,
    manifest_sha256         TEXT NOT NULL,
    actor_json              TEXT NOT NULL,
    actor_binding_sha256    TEXT NOT NULL,
    completion_token_sha256 TEXT NOT NULL,
    external_id             TEXT COLLATE BINARY,
    release_applied         INTEGER NOT NULL DEFAULT 0,
    outcome                 TEXT,
    event_id                BIGINT,
    recovery_action         TEXT,
    generation              BIGINT NOT NULL DEFAULT 0,
    lease_owner             TEXT,
    lease_expires_at        INTEGER,
    error                   TEXT,
    created_at              INTEGER NOT NULL,
    updated_at              INTEGER NOT NULL
);
CREATE INDEX idx_creation_operations_open ON task_creation_operations (state, updated_at)
    WHERE state IN ('preparing', 'preparing-release', 'completing');

CREATE TABLE task_creation_steps (
    operation_id      TEXT NOT NULL REFERENCES task_creation_operations (id),
    kind              TEXT NOT NULL CHECK (kind IN ('workspace_attachment', 'attachment_claim',
        'fresh_branch_prepare', 'remote_contribution_associate', 'session_prepare', 'launch_intent')),
    step_key          TEXT NOT NULL,
    request_json      TEXT NOT NULL,
    request_sha256    TEXT NOT NULL,
    idempotency_key   TEXT NOT NULL,
    state             TEXT NOT NULL CHECK (state IN
        ('planned', 'armed', 'running', 'retry_wait', 'unknown', 'failed', 'succeeded', 'cancelled')),
    attempt           INTEGER NOT NULL DEFAULT 0,
    claim_owner       TEXT,
    claim_generation  BIGINT NOT NULL DEFAULT 0,
    lease_expires_at  INTEGER,
    evidence_json     TEXT,
    evidence_sha256   TEXT,
    provider_handle   TEXT,
    ownership_marker  TEXT NOT NULL,
    compensation      TEXT NOT NULL DEFAULT 'none'
        CHECK (compensation IN ('none', 'required', 'done')),
    disposition       TEXT NOT NULL DEFAULT 'none',
    error             TEXT,
    created_at        INTEGER NOT NULL,
    updated_at        INTEGER NOT NULL,
    PRIMARY KEY (operation_id, kind, step_key)
);

-- Outbox: one row per task lifecycle event, revision per task. Readers page
-- by id; SQLite has one writer, so ids commit in order.
CREATE TABLE task_events (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    workspace_id TEXT NOT NULL,
    task_id      TEXT NOT NULL,
    revision     BIGINT NOT NULL,
    type         TEXT NOT NULL,
    payload      TEXT NOT NULL,
    created_at   INTEGER NOT NULL,
    CONSTRAINT uniq_task_events_revision UNIQUE (task_id, revision)
);

CREATE TABLE outbox_cursors (
    consumer      TEXT PRIMARY KEY,
    last_event_id BIGINT NOT NULL DEFAULT 0,
    updated_at    INTEGER NOT NULL
);

CREATE TABLE task_remote_contribution_associations (
    provider          TEXT NOT NULL,
    connection_id     TEXT NOT NULL,
    contribution_id   TEXT NOT NULL,
    contribution_kind TEXT NOT NULL,
    task_id           TEXT NOT NULL,
    workspace_id      TEXT NOT NULL,
    repository_id     TEXT NOT NULL,
    operation_id      TEXT NOT NULL,
    idempotency_key   TEXT NOT NULL,
    ownership_marker  TEXT NOT NULL,
    claimed_at        INTEGER NOT NULL,
    CONSTRAINT uniq_remote_contribution UNIQUE (provider, connection_id, contribution_id)
);
CREATE INDEX idx_remote_contribution_task ON task_remote_contribution_associations (task_id);

-- +goose Down
DROP TABLE task_remote_contribution_associations;
DROP TABLE outbox_cursors;
DROP TABLE task_events;
DROP TABLE task_creation_steps;
DROP TABLE task_creation_operations;
