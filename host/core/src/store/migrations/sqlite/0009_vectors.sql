-- 0009: vectors for hybrid retrieval. Each corpus's vectors (knowledge chunks; history messages
-- and memory entities, when the user opts in) are made by one embedder and model, recorded here
-- with their length (0 until the first answer tells it), so vectors of two models are never
-- mixed: changing the model re-embeds (after asking). `generation` grows with every change to
-- the knowledge corpus's chunks or vectors, so a process holding them in memory knows when to
-- reload. A vector is int8, quantised from the unit-length vector, with its scale (the largest
-- magnitude / 127) in the first 4 bytes (little-endian f32); it goes with its row.

CREATE TABLE vector_indexes (
    corpus     TEXT PRIMARY KEY CHECK (corpus IN ('knowledge', 'history', 'memory')),
    embedder   TEXT NOT NULL,
    model      TEXT NOT NULL,
    dimensions INTEGER NOT NULL CHECK (dimensions >= 0),
    generation INTEGER NOT NULL DEFAULT 0,
    -- History and memory: whether new rows are queued for embedding (the user's opt-in).
    enabled    INTEGER NOT NULL DEFAULT 1 CHECK (enabled IN (0, 1)),
    created_at INTEGER NOT NULL
) STRICT;

CREATE TABLE chunk_vectors (
    chunk_id INTEGER PRIMARY KEY REFERENCES chunks (id) ON DELETE CASCADE,
    vector   BLOB NOT NULL
) STRICT;

CREATE TABLE message_vectors (
    message_id INTEGER PRIMARY KEY REFERENCES messages (id) ON DELETE CASCADE,
    vector     BLOB NOT NULL
) STRICT;

CREATE TABLE entity_vectors (
    entity_id INTEGER PRIMARY KEY REFERENCES memory_entities (id) ON DELETE CASCADE,
    vector    BLOB NOT NULL
) STRICT;

-- The durable queue of rows to embed: written in the same transaction as the row (by the
-- triggers below, only while the corpus is enabled), drained in the background and by the next
-- run, so a process killed before embedding loses nothing. Rows without a vector are found
-- lexically meanwhile.
CREATE TABLE embed_queue (
    corpus    TEXT NOT NULL CHECK (corpus IN ('history', 'memory')),
    item      INTEGER NOT NULL,
    queued_at INTEGER NOT NULL,
    attempts  INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (corpus, item)
) STRICT, WITHOUT ROWID;

CREATE TRIGGER messages_embed_queue AFTER INSERT ON messages
WHEN EXISTS (SELECT 1 FROM vector_indexes WHERE corpus = 'history' AND enabled = 1)
BEGIN
    INSERT OR IGNORE INTO embed_queue (corpus, item, queued_at)
    VALUES ('history', NEW.id, CAST(unixepoch('subsec') * 1000 AS INTEGER));
END;

-- An entity is (re-)embedded when it is written or its observations change (which updates it).
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
