-- +goose Up
-- Entity leases are small rows found by their key. As a rowid table every
-- lease taken or released wrote two B-trees, the table and the index of its
-- TEXT primary key; a WITHOUT ROWID table is that index alone. Every
-- processed delivery takes one lease and releases it.
CREATE TABLE entity_leases_keyed (
    entity_key  TEXT PRIMARY KEY,
    owner       TEXT NOT NULL,
    delivery_id TEXT NOT NULL,
    expires_at  INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO entity_leases_keyed (entity_key, owner, delivery_id, expires_at)
    SELECT entity_key, owner, delivery_id, expires_at FROM entity_leases;
DROP TABLE entity_leases;
ALTER TABLE entity_leases_keyed RENAME TO entity_leases;

-- +goose Down
CREATE TABLE entity_leases_rowid (
    entity_key  TEXT PRIMARY KEY,
    owner       TEXT NOT NULL,
    delivery_id TEXT NOT NULL,
    expires_at  INTEGER NOT NULL
);
INSERT INTO entity_leases_rowid (entity_key, owner, delivery_id, expires_at)
    SELECT entity_key, owner, delivery_id, expires_at FROM entity_leases;
DROP TABLE entity_leases;
ALTER TABLE entity_leases_rowid RENAME TO entity_leases;
