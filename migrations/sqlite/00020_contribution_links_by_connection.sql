-- +goose Up
-- A link is keyed by the connection that recorded it too: a link ID (a
-- Linear attachment ID) is its provider organisation's, and two
-- connections in one workspace (two Linear organisations) must never
-- write each other's row. SQLite changes a primary key by rebuilding the
-- table.
--
-- A row recorded before takes its connection from what the database
-- knows of its issue: the connection that created the issue's task, else
-- the one connection whose deliveries were about the issue. A row whose
-- connection cannot be told keeps '' and is taken over by the first
-- connection that writes the same link of the same issue.
CREATE TABLE contribution_links_keyed (
    workspace_id  TEXT NOT NULL,
    connection_id TEXT NOT NULL,
    link_id       TEXT COLLATE BINARY NOT NULL,
    external_id   TEXT COLLATE BINARY NOT NULL,
    provider      TEXT NOT NULL,
    host          TEXT NOT NULL,
    repository    TEXT COLLATE BINARY NOT NULL,
    number        BIGINT NOT NULL,
    url           TEXT NOT NULL DEFAULT '',
    removed       INTEGER NOT NULL DEFAULT 0,
    updated_at    INTEGER NOT NULL,
    PRIMARY KEY (workspace_id, connection_id, link_id)
);
INSERT INTO contribution_links_keyed (workspace_id, connection_id, link_id, external_id, provider, host, repository,
        number, url, removed, updated_at)
    SELECT l.workspace_id,
           COALESCE(
               (SELECT t.owner_connection FROM tasks t
                 WHERE t.workspace_id = l.workspace_id AND t.external_id = l.external_id AND t.owner_connection <> ''),
               (SELECT CASE WHEN COUNT(DISTINCT d.connection_id) = 1 THEN MIN(d.connection_id) END
                  FROM deliveries d WHERE d.outcome_external_id = l.external_id),
               ''),
           l.link_id, l.external_id, l.provider, l.host, l.repository, l.number, l.url, l.removed, l.updated_at
    FROM contribution_links l;
DROP TABLE contribution_links;
ALTER TABLE contribution_links_keyed RENAME TO contribution_links;
CREATE INDEX idx_contribution_links_contribution
    ON contribution_links (workspace_id, provider, host, repository, number);
CREATE INDEX idx_contribution_links_issue ON contribution_links (workspace_id, external_id);

-- +goose Down
-- One row per workspace and link ID again: the latest of each is kept.
CREATE TABLE contribution_links_by_link (
    workspace_id TEXT NOT NULL,
    link_id      TEXT COLLATE BINARY NOT NULL,
    external_id  TEXT COLLATE BINARY NOT NULL,
    provider     TEXT NOT NULL,
    host         TEXT NOT NULL,
    repository   TEXT COLLATE BINARY NOT NULL,
    number       BIGINT NOT NULL,
    url          TEXT NOT NULL DEFAULT '',
    removed      INTEGER NOT NULL DEFAULT 0,
    updated_at   INTEGER NOT NULL,
    PRIMARY KEY (workspace_id, link_id)
);
INSERT INTO contribution_links_by_link (workspace_id, link_id, external_id, provider, host, repository, number, url,
        removed, updated_at)
    SELECT l.workspace_id, l.link_id, l.external_id, l.provider, l.host, l.repository, l.number, l.url, l.removed, l.updated_at
    FROM contribution_links l
    WHERE NOT EXISTS (SELECT 1 FROM contribution_links k
        WHERE k.workspace_id = l.workspace_id AND k.link_id = l.link_id
          AND (k.updated_at > l.updated_at OR (k.updated_at = l.updated_at AND k.connection_id > l.connection_id)));
DROP TABLE contribution_links;
ALTER TABLE contribution_links_by_link RENAME TO contribution_links;
CREATE INDEX idx_contribution_links_contribution
    ON contribution_links (workspace_id, provider, host, repository, number);
CREATE INDEX idx_contribution_links_issue ON contribution_links (workspace_id, external_id);
