-- seshat: additive
-- The key placeholders of redacted credentials are made with (an HMAC of the secret under it):
-- one per store, made on first need, never read out of the store.
CREATE TABLE redaction_key (
    id integer PRIMARY KEY CHECK (id = 1),
    key bytea NOT NULL
);

-- Messages stay append-only, but for one rewrite: redacting what a store already holds sets
-- `seshat.rewriting` for its own transaction (`SET LOCAL`) and may then replace a message's parts.
-- The builds before this one never set it, so nothing changes for them.
CREATE OR REPLACE FUNCTION seshat_messages_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' THEN
        IF coalesce(current_setting('seshat.rewriting', true), '') = 'on'
            AND NEW.id = OLD.id AND NEW.session_id = OLD.session_id AND NEW.seq = OLD.seq
            AND NEW.role = OLD.role AND NEW.created_at = OLD.created_at THEN
            RETURN NEW;
        END IF;
        RAISE EXCEPTION 'messages are append-only';
    END IF;
    IF EXISTS (SELECT 1 FROM sessions WHERE id = OLD.session_id) THEN
        RAISE EXCEPTION 'messages are append-only: delete the session instead';
    END IF;
    RETURN OLD;
END $$;
