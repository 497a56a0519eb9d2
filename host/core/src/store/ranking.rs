//! How a search by words reads what a person typed and ranks what matches: one set of rules for
//! the history, the knowledge index and memory. Each rule is a switch in [`Ranking`], so the
//! retrieval benchmark (`benches/recall.rs`) measures what each one is worth on real dialogues;
//! the defaults are the rules that earned their place there (BENCHMARKS.md, "History search on
//! real dialogues").

use super::Result;
use super::db::{Backend, Db, params};

/// The rules of lexical ranking. [`Ranking::default`] is what every search uses.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Ranking {
    /// Common words (`the`, `what`, `did`…) are left out of the query, unless it has nothing
    /// else: they match nearly every message and drown the words that matter.
    pub stop_words: bool,
    /// The words questions are phrased with but answers are not (`said`, `discuss`, `think`…)
    /// are left out too.
    pub question_words: bool,
    /// A message holding one of the query's identifiers exactly (`TF123-K45`, `src/a.rs:42`)
    /// comes before the others.
    pub identifiers_first: bool,
    /// Messages holding every word of the query come before those holding some (a tier of its
    /// own), instead of one bm25 ranking over any of the words.
    pub all_words_first: bool,
    /// Only the most recent this-many matches of an expression are ranked (bounds the cost of a
    /// word most messages hold); `None` ranks them all.
    pub recent_cap: Option<usize>,
    /// A message within this many turns of a better-ranked hit in its session moves after the
    /// hits that are not: the first hits then cover more places than one stretch of one
    /// conversation (nothing is left out). 0 turns it off.
    pub spread: u64,
    /// How far back [`Ranking::spread`] moves a hit near a better one: behind this many of the
    /// hits that are not near one (`None`: behind all of them).
    pub spread_back: Option<usize>,
    /// A session shorter than [`Ranking::spread`] × this many messages spreads within
    /// proportionally fewer turns (its length ÷ this; none under this many messages): in a chat
    /// of a few lines, every line is near every other. `None` spreads every session alike.
    pub spread_per: Option<u64>,
    /// Among the messages holding some of the query's words, those holding more of them come
    /// first (then bm25): a coordination level between every word and any.
    pub coordination: bool,
    /// Coordination orders the identifiers tier too: among the messages holding one of the
    /// query's identifiers, those holding more of its words first.
    pub coordinate_identifiers: bool,
    /// A word more than this share of the history's messages hold (a name every turn carries, a
    /// project's name) counts neither toward the every-word tier nor toward coordination: it
    /// still ranks by bm25, which weighs it by how common it is. `None` counts every word.
    pub common: Option<f64>,
    /// Coordination (history only) also counts the query's words a message's neighbours hold,
    /// within this many turns of it in its session, each such word worth
    /// [`Ranking::context_weight`] of one the message holds itself: a short line answering a
    /// question is often named only by the lines around it ("Ice chips, just ice chips" after
    /// "Am I allowed to drink anything?"). Chosen on the tuning splits (BENCHMARKS.md): within 2
    /// turns at half a word, any@10 +1.3 QMSum, +5.6 FriendsQA, +2.1 Molweni, ±0 coding, and
    /// higher at 1 and 5 on each; at a whole word within 3 turns QMSum lost 1.3. 0 turns it off.
    pub context: u64,
    /// What a word only a neighbour holds counts for in [`Ranking::context`], against 1 for a
    /// word the message holds.
    pub context_weight: f64,
    /// With [`Ranking::context`], a message holding none of the query's words but next to
    /// messages holding some is a candidate too (ranked by its neighbours' words alone). Off:
    /// within 0.4 of the default at 10 on every tuning split, and a hit holding none of the
    /// words reads as a wrong one.
    pub context_hits: bool,
}

impl Default for Ranking {
    fn default() -> Self {
        Ranking {
            stop_words: true,
            question_words: true,
            identifiers_first: true,
            all_words_first: true,
            recent_cap: None,
            spread: 5,
            spread_back: Some(2),
            spread_per: Some(20),
            coordination: true,
            coordinate_identifiers: true,
            common: None,
            context: 2,
            context_weight: 0.5,
            context_hits: false,
        }
    }
}

impl Ranking {
    /// The ranking before the recall benchmark on real dialogues (identifiers, then all words,
    /// then any, each over the 500 most recent matches; a short stop list): the benchmark's
    /// reference for what each rule changed.
    pub fn before_tuning() -> Self {
        Ranking {
            stop_words: true,
            question_words: false,
            identifiers_first: true,
            all_words_first: true,
            recent_cap: Some(500),
            spread: 0,
            spread_back: None,
            spread_per: None,
            coordination: false,
            coordinate_identifiers: false,
            common: None,
            context: 0,
            context_weight: 0.5,
            context_hits: false,
        }
    }
}

/// How many candidates a ranking that reorders (by fusion with vectors) reads to
/// return `limit`.
pub(crate) fn candidates(limit: usize) -> usize {
    (limit * 5).clamp(50, 500)
}

/// How many of a word search's best matches a ranking that reorders them (spreading) reads.
pub(crate) const POOL: usize = 500;

/// The query's kept words, each an expression of its own (what [`Ranking::coordination`] counts).
pub(crate) fn kept_words(query: &str, ranking: &Ranking) -> Vec<Expression> {
    kept(&terms(query), ranking).into_iter().map(|w| Expression { words: vec![w.to_string()], every: false }).collect()
}

/// What a search by words matches: messages holding every one of `words` or any of them, each
/// word an exact phrase (nothing typed is search syntax).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Expression {
    /// The words (or identifiers), as typed.
    pub words: Vec<String>,
    /// Every word, rather than any.
    pub every: bool,
}

impl Expression {
    /// The expression as `backend`'s full-text search reads it: an FTS5 `MATCH` expression on
    /// SQLite, `websearch_to_tsquery` syntax on PostgreSQL, every word quoted as a phrase.
    pub fn render(&self, backend: Backend) -> String {
        let (quoted, join): (Vec<String>, &str) = match backend {
            Backend::Sqlite => (
                self.words.iter().map(|w| format!("\"{}\"", w.replace('"', "\"\""))).collect(),
                if self.every { " AND " } else { " OR " },
            ),
            _ => (
                self.words.iter().map(|w| format!("\"{}\"", w.replace('"', " "))).collect(),
                if self.every { " " } else { " or " },
            ),
        };
        quoted.join(join)
    }
}

/// The word indexes coordination can count words in.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Index {
    /// The history (`message_fts`; PostgreSQL's `message_search`).
    History,
    /// The knowledge index (`chunk_fts`; PostgreSQL's `chunks.words`).
    Knowledge,
    /// Memory's word index (`memory_fts`; PostgreSQL's `memory_search`).
    Memory,
}

impl Index {
    /// SQLite: SQL selecting the ids (`?2 ..= ?3`) this index matches for the expression bound
    /// at `?1`.
    fn matching(self) -> &'static str {
        match self {
            Index::History => "SELECT rowid FROM message_fts WHERE message_fts MATCH ?1 AND rowid BETWEEN ?2 AND ?3",
            Index::Knowledge => "SELECT rowid FROM chunk_fts WHERE chunk_fts MATCH ?1 AND rowid BETWEEN ?2 AND ?3",
            Index::Memory => "SELECT rowid FROM memory_fts WHERE memory_fts MATCH ?1 AND rowid BETWEEN ?2 AND ?3",
        }
    }

    /// PostgreSQL: the table holding each id's words, and its id column.
    fn words(self) -> (&'static str, &'static str) {
        match self {
            Index::History => ("message_search", "message_id"),
            Index::Knowledge => ("chunks", "id"),
            Index::Memory => ("memory_search", "entity_id"),
        }
    }
}

/// `ranked` (best first; `id` gives each one's id in `index`) reordered by how many of `words`
/// each holds, most first, keeping the order among equals ([`Ranking::coordination`]).
pub(crate) fn by_coordination<T>(
    db: &Db,
    index: Index,
    ranked: Vec<T>,
    id: impl Fn(&T) -> i64,
    words: &[Expression],
) -> Result<Vec<T>> {
    by_coordination_in_context(db, index, ranked, id, words, None)
}

/// [`by_coordination`] where a word one of a message's `neighbours` holds (and it does not)
/// counts `weight` of one it holds ([`Ranking::context`]).
pub(crate) fn by_coordination_in_context<T>(
    db: &Db,
    index: Index,
    mut ranked: Vec<T>,
    id: impl Fn(&T) -> i64,
    words: &[Expression],
    neighbours: Option<(&std::collections::HashMap<i64, Vec<i64>>, f64)>,
) -> Result<Vec<T>> {
    if ranked.len() < 2 || words.len() < 2 {
        return Ok(ranked);
    }
    let mut ids: Vec<i64> = ranked.iter().map(&id).collect();
    if let Some((near, _)) = neighbours {
        ids.extend(near.values().flatten().copied());
    }
    let held = held(db, index, &ids, words)?;
    let holds = |i: i64| held.get(&i).copied().unwrap_or(0);
    let key = |r: &T| -> f64 {
        let own = holds(id(r));
        let mut key = own.count_ones() as f64;
        if let Some((near, weight)) = neighbours {
            let around = near.get(&id(r)).into_iter().flatten().fold(0u64, |m, &n| m | holds(n));
            key += weight * (around & !own).count_ones() as f64;
        }
        key
    };
    let mut keyed: Vec<(f64, T)> = ranked.drain(..).map(|r| (key(&r), r)).collect();
    keyed.sort_by(|a, b| b.0.total_cmp(&a.0));
    Ok(keyed.into_iter().map(|(_, r)| r).collect())
}

/// Which of `words` (the first 63) each of `ids` holds in `index`: bit `i` for `words[i]`.
fn held(db: &Db, index: Index, ids: &[i64], words: &[Expression]) -> Result<std::collections::HashMap<i64, u64>> {
    let mut held: std::collections::HashMap<i64, u64> = ids.iter().map(|&i| (i, 0)).collect();
    let words = &words[..words.len().min(63)];
    match db.backend() {
        Backend::Sqlite => {
            // Each word's matches read in id order within the ids' span (no ranking): one pass
            // over its postings, where a lookup per id would read them once per id.
            let (low, high) = ids.iter().fold((i64::MAX, i64::MIN), |(l, h), &i| (l.min(i), h.max(i)));
            for (bit, w) in words.iter().enumerate() {
                db.for_each(index.matching(), params![w.render(Backend::Sqlite), low, high], |r| {
                    if let Some(h) = held.get_mut(&r.get::<i64>(0)?) {
                        *h |= 1 << bit;
                    }
                    Ok(true)
                })?;
            }
        }
        backend => {
            // The ids' own words, each checked against every word in one statement: a word's
            // matches within the span could be most of the table.
            let (table, key) = index.words();
            let bits: Vec<String> = (0..words.len())
                .map(|i| {
                    format!(
                        "CASE WHEN words @@ websearch_to_tsquery('seshat', ?{}) THEN {} ELSE 0 END",
                        i + 2,
                        1u64 << i
                    )
                })
                .collect();
            let sql = format!(
                "SELECT {key}, CAST({} AS bigint) FROM {table} WHERE {key} IN {}",
                bits.join(" + "),
                super::db::ids_in(backend, 1)
            );
            let list = serde_json::to_string(ids).unwrap_or_default();
            let rendered: Vec<String> = words.iter().map(|w| w.render(backend)).collect();
            let mut bound: Vec<&dyn super::db::Param> = vec![&list];
            bound.extend(rendered.iter().map(|w| w as &dyn super::db::Param));
            db.for_each(&sql, &bound, |r| {
                held.insert(r.get(0)?, r.get::<i64>(1)? as u64);
                Ok(true)
            })?;
        }
    }
    Ok(held)
}

/// Words too common to help find a message: left out of the query unless it has nothing else (a
/// common English stop list: function words and question words).
pub const STOP_WORDS: &[&str] = &[
    "a",
    "about",
    "above",
    "after",
    "again",
    "against",
    "all",
    "am",
    "an",
    "and",
    "any",
    "are",
    "as",
    "at",
    "be",
    "because",
    "been",
    "before",
    "being",
    "below",
    "between",
    "both",
    "but",
    "by",
    "can",
    "could",
    "did",
    "do",
    "does",
    "doing",
    "down",
    "during",
    "each",
    "few",
    "for",
    "from",
    "further",
    "had",
    "has",
    "have",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "herself",
    "him",
    "himself",
    "his",
    "how",
    "i",
    "if",
    "in",
    "into",
    "is",
    "it",
    "its",
    "itself",
    "just",
    "me",
    "more",
    "most",
    "my",
    "myself",
    "no",
    "nor",
    "not",
    "now",
    "of",
    "off",
    "on",
    "once",
    "only",
    "or",
    "other",
    "our",
    "ours",
    "ourselves",
    "out",
    "over",
    "own",
    "same",
    "she",
    "should",
    "so",
    "some",
    "such",
    "than",
    "that",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "through",
    "to",
    "too",
    "under",
    "until",
    "up",
    "us",
    "very",
    "was",
    "we",
    "were",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "why",
    "will",
    "with",
    "would",
    "you",
    "your",
    "yours",
    "yourself",
    "yourselves",
];

/// Words a question is phrased with that its answer rarely holds.
const QUESTION_WORDS: &[&str] = &[
    "said",
    "say",
    "says",
    "saying",
    "discuss",
    "discussed",
    "discussion",
    "discussions",
    "think",
    "thinks",
    "thought",
    "talk",
    "talked",
    "talking",
    "mention",
    "mentioned",
    "mentions",
    "tell",
    "told",
    "opinion",
    "opinions",
    "view",
    "views",
    "agreed",
    "agree",
    "decided",
    "decide",
    "decision",
    "summarize",
    "summarise",
    "summary",
];

/// One term of what a person typed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Term<'q> {
    /// As typed, trimmed of surrounding punctuation and of a possessive `'s`.
    pub text: &'q str,
    /// It holds a digit, or joins words with punctuation other than an apostrophe or a hyphen
    /// (`TF123-K45`, `src/a.rs:42`, `snake_case`).
    pub identifier: bool,
}

/// The terms of `query`, in order.
pub(crate) fn terms(query: &str) -> Vec<Term<'_>> {
    query
        .split_whitespace()
        .map(|t| t.trim_matches(|c: char| !c.is_alphanumeric()))
        .map(|t| {
            t.strip_suffix("'s")
                .or_else(|| t.strip_suffix("’s"))
                .or_else(|| t.strip_suffix("'S"))
                .unwrap_or(t)
                .trim_matches(|c: char| !c.is_alphanumeric())
        })
        .filter(|t| !t.is_empty())
        .map(|t| {
            // Joined by punctuation other than an apostrophe or a hyphen: a hyphen joins
            // ordinary words (`decision-making`, `Paul-Hus`); with a digit it is an identifier.
            let joined = t.split(|c: char| !c.is_alphanumeric() && !matches!(c, '\'' | '’' | '-')).nth(1).is_some();
            Term { text: t, identifier: joined || t.chars().any(|c| c.is_ascii_digit()) }
        })
        .collect()
}

/// Whether `word` is left out of a query under `ranking`.
fn is_stop(word: &str, ranking: &Ranking) -> bool {
    let w = word.to_lowercase();
    (ranking.stop_words && STOP_WORDS.contains(&w.as_str()))
        || (ranking.question_words && QUESTION_WORDS.contains(&w.as_str()))
}

/// The query's words as `ranking` keeps them (all of them when it would keep none).
pub(crate) fn kept<'q>(terms: &[Term<'q>], ranking: &Ranking) -> Vec<&'q str> {
    let words: Vec<&str> = terms.iter().filter(|t| t.identifier || !is_stop(t.text, ranking)).map(|t| t.text).collect();
    let words = if words.is_empty() { terms.iter().map(|t| t.text).collect() } else { words };
    // A word typed twice is one word: repeated, it changes no match and no order, but misleads
    // PostgreSQL's planner into taking `ok & ok & ok` for a rare combination.
    let mut seen = std::collections::HashSet::new();
    words.into_iter().filter(|w| seen.insert(w.to_lowercase())).collect()
}

/// The expressions for `query`, in the order their matches rank: `exact`, any of its
/// identifiers as an exact phrase (when `identifiers_first`); `all`, every kept word (when
/// `all_words_first` and there are two or more); `any`, any kept word.
pub(crate) fn expressions(query: &str, ranking: &Ranking) -> Expressions {
    let terms = terms(query);
    let identifiers: Vec<String> = terms.iter().filter(|t| t.identifier).map(|t| t.text.to_string()).collect();
    let words: Vec<String> = kept(&terms, ranking).into_iter().map(str::to_string).collect();
    let expression =
        |words: &[String], every: bool| (!words.is_empty()).then(|| Expression { words: words.to_vec(), every });
    Expressions {
        exact: if ranking.identifiers_first { expression(&identifiers, false) } else { None },
        all: if ranking.all_words_first && words.len() > 1 { expression(&words, true) } else { None },
        any: expression(&words, false),
    }
}

/// A query as expressions, tried in this order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Expressions {
    /// Any identifier, as an exact phrase.
    pub exact: Option<Expression>,
    /// Every word.
    pub all: Option<Expression>,
    /// Any word.
    pub any: Option<Expression>,
}

impl Expressions {
    /// The every-word tier without the words of `common` (none when fewer than two are left).
    pub fn without_common(mut self, common: &[String]) -> Self {
        if let Some(all) = self.all.take() {
            let words: Vec<String> = all.words.into_iter().filter(|w| !common.contains(w)).collect();
            self.all = (words.len() > 1).then_some(Expression { words, every: true });
        }
        self
    }

    /// The expressions in the order they are tried.
    pub fn tiers(self) -> impl Iterator<Item = Expression> {
        [self.exact, self.all, self.any].into_iter().flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An expression as SQLite's FTS5 reads it.
    fn fts5(e: &Option<Expression>) -> Option<String> {
        e.as_ref().map(|e| e.render(Backend::Sqlite))
    }

    #[test]
    fn identifiers_become_exact_phrases_and_common_words_drop_out() {
        let e = expressions("why did TF123-K45 fail in src/a.rs:42?", &Ranking::before_tuning());
        assert_eq!(fts5(&e.exact).as_deref(), Some(r#""TF123-K45" OR "src/a.rs:42""#));
        assert_eq!(fts5(&e.all).as_deref(), Some(r#""TF123-K45" AND "fail" AND "src/a.rs:42""#));
        assert_eq!(fts5(&e.any).as_deref(), Some(r#""TF123-K45" OR "fail" OR "src/a.rs:42""#));
    }

    #[test]
    fn a_possessive_is_a_word_not_an_identifier() {
        let t = terms("What are Kate's hobbies? Who’s John’s friend, and don't");
        let got: Vec<(&str, bool)> = t.iter().map(|t| (t.text, t.identifier)).collect();
        assert_eq!(
            got,
            [
                ("What", false),
                ("are", false),
                ("Kate", false),
                ("hobbies", false),
                ("Who", false),
                ("John", false),
                ("friend", false),
                ("and", false),
                ("don't", false)
            ]
        );
    }

    #[test]
    fn fts_syntax_typed_by_a_person_is_quoted() {
        let e = expressions(r#"NEAR "upload" OR x*"#, &Ranking::before_tuning());
        assert_eq!(e.exact, None);
        assert_eq!(fts5(&e.all).as_deref(), Some(r#""NEAR" AND "upload" AND "x""#));
        assert_eq!(fts5(&e.any).as_deref(), Some(r#""NEAR" OR "upload" OR "x""#));
    }

    #[test]
    fn postgres_reads_the_same_expressions_in_websearch_syntax() {
        let e = expressions(r#"why did TF123-K45 "fail" in src/a.rs:42?"#, &Ranking::before_tuning());
        assert_eq!(e.exact.unwrap().render(Backend::Postgres), r#""TF123-K45" or "src/a.rs:42""#);
        assert_eq!(e.all.unwrap().render(Backend::Postgres), r#""TF123-K45" "fail" "src/a.rs:42""#);
    }

    #[test]
    fn a_query_of_common_words_only_keeps_them() {
        assert_eq!(
            fts5(&expressions("what was it", &Ranking::default()).any).as_deref(),
            Some(r#""what" OR "was" OR "it""#)
        );
        assert_eq!(expressions("  ?! ", &Ranking::default()), Expressions { exact: None, all: None, any: None });
    }

    #[test]
    fn common_words_leave_the_every_word_tier_but_not_the_query() {
        let e = expressions("what did Ross name his son", &Ranking::default());
        let common = vec!["Ross".to_string()];
        let without = e.clone().without_common(&common);
        assert_eq!(fts5(&without.all).as_deref(), Some(r#""name" AND "son""#));
        assert_eq!(without.any, e.any, "every kept word still ranks by bm25");
        // Fewer than two words left: no every-word tier.
        let e = expressions("Ross son", &Ranking::default());
        assert_eq!(e.without_common(&common).all, None);
    }

    #[test]
    fn question_words_go_by_default() {
        let q = "What did the group discuss about the remote's buttons?";
        assert_eq!(
            fts5(&expressions(q, &Ranking::default()).any).as_deref(),
            Some(r#""group" OR "remote" OR "buttons""#)
        );
        let r = Ranking { question_words: false, ..Ranking::default() };
        assert_eq!(fts5(&expressions(q, &r).any).as_deref(), Some(r#""group" OR "discuss" OR "remote" OR "buttons""#));
    }
}
