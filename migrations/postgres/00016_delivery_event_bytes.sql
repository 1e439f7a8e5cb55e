-- +goose Up
-- The delivery filter matches an event and its actions (event + "." +
-- action) as one range of idx_deliveries_event, [event, event + "/"),
-- which holds only when the column compares bytes: a database whose
-- default collation ignores punctuation (en_US) sorts "issues.opened"
-- after "issues/". Only the collation changes, so the table is not
-- rewritten; the index is rebuilt.
ALTER TABLE deliveries ALTER COLUMN event TYPE TEXT COLLATE "C";

-- +goose Down
ALTER TABLE deliveries ALTER COLUMN event TYPE TEXT COLLATE "default";
