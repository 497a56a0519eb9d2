-- 18: the audit trail of the network service: one row per event (a write, a refused write, a
-- denied read, a refused login, a revocation, a plugin crash), queried by `seshat audit`.
CREATE TABLE audit_events (
    id        INTEGER PRIMARY KEY,
    at        INTEGER NOT NULL,
    event     TEXT NOT NULL,
    user_name TEXT,
    token     TEXT,
    peer      TEXT,
    method    TEXT,
    target    TEXT,
    code      TEXT,
    detail    TEXT
) STRICT;
CREATE INDEX audit_events_at ON audit_events (at);
CREATE INDEX audit_events_user ON audit_events (user_name, at);
