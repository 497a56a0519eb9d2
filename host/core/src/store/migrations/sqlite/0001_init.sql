-- 0001: sessions and their append-only messages.

CREATE TABLE sessions (
    id                    TEXT PRIMARY KEY NOT NULL,          -- ULID, sortable by creation time
    title                 TEXT,                               -- from the first user message
    project               TEXT NOT NULL,                      -- project key (see paths::project_key)
    provider              TEXT,
    model                 TEXT,
    context_window        INTEGER,                            -- tokens, when known
    created_at            INTEGER NOT NULL,                   -- unix milliseconds
    updated_at            INTEGER NOT NULL,
    message_count         INTEGER NOT NULL DEFAULT 0,         -- also the last seq
    input_tokens          INTEGER NOT NULL DEFAULT 0,
    output_tokens         INTEGER NOT NULL DEFAULT 0,
    cache_read_tokens     INTEGER NOT NULL DEFAULT 0,
    cache_creation_tokens INTEGER NOT NULL DEFAULT 0,
    context_tokens        INTEGER,                            -- last provider-reported figure
    metadata              TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(metadata))
) STRICT;

CREATE INDEX sessions_project_updated ON sessions (project, updated_at DESC);
CREATE INDEX sessions_updated ON sessions (updated_at DESC);

CREATE TABLE messages (
    id         INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq        INTEGER NOT NULL CHECK (seq >= 1),
    role       TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool')),
    parts      TEXT NOT NULL CHECK (json_valid(parts) AND json_type(parts) = 'array'),
    usage      TEXT CHECK (usage IS NULL OR json_valid(usage)),
    status     TEXT NOT NULL CHECK (status IN ('complete', 'interrupted', 'synthetic')),
    created_at INTEGER NOT NULL,
    UNIQUE (session_id, seq)
) STRICT;

-- Originals are never rewritten. Rows go away only with their session (`sessions delete`).
CREATE TRIGGER messages_append_only_update BEFORE UPDATE ON messages
BEGIN
    SELECT RAISE(ABORT, 'messages are append-only');
END;

CREATE TRIGGER messages_append_only_delete BEFORE DELETE ON messages
WHEN EXISTS (SELECT 1 FROM sessions WHERE id = OLD.session_id)
BEGIN
    SELECT RAISE(ABORT, 'messages are append-only: delete the session instead');
END;
