-- 0006: compaction that loses nothing. Pins (messages the user keeps verbatim in every live view),
-- retractions (undoing the latest compaction or trim pass: a new record, the originals and the
-- retracted record untouched) and the instructions a compaction was given.

CREATE TABLE pins (
    id         INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq        INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    UNIQUE (session_id, seq),
    FOREIGN KEY (session_id, seq) REFERENCES messages (session_id, seq) ON DELETE CASCADE
) STRICT;

-- One undo: either a compaction, or a trim pass (the trims with ids first_trim..last_trim).
CREATE TABLE retractions (
    id            INTEGER PRIMARY KEY,
    session_id    TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    compaction_id INTEGER REFERENCES compactions (id) ON DELETE CASCADE,
    first_trim    INTEGER,
    last_trim     INTEGER,
    created_at    INTEGER NOT NULL,
    CHECK ((compaction_id IS NULL) = (first_trim IS NOT NULL AND last_trim IS NOT NULL AND first_trim <= last_trim))
) STRICT;

CREATE INDEX retractions_session ON retractions (session_id, id);

ALTER TABLE compactions ADD COLUMN instructions TEXT;
