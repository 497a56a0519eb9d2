//! Searching the original messages: the history index (migration 0005) over every message's text,
//! tool calls and tool results, whatever compaction did to the live view. What `history_search`
//! offers the model and what `seshat sessions search` shows people.

use rusqlite::params;

use super::messages::{MESSAGE_COLUMNS, message_from_row};
use super::{Message, Result, Store};
use crate::conversation::{Part, Role};

/// The most messages one [`Store::history_range`] returns.
pub const HISTORY_RANGE_MAX: u64 = 200;

/// Where a history search looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HistoryScope<'a> {
    /// One session.
    Session(&'a str),
    /// Every session of one project (by its key).
    Project(&'a str),
    /// Every session.
    All,
}

/// One message a history search found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryHit {
    /// Its session.
    pub session_id: String,
    /// Its seq in the session.
    pub seq: u64,
    /// Who wrote it.
    pub role: Role,
    /// Unix milliseconds.
    pub created_at: i64,
    /// Text around the match, the matched words between `«` and `»`.
    pub snippet: String,
}

/// Tool results up to this size are indexed whole; a larger one by its head, its tail and the
/// lines that carry its outcome, within this many bytes ([`crate::outcomes::keep`]).
pub const INDEX_WHOLE_BYTES: usize = 16_384;

/// What the history index holds of a message: its text parts, its tool calls' names and
/// arguments and its tool results (a large one in part, see [`INDEX_WHOLE_BYTES`]), one per line;
/// never reasoning.
pub fn index_text(parts: &[Part]) -> String {
    let mut out = String::new();
    for p in parts {
        let piece: std::borrow::Cow<'_, str> = match p {
            Part::Text { text } => text.into(),
            Part::ToolCall { name, arguments, .. } => format!("{name} {arguments}").into(),
            Part::ToolResult { content, .. } => excerpt(content),
            Part::Thinking { .. } | Part::RedactedThinking { .. } => continue,
        };
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&piece);
    }
    out
}

/// A tool result as the index holds it: whole, or its head, tail and outcome lines (whole lines
/// where it has enough of them, else a head and a tail cut at character boundaries).
fn excerpt(content: &str) -> std::borrow::Cow<'_, str> {
    if content.len() <= INDEX_WHOLE_BYTES {
        return content.into();
    }
    if let Some(ranges) = crate::outcomes::keep(content, INDEX_WHOLE_BYTES) {
        let lines = crate::outcomes::line_ranges(content);
        let mut out = String::with_capacity(INDEX_WHOLE_BYTES + 64);
        for r in ranges {
            for line in &lines[r] {
                out.push_str(&content[line.clone()]);
                out.push('\n');
            }
        }
        return out.into();
    }
    let head = content.floor_char_boundary(INDEX_WHOLE_BYTES * 5 / 8);
    let tail = content.ceil_char_boundary(content.len() - INDEX_WHOLE_BYTES * 3 / 8);
    format!("{}\n{}", &content[..head], &content[tail..]).into()
}

/// Words too common to help find a message: left out of the query unless it has nothing else.
const STOP_WORDS: &[&str] = &[
    "a", "about", "an", "and", "are", "as", "at", "be", "by", "did", "do", "does", "for", "from", "had", "has", "have",
    "how", "i", "in", "is", "it", "its", "of", "on", "or", "our", "that", "the", "there", "this", "to", "us", "was",
    "we", "were", "what", "when", "where", "which", "who", "why", "with", "you", "your",
];

/// The FTS5 queries for what a person typed: `exact` matches any of its identifiers (a term that
/// holds a digit or joins words with punctuation, like `TF123-K45` or `src/a.rs:42`) as an exact
/// phrase; `any` matches any of its words. Every term is quoted, so nothing typed is FTS5 syntax.
fn match_queries(query: &str) -> (Option<String>, Option<String>) {
    let quote = |t: &str| format!("\"{}\"", t.replace('"', "\"\""));
    let terms: Vec<&str> = query
        .split_whitespace()
        .map(|t| t.trim_matches(|c: char| !c.is_alphanumeric()))
        .filter(|t| !t.is_empty())
        .collect();
    let is_identifier =
        |t: &str| t.chars().any(|c| c.is_ascii_digit()) || t.split(|c: char| !c.is_alphanumeric()).nth(1).is_some();
    let identifiers: Vec<String> = terms.iter().filter(|t| is_identifier(t)).map(|t| quote(t)).collect();
    let mut words: Vec<String> =
        terms.iter().filter(|t| !STOP_WORDS.contains(&t.to_lowercase().as_str())).map(|t| quote(t)).collect();
    if words.is_empty() {
        words = terms.iter().map(|t| quote(t)).collect();
    }
    let join = |v: Vec<String>| (!v.is_empty()).then(|| v.join(" OR "));
    (join(identifiers), join(words))
}

impl Store {
    /// The messages matching `query` in `scope`, best first (bm25; a message holding one of the
    /// query's identifiers exactly comes before the others), at most `limit`.
    pub fn search_history(&self, scope: HistoryScope<'_>, query: &str, limit: usize) -> Result<Vec<HistoryHit>> {
        let (session, project) = match scope {
            HistoryScope::Session(id) => (Some(id), None),
            HistoryScope::Project(key) => (None, Some(key)),
            HistoryScope::All => (None, None),
        };
        // The best `limit` first (bm25 reads only the index), then snippets for those alone (from
        // the index's copy of the text it holds).
        let mut stmt = self.conn.prepare_cached(
            "SELECT m.session_id, m.seq, m.role, m.created_at, \
             (SELECT snippet(message_fts, 0, '«', '»', '…', 24) FROM message_fts \
              WHERE message_fts MATCH ?1 AND rowid = best.id) \
             FROM (SELECT message_fts.rowid AS id, bm25(message_fts) AS score \
                   FROM message_fts JOIN messages m ON m.id = message_fts.rowid \
                   WHERE message_fts MATCH ?1 AND (?3 IS NULL OR m.session_id = ?3) \
                   AND (?4 IS NULL OR m.session_id IN (SELECT id FROM sessions WHERE project = ?4)) \
                   ORDER BY score, m.id DESC LIMIT ?2) best \
             JOIN messages m ON m.id = best.id ORDER BY best.score, m.id DESC",
        )?;
        let (exact, any) = match_queries(query);
        let mut hits: Vec<HistoryHit> = Vec::new();
        for expression in [exact, any].into_iter().flatten() {
            if hits.len() >= limit {
                break;
            }
            let rows = stmt.query_map(params![expression, limit as i64, session, project], |r| {
                let role: String = r.get(2)?;
                Ok(HistoryHit {
                    session_id: r.get(0)?,
                    seq: r.get(1)?,
                    role: Role::parse(&role).unwrap_or(Role::User),
                    created_at: r.get(3)?,
                    snippet: r.get::<_, Option<String>>(4)?.unwrap_or_default(),
                })
            })?;
            for hit in rows {
                let hit = hit?;
                if hits.len() < limit && !hits.iter().any(|h| h.session_id == hit.session_id && h.seq == hit.seq) {
                    hits.push(hit);
                }
            }
        }
        Ok(hits)
    }

    /// The original messages `from..=to` of a session (at most [`HISTORY_RANGE_MAX`]), untouched
    /// by trims or compaction.
    pub fn history_range(&self, session: &str, from: u64, to: u64) -> Result<Vec<Message>> {
        let to = to.min(from.saturating_add(HISTORY_RANGE_MAX - 1));
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT {MESSAGE_COLUMNS} FROM messages WHERE session_id = ?1 AND seq BETWEEN ?2 AND ?3 ORDER BY seq"
        ))?;
        let rows = stmt.query_map(params![session, from, to], message_from_row)?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }
}

#[cfg(test)]
mod tests {
    use super::match_queries;

    #[test]
    fn identifiers_become_exact_phrases_and_common_words_drop_out() {
        let (exact, any) = match_queries("why did TF123-K45 fail in src/a.rs:42?");
        assert_eq!(exact.as_deref(), Some(r#""TF123-K45" OR "src/a.rs:42""#));
        assert_eq!(any.as_deref(), Some(r#""TF123-K45" OR "fail" OR "src/a.rs:42""#));
    }

    #[test]
    fn fts_syntax_typed_by_a_person_is_quoted() {
        let (exact, any) = match_queries(r#"NOT "upload" OR x*"#);
        assert_eq!(exact, None);
        assert_eq!(any.as_deref(), Some(r#""NOT" OR "upload" OR "x""#));
    }

    #[test]
    fn a_query_of_common_words_only_keeps_them() {
        assert_eq!(match_queries("what was it").1.as_deref(), Some(r#""what" OR "was" OR "it""#));
        assert_eq!(match_queries("  ?! ").1, None);
    }
}
