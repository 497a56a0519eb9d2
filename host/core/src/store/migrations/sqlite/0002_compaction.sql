-- 0002: compaction records, micro-compaction trims, the failure breaker, list indexes.

ALTER TABLE sessions ADD COLUMN compaction_failures INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN auto_compact_disabled INTEGER NOT NULL DEFAULT 0
    CHECK (auto_compact_disabled IN (0, 1));

CREATE TABLE compactions (
    id             INTEGER PRIMARY KEY,
    session_id     TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    trigger        TEXT NOT NULL CHECK (trigger IN ('auto', 'manual')),
    tokens_before  INTEGER NOT NULL,
    tokens_after   INTEGER,
    through_seq    INTEGER NOT NULL,          -- last seq of the history this compaction read
    first_kept_seq INTEGER,                   -- the live view resumes here
    pinned_seq     INTEGER,                   -- latest user request, kept verbatim
    summary        TEXT,
    model          TEXT,
    status         TEXT NOT NULL CHECK (status IN ('ok', 'failed')),
    error          TEXT,
    created_at     INTEGER NOT NULL,
    CHECK (status = 'failed' OR (summary IS NOT NULL AND first_kept_seq IS NOT NULL))
) STRICT;

CREATE INDEX compactions_session ON compactions (session_id, id);

CREATE TABLE trims (
    id            INTEGER PRIMARY KEY,
    session_id    TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq           INTEGER NOT NULL,            -- the trimmed message
    part          INTEGER NOT NULL CHECK (part >= 0),
    original_size INTEGER NOT NULL,            -- bytes
    new_size      INTEGER NOT NULL,
    replacement   TEXT NOT NULL,
    created_at    INTEGER NOT NULL,
    CHECK (new_size < original_size),
    FOREIGN KEY (session_id, seq) REFERENCES messages (session_id, seq) ON DELETE CASCADE
) STRICT;

CREATE INDEX trims_session ON trims (session_id, seq, part, id);

-- Listing orders by (updated_at, id); index the tie-break too so a limited list never sorts.
DROP INDEX sessions_project_updated;
DROP INDEX sessions_updated;
CREATE INDEX sessions_project_updated ON sessions (project, updated_at DESC, id DESC);
CREATE INDEX sessions_updated ON sessions (updated_at DESC, id DESC);
