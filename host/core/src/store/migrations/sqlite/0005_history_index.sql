-- 0005: the history index. Every original message's searchable text — its text parts, its tool
-- calls' names and arguments, its tool results; not reasoning — in FTS5 (stemmed, case and accents
-- ignored), so the agent can find what compaction took out of its view (`history_search`) and
-- people can search their sessions (`seshat sessions search`).
--
-- The append path writes a message's index row itself, in the append's own transaction (a tool
-- result over 8 KB is indexed by its head, its tail and the lines that carry its outcome, which
-- keeps a 50 KB append cheap; `history_read` still reads it whole). The index keeps no copy of the
-- text (contentless): snippets are cut from the originals. Messages are append-only, so a row is
-- written once and removed only with its session. Existing messages are indexed by the migration
-- (in batches, with progress).

-- The originals' searchable text, whole, for reading and scanning in SQL.
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
    content = '',
    contentless_delete = 1,
    tokenize = 'porter unicode61 remove_diacritics 2'
);

CREATE TRIGGER message_fts_delete AFTER DELETE ON messages
BEGIN
    DELETE FROM message_fts WHERE rowid = OLD.id;
END;
