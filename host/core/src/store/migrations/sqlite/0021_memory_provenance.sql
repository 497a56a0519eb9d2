-- seshat: additive
-- 0021: memory that stays true. Where each row came from (memory_sources: one row per write —
-- who it was made for, the session and message an agent wrote it at, the plugin that extracted
-- it); when an observation stopped being true (valid_until) and what replaced it (superseded_by);
-- an observation written against another without replacing it (conflicts_with); when an entity
-- or note expires (expires_at); and every change to an entity as a version (memory_versions,
-- the entity as it stood after the change). The builds before this one ignore the new columns.

CREATE TABLE memory_sources (
    id         INTEGER PRIMARY KEY,
    kind       TEXT NOT NULL CHECK (kind IN ('user', 'agent', 'mcp', 'import', 'extraction')),
    user_name  TEXT NOT NULL,                 -- whom the write was made for
    session    TEXT,                          -- the session whose agent wrote it
    seq        INTEGER,                       -- the message it was written at
    plugin     TEXT,                          -- the extraction plugin
    created_at INTEGER NOT NULL
) STRICT;
CREATE INDEX memory_sources_session ON memory_sources (session) WHERE session IS NOT NULL;

ALTER TABLE memory_entities ADD COLUMN source_id INTEGER REFERENCES memory_sources (id);
ALTER TABLE memory_entities ADD COLUMN expires_at INTEGER;
ALTER TABLE memory_observations ADD COLUMN source_id INTEGER REFERENCES memory_sources (id);
ALTER TABLE memory_observations ADD COLUMN valid_until INTEGER;
ALTER TABLE memory_observations ADD COLUMN superseded_by INTEGER;           -- the observation that replaced it
ALTER TABLE memory_observations ADD COLUMN conflicts_with INTEGER;          -- the current one it contradicts
ALTER TABLE memory_relations ADD COLUMN source_id INTEGER REFERENCES memory_sources (id);
ALTER TABLE memory_notes ADD COLUMN source_id INTEGER REFERENCES memory_sources (id);
ALTER TABLE memory_notes ADD COLUMN expires_at INTEGER;
ALTER TABLE memory_deletions ADD COLUMN source_id INTEGER REFERENCES memory_sources (id);

CREATE TABLE memory_versions (
    id         INTEGER PRIMARY KEY,
    entity_id  INTEGER NOT NULL REFERENCES memory_entities (id) ON DELETE CASCADE,
    version    INTEGER NOT NULL,
    change     TEXT NOT NULL,                 -- what made it: created, observed, replaced, …
    state      TEXT NOT NULL,                 -- JSON: {name, entityType, observations, deleted}
    source_id  INTEGER REFERENCES memory_sources (id),
    created_at INTEGER NOT NULL,
    UNIQUE (entity_id, version)
) STRICT;

-- An observation that was replaced leaves the word indexes (it stays readable as history).
DROP TRIGGER memory_entities_au;
CREATE TRIGGER memory_entities_au AFTER UPDATE ON memory_entities
BEGIN
    DELETE FROM memory_fts WHERE rowid = OLD.id;
    DELETE FROM memory_trigram WHERE rowid = OLD.id;
    INSERT INTO memory_fts (rowid, name, entity_type, observations)
    SELECT NEW.id, NEW.name, NEW.entity_type,
           coalesce((SELECT group_concat(content, char(10)) FROM memory_observations
                     WHERE entity_id = NEW.id AND deleted_by IS NULL AND valid_until IS NULL), '')
    WHERE NEW.deleted_by IS NULL AND NEW.staged = 0;
    INSERT INTO memory_trigram (rowid, name, entity_type, observations)
    SELECT rowid, name, entity_type, observations FROM memory_fts
    WHERE rowid = NEW.id;
END;
