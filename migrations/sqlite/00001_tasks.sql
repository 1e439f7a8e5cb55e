-- +goose Up
-- Task system and the external-ID contract (docs/design.md, "External-ID idempotency").
-- Timestamps are unix microseconds (INTEGER); timestamptz on PostgreSQL.
CREATE TABLE workspaces (
    id            TEXT PRIMARY KEY,
    name          TEXT NOT NULL,
    task_prefix   TEXT NOT NULL,
    task_sequence BIGINT NOT NULL DEFAULT 0,
    created_at    INTEGER NOT NULL
);

CREATE TABLE workflow_steps (
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    id           TEXT NOT NULL,
    name         TEXT NOT NULL,
    position     INTEGER NOT NULL,
    wip_limit    INTEGER,
    PRIMARY KEY (workspace_id, id)
);

CREATE TABLE tasks (
    id                     TEXT PRIMARY KEY,
    workspace_id           TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    identifier             TEXT NOT NULL,
    title                  TEXT NOT NULL,
    description            TEXT NOT NULL DEFAULT '',
    workflow_step_id       TEXT NOT NULL,
    labels                 TEXT NOT NULL DEFAULT '[]',
    archived_at            INTEGER,
    source_provider        TEXT,
    source_kind            TEXT,
    source_ref             TEXT,
    source_url             TEXT,
    -- provider timestamp of the last applied event: older updates are stale
    source_updated_at      INTEGER,
    -- connection that created the task (connector-owned tasks get a
    -- suppression when deleted)
    owner_connection       TEXT,
    -- byte-exact identity: never the database's default collation
    external_id            TEXT COLLATE BINARY,
    external_id_settled_at INTEGER,
    creation_state         TEXT NOT NULL DEFAULT 'complete'
        CHECK (creation_state IN ('preparing', 'completing', 'complete')),
    creation_operation_id  TEXT,
    revision               BIGINT NOT NULL DEFAULT 0,
    created_at             INTEGER NOT NULL,
    updated_at             INTEGER NOT NULL,
    CONSTRAINT uniq_tasks_identifier UNIQUE (workspace_id, identifier),
    CONSTRAINT fk_tasks_step FOREIGN KEY (workspace_id, workflow_step_id)
        REFERENCES workflow_steps (workspace_id, id)
);

CREATE UNIQUE INDEX uniq_tasks_external_id ON tasks (workspace_id, external_id)
    WHERE external_id IS NOT NULL;
CREATE INDEX idx_tasks_list ON tasks (workspace_id, created_at, id);
CREATE INDEX idx_tasks_step ON tasks (workspace_id, workflow_step_id) WHERE archived_at IS NULL;
CREATE INDEX idx_tasks_source_ref ON tasks (workspace_id, source_provider, source_ref);

CREATE TABLE api_tokens (
    id           TEXT PRIMARY KEY,
    name         TEXT NOT NULL UNIQUE,
    -- hex SHA-256 of the bearer token; the token itself is never stored
    token_sha256 TEXT NOT NULL UNIQUE,
    admin        INTEGER NOT NULL DEFAULT 0,
    created_at   INTEGER NOT NULL
);

CREATE TABLE api_token_workspaces (
    token_id     TEXT NOT NULL REFERENCES api_tokens (id) ON DELETE CASCADE,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    PRIMARY KEY (token_id, workspace_id)
);

-- +goose Down
DROP TABLE api_token_workspaces;
DROP TABLE api_tokens;
DROP TABLE tasks;
DROP TABLE workflow_steps;
DROP TABLE workspaces;
