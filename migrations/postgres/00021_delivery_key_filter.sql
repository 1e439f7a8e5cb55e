-- +goose Up
-- The delivery_key filter finds a delivery by the provider's own delivery
-- ID (GitHub's GUID, GitLab's Idempotency-Key, ...), with or without the
-- prefix the gateway stores before it: a GitHub key is "<hook id>:<GUID>".
-- The index holds what follows a key's first ':' (the whole key when it has
-- none), ending in the list's order, so a page reads only the few rows that
-- match. The filter's query repeats this expression word for word
-- (sqlstore.providerKeyExpr).
CREATE INDEX idx_deliveries_provider_key
    ON deliveries ((substr(delivery_key, strpos(delivery_key, ':') + 1)), received_at, id);

-- +goose Down
DROP INDEX idx_deliveries_provider_key;
