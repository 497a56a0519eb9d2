-- 0011: branches. A session may be a fork of another at a seq (`parent_id`, `fork_seq`): its
-- history is the parent's up to that seq (read from the parent, never copied), then its own
-- messages, numbered on from there. A rewind hides a session's messages from a seq on from its
-- live view (nothing is deleted; new messages append after the hidden ones).
--
-- To rebuild a live view as it was at any seq, every record that shapes one (compaction, trim,
-- retraction, pin, rewind) says at which message count it was made (`made_seq`), and an unpin
-- leaves its pin as a tombstone (`removed_seq`) instead of deleting it. For records older than
-- this migration, `made_seq` is derived from time: the seq of the session's last message written
-- at or before the record (never before the message the record is about). A record made within
-- the same millisecond as a later message may be dated one message early; nothing else changes.
--
-- Trims and pins of a fork may name inherited messages, which live under the parent's id: their
-- tables are rebuilt without the foreign key to `messages` (a session's deletion still removes
-- them through `session_id`).

ALTER TABLE sessions ADD COLUMN parent_id TEXT;
ALTER TABLE sessions ADD COLUMN fork_seq INTEGER;
CREATE INDEX sessions_parent ON sessions (parent_id) WHERE parent_id IS NOT NULL;

CREATE TABLE trims_new (
    id            INTEGER PRIMARY KEY,
    session_id    TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq           INTEGER NOT NULL,
    part          INTEGER NOT NULL CHECK (part >= 0),
    original_size INTEGER NOT NULL,
    new_size      INTEGER NOT NULL,
    replacement   TEXT NOT NULL,
    created_at    INTEGER NOT NULL,
    plugin        TEXT,
    plugin_sha256 TEXT,
    made_seq      INTEGER,
    CHECK (new_size < original_size)
) STRICT;
INSERT INTO trims_new (id, session_id, seq, part, original_size, new_size, replacement, created_at, plugin,
                       plugin_sha256, made_seq)
SELECT t.id, t.session_id, t.seq, t.part, t.original_size, t.new_size, t.replacement, t.created_at, t.plugin,
       t.plugin_sha256,
       max(t.seq, coalesce((SELECT max(m.seq) FROM messages m
                            WHERE m.session_id = t.session_id AND m.created_at <= t.created_at), 0))
FROM trims t ORDER BY t.id;
DROP TABLE trims;
ALTER TABLE trims_new RENAME TO trims;
CREATE INDEX trims_session ON trims (session_id, seq, part, id);

CREATE TABLE pins_new (
    id          INTEGER PRIMARY KEY,
    session_id  TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq         INTEGER NOT NULL,
    created_at  INTEGER NOT NULL,
    made_seq    INTEGER,
    removed_seq INTEGER
) STRICT;
INSERT INTO pins_new (id, session_id, seq, created_at, made_seq)
SELECT p.id, p.session_id, p.seq, p.created_at,
       max(p.seq, coalesce((SELECT max(m.seq) FROM messages m
                            WHERE m.session_id = p.session_id AND m.created_at <= p.created_at), 0))
FROM pins p ORDER BY p.id;
DROP TABLE pins;
ALTER TABLE pins_new RENAME TO pins;
CREATE UNIQUE INDEX pins_live ON pins (session_id, seq) WHERE removed_seq IS NULL;

ALTER TABLE compactions ADD COLUMN made_seq INTEGER;
UPDATE compactions SET made_seq = max(through_seq, coalesce((SELECT max(m.seq) FROM messages m
    WHERE m.session_id = compactions.session_id AND m.created_at <= compactions.created_at), 0));

ALTER TABLE retractions ADD COLUMN made_seq INTEGER;
UPDATE retractions SET made_seq = coalesce((SELECT max(m.seq) FROM messages m
    WHERE m.session_id = retractions.session_id AND m.created_at <= retractions.created_at), 0);

CREATE TABLE rewinds (
    id          INTEGER PRIMARY KEY,
    session_id  TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    from_seq    INTEGER NOT NULL,             -- the first message the rewind hides
    through_seq INTEGER NOT NULL,             -- the last (the session's last message then)
    made_seq    INTEGER,
    created_at  INTEGER NOT NULL,
    undone_at   INTEGER,                      -- undone (before any later message): no effect
    retractions TEXT NOT NULL DEFAULT '[]',   -- ids of the retractions it made (of compactions
                                              -- that summarised what it hides): undone with it
    CHECK (from_seq >= 1 AND through_seq >= from_seq)
) STRICT;
CREATE INDEX rewinds_session ON rewinds (session_id, id);

-- A record written without `made_seq` is dated by the session's message count at that moment.
CREATE TRIGGER compactions_made AFTER INSERT ON compactions WHEN NEW.made_seq IS NULL BEGIN
    UPDATE compactions SET made_seq = (SELECT message_count FROM sessions WHERE id = NEW.session_id)
    WHERE id = NEW.id;
END;
CREATE TRIGGER trims_made AFTER INSERT ON trims WHEN NEW.made_seq IS NULL BEGIN
    UPDATE trims SET made_seq = (SELECT message_count FROM sessions WHERE id = NEW.session_id) WHERE id = NEW.id;
END;
CREATE TRIGGER retractions_made AFTER INSERT ON retractions WHEN NEW.made_seq IS NULL BEGIN
    UPDATE retractions SET made_seq = (SELECT message_count FROM sessions WHERE id = NEW.session_id)
    WHERE id = NEW.id;
END;
CREATE TRIGGER pins_made AFTER INSERT ON pins WHEN NEW.made_seq IS NULL BEGIN
    UPDATE pins SET made_seq = (SELECT message_count FROM sessions WHERE id = NEW.session_id) WHERE id = NEW.id;
END;
CREATE TRIGGER rewinds_made AFTER INSERT ON rewinds WHEN NEW.made_seq IS NULL BEGIN
    UPDATE rewinds SET made_seq = (SELECT message_count FROM sessions WHERE id = NEW.session_id) WHERE id = NEW.id;
END;
