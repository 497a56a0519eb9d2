//! Searching the original messages: the history index (migration 0005) over every message's text,
//! tool calls and tool results, whatever compaction did to the live view. What `history_search`
//! offers the model and what `seshat sessions search` shows people.

use rusqlite::{OptionalExtension as _, params};

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
    /// The message's row id (what its vector is stored under).
    pub message_id: i64,
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
pub const INDEX_WHOLE_BYTES: usize = 8_192;

/// Text parts up to this size are indexed whole; a larger one (a pasted log or file) like a large
/// tool result, within this many bytes: indexing megabytes of text word by word would hold many
/// times its size in memory for one message.
pub const INDEX_WHOLE_TEXT_BYTES: usize = 64 * 1024;

/// What the history index holds of a message: its text parts, its tool calls' names and
/// arguments and its tool results (a large one in part, see [`INDEX_WHOLE_BYTES`]), one per line;
/// never reasoning.
pub fn index_text(parts: &[Part]) -> String {
    searchable_text(parts, |text| excerpt_within(text, INDEX_WHOLE_TEXT_BYTES), excerpt)
}

/// A message's searchable text, one part per line, each text part as `text` gives it and each
/// tool result as `result` does.
fn searchable_text<'a>(
    parts: &'a [Part],
    text: fn(&'a str) -> std::borrow::Cow<'a, str>,
    result: fn(&'a str) -> std::borrow::Cow<'a, str>,
) -> String {
    let mut out = String::new();
    for p in parts {
        let piece: std::borrow::Cow<'_, str> = match p {
            Part::Text { text: t } => text(t),
            Part::ToolCall { name, arguments, .. } => format!("{name} {arguments}").into(),
            Part::ToolResult { content, .. } => result(content),
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
    excerpt_within(content, INDEX_WHOLE_BYTES)
}

/// `content` whole up to `budget` bytes, else its head, tail and outcome lines within `budget`.
fn excerpt_within(content: &str, budget: usize) -> std::borrow::Cow<'_, str> {
    if content.len() <= budget {
        return content.into();
    }
    if let Some(ranges) = crate::outcomes::keep(content, budget) {
        return crate::outcomes::stitch(content, &ranges, |_| None).into();
    }
    let head = content.floor_char_boundary(budget * 5 / 8);
    let tail = content.ceil_char_boundary(content.len() - budget * 3 / 8);
    format!("{}\n{}", &content[..head], &content[tail..]).into()
}

/// A query term as a snippet looks for it, folded (lower case, accents off).
enum Term {
    /// Matched as a whole, between non-alphanumerics (`tf123-k45`).
    Exact(String),
    /// A word, matched by its first letters as the stemmer would (`failed` finds `failing`).
    Word(String),
}

/// Lower case without accents, each folded byte mapped to the original byte it came from.
fn fold(text: &str) -> (String, Vec<usize>) {
    use unicode_normalization::UnicodeNormalization as _;
    let mut out = String::with_capacity(text.len());
    let mut map = Vec::with_capacity(text.len() + 1);
    for (at, c) in text.char_indices() {
        let mut buf = [0u8; 4];
        let one = c.encode_utf8(&mut buf);
        for d in one.nfd().filter(|d| !unicode_normalization::char::is_combining_mark(*d)) {
            for l in d.to_lowercase() {
                let start = out.len();
                out.push(l);
                map.extend(std::iter::repeat_n(at, out.len() - start));
            }
        }
    }
    map.push(text.len());
    (out, map)
}

fn snippet_terms(query: &str) -> Vec<Term> {
    let terms = query_terms(query);
    let mut words: Vec<&str> =
        terms.iter().filter(|(t, id)| !id && !STOP_WORDS.contains(&t.to_lowercase().as_str())).map(|t| t.0).collect();
    if words.is_empty() && !terms.iter().any(|t| t.1) {
        words = terms.iter().map(|t| t.0).collect();
    }
    terms
        .iter()
        .filter(|t| t.1)
        .map(|t| Term::Exact(fold(t.0).0))
        .chain(words.into_iter().map(|t| Term::Word(fold(t).0)))
        .collect()
}

/// Characters of context a snippet shows before its first match, and in all.
const SNIPPET_BEFORE: usize = 80;
const SNIPPET_CHARS: usize = 240;

/// The part of `text` around the matches of `terms` (the stretch holding the most distinct
/// ones), each match between `«` and `»`, `…` where it was cut; the start of the text when
/// nothing matches.
fn snippet(text: &str, terms: &[Term]) -> String {
    let (folded, map) = fold(text);
    let is_word = |c: char| c.is_alphanumeric();
    // Every match: (folded start, folded end, which term).
    let mut spans: Vec<(usize, usize, usize)> = Vec::new();
    for (k, term) in terms.iter().enumerate() {
        match term {
            Term::Exact(t) if !t.is_empty() => {
                for (at, _) in folded.match_indices(t.as_str()) {
                    let end = at + t.len();
                    let before = folded[..at].chars().next_back().is_none_or(|c| !is_word(c));
                    let after = folded[end..].chars().next().is_none_or(|c| !is_word(c));
                    if before && after {
                        spans.push((at, end, k));
                    }
                }
            }
            Term::Word(w) if !w.is_empty() => {
                let stem_len =
                    w.char_indices().nth(4.max(w.chars().count().saturating_sub(3))).map_or(w.len(), |(i, _)| i);
                let stem = &w[..stem_len];
                let mut start = None;
                for (i, c) in folded.char_indices().chain(std::iter::once((folded.len(), ' '))) {
                    match (is_word(c), start) {
                        (true, None) => start = Some(i),
                        (false, Some(s)) => {
                            let token = &folded[s..i];
                            if token == w || token.starts_with(stem) && stem.len() >= 4 {
                                spans.push((s, i, k));
                            }
                            start = None;
                        }
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
    spans.sort_unstable();
    // The window starting before the match whose neighbourhood holds the most distinct terms
    // (the last such, so the window holds them all), found by sliding over the matches.
    let reach = SNIPPET_CHARS - SNIPPET_BEFORE;
    let mut counts = vec![0usize; terms.len()];
    let (mut j, mut distinct, mut best): (usize, usize, Option<(usize, usize)>) = (0, 0, None);
    for i in 0..spans.len() {
        while j < spans.len() && spans[j].0 < spans[i].0 + reach {
            counts[spans[j].2] += 1;
            distinct += usize::from(counts[spans[j].2] == 1);
            j += 1;
        }
        if best.is_none_or(|(d, _)| distinct >= d) {
            best = Some((distinct, spans[i].0));
        }
        counts[spans[i].2] -= 1;
        distinct -= usize::from(counts[spans[i].2] == 0);
    }
    let best = best.map(|(_, at)| at);
    let orig = |f: usize| map[f];
    let first = best.map_or(0, orig);
    let mut from = text.floor_char_boundary(first.saturating_sub(SNIPPET_BEFORE));
    if from > 0 {
        // Start at a word.
        from = text[from..first].find(char::is_whitespace).map_or(from, |w| from + w + 1).min(first);
    }
    let mut to = text.floor_char_boundary((from + SNIPPET_CHARS).min(text.len()));
    if to < text.len() {
        to = text[first.min(to)..to].rfind(char::is_whitespace).map_or(to, |w| first.min(to) + w);
    }
    let mut out = String::new();
    if from > 0 {
        out.push('…');
    }
    let mut at = from;
    for &(s, e, _) in &spans {
        let (s, e) = (orig(s), orig(e));
        if s < at || e > to {
            continue;
        }
        out.push_str(&text[at..s]);
        out.push('«');
        out.push_str(&text[s..e]);
        out.push('»');
        at = e;
    }
    out.push_str(&text[at..to]);
    if to < text.len() {
        out.push('…');
    }
    out
}

/// Words too common to help find a message: left out of the query unless it has nothing else.
const STOP_WORDS: &[&str] = &[
    "a", "about", "an", "and", "are", "as", "at", "be", "by", "did", "do", "does", "for", "from", "had", "has", "have",
    "how", "i", "in", "is", "it", "its", "of", "on", "or", "our", "that", "the", "there", "this", "to", "us", "was",
    "we", "were", "what", "when", "where", "which", "who", "why", "with", "you", "your",
];

/// The terms of what a person typed, trimmed of surrounding punctuation, each with whether it is
/// an identifier (it holds a digit or joins words with punctuation: `TF123-K45`, `src/a.rs:42`).
fn query_terms(query: &str) -> Vec<(&str, bool)> {
    query
        .split_whitespace()
        .map(|t| t.trim_matches(|c: char| !c.is_alphanumeric()))
        .filter(|t| !t.is_empty())
        .map(|t| {
            let id = t.chars().any(|c| c.is_ascii_digit()) || t.split(|c: char| !c.is_alphanumeric()).nth(1).is_some();
            (t, id)
        })
        .collect()
}

/// The FTS5 queries for what a person typed, in the order they are tried: `exact` matches any of
/// its identifiers (a term that holds a digit or joins words with punctuation, like `TF123-K45` or
/// `src/a.rs:42`) as an exact phrase; `all`, every one of its words (when it has two or more);
/// `any`, any of them. Every term is quoted, so nothing typed is FTS5 syntax.
pub(super) fn match_queries(query: &str) -> [Option<String>; 3] {
    let quote = |t: &str| format!("\"{}\"", t.replace('"', "\"\""));
    let terms = query_terms(query);
    let identifiers: Vec<String> = terms.iter().filter(|t| t.1).map(|t| quote(t.0)).collect();
    let mut words: Vec<String> =
        terms.iter().filter(|t| !STOP_WORDS.contains(&t.0.to_lowercase().as_str())).map(|t| quote(t.0)).collect();
    if words.is_empty() {
        words = terms.iter().map(|t| quote(t.0)).collect();
    }
    let join = |v: &[String], with: &str| (!v.is_empty()).then(|| v.join(with));
    let all = (words.len() > 1).then(|| words.join(" AND "));
    [join(&identifiers, " OR "), all, join(&words, " OR ")]
}

/// At most this many of an expression's matches, the most recent, are ranked: bm25 scores every
/// match it is given, and a word most messages hold would otherwise make a search cost the
/// session's length. An identifier or all the words of a query rarely match that many.
const RANK_WINDOW: i64 = 500;

impl Store {
    /// The messages matching `query` in `scope`, best first (bm25; a message holding one of the
    /// query's identifiers exactly comes before the others), at most `limit`.
    pub fn search_history(&self, scope: HistoryScope<'_>, query: &str, limit: usize) -> Result<Vec<HistoryHit>> {
        on_db!(self, "search the history", {
            let (session, project) = match scope {
                HistoryScope::Session(id) => (Some(id), None),
                HistoryScope::Project(key) => (None, Some(key)),
                HistoryScope::All => (None, None),
            };
            // The oldest message the ranking looks at: the RANK_WINDOW-th most recent match (read in
            // rowid order, which costs no ranking).
            let mut floor = self.conn.prepare_cached(
                "SELECT message_fts.rowid FROM message_fts JOIN messages m ON m.id = message_fts.rowid \
             WHERE message_fts MATCH ?1 AND (?2 IS NULL OR m.session_id = ?2) \
             AND (?3 IS NULL OR m.session_id IN (SELECT id FROM sessions WHERE project = ?3)) \
             ORDER BY message_fts.rowid DESC LIMIT 1 OFFSET ?4",
            )?;
            // The best `limit` by bm25 (which reads only the index: it keeps no copy of the text), with
            // their parts for the snippets.
            let mut stmt = self.conn.prepare_cached(
                "SELECT m.session_id, m.seq, m.role, m.created_at, m.parts, m.id \
             FROM (SELECT message_fts.rowid AS id, bm25(message_fts) AS score \
                   FROM message_fts JOIN messages m ON m.id = message_fts.rowid \
                   WHERE message_fts MATCH ?1 AND message_fts.rowid >= ?5 AND (?3 IS NULL OR m.session_id = ?3) \
                   AND (?4 IS NULL OR m.session_id IN (SELECT id FROM sessions WHERE project = ?4)) \
                   ORDER BY score, m.id DESC LIMIT ?2) best \
             JOIN messages m ON m.id = best.id ORDER BY best.score, m.id DESC",
            )?;
            let terms = snippet_terms(query);
            let mut hits: Vec<HistoryHit> = Vec::new();
            for expression in match_queries(query).into_iter().flatten() {
                if hits.len() >= limit {
                    break;
                }
                let from: i64 = floor
                    .query_row(params![expression, session, project, RANK_WINDOW - 1], |r| r.get(0))
                    .optional()?
                    .unwrap_or(0);
                let rows = stmt.query_map(params![expression, limit as i64, session, project, from], |r| {
                    let role: String = r.get(2)?;
                    let hit = HistoryHit {
                        message_id: r.get(5)?,
                        session_id: r.get(0)?,
                        seq: r.get(1)?,
                        role: Role::parse(&role).unwrap_or(Role::User),
                        created_at: r.get(3)?,
                        snippet: String::new(),
                    };
                    Ok((hit, r.get::<_, String>(4)?))
                })?;
                for row in rows {
                    let (mut hit, parts) = row?;
                    if hits.len() >= limit || hits.iter().any(|h| h.session_id == hit.session_id && h.seq == hit.seq) {
                        continue;
                    }
                    // Only a hit that is kept gets its snippet, cut from what the index holds of
                    // the original (where the match is): bounded however large the original.
                    let parts: Vec<Part> = serde_json::from_str(&parts).unwrap_or_default();
                    hit.snippet = snippet(&index_text(&parts), &terms);
                    hits.push(hit);
                }
            }
            Ok(hits)
        })
    }

    /// Messages by row id as history hits (those a vector search found), each with the opening
    /// of its text as the snippet, in the order given; those outside `scope` or gone are left out.
    pub(crate) fn history_hits_by_id(&self, scope: HistoryScope<'_>, ids: &[i64]) -> Result<Vec<HistoryHit>> {
        on_db!(self, "read the history", {
            let (session, project) = match scope {
                HistoryScope::Session(id) => (Some(id), None),
                HistoryScope::Project(key) => (None, Some(key)),
                HistoryScope::All => (None, None),
            };
            let mut stmt = self.conn.prepare_cached(
                "SELECT m.session_id, m.seq, m.role, m.created_at, m.parts FROM messages m WHERE m.id = ?1 \
                 AND (?2 IS NULL OR m.session_id = ?2) \
                 AND (?3 IS NULL OR m.session_id IN (SELECT id FROM sessions WHERE project = ?3))",
            )?;
            let mut out = Vec::with_capacity(ids.len());
            for &id in ids {
                let row = stmt
                    .query_row(params![id, session, project], |r| {
                        let role: String = r.get(2)?;
                        Ok((
                            r.get::<_, String>(0)?,
                            r.get::<_, u64>(1)?,
                            role,
                            r.get::<_, i64>(3)?,
                            r.get::<_, String>(4)?,
                        ))
                    })
                    .optional()?;
                if let Some((session_id, seq, role, created_at, parts)) = row {
                    let parts: Vec<Part> = serde_json::from_str(&parts).unwrap_or_default();
                    let text = index_text(&parts);
                    let opening: String = text.split_whitespace().take(24).collect::<Vec<_>>().join(" ");
                    out.push(HistoryHit {
                        message_id: id,
                        session_id,
                        seq,
                        role: Role::parse(&role).unwrap_or(Role::User),
                        created_at,
                        snippet: opening,
                    });
                }
            }
            Ok(out)
        })
    }

    /// The original messages `from..=to` of a session (at most [`HISTORY_RANGE_MAX`]), untouched
    /// by trims or compaction.
    pub fn history_range(&self, session: &str, from: u64, to: u64) -> Result<Vec<Message>> {
        on_db!(self, "read the history", {
            let to = to.min(from.saturating_add(HISTORY_RANGE_MAX - 1));
            let mut stmt = self.conn.prepare_cached(&format!(
                "SELECT {MESSAGE_COLUMNS} FROM messages WHERE session_id = ?1 AND seq BETWEEN ?2 AND ?3 ORDER BY seq"
            ))?;
            let rows = stmt.query_map(params![session, from, to], message_from_row)?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{match_queries, snippet, snippet_terms};

    #[test]
    fn snippets_mark_each_match_in_the_original_around_the_most_terms() {
        let text = format!(
            "{}Il faut RÉESSAYER: test upload::retries ... FAILED (code TF123-K45 at src/upload.rs:88){}",
            "upload ok\n".repeat(40),
            " and then the rest of a long output".repeat(10)
        );
        let got = snippet(&text, &snippet_terms("why did TF123-K45 fail, réessayer the upload"));
        assert!(got.starts_with('…') && got.ends_with('…'), "cut at both ends: {got}");
        assert!(
            got.contains("«RÉESSAYER»: test «upload»::retries ... «FAILED» (code «TF123-K45» at src/«upload».rs:88)"),
            "case, accents and word forms, each match marked: {got}"
        );
        // Nothing matches: the start of the text.
        assert_eq!(snippet("short text", &snippet_terms("zebra")), "short text");
        // Not a match inside a longer identifier.
        assert_eq!(snippet("XTF123-K45Y", &snippet_terms("TF123-K45")), "XTF123-K45Y");
    }

    #[test]
    fn identifiers_become_exact_phrases_and_common_words_drop_out() {
        let [exact, all, any] = match_queries("why did TF123-K45 fail in src/a.rs:42?");
        assert_eq!(exact.as_deref(), Some(r#""TF123-K45" OR "src/a.rs:42""#));
        assert_eq!(all.as_deref(), Some(r#""TF123-K45" AND "fail" AND "src/a.rs:42""#));
        assert_eq!(any.as_deref(), Some(r#""TF123-K45" OR "fail" OR "src/a.rs:42""#));
    }

    #[test]
    fn fts_syntax_typed_by_a_person_is_quoted() {
        let [exact, all, any] = match_queries(r#"NOT "upload" OR x*"#);
        assert_eq!(exact, None);
        assert_eq!(all.as_deref(), Some(r#""NOT" AND "upload" AND "x""#));
        assert_eq!(any.as_deref(), Some(r#""NOT" OR "upload" OR "x""#));
    }

    #[test]
    fn a_query_of_common_words_only_keeps_them() {
        assert_eq!(match_queries("what was it")[2].as_deref(), Some(r#""what" OR "was" OR "it""#));
        assert_eq!(match_queries("  ?! "), [None, None, None]);
    }
}
