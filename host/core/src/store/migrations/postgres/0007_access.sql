-- PostgreSQL 7: access that changes while clients are connected, as SQLite's migration 17.
ALTER TABLE users ADD COLUMN admin bigint NOT NULL DEFAULT 0 CHECK (admin IN (0, 1));
ALTER TABLE users ADD COLUMN disabled_at bigint;
UPDATE users SET admin = 1 WHERE name = 'local';
ALTER TABLE tokens ADD COLUMN last_used_at bigint;

CREATE TABLE access_epoch (
    id      bigint PRIMARY KEY CHECK (id = 1),
    version bigint NOT NULL
);
INSERT INTO access_epoch (id, version) VALUES (1, 0);

CREATE FUNCTION seshat_access_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE access_epoch SET version = version + 1;
    RETURN NULL;
END $$;
CREATE TRIGGER access_tokens_changed AFTER UPDATE OF user_name, read_only, expires_at, revoked_at OR DELETE
    ON tokens FOR EACH STATEMENT EXECUTE FUNCTION seshat_access_changed();
CREATE TRIGGER access_users_changed AFTER UPDATE OF name, admin, disabled_at OR DELETE
    ON users FOR EACH STATEMENT EXECUTE FUNCTION seshat_access_changed();
CREATE TRIGGER access_grants_changed AFTER INSERT OR UPDATE OR DELETE
    ON team_members FOR EACH STATEMENT EXECUTE FUNCTION seshat_access_changed();
