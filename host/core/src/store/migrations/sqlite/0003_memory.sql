-- 0003: long-term memory. A knowledge graph (entities with observations, relations between them)
-- and key/value notes, each in a scope: 'user' (about the person), 'project' (one project, keyed
-- by the project key) or 'cross' (general knowledge shared everywhere). Deletions made through
-- the tools are tombstones (deleted_by) that can be restored.

CREATE TABLE memory_deletions (
    id          INTEGER PRIMARY KEY,
    origin      TEXT NOT NULL,                -- the tool or command that deleted
    summary     TEXT NOT NULL,                -- what it deleted, for people
    created_at  INTEGER NOT NULL,
    restored_at INTEGER
) STRICT;

CREATE TABLE memory_entities (
    id          INTEGER PRIMARY KEY,
    scope       TEXT NOT NULL CHECK (scope IN ('user', 'project', 'cross')),
    project     TEXT NOT NULL DEFAULT '',     -- the project key for 'project', '' otherwise
    name        TEXT NOT NULL,
    name_key    TEXT NOT NULL,                -- case-folded, NFC: one entity per key and scope
    entity_type TEXT NOT NULL,
    staged      INTEGER NOT NULL DEFAULT 0 CHECK (staged IN (0, 1)),  -- being written: not indexed yet
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    deleted_by  INTEGER REFERENCES memory_deletions (id),
    CHECK ((scope = 'project') = (project <> '')),
    UNIQUE (scope, project, name_key)
) STRICT;

CREATE INDEX memory_entities_updated ON memory_entities (scope, project, updated_at DESC);

CREATE TABLE memory_observations (
    id         INTEGER PRIMARY KEY,
    entity_id  INTEGER NOT NULL REFERENCES memory_entities (id) ON DELETE CASCADE,
    content    TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    deleted_by INTEGER REFERENCES memory_deletions (id),
    UNIQUE (entity_id, content)
) STRICT;

CREATE TABLE memory_relations (
    id            INTEGER PRIMARY KEY,
    scope         TEXT NOT NULL CHECK (scope IN ('user', 'project', 'cross')),
    project       TEXT NOT NULL DEFAULT '',
    from_name     TEXT NOT NULL,
    from_key      TEXT NOT NULL,
    to_name       TEXT NOT NULL,
    to_key        TEXT NOT NULL,
    relation_type TEXT NOT NULL,
    created_at    INTEGER NOT NULL,
    deleted_by    INTEGER REFERENCES memory_deletions (id),
    CHECK ((scope = 'project') = (project <> '')),
    UNIQUE (scope, project, from_key, to_key, relation_type)
) STRICT;

CREATE INDEX memory_relations_from ON memory_relations (from_key);
CREATE INDEX memory_relations_to ON memory_relations (to_key);

CREATE TABLE memory_notes (
    id         INTEGER PRIMARY KEY,
    scope      TEXT NOT NULL CHECK (scope IN ('user', 'project', 'cross')),
    project    TEXT NOT NULL DEFAULT '',
    key        TEXT NOT NULL,
    value      TEXT NOT NULL,
    updated_at INTEGER NOT NULL,
    CHECK ((scope = 'project') = (project <> '')),
    UNIQUE (scope, project, key)
) STRICT;

-- Ranked word search (names weighted above types above observations at query time) and
-- substring search. One row per live entity, rowid = entity id, kept in sync by the triggers
-- below: an entity is indexed when it is live (not deleted, not staged) with its live
-- observations.
CREATE VIRTUAL TABLE memory_fts USING fts5 (
    name, entity_type, observations, tokenize = 'unicode61 remove_diacritics 2'
);
CREATE VIRTUAL TABLE memory_trigram USING fts5 (
    name, entity_type, observations, tokenize = 'trigram'
);

CREATE TRIGGER memory_entities_ai AFTER INSERT ON memory_entities
WHEN NEW.deleted_by IS NULL AND NEW.staged = 0
BEGIN
    INSERT INTO memory_fts (rowid, name, entity_type, observations)
    VALUES (NEW.id, NEW.name, NEW.entity_type, '');
    INSERT INTO memory_trigram (rowid, name, entity_type, observations)
    VALUES (NEW.id, NEW.name, NEW.entity_type, '');
END;

CREATE TRIGGER memory_entities_au AFTER UPDATE ON memory_entities
BEGIN
    DELETE FROM memory_fts WHERE rowid = OLD.id;
    DELETE FROM memory_trigram WHERE rowid = OLD.id;
    INSERT INTO memory_fts (rowid, name, entity_type, observations)
    SELECT NEW.id, NEW.name, NEW.entity_type,
           coalesce((SELECT group_concat(content, char(10)) FROM memory_observations
                     WHERE entity_id = NEW.id AND deleted_by IS NULL), '')
    WHERE NEW.deleted_by IS NULL AND NEW.staged = 0;
    INSERT INTO memory_trigram (rowid, name, entity_type, observations)
    SELECT rowid, name, entity_type, observations FROM memory_fts
    WHERE rowid = NEW.id;
END;

CREATE TRIGGER memory_entities_ad AFTER DELETE ON memory_entities
BEGIN
    DELETE FROM memory_fts WHERE rowid = OLD.id;
    DELETE FROM memory_trigram WHERE rowid = OLD.id;
END;

-- An observation change re-indexes its entity (unless the entity is staged: then the update
-- that unstages it indexes everything at once).
CREATE TRIGGER memory_observations_ai AFTER INSERT ON memory_observations
WHEN (SELECT staged = 0 AND deleted_by IS NULL FROM memory_entities WHERE id = NEW.entity_id)
BEGIN
    UPDATE memory_entities SET staged = 0 WHERE id = NEW.entity_id;
END;

CREATE TRIGGER memory_observations_au AFTER UPDATE ON memory_observations
WHEN (SELECT staged = 0 AND deleted_by IS NULL FROM memory_entities WHERE id = NEW.entity_id)
BEGIN
    UPDATE memory_entities SET staged = 0 WHERE id = NEW.entity_id;
END;

CREATE TRIGGER memory_observations_ad AFTER DELETE ON memory_observations
WHEN (SELECT staged = 0 AND deleted_by IS NULL FROM memory_entities WHERE id = OLD.entity_id)
BEGIN
    UPDATE memory_entities SET staged = 0 WHERE id = OLD.entity_id;
END;
