-- +goose Up
-- Delivery bodies are stored compressed (S2) by the gateway itself, so the
-- server need not: pglz on 13 KB webhook bodies dominated the inbox insert.
-- Rows up to the page's limit stay inline (no TOAST table round trip), and a
-- larger body goes out of line without a second compression attempt.
ALTER TABLE deliveries ADD COLUMN body_encoding TEXT NOT NULL DEFAULT 'identity'
    CHECK (body_encoding IN ('identity', 's2'));
ALTER TABLE deliveries ALTER COLUMN body SET STORAGE EXTERNAL;
ALTER TABLE deliveries SET (toast_tuple_target = 8160);

-- +goose Down
ALTER TABLE deliveries RESET (toast_tuple_target);
ALTER TABLE deliveries ALTER COLUMN body SET STORAGE EXTENDED;
ALTER TABLE deliveries DROP COLUMN body_encoding;
