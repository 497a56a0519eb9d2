//! What each word of a history search weighs on PostgreSQL. SQLite's bm25 weighs a word by how
//! few messages hold it (its inverse document frequency); PostgreSQL's `ts_rank` counts every
//! word alike, so a word half the history holds outranks the one that names the topic. The
//! counts come from the word index itself (a GIN posting list), read only as far as
//! [`COUNTED`]: a word held by more weighs little whatever its exact count. A store keeps the
//! counts it read ([`Counts`]) until the index has grown by a tenth.

use super::Result;
use super::db::{Backend, Db, params};
use super::ranking::Expression;

/// How far a word's messages are counted.
const COUNTED: i64 = 5_000;

/// One word of a search and what it weighs.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Weighed {
    /// The word as typed.
    pub word: String,
    /// The word (or identifier) as `websearch_to_tsquery` reads it: a quoted phrase.
    pub phrase: String,
    /// How many indexed messages hold it (at most [`COUNTED`]).
    pub messages: i64,
    /// Its inverse document frequency, as bm25's: `ln(1 + (N − n + ½) / (n + ½))`.
    pub weight: f64,
}

/// The word counts a store has read: each word's count and the index's size when it was read.
#[derive(Debug, Default)]
pub(super) struct Counts(std::sync::Mutex<std::collections::HashMap<String, (i64, i64)>>);

impl Counts {
    /// The most words kept; past it the counts are read afresh.
    const KEPT: usize = 10_000;

    /// `word`'s count when it was read with the index at most a tenth smaller than `total`.
    fn get(&self, word: &str, total: i64) -> Option<i64> {
        let counts = self.0.lock().ok()?;
        let &(messages, at) = counts.get(word)?;
        (total <= at + at / 10).then_some(messages)
    }

    fn put(&self, word: &str, messages: i64, total: i64) {
        if let Ok(mut counts) = self.0.lock() {
            if counts.len() >= Self::KEPT {
                counts.clear();
            }
            counts.insert(word.to_string(), (messages, total));
        }
    }
}

/// `words` weighed against the history index, rarest first (counts read into `counts` or from it).
pub(super) fn weigh(db: &Db, counts: &Counts, words: &[String]) -> Result<Vec<Weighed>> {
    let total = indexed(db)?;
    let mut weighed = Vec::with_capacity(words.len());
    for word in words {
        let phrase = Expression { words: vec![word.clone()], every: false }.render(Backend::Postgres);
        let messages = holding(db, counts, &phrase, total)?;
        let weight = idf(total.max(messages), messages);
        weighed.push(Weighed { word: word.clone(), phrase, messages, weight });
    }
    weighed.sort_by(|a, b| a.messages.cmp(&b.messages).then(b.weight.total_cmp(&a.weight)));
    Ok(weighed)
}

/// Those of `words` more than `share` of the history's messages hold, in order (counts read into
/// `counts` or from it; a word counted to [`COUNTED`] is common whatever the share).
pub(super) fn common(db: &Db, counts: &Counts, words: &[String], share: f64) -> Result<Vec<String>> {
    let total = indexed(db)?;
    let mut out = Vec::new();
    for word in words {
        let phrase = Expression { words: vec![word.clone()], every: false }.render(db.backend());
        let messages = holding(db, counts, &phrase, total)?;
        if messages >= COUNTED || messages as f64 > share * total as f64 {
            out.push(word.clone());
        }
    }
    Ok(out)
}

/// The history index's size: message ids only grow, so the newest indexed id stands for it (read
/// from the primary key; a count would read every row).
fn indexed(db: &Db) -> Result<i64> {
    let sql = match db.backend() {
        Backend::Sqlite => "SELECT coalesce(max(id), 0) FROM messages",
        _ => "SELECT coalesce(max(message_id), 0) FROM message_search",
    };
    db.query_value(sql, params![])
}

/// How many indexed messages hold `phrase` (as the store's backend reads it), counted to
/// [`COUNTED`]: from `counts` while the index has not grown by a tenth since, else read and kept.
fn holding(db: &Db, counts: &Counts, phrase: &str, total: i64) -> Result<i64> {
    if let Some(messages) = counts.get(phrase, total) {
        return Ok(messages);
    }
    let sql = match db.backend() {
        Backend::Sqlite => "SELECT count(*) FROM (SELECT 1 FROM message_fts WHERE message_fts MATCH ?1 LIMIT ?2)",
        _ => {
            "SELECT count(*) FROM (SELECT 1 FROM message_search \
             WHERE words @@ websearch_to_tsquery('seshat', ?1) LIMIT ?2) c"
        }
    };
    let messages: i64 = db.query_value(sql, params![phrase, COUNTED])?;
    counts.put(phrase, messages, total);
    Ok(messages)
}

/// bm25's inverse document frequency of a word `n` of `total` messages hold (never negative).
fn idf(total: i64, n: i64) -> f64 {
    let (total, n) = (total as f64, n as f64);
    (1.0 + (total - n + 0.5) / (n + 0.5)).ln()
}

/// The rarest of `weighed` (rarest first) whose messages together are at most `budget`, at least
/// one: every message holding one of them can be ranked, the others' only among the newest.
pub(super) fn rarest(weighed: &[Weighed], budget: i64) -> &[Weighed] {
    let mut sum = 0;
    let kept = weighed
        .iter()
        .take_while(|w| {
            sum += w.messages;
            sum <= budget
        })
        .count();
    &weighed[..kept.max(1).min(weighed.len())]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn weighed(messages: i64) -> Weighed {
        Weighed { word: String::new(), phrase: String::new(), messages, weight: idf(1000, messages) }
    }

    #[test]
    fn a_rarer_word_weighs_more_and_none_weighs_less_than_nothing() {
        assert!(idf(1000, 3) > idf(1000, 30));
        assert!(idf(1000, 30) > idf(1000, 900));
        assert!(idf(1000, 1000) > 0.0);
    }

    #[test]
    fn the_rarest_words_are_those_whose_messages_fit_the_budget_and_at_least_one() {
        let words = [weighed(10), weighed(50), weighed(400), weighed(5000)];
        assert_eq!(rarest(&words, 100).len(), 2);
        assert_eq!(rarest(&words, 460).len(), 3);
        assert_eq!(rarest(&words[3..], 100).len(), 1);
        assert!(rarest(&[], 100).is_empty());
    }
}
