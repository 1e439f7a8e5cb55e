-- +goose Up
-- A delivery's headers and body move to a table of their own. In the
-- deliveries row they made it about 3.4 KB (the body S2-compressed), and
-- the claim and the finish are not HOT updates (they change indexed
-- columns): each wrote a new 3.4 KB version of the row, with its WAL,
-- to change a few short columns. Without them a row is a few hundred
-- bytes; the content is written once, when the delivery is received, and
-- read once per claim. Deleting a delivery deletes its content (ON DELETE
-- CASCADE).
CREATE TABLE delivery_contents (
    delivery_id   UUID PRIMARY KEY REFERENCES deliveries (id) ON DELETE CASCADE,
    headers       TEXT NOT NULL,
    body          BYTEA NOT NULL,
    body_encoding TEXT NOT NULL CHECK (body_encoding IN ('identity', 's2'))
);
-- As the body was kept in deliveries (migration 00005): compressed by the
-- gateway, inline up to the page's limit, never compressed again here.
ALTER TABLE delivery_contents ALTER COLUMN body SET STORAGE EXTERNAL;
ALTER TABLE delivery_contents SET (toast_tuple_target = 8160);
INSERT INTO delivery_contents (delivery_id, headers, body, body_encoding)
    SELECT id, headers, body, body_encoding FROM deliveries;
ALTER TABLE deliveries DROP COLUMN headers, DROP COLUMN body, DROP COLUMN body_encoding;
ALTER TABLE deliveries RESET (toast_tuple_target);

-- +goose Down
ALTER TABLE deliveries ADD COLUMN headers TEXT NOT NULL DEFAULT '',
    ADD COLUMN body BYTEA NOT NULL DEFAULT '\x',
    ADD COLUMN body_encoding TEXT NOT NULL DEFAULT 'identity' CHECK (body_encoding IN ('identity', 's2'));
ALTER TABLE deliveries ALTER COLUMN body SET STORAGE EXTERNAL;
ALTER TABLE deliveries SET (toast_tuple_target = 8160);
UPDATE deliveries d SET headers = c.headers, body = c.body, body_encoding = c.body_encoding
    FROM delivery_contents c WHERE c.delivery_id = d.id;
DROP TABLE delivery_contents;
