-- 17: access that changes while clients are connected. Users may be admins (the local operator
-- always is) and may be disabled; a token remembers when it was last used. `access_epoch` counts
-- every change to tokens, users and grants that can take access away: a serving process watches
-- it and checks its open connections again when it moves. (The case-insensitive uniqueness of
-- user names is added after this SQL, when the names already there allow it.)
ALTER TABLE users ADD COLUMN admin INTEGER NOT NULL DEFAULT 0 CHECK (admin IN (0, 1));
ALTER TABLE users ADD COLUMN disabled_at INTEGER;
UPDATE users SET admin = 1 WHERE name = 'local';
ALTER TABLE tokens ADD COLUMN last_used_at INTEGER;

CREATE TABLE access_epoch (
    id      INTEGER PRIMARY KEY CHECK (id = 1),
    version INTEGER NOT NULL
) STRICT;
INSERT INTO access_epoch (id, version) VALUES (1, 0);

CREATE TRIGGER access_tokens_au AFTER UPDATE OF user_name, read_only, expires_at, revoked_at ON tokens
BEGIN
    UPDATE access_epoch SET version = version + 1;
END;
CREATE TRIGGER access_tokens_ad AFTER DELETE ON tokens
BEGIN
    UPDATE access_epoch SET version = version + 1;
END;
CREATE TRIGGER access_users_au AFTER UPDATE OF name, admin, disabled_at ON users
BEGIN
    UPDATE access_epoch SET version = version + 1;
END;
CREATE TRIGGER access_users_ad AFTER DELETE ON users
BEGIN
    UPDATE access_epoch SET version = version + 1;
END;
CREATE TRIGGER access_grants_ai AFTER INSERT ON team_members
BEGIN
    UPDATE access_epoch SET version = version + 1;
END;
CREATE TRIGGER access_grants_au AFTER UPDATE ON team_members
BEGIN
    UPDATE access_epoch SET version = version + 1;
END;
CREATE TRIGGER access_grants_ad AFTER DELETE ON team_members
BEGIN
    UPDATE access_epoch SET version = version + 1;
END;
