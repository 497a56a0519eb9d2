-- PostgreSQL 4: access tokens for the network service, as SQLite's migration 14.
CREATE TABLE tokens (
    id         text PRIMARY KEY,
    user_name  text NOT NULL REFERENCES users (name) ON DELETE CASCADE,
    salt       bytea NOT NULL,
    hash       bytea NOT NULL,
    read_only  bigint NOT NULL DEFAULT 0 CHECK (read_only IN (0, 1)),
    created_at bigint NOT NULL,
    expires_at bigint,
    revoked_at bigint
);
CREATE INDEX tokens_user ON tokens (user_name);
