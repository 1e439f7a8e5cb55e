-- +goose Up
-- A task's former human source references: a Linear identifier before a
-- team move, a Jira key before a project move, a GitHub owner/repo#N before
-- a transfer. A pull request naming the old one still finds the task.
CREATE TABLE source_ref_aliases (
    workspace_id TEXT NOT NULL,
    provider     TEXT NOT NULL,
    ref          TEXT COLLATE "C" NOT NULL,
    task_id      UUID NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    created_at   TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (workspace_id, provider, ref)
);
CREATE INDEX idx_source_ref_aliases_task ON source_ref_aliases (task_id);

-- The pull and merge requests an issue names by URL (a Linear attachment),
-- which link to and show on the issue's task. No foreign key to tasks: a
-- link may arrive before its issue's task exists, and is keyed by the
-- issue's external ID. A removed link stays as a tombstone (removed, at
-- updated_at), so a late, older create does not bring it back.
CREATE TABLE contribution_links (
    workspace_id TEXT NOT NULL,
    link_id      TEXT COLLATE "C" NOT NULL,
    external_id  TEXT COLLATE "C" NOT NULL,
    provider     TEXT NOT NULL,
    host         TEXT NOT NULL,
    repository   TEXT COLLATE "C" NOT NULL,
    number       BIGINT NOT NULL,
    url          TEXT NOT NULL DEFAULT '',
    removed      BOOLEAN NOT NULL DEFAULT FALSE,
    updated_at   TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (workspace_id, link_id)
);
CREATE INDEX idx_contribution_links_contribution
    ON contribution_links (workspace_id, provider, host, repository, number);
CREATE INDEX idx_contribution_links_issue ON contribution_links (workspace_id, external_id);

-- A contribution's projection rows, in every task, found by its number.
CREATE INDEX idx_github_task_prs_number ON github_task_prs (number);
CREATE INDEX idx_gitlab_task_mrs_number ON gitlab_task_mrs (number);
CREATE INDEX idx_gitea_task_prs_number ON gitea_task_prs (number);

-- +goose Down
DROP INDEX idx_gitea_task_prs_number;
DROP INDEX idx_gitlab_task_mrs_number;
DROP INDEX idx_github_task_prs_number;
DROP TABLE contribution_links;
DROP TABLE source_ref_aliases;
