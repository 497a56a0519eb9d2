-- 0010: the knowledge index and memory's word index match words by their stem (the porter
-- tokenizer over unicode61, as the history index has since 0005): "retries" finds "retry",
-- "compacting" finds "compaction". Both are rebuilt from what they index; nothing else changes.

-- Knowledge: an external-content index over `chunks`, rebuilt from it. The triggers on `chunks`
-- name the index and keep working on the new one.
DROP TABLE chunk_fts;
CREATE VIRTUAL TABLE chunk_fts USING fts5 (
    text, heading, content = 'chunks', content_rowid = 'id',
    tokenize = 'porter unicode61 remove_diacritics 2'
);
INSERT INTO chunk_fts (chunk_fts) VALUES ('rebuild');

-- Memory: the index holds its own copy of each live entity's text (kept by 0003's triggers),
-- moved across through a plain table.
CREATE TEMP TABLE memory_fts_rows AS SELECT rowid AS id, name, entity_type, observations FROM memory_fts;
DROP TABLE memory_fts;
CREATE VIRTUAL TABLE memory_fts USING fts5 (
    name, entity_type, observations, tokenize = 'porter unicode61 remove_diacritics 2'
);
INSERT INTO memory_fts (rowid, name, entity_type, observations)
SELECT id, name, entity_type, observations FROM memory_fts_rows ORDER BY id;
DROP TABLE memory_fts_rows;
