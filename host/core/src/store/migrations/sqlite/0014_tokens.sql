-- 14: access tokens for the network service. A token's secret is kept only as a salted SHA-256
-- hash; its id is in the clear (it is part of the token and what `tokens revoke` takes).
CREATE TABLE tokens (
    id         TEXT PRIMARY KEY,
    user_name  TEXT NOT NULL REFERENCES users (name) ON DELETE CASCADE,
    salt       BLOB NOT NULL,
    hash       BLOB NOT NULL,
    read_only  INTEGER NOT NULL DEFAULT 0 CHECK (read_only IN (0, 1)),
    created_at INTEGER NOT NULL,
    expires_at INTEGER,
    revoked_at INTEGER
) STRICT;
CREATE INDEX tokens_user ON tokens (user_name);
