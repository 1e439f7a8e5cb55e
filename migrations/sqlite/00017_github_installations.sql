-- +goose Up
-- GitHub App installations (docs/providers.md, "GitHub App
-- installations"): what the installation and installation_repositories
-- deliveries of a connection's App said last. updated_at is the provider's
-- time of the change a row holds and received_at the receipt of the
-- delivery that reported it: together they order changes, so deliveries
-- applied out of order, or again, leave the newest state.
CREATE TABLE github_installations (
    connection_id        TEXT NOT NULL,
    installation_id      BIGINT NOT NULL,
    account_login        TEXT NOT NULL,
    account_type         TEXT NOT NULL,
    repository_selection TEXT NOT NULL,
    suspended_at         INTEGER,
    deleted_at           INTEGER,
    updated_at           INTEGER NOT NULL,
    received_at          INTEGER NOT NULL,
    last_delivery_id     TEXT NOT NULL,
    PRIMARY KEY (connection_id, installation_id)
);

-- The installation's repositories, each with the change that last set it:
-- present is whether the installation has it now. A removed repository
-- keeps its row, so an older "added" delivered late cannot bring it back.
CREATE TABLE github_installation_repositories (
    connection_id   TEXT NOT NULL,
    installation_id BIGINT NOT NULL,
    repository      TEXT NOT NULL,
    present         INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    received_at     INTEGER NOT NULL,
    delivery_id     TEXT NOT NULL,
    PRIMARY KEY (connection_id, installation_id, repository)
);

-- +goose Down
DROP TABLE github_installation_repositories;
DROP TABLE github_installations;
