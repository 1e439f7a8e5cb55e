-- +goose Up
-- One row the readiness check rewrites with a full sync: /readyz answers
-- ready only while such a commit succeeds (a full disk makes it fail).
CREATE TABLE readiness_probe (
    id        INTEGER PRIMARY KEY CHECK (id = 1),
    probed_at TIMESTAMPTZ NOT NULL
);

-- +goose Down
DROP TABLE readiness_probe;
