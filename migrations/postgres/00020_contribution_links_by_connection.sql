-- +goose Up
-- A link is keyed by the connection that recorded it too: a link ID (a
-- Linear attachment ID) is its provider organisation's, and two
-- connections in one workspace (two Linear organisations) must never
-- write each other's row.
--
-- A row recorded before takes its connection from what the database
-- knows of its issue: the connection that created the issue's task, else
-- the one connection whose deliveries were about the issue. A row whose
-- connection cannot be told keeps '' and is taken over by the first
-- connection that writes the same link of the same issue.
ALTER TABLE contribution_links ADD COLUMN connection_id TEXT NOT NULL DEFAULT '';
UPDATE contribution_links l SET connection_id = t.owner_connection
    FROM tasks t
    WHERE t.workspace_id = l.workspace_id AND t.external_id = l.external_id
      AND t.owner_connection IS NOT NULL AND t.owner_connection <> '';
UPDATE contribution_links l SET connection_id = COALESCE(
        (SELECT CASE WHEN COUNT(DISTINCT d.connection_id) = 1 THEN MIN(d.connection_id) END
           FROM deliveries d WHERE d.outcome_external_id = l.external_id COLLATE "default"), '')
    WHERE l.connection_id = '';
ALTER TABLE contribution_links ALTER COLUMN connection_id DROP DEFAULT;
ALTER TABLE contribution_links DROP CONSTRAINT contribution_links_pkey;
ALTER TABLE contribution_links ADD PRIMARY KEY (workspace_id, connection_id, link_id);

-- +goose Down
-- One row per workspace and link ID again: the latest of each is kept.
DELETE FROM contribution_links l USING contribution_links k
    WHERE k.workspace_id = l.workspace_id AND k.link_id = l.link_id
      AND (k.updated_at > l.updated_at OR (k.updated_at = l.updated_at AND k.connection_id > l.connection_id));
ALTER TABLE contribution_links DROP CONSTRAINT contribution_links_pkey;
ALTER TABLE contribution_links ADD PRIMARY KEY (workspace_id, link_id);
ALTER TABLE contribution_links DROP COLUMN connection_id;
