-- +goose Up
-- The PR projection of Gitea and Forgejo connections, the same columns as
-- github_task_prs and gitlab_task_mrs.
CREATE TABLE gitea_task_prs (
    task_id             TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    connection_id       TEXT NOT NULL,
    provider_id         BIGINT NOT NULL,
    repository          TEXT NOT NULL,
    number              BIGINT NOT NULL,
    url                 TEXT NOT NULL DEFAULT '',
    title               TEXT NOT NULL DEFAULT '',
    state               TEXT NOT NULL DEFAULT 'open',
    draft               INTEGER NOT NULL DEFAULT 0,
    merged              INTEGER NOT NULL DEFAULT 0,
    merged_at           INTEGER,
    head_branch         TEXT NOT NULL DEFAULT '',
    base_branch         TEXT NOT NULL DEFAULT '',
    head_sha            TEXT NOT NULL DEFAULT '',
    author              TEXT NOT NULL DEFAULT '',
    provider_updated_at INTEGER,
    last_synced_at      INTEGER,
    sync_attempts       INTEGER NOT NULL DEFAULT 0,
    next_sync_at        INTEGER,
    sync_error          TEXT,
    PRIMARY KEY (task_id, connection_id, provider_id)
);
CREATE INDEX idx_gitea_task_prs_sync ON gitea_task_prs (next_sync_at) WHERE next_sync_at IS NOT NULL;

-- +goose Down
DROP TABLE gitea_task_prs;
