-- 0005: the history index. Every original message's searchable text — its text parts, its tool
-- calls' names and arguments, its tool results; not reasoning — in FTS5 (stemmed, case and accents
-- ignored), so the agent can find what compaction took out of its view (`history_search`) and
-- people can search their sessions (`seshat sessions search`).
--
-- The index reads its text through the `message_text` view, so nothing is stored twice and
-- snippets come from the originals. Messages are append-only: a message's index row is written
-- once, by the trigger below inside the append's own transaction, and removed only with its
-- session. Existing messages are indexed by the migration (in batches, with progress).

CREATE VIEW message_text (id, session_id, seq, role, text) AS
SELECT m.id, m.session_id, m.seq, m.role,
       (SELECT group_concat(
                   CASE p.value ->> '$.type'
                       WHEN 'text' THEN p.value ->> '$.text'
                       WHEN 'tool_call' THEN (p.value ->> '$.name') || ' ' || (p.value ->> '$.arguments')
                       WHEN 'tool_result' THEN p.value ->> '$.content'
                   END,
                   char(10))
        FROM json_each(m.parts) p)
FROM messages m;

CREATE VIRTUAL TABLE message_fts USING fts5 (
    text,
    content = 'message_text',
    content_rowid = 'id',
    tokenize = 'porter unicode61 remove_diacritics 2'
);

CREATE TRIGGER message_fts_insert AFTER INSERT ON messages
BEGIN
    INSERT INTO message_fts (rowid, text) SELECT id, text FROM message_text WHERE id = NEW.id;
END;

-- Before the row goes, while the view still gives the text the index holds for it.
CREATE TRIGGER message_fts_delete BEFORE DELETE ON messages
BEGIN
    INSERT INTO message_fts (message_fts, rowid, text) SELECT 'delete', id, text FROM message_text WHERE id = OLD.id;
END;
