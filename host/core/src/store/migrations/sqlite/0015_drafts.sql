-- 15: what a turn's answer has streamed so far, kept while it streams by the process holding the
-- session's claim. A process killed mid-answer leaves its draft; whoever claims the session next
-- stores it as an interrupted answer. `after` is the session's last seq when the answer began.
CREATE TABLE drafts (
    session_id TEXT PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
    after      INTEGER NOT NULL,
    text       TEXT NOT NULL,
    updated_at INTEGER NOT NULL
);
