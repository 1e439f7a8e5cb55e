-- +goose Up
-- Retention (docs/design.md, "Retention"). The pruner finds expired finished
-- deliveries per status and finish time; queued, processing and retrying
-- rows are not in the index, so receiving a delivery does not write it.
CREATE INDEX idx_deliveries_finished ON deliveries (status, processed_at)
    WHERE status IN ('succeeded', 'ignored', 'suppressed', 'failed');

-- Named leases of background jobs that one replica at a time runs (the
-- pruner): a holder renews its lease while it works; an expired one is taken
-- over.
CREATE TABLE job_leases (
    name       TEXT PRIMARY KEY,
    owner      TEXT NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL
);

-- +goose Down
DROP TABLE job_leases;
DROP INDEX idx_deliveries_finished;
