-- +goose Up
-- Delivery bodies are stored compressed (S2): a 13 KB webhook body then
-- fits one page instead of a chain of overflow pages in the WAL.
ALTER TABLE deliveries ADD COLUMN body_encoding TEXT NOT NULL DEFAULT 'identity'
    CHECK (body_encoding IN ('identity', 's2'));

-- +goose Down
ALTER TABLE deliveries DROP COLUMN body_encoding;
