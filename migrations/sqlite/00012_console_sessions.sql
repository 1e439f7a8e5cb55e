-- +goose Up
-- Sessions of the operator console (docs/design.md, "Console"). The cookie
-- holds a random session ID; only its SHA-256 is stored, with the SHA-256
-- of the token that logged in (the row api_tokens holds for it, so a
-- rotated or removed token ends its sessions) and the secret the session's
-- forms carry against cross-site requests. Any replica can read a session.
CREATE TABLE console_sessions (
    id_sha256    TEXT PRIMARY KEY,
    token_sha256 TEXT NOT NULL,
    csrf_secret  TEXT NOT NULL,
    created_at   INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL
);
-- Expired sessions are deleted by expiry time.
CREATE INDEX idx_console_sessions_expires ON console_sessions (expires_at);

-- +goose Down
DROP TABLE console_sessions;
