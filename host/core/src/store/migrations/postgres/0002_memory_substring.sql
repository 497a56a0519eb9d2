-- PostgreSQL 2: substring search over memory through a trigram index (pg_trgm, a trusted
-- extension shipped with PostgreSQL), as SQLite's memory_trigram table serves it: a search that
-- falls back to substrings no longer reads every entity's text.
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE INDEX memory_search_text ON memory_search
    USING gin (lower(name || chr(10) || entity_type || chr(10) || observations) gin_trgm_ops);
