//! Searching the original messages: the history index (migration 0005) over every message's text,
//! tool calls and tool results, whatever compaction did to the live view. What `history_search`
//! offers the model and what `seshat sessions search` shows people.

use std::collections::HashMap;

use super::db::{Backend, Db, params};
use super::ranking::{Index, Ranking};
use super::weights::Weighed;
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

impl HistoryScope<'_> {
    /// What a query binds for this scope searched by `user` (`None`: not filtered by it): the
    /// session's lineage as [`super::lineage::in_lineage`] matches it (a fork's inherited
    /// messages are its history too; the session is checked to be the user's first), the project
    /// key, and the owner the sessions must have (left out only when no other user exists).
    pub(super) fn keys<'u>(&self, db: &Db, user: &'u str) -> Result<Keys<'_, 'u>> {
        Ok(match *self {
            HistoryScope::Session(id) => {
                super::sessions::owned(db, id, user)?;
                let lineage = super::lineage::key(db.backend(), &super::lineage::lineage(db, id)?);
                Keys { lineage: Some(lineage), project: None, owner: None }
            }
            HistoryScope::Project(key) => Keys { lineage: None, project: Some(key), owner: Some(user) },
            HistoryScope::All => {
                let alone: bool =
                    db.query_value("SELECT NOT EXISTS (SELECT 1 FROM users WHERE name <> ?1)", params![user])?;
                Keys { lineage: None, project: None, owner: (!alone).then_some(user) }
            }
        })
    }
}

/// What a history query binds for its scope (see [`HistoryScope::keys`]).
pub(super) struct Keys<'s, 'u> {
    /// The session's lineage, for a session's search.
    pub lineage: Option<String>,
    /// The project key, for a project's.
    pub project: Option<&'s str>,
    /// The owner the sessions searched must have.
    pub owner: Option<&'u str>,
}

impl Keys<'_, '_> {
    /// Whether the search is limited (to a session, a project or an owner's sessions).
    fn scoped(&self) -> bool {
        self.lineage.is_some() || self.project.is_some() || self.owner.is_some()
    }
}

/// SQL keeping messages `m` of the sessions in the project bound at `?project` (when not null)
/// owned by the user bound at `?owner` (when not null).
pub(super) fn in_sessions(project: u8, owner: u8) -> String {
    format!(
        "((CAST(?{project} AS TEXT) IS NULL AND CAST(?{owner} AS TEXT) IS NULL) OR m.session_id IN \
         (SELECT id FROM sessions WHERE (CAST(?{owner} AS TEXT) IS NULL OR owner = ?{owner}) \
         AND (CAST(?{project} AS TEXT) IS NULL OR project = ?{project})))"
    )
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

impl From<HistoryHit> for seshat_protocol::methods::HistoryHit {
    /// The hit as the protocol sends it (without the row id, which is the store's own).
    fn from(h: HistoryHit) -> Self {
        Self { session: h.session_id, seq: h.seq, role: h.role, created_at: h.created_at, snippet: h.snippet }
    }
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
    let terms = super::ranking::terms(query);
    let words = super::ranking::kept(&terms, &Ranking::default());
    terms
        .iter()
        .filter(|t| t.identifier)
        .map(|t| Term::Exact(fold(t.text).0))
        .chain(
            words
                .into_iter()
                .filter(|w| !terms.iter().any(|t| t.identifier && t.text == *w))
                .map(|t| Term::Word(fold(t).0)),
        )
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
        // (After the whitespace, which may be wider than a byte: a no-break space is two.)
        from = text[from..first]
            .char_indices()
            .find(|(_, c)| c.is_whitespace())
            .map_or(from, |(w, c)| from + w + c.len_utf8())
            .min(first);
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

/// A message a search matched.
#[derive(Debug, Clone)]
struct Found {
    id: i64,
    session_id: String,
    seq: u64,
}

/// `ranked` (best first) reordered so that the hits cover different places: a message within
/// `window(its session)` turns of a better-ranked one moves back behind the next `back` messages
/// that are not (behind all of them when `None`); nothing is left out.
fn spread(ranked: Vec<Found>, window: &dyn Fn(&str) -> u64, back: Option<usize>) -> Vec<Found> {
    let mut out: Vec<Found> = Vec::with_capacity(ranked.len());
    // The hits not near a better one, by their place in `out`.
    let mut apart: Vec<usize> = Vec::new();
    // Near hits waiting, each with how many apart hits must come first.
    let mut near: std::collections::VecDeque<(usize, Found)> = std::collections::VecDeque::new();
    for f in ranked {
        let within = window(&f.session_id);
        if apart.iter().any(|&i| out[i].session_id == f.session_id && out[i].seq.abs_diff(f.seq) <= within) {
            near.push_back((back.map_or(usize::MAX, |b| apart.len() + b), f));
        } else {
            apart.push(out.len());
            out.push(f);
            while near.front().is_some_and(|(due, _)| *due <= apart.len()) {
                out.extend(near.pop_front().map(|(_, f)| f));
            }
        }
    }
    out.extend(near.into_iter().map(|(_, f)| f));
    out
}

/// Adds message `id`'s index text to the history index, inside the caller's write transaction.
pub(super) fn index(tx: &Db, id: i64, text: &str) -> Result<()> {
    match tx.backend() {
        Backend::Sqlite => tx.execute("INSERT INTO message_fts (rowid, text) VALUES (?1, ?2)", params![id, text])?,
        // NUL separates words, as it does for SQLite's tokenizer (bound as it is, it would be
        // escaped into the text and join the words around it).
        _ => tx.execute(
            "INSERT INTO message_search (message_id, words) VALUES (?1, to_tsvector('seshat', ?2))",
            params![id, text.replace('\0', " ")],
        )?,
    };
    Ok(())
}

/// How many messages holding the rarest of an expression's words PostgreSQL ranks
/// ([`super::weights::rarest`]), and how many of the expression's newest matches besides
/// (SQLite's bm25 ranks every match; `ts_rank` reads each match's words, so a word most messages
/// hold would have it rank them all: 60 ms at 100k messages).
const POSTGRES_RARE: i64 = 2_000;
/// See [`POSTGRES_RARE`].
const POSTGRES_NEWEST: usize = 1_000;

/// The floor of a history search on `backend`: the oldest message a capped ranking looks at (the
/// cap-th most recent match, read in id order, which costs no ranking). Binds the expression at
/// ?1, the lineage at ?2, the project at ?3, the offset at ?4 and the owner at ?5.
fn floor_sql(backend: Backend) -> String {
    match backend {
        Backend::Sqlite => format!(
            "SELECT message_fts.rowid FROM message_fts JOIN messages m ON m.id = message_fts.rowid \
             WHERE message_fts MATCH ?1 AND {} AND {} ORDER BY message_fts.rowid DESC LIMIT 1 OFFSET ?4",
            super::lineage::in_lineage(backend, 2),
            in_sessions(3, 5)
        ),
        Backend::Postgres => format!(
            "SELECT s.message_id FROM message_search s JOIN messages m ON m.id = s.message_id \
             WHERE s.words @@ websearch_to_tsquery('seshat', ?1) AND {} AND {} \
             ORDER BY s.message_id DESC LIMIT 1 OFFSET ?4",
            super::lineage::in_lineage(backend, 2),
            in_sessions(3, 5)
        ),
    }
}

/// SQLite's best matches of an expression, by bm25 (which reads only the index). Binds the
/// expression at ?1, the limit at ?2, the lineage at ?3, the project at ?4, the floor at ?5 and
/// the owner at ?6.
fn sqlite_best() -> String {
    format!(
        "SELECT m.id, m.session_id, m.seq FROM message_fts JOIN messages m ON m.id = message_fts.rowid \
         WHERE message_fts MATCH ?1 AND message_fts.rowid >= ?5 AND {} AND {} \
         ORDER BY bm25(message_fts), m.id DESC LIMIT ?2",
        super::lineage::in_lineage(Backend::Sqlite, 3),
        in_sessions(4, 6)
    )
}

/// PostgreSQL's best matches of an expression whose `words` are weighed (rarest first): each
/// message's score is the sum over the words of the word's weight times its `ts_rank` (length
/// normalised) — bm25's shape. The messages ranked are every match holding one of the rarest
/// words (up to [`POSTGRES_RARE`]) and the newest [`POSTGRES_NEWEST`] matches: a message
/// holding only common words could not outrank one holding a rare word by much.
///
/// Binds as [`sqlite_best`] (?1 expression, ?2 limit, ?3 lineage, ?4 project,
/// ?5 floor, ?6 owner), then ?7 the rarest words as one expression, then each word's weight and
/// phrase from ?8 on. `scoped`: the search is limited to a session, a project or an owner;
/// `floor`: ?5 is one; `all_rare`: the rarest words are all the words (their matches are all the
/// matches).
fn postgres_best(scoped: bool, floor: bool, all_rare: bool, words: usize) -> String {
    let score = |of: &str| {
        let terms: Vec<String> = (0..words)
            .map(|i| {
                let (w, p) = (8 + 2 * i, 9 + 2 * i);
                format!("CAST(?{w} AS FLOAT8) * ts_rank({of}, websearch_to_tsquery('seshat', ?{p}), 1)")
            })
            .collect();
        if terms.is_empty() { "0".to_string() } else { terms.join(" + ") }
    };
    // The floor is left out when there is none: bound as 0 it would still steer the planner to
    // read every message by id instead of the matches by word.
    let mut filters =
        if floor { "AND s.message_id >= ?5".to_string() } else { "AND CAST(?5 AS BIGINT) = 0".to_string() };
    if scoped {
        filters += &format!(" AND {} AND {}", super::lineage::in_lineage(Backend::Postgres, 3), in_sessions(4, 6));
    }
    let join = if scoped { "JOIN messages m ON m.id = s.message_id" } else { "" };
    // Each candidate's words and message are read by id (`LIMIT 1` keeps the planner from
    // joining them whole: hashing every message costs more than the few thousand lookups).
    format!(
        "SELECT c.message_id, m.session_id, m.seq FROM (SELECT d.message_id, {score} AS rank FROM \
         ((SELECT s.message_id FROM message_search s {join} WHERE s.words @@ websearch_to_tsquery('seshat', ?7) \
         AND s.words @@ websearch_to_tsquery('seshat', ?1) {filters} ORDER BY s.message_id DESC LIMIT {POSTGRES_RARE}) \
         {newest}) d \
         CROSS JOIN LATERAL (SELECT words FROM message_search WHERE message_id = d.message_id LIMIT 1) w \
         ORDER BY rank DESC, d.message_id DESC LIMIT ?2) c \
         CROSS JOIN LATERAL (SELECT session_id, seq FROM messages WHERE id = c.message_id LIMIT 1) m \
         WHERE {unscoped} ORDER BY c.rank DESC, c.message_id DESC",
        score = score("w.words"),
        // When every word is rare, the rare words' matches are all the matches.
        newest = if all_rare {
            String::new()
        } else {
            format!(
                "UNION (SELECT s.message_id FROM message_search s {join} WHERE s.words @@ websearch_to_tsquery('seshat', ?1) \
                 {filters} ORDER BY s.message_id DESC LIMIT {POSTGRES_NEWEST})"
            )
        },
        unscoped = if scoped {
            "TRUE"
        } else {
            "CAST(?3 AS TEXT) IS NULL AND CAST(?4 AS TEXT) IS NULL AND CAST(?6 AS TEXT) IS NULL"
        },
    )
}

impl Store {
    /// The messages matching `query` in `scope`, best first, at most `limit`, ranked by
    /// [`Ranking::default`].
    pub fn search_history(&self, scope: HistoryScope<'_>, query: &str, limit: usize) -> Result<Vec<HistoryHit>> {
        self.search_history_ranked(scope, query, limit, &Ranking::default())
    }

    /// [`Store::search_history`] under the rules of `ranking`: each of its tiers (identifiers,
    /// every word, any word) ranked by bm25, its hits spread over places when `ranking` says so;
    /// a tier's matches before the next's.
    pub fn search_history_ranked(
        &self,
        scope: HistoryScope<'_>,
        query: &str,
        limit: usize,
        ranking: &Ranking,
    ) -> Result<Vec<HistoryHit>> {
        on_db!(self, "search the history", {
            let keys = scope.keys(&self.db, &self.user)?;
            let (session, project, owner) = (&keys.lineage, keys.project, keys.owner);
            let backend = self.db.backend();
            let floor = floor_sql(backend);
            let mut expressions = super::ranking::expressions(query, ranking);
            let mut words = super::ranking::kept_words(query, ranking);
            if let Some(share) = ranking.common {
                let kept: Vec<String> = words.iter().flat_map(|w| w.words.clone()).collect();
                let common = super::weights::common(&self.db, &self.counts, &kept, share)?;
                if !common.is_empty() {
                    expressions = expressions.without_common(&common);
                    words.retain(|w| !w.words.iter().any(|x| common.contains(x)));
                }
            }
            let any = expressions.any.clone();
            let exact = expressions.exact.clone();
            let tiers: Vec<_> = expressions.tiers().collect();
            // PostgreSQL weighs each word once per search (bm25 does it inside SQLite's index).
            let weighed = match backend {
                Backend::Sqlite => Vec::new(),
                Backend::Postgres => {
                    let mut distinct: Vec<String> = Vec::new();
                    for w in tiers.iter().flat_map(|t| &t.words) {
                        if !distinct.contains(w) {
                            distinct.push(w.clone());
                        }
                    }
                    super::weights::weigh(&self.db, &self.counts, &distinct)?
                }
            };
            let mut found: Vec<Found> = Vec::new();
            for expression in &tiers {
                if found.len() >= limit {
                    break;
                }
                let rendered = expression.render(backend);
                let from: i64 = match ranking.recent_cap {
                    Some(cap) => self
                        .db
                        .query_opt(&floor, params![rendered, session, project, cap as i64 - 1, owner], |r| r.get(0))?
                        .unwrap_or(0),
                    None => 0,
                };
                // Spreading ranks a wider pool: the hits it moves back leave room.
                let pool = (if ranking.spread > 0 { super::ranking::POOL } else { limit }) as i64;
                let read = |r: &super::db::Row<'_>| Ok(Found { id: r.get(0)?, session_id: r.get(1)?, seq: r.get(2)? });
                let mut ranked: Vec<Found> = match backend {
                    Backend::Sqlite => self.db.query_vec(
                        &sqlite_best(),
                        params![rendered, pool, session, project, from, owner],
                        read,
                    )?,
                    Backend::Postgres => {
                        // The expression's own words, with what they weigh.
                        let mine: Vec<Weighed> =
                            weighed.iter().filter(|w| expression.words.contains(&w.word)).cloned().collect();
                        let rarest = super::weights::rarest(&mine, POSTGRES_RARE);
                        let all_rare = rarest.len() == mine.len()
                            && rarest.iter().map(|w| w.messages).sum::<i64>() <= POSTGRES_RARE;
                        let rare = rarest.iter().map(|w| w.phrase.as_str()).collect::<Vec<_>>().join(" or ");
                        let mut binds: Vec<&dyn super::db::Param> =
                            vec![&rendered, &pool, &session, &project, &from, &owner, &rare];
                        for w in &mine {
                            binds.push(&w.weight);
                            binds.push(&w.phrase);
                        }
                        let sql = postgres_best(keys.scoped(), from > 0, all_rare, mine.len());
                        self.db.query_vec(&sql, &binds, read)?
                    }
                };
                if ranking.coordination
                    && (Some(expression) == any.as_ref()
                        || ranking.coordinate_identifiers && Some(expression) == exact.as_ref())
                {
                    // Coordination orders nothing for fewer than two words: its neighbours are
                    // read only when they can count (or join the candidates).
                    let near = if ranking.context > 0 && (words.len() > 1 || ranking.context_hits) {
                        let near = self.neighbours(&keys, &ranked, ranking.context)?;
                        if ranking.context_hits && Some(expression) == any.as_ref() {
                            // A line holding none of the words, next to lines holding them, joins
                            // the candidates after them.
                            let mut seen: std::collections::HashSet<i64> = ranked.iter().map(|f| f.id).collect();
                            let mut added = Vec::new();
                            for f in &ranked {
                                for n in near.get(&f.id).into_iter().flatten() {
                                    if seen.insert(n.id) {
                                        added.push(n.clone());
                                    }
                                }
                            }
                            ranked.extend(added);
                        }
                        Some(near.into_iter().map(|(k, v)| (k, v.into_iter().map(|f| f.id).collect())).collect())
                    } else {
                        None
                    };
                    ranked = super::ranking::by_coordination_in_context(
                        &self.db,
                        Index::History,
                        ranked,
                        |f| f.id,
                        &words,
                        near.as_ref().map(|n| (n, ranking.context_weight)),
                    )?;
                }
                if ranking.spread > 0 {
                    let windows = self.spread_windows(&ranked, ranking)?;
                    ranked = spread(
                        ranked,
                        &|session| windows.get(session).copied().unwrap_or(ranking.spread),
                        ranking.spread_back,
                    );
                }
                for f in ranked {
                    if found.len() >= limit {
                        break;
                    }
                    if !found.iter().any(|h| h.id == f.id) {
                        found.push(f);
                    }
                }
            }
            // Only a hit that is kept gets its snippet, cut from what the index holds of the
            // original (where the match is): bounded however large the original.
            let terms = snippet_terms(query);
            let ids: Vec<i64> = found.iter().map(|f| f.id).collect();
            self.hits_of(&keys, &ids, &|text| snippet(text, &terms))
        })
    }

    /// The messages within `turns` of each of `ranked` in its session and in `keys`' scope, by
    /// the ranked one's id ([`Ranking::context`]).
    fn neighbours(&self, keys: &Keys<'_, '_>, ranked: &[Found], turns: u64) -> Result<HashMap<i64, Vec<Found>>> {
        let ids = serde_json::to_string(&ranked.iter().map(|f| f.id).collect::<Vec<i64>>()).unwrap_or_default();
        let backend = self.db.backend();
        let sql = format!(
            "SELECT c.id, m.id, m.session_id, m.seq FROM messages c JOIN messages m ON m.session_id = c.session_id \
             AND m.seq BETWEEN c.seq - ?2 AND c.seq + ?2 AND m.id <> c.id WHERE c.id IN {} AND {} AND {}",
            super::db::ids_in(backend, 1),
            super::lineage::in_lineage(backend, 3),
            in_sessions(4, 5)
        );
        let mut out: HashMap<i64, Vec<Found>> = HashMap::new();
        self.db.for_each(&sql, params![ids, turns as i64, keys.lineage, keys.project, keys.owner], |r| {
            out.entry(r.get(0)?).or_default().push(Found { id: r.get(1)?, session_id: r.get(2)?, seq: r.get(3)? });
            Ok(true)
        })?;
        Ok(out)
    }

    /// The spreading window of each session holding two or more of `ranked` whose length
    /// narrows it ([`Ranking::spread_per`]); the others spread within [`Ranking::spread`].
    fn spread_windows(&self, ranked: &[Found], ranking: &Ranking) -> Result<HashMap<String, u64>> {
        let mut out = HashMap::new();
        let Some(per) = ranking.spread_per.filter(|p| *p > 0) else { return Ok(out) };
        let mut seen: HashMap<&str, usize> = HashMap::new();
        for f in ranked {
            *seen.entry(f.session_id.as_str()).or_default() += 1;
        }
        for (session, hits) in seen {
            if hits < 2 {
                continue;
            }
            let last: i64 = self
                .db
                .query_value("SELECT coalesce(max(seq), 0) FROM messages WHERE session_id = ?1", params![session])?;
            let window = (last.max(0) as u64 / per).min(ranking.spread);
            if window < ranking.spread {
                out.insert(session.to_string(), window);
            }
        }
        Ok(out)
    }

    /// Messages by row id as history hits (those a vector search found), each with the opening
    /// of its text as the snippet, in the order given; those outside `scope` or gone are left out.
    pub(crate) fn history_hits_by_id(&self, scope: HistoryScope<'_>, ids: &[i64]) -> Result<Vec<HistoryHit>> {
        on_db!(self, "read the history", {
            let keys = scope.keys(&self.db, &self.user)?;
            self.hits_of(&keys, ids, &|text| text.split_whitespace().take(24).collect::<Vec<_>>().join(" "))
        })
    }

    /// Messages by row id as history hits, in the order given, each with `snippet` of the text
    /// the index holds of it; those outside the scope `keys` binds or gone are left out.
    fn hits_of(&self, keys: &Keys<'_, '_>, ids: &[i64], snippet: &dyn Fn(&str) -> String) -> Result<Vec<HistoryHit>> {
        let (session, project, owner) = (&keys.lineage, keys.project, keys.owner);
        let sql = format!(
            "SELECT m.session_id, m.seq, m.role, m.created_at, m.parts FROM messages m WHERE m.id = ?1 \
             AND {} AND {}",
            super::lineage::in_lineage(self.db.backend(), 2),
            in_sessions(3, 4)
        );
        let mut out = Vec::with_capacity(ids.len());
        for &id in ids {
            let row = self.db.query_opt(&sql, params![id, session, project, owner], |r| {
                Ok((r.get::<String>(0)?, r.get::<u64>(1)?, r.get::<String>(2)?, r.get::<i64>(3)?, r.get::<String>(4)?))
            })?;
            if let Some((session_id, seq, role, created_at, parts)) = row {
                let parts: Vec<Part> = serde_json::from_str(&parts).unwrap_or_default();
                out.push(HistoryHit {
                    message_id: id,
                    session_id,
                    seq,
                    role: Role::parse(&role).unwrap_or(Role::User),
                    created_at,
                    snippet: snippet(&index_text(&parts)),
                });
            }
        }
        Ok(out)
    }

    /// The original messages `from..=to` of a session (at most [`HISTORY_RANGE_MAX`]), untouched
    /// by trims or compaction.
    pub fn history_range(&self, session: &str, from: u64, to: u64) -> Result<Vec<Message>> {
        on_db!(self, "read the history", {
            let to = to.min(from.saturating_add(HISTORY_RANGE_MAX - 1));
            super::sessions::owned(&self.db, session, &self.user)?;
            self.messages_between(session, from, to)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{snippet, snippet_terms};

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
        // Cut after a whitespace wider than a byte (a no-break space in a real transcript).
        let text = format!("{}\u{a0}word", "x".repeat(100));
        assert_eq!(snippet(&text, &snippet_terms("word")), "…«word»");
        // Not a match inside a longer identifier.
        assert_eq!(snippet("XTF123-K45Y", &snippet_terms("TF123-K45")), "XTF123-K45Y");
    }
}
