-- +goose Up
-- Missed-delivery recovery (docs/design.md, "Missed deliveries"): one row
-- per redelivery the gateway asked a provider for, written in its own
-- commit before the request is sent. The primary key makes the ask happen
-- once per connection, hook and delivery GUID, whichever run or replica
-- gets there first; a row is never retried automatically.
CREATE TABLE redelivery_requests (
    connection_id        TEXT NOT NULL,
    hook_id              BIGINT NOT NULL,
    guid                 TEXT NOT NULL,
    -- The provider's ID of the attempt that was redelivered (a GitHub
    -- hook delivery, a GitLab hook event).
    provider_delivery_id BIGINT NOT NULL,
    event                TEXT NOT NULL,
    status               TEXT NOT NULL CHECK (status IN ('requested', 'accepted', 'failed')),
    error                TEXT,
    requested_at         INTEGER NOT NULL,
    answered_at          INTEGER,
    PRIMARY KEY (connection_id, hook_id, guid)
);

-- +goose Down
DROP TABLE redelivery_requests;
