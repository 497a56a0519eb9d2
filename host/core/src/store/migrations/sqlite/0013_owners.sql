-- 0013: owners, for a store many users share. Every session, memory row, document and deletion
-- has an owner: a user's name (`local` on a single-user install), or, for memory and knowledge in
-- a team scope, the team's name. Teams grant their scope to users, read-only or read-write.
-- Rebuilds the memory and document tables (their uniqueness now holds per owner), so it runs with
-- foreign keys off and checks them before it commits (the marker below tells the migrator).
-- seshat: rebuilds tables

CREATE TABLE users (
    name       TEXT PRIMARY KEY,
    created_at INTEGER NOT NULL
) STRICT;
INSERT INTO users (name, created_at) VALUES ('local', 0);

CREATE TABLE teams (
    name       TEXT PRIMARY KEY,
    created_at INTEGER NOT NULL
) STRICT;

CREATE TABLE team_members (
    team       TEXT NOT NULL REFERENCES teams (name) ON DELETE CASCADE,
    user_name  TEXT NOT NULL REFERENCES users (name) ON DELETE CASCADE,
    access     TEXT NOT NULL CHECK (access IN ('read', 'write')),
    granted_at INTEGER NOT NULL,
    PRIMARY KEY (team, user_name)
) STRICT;
CREATE INDEX team_members_user ON team_members (user_name, team);

ALTER TABLE sessions ADD COLUMN owner TEXT NOT NULL DEFAULT 'local';
DROP INDEX sessions_project_updated;
DROP INDEX sessions_updated;
CREATE INDEX sessions_project_updated ON sessions (owner, project, updated_at DESC, id DESC);
CREATE INDEX sessions_updated ON sessions (owner, updated_at DESC, id DESC);

ALTER TABLE memory_deletions ADD COLUMN owner TEXT NOT NULL DEFAULT 'local';

CREATE TABLE memory_entities_0013 (
    id          INTEGER PRIMARY KEY,
    scope       TEXT NOT NULL CHECK (scope IN ('user', 'project', 'cross', 'team')),
    project     TEXT NOT NULL DEFAULT '',     -- the project key for 'project', '' otherwise
    owner       TEXT NOT NULL DEFAULT 'local', -- the user, or the team for 'team'
    name        TEXT NOT NULL,
    name_key    TEXT NOT NULL,                -- case-folded, NFC: one entity per key, scope and owner
    entity_type TEXT NOT NULL,
    staged      INTEGER NOT NULL DEFAULT 0 CHECK (staged IN (0, 1)),  -- being written: not indexed yet
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    deleted_by  INTEGER REFERENCES memory_deletions (id),
    CHECK ((scope = 'project') = (project <> '')),
    UNIQUE (owner, scope, project, name_key)
) STRICT;
INSERT INTO memory_entities_0013 (id, scope, project, name, name_key, entity_type, staged, created_at,
                                  updated_at, deleted_by)
SELECT id, scope, project, name, name_key, entity_type, staged, created_at, updated_at, deleted_by
FROM memory_entities;
DROP TABLE memory_entities;
ALTER TABLE memory_entities_0013 RENAME TO memory_entities;
CREATE INDEX memory_entities_updated ON memory_entities (owner, scope, project, updated_at DESC);

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
CREATE TRIGGER memory_entities_embed_insert AFTER INSERT ON memory_entities
WHEN NEW.deleted_by IS NULL AND NEW.staged = 0
    AND EXISTS (SELECT 1 FROM vector_indexes WHERE corpus = 'memory' AND enabled = 1)
BEGIN
    INSERT OR IGNORE INTO embed_queue (corpus, item, queued_at)
    VALUES ('memory', NEW.id, CAST(unixepoch('subsec') * 1000 AS INTEGER));
END;
CREATE TRIGGER memory_entities_embed_update AFTER UPDATE ON memory_entities
WHEN NEW.deleted_by IS NULL AND NEW.staged = 0
    AND EXISTS (SELECT 1 FROM vector_indexes WHERE corpus = 'memory' AND enabled = 1)
BEGIN
    INSERT OR IGNORE INTO embed_queue (corpus, item, queued_at)
    VALUES ('memory', NEW.id, CAST(unixepoch('subsec') * 1000 AS INTEGER));
END;

CREATE TABLE memory_relations_0013 (
    id            INTEGER PRIMARY KEY,
    scope         TEXT NOT NULL CHECK (scope IN ('user', 'project', 'cross', 'team')),
    project       TEXT NOT NULL DEFAULT '',
    owner         TEXT NOT NULL DEFAULT 'local',
    from_name     TEXT NOT NULL,
    from_key      TEXT NOT NULL,
    to_name       TEXT NOT NULL,
    to_key        TEXT NOT NULL,
    relation_type TEXT NOT NULL,
    created_at    INTEGER NOT NULL,
    deleted_by    INTEGER REFERENCES memory_deletions (id),
    CHECK ((scope = 'project') = (project <> '')),
    UNIQUE (owner, scope, project, from_key, to_key, relation_type)
) STRICT;
INSERT INTO memory_relations_0013 (id, scope, project, from_name, from_key, to_name, to_key, relation_type,
                                   created_at, deleted_by)
SELECT id, scope, project, from_name, from_key, to_name, to_key, relation_type, created_at, deleted_by
FROM memory_relations;
DROP TABLE memory_relations;
ALTER TABLE memory_relations_0013 RENAME TO memory_relations;
CREATE INDEX memory_relations_from ON memory_relations (from_key);
CREATE INDEX memory_relations_to ON memory_relations (to_key);

CREATE TABLE memory_notes_0013 (
    id         INTEGER PRIMARY KEY,
    scope      TEXT NOT NULL CHECK (scope IN ('user', 'project', 'cross', 'team')),
    project    TEXT NOT NULL DEFAULT '',
    owner      TEXT NOT NULL DEFAULT 'local',
    key        TEXT NOT NULL,
    value      TEXT NOT NULL,
    updated_at INTEGER NOT NULL,
    CHECK ((scope = 'project') = (project <> '')),
    UNIQUE (owner, scope, project, key)
) STRICT;
INSERT INTO memory_notes_0013 (id, scope, project, key, value, updated_at)
SELECT id, scope, project, key, value, updated_at FROM memory_notes;
DROP TABLE memory_notes;
ALTER TABLE memory_notes_0013 RENAME TO memory_notes;

CREATE TABLE documents_0013 (
    id         INTEGER PRIMARY KEY,
    scope      TEXT NOT NULL CHECK (scope IN ('project', 'user', 'cross', 'team')),
    project    TEXT NOT NULL,
    owner      TEXT NOT NULL DEFAULT 'local',
    path       TEXT NOT NULL,
    kind       TEXT NOT NULL,
    sha256     TEXT NOT NULL,
    bytes      INTEGER NOT NULL,
    indexed_at INTEGER NOT NULL,
    UNIQUE (owner, scope, project, path)
) STRICT;
INSERT INTO documents_0013 (id, scope, project, path, kind, sha256, bytes, indexed_at)
SELECT id, scope, project, path, kind, sha256, bytes, indexed_at FROM documents;
DROP TABLE documents;
ALTER TABLE documents_0013 RENAME TO documents;
