-- 0008: knowledge — documents the agent can search. A document is a file indexed in a scope
-- (`project`: one project's, keyed by the project key; `user` and `cross`: every project's),
-- known by its path and the SHA-256 of the content indexed; its chunks keep their line range and
-- heading path, and an FTS5 index (external content, kept by triggers) finds them. Removing a
-- document removes its chunks, never the user's file.

CREATE TABLE documents (
    id         INTEGER PRIMARY KEY,
    scope      TEXT NOT NULL CHECK (scope IN ('project', 'user', 'cross')),
    project    TEXT NOT NULL,
    path       TEXT NOT NULL,
    kind       TEXT NOT NULL,
    sha256     TEXT NOT NULL,
    bytes      INTEGER NOT NULL,
    indexed_at INTEGER NOT NULL,
    UNIQUE (scope, project, path)
) STRICT;

CREATE TABLE chunks (
    id          INTEGER PRIMARY KEY,
    document_id INTEGER NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
    ordinal     INTEGER NOT NULL,
    start_line  INTEGER NOT NULL,
    end_line    INTEGER NOT NULL,
    heading     TEXT NOT NULL,
    text        TEXT NOT NULL,
    tokens      INTEGER NOT NULL,
    UNIQUE (document_id, ordinal)
) STRICT;

CREATE VIRTUAL TABLE chunk_fts USING fts5 (
    text, heading, content = 'chunks', content_rowid = 'id', tokenize = 'unicode61 remove_diacritics 2'
);

CREATE TRIGGER chunks_fts_insert AFTER INSERT ON chunks BEGIN
    INSERT INTO chunk_fts (rowid, text, heading) VALUES (new.id, new.text, new.heading);
END;

CREATE TRIGGER chunks_fts_delete AFTER DELETE ON chunks BEGIN
    INSERT INTO chunk_fts (chunk_fts, rowid, text, heading) VALUES ('delete', old.id, old.text, old.heading);
END;
