-- 16: the idempotency keys of turns: a `turn/start` sent again with the key of one whose user
-- message was stored (its answer lost to a dropped connection, say) finds that message instead of
-- storing the exchange twice. `seq` is the user's message the key stored.
CREATE TABLE turn_keys (
    id         INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    key        TEXT NOT NULL,
    seq        INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    UNIQUE (session_id, key)
) STRICT;
