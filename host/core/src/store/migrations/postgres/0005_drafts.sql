-- PostgreSQL 5: a streaming answer's draft, as SQLite's migration 15.
CREATE TABLE drafts (
    session_id text PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
    after      bigint NOT NULL,
    text       text NOT NULL,
    updated_at bigint NOT NULL
);
