-- +goose Up
-- One index per operator filter of the delivery list, each ending in the
-- list's order (received_at, id), so a filtered page reads only rows that
-- match and stops after the page: its cost does not grow with the inbox.
-- received_after/received_before use idx_deliveries_received. The partial
-- indexes hold only the rows their filter can match: external_id is the
-- outcome's, set once a delivery is processed; error_contains is a
-- substring search no B-tree serves, so it walks the rows holding an error,
-- newest first, until the page is full.
CREATE INDEX idx_deliveries_status ON deliveries (status, received_at, id);
CREATE INDEX idx_deliveries_connection ON deliveries (connection_id, received_at, id);
-- The combination operators use most ("failed on this connection"): with
-- the two indexes above alone it would read every row of the connection
-- to find none failed.
CREATE INDEX idx_deliveries_connection_status ON deliveries (connection_id, status, received_at, id);
CREATE INDEX idx_deliveries_event ON deliveries (event, received_at, id);
CREATE INDEX idx_deliveries_external_id ON deliveries (outcome_external_id, received_at, id)
    WHERE outcome_external_id IS NOT NULL;
CREATE INDEX idx_deliveries_errors ON deliveries (received_at, id)
    WHERE last_error IS NOT NULL;

-- +goose Down
DROP INDEX idx_deliveries_errors;
DROP INDEX idx_deliveries_external_id;
DROP INDEX idx_deliveries_event;
DROP INDEX idx_deliveries_connection_status;
DROP INDEX idx_deliveries_connection;
DROP INDEX idx_deliveries_status;
