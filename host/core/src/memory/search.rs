//! `search_nodes`: ranked word search (FTS5, bm25, names weighted above types above
//! observations, diacritics ignored, words matched by their stem) over the query's words as the
//! shared ranking rules keep them ([`crate::store::ranking`]): the entities holding every word,
//! then substring matches (FTS5 trigram), so everything the reference server's case-insensitive
//! substring search finds is found too, and only when neither finds anything, the entities
//! holding some of the words.

use std::collections::HashSet;

use super::graph::{Graph, json_ids, load_entities, relations_among};
use super::{Memory, Result, Scope};
use crate::store::db::{Backend, params};
use crate::store::ranking::{self, Expression};

/// bm25 weights of the indexed columns: name, type, observations.
const RANK: &str = "bm25(10.0, 4.0, 1.0)";

/// Word matches ranked per query: the most recently created this many (a term that matches a
/// large share of a big memory is ranked among its newest matches, keeping a search within a few
/// milliseconds at 100k entities).
pub(crate) const RANKED_CANDIDATES: usize = 2_000;

/// How many of a word's newest and of its oldest matches [`Memory::is_common`] looks at.
const COMMON_SAMPLE: i64 = 512;

/// The words of a query as the shared ranking rules keep them (common and question words left out
/// unless nothing else is left, an identifier kept whole), each a phrase of its own (so the
/// query's punctuation is never search syntax).
fn query_words(query: &str) -> Vec<Expression> {
    ranking::kept_words(query, &ranking::Ranking::default())
}

/// Several words as one expression: every one of them, or any.
fn joined(words: &[&Expression], every: bool) -> Expression {
    Expression { words: words.iter().flat_map(|w| w.words.iter().cloned()).collect(), every }
}

/// The newest [`RANKED_CANDIDATES`] entities matching the expression bound at `?1`, each with its
/// rank (lower is better): bm25 weighting names above types above observations on SQLite,
/// `ts_rank` with the same order of weights on PostgreSQL.
fn window_sql(backend: Backend) -> String {
    match backend {
        Backend::Sqlite => format!(
            "SELECT rowid, rank FROM memory_fts WHERE memory_fts MATCH ?1 AND rank MATCH '{RANK}' \
             ORDER BY rowid DESC LIMIT {RANKED_CANDIDATES}"
        ),
        _ => format!(
            "SELECT entity_id, -ts_rank('{{0.1, 0.1, 0.4, 1.0}}', words, websearch_to_tsquery('seshat', ?1)) \
             FROM memory_search WHERE words @@ websearch_to_tsquery('seshat', ?1) \
             ORDER BY entity_id DESC LIMIT {RANKED_CANDIDATES}"
        ),
    }
}

/// The whole query as one trigram phrase (a substring match).
fn substring_query(query: &str) -> String {
    format!("\"{}\"", query.replace('"', "\"\""))
}

/// SQL matching a live entity `e` the caller (bound at ?9) may read: one of three (scope, project)
/// places of the caller's own (bound as ?3..?8), or a team scope granted to the caller — any (?10
/// `*`), one (?10 its name) or none (?10 empty). The grant is checked here, in the query. The
/// queries join with `CROSS JOIN` so that SQLite starts from the full-text match or the id list:
/// left to itself it may scan every entity of the scopes through the OR terms instead (15–40 ms
/// at 100k entities).
const VISIBLE: &str = "e.deleted_by IS NULL AND e.staged = 0 AND (e.expires_at IS NULL OR e.expires_at > ?11) \
     AND ((e.owner = ?9 AND ((e.scope = ?3 AND e.project = ?4) \
     OR (e.scope = ?5 AND e.project = ?6) OR (e.scope = ?7 AND e.project = ?8))) \
     OR (e.scope = 'team' AND (?10 = '*' OR e.owner = ?10) \
     AND e.owner IN (SELECT team FROM team_members WHERE user_name = ?9)))";

/// What [`VISIBLE`] binds at ?3..?11 for a search of `scope` by `user`.
struct Binds {
    places: [(&'static str, String); 3],
    user: String,
    teams: String,
    /// Now, in Unix milliseconds (what has expired by then is left out).
    now: i64,
}

impl Binds {
    fn of(places: &[super::Place], scope: Option<&Scope>, user: &str) -> Binds {
        // A scope no row has: a place left unused.
        let none = ("none", String::new());
        let own: Vec<(&'static str, String)> =
            places.iter().filter(|p| p.scope.team().is_none()).map(|p| (p.kind(), p.project.clone())).collect();
        let at = |i: usize| own.get(i).or(own.first()).cloned().unwrap_or_else(|| none.clone());
        let teams = match scope {
            None => "*".to_string(),
            Some(Scope::Team(team)) => team.clone(),
            Some(_) => String::new(),
        };
        Binds { places: [at(0), at(1), at(2)], user: user.to_string(), teams, now: crate::store::now_ms() }
    }
}

impl Memory<'_> {
    /// Ids of the newest [`RANKED_CANDIDATES`] entities holding every word, best first by bm25.
    ///
    /// bm25 first counts the entities holding each word, reading the word's whole doclist, which
    /// for a word in every entity costs ~2.5 ms at 100k. FTS5 clamps the weight of a word held by
    /// half the entities or more to 1e-6, so such a word filters but does not rank: when a query
    /// also has rarer words, the window is ranked by those alone and then filtered to the entities
    /// that hold every word. A query of common words only is ranked by them all.
    fn ranked(&self, words: &[Expression]) -> Result<Vec<i64>> {
        let backend = self.db.backend();
        let all = joined(&words.iter().collect::<Vec<_>>(), true);
        let mut rare = Vec::new();
        // FTS5's clamp of common words' weight (see above) is SQLite's alone.
        if words.len() > 1 && backend == Backend::Sqlite {
            // Two subqueries: SQLite reads min or max from the index end only when alone.
            let ids: (i64, i64) = self.db.query_row(
                "SELECT coalesce((SELECT min(id) FROM memory_entities), 0), \
                 coalesce((SELECT max(id) FROM memory_entities), 0)",
                params![],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?;
            for w in words {
                if !self.is_common(&w.render(backend), ids)? {
                    rare.push(w);
                }
            }
        }
        let by = if rare.is_empty() || rare.len() == words.len() { all.clone() } else { joined(&rare, true) };
        let window: Vec<(i64, f64)> =
            self.db.query_vec(&window_sql(backend), params![by.render(backend)], |r| Ok((r.get(0)?, r.get(1)?)))?;
        let mut window = if by == all || window.is_empty() {
            window
        } else {
            let (low, high) = (window[window.len() - 1].0, window[0].0);
            let holding: HashSet<i64> = self
                .db
                .query_vec(
                    "SELECT rowid FROM memory_fts WHERE memory_fts MATCH ?1 AND rowid BETWEEN ?2 AND ?3",
                    params![all.render(backend), low, high],
                    |r| r.get(0),
                )?
                .into_iter()
                .collect();
            window.into_iter().filter(|(id, _)| holding.contains(id)).collect()
        };
        window.sort_by(|a, b| a.1.total_cmp(&b.1));
        Ok(window.into_iter().map(|(id, _)| id).collect())
    }

    /// Ids of the newest [`RANKED_CANDIDATES`] entities holding any of `words`, those holding
    /// more of them first, then by bm25 ([`ranking::Ranking::coordination`]): the last tier, for
    /// a question phrased unlike the note that answers it.
    fn ranked_any(&self, words: &[Expression]) -> Result<Vec<i64>> {
        let backend = self.db.backend();
        let any = joined(&words.iter().collect::<Vec<_>>(), false);
        let mut window: Vec<(i64, f64)> =
            self.db.query_vec(&window_sql(backend), params![any.render(backend)], |r| Ok((r.get(0)?, r.get(1)?)))?;
        window.sort_by(|a, b| a.1.total_cmp(&b.1));
        let ids: Vec<i64> = window.into_iter().map(|(id, _)| id).collect();
        Ok(ranking::by_coordination(self.db, ranking::Index::Memory, ids, |&id| id, words)?)
    }

    /// Whether a word looks held by half the entities or more: it fills at least half the id span
    /// of its [`COMMON_SAMPLE`] newest matches and of its oldest. A cheap, conservative sign: a
    /// word called common loses its weight in the ranking, so a word thinly spread at either end
    /// is called rare (which only costs time). `first` and `last` are the lowest and highest
    /// entity ids.
    fn is_common(&self, word: &str, (first, last): (i64, i64)) -> Result<bool> {
        for order in ["DESC", "ASC"] {
            let (count, low, high): (i64, Option<i64>, Option<i64>) = self.db.query_row(
                &format!(
                    "SELECT count(*), min(rowid), max(rowid) FROM (SELECT rowid FROM memory_fts \
                     WHERE memory_fts MATCH ?1 ORDER BY rowid {order} LIMIT {COMMON_SAMPLE})"
                ),
                params![word],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )?;
            let span = match (order, low, high) {
                ("DESC", Some(low), Some(_)) => last - low + 1,
                (_, Some(_), Some(high)) => high - first + 1,
                _ => return Ok(false),
            };
            if count < COMMON_SAMPLE || 2 * count < span {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Entities matching `query` (at most `limit`, best first) and the relations among them;
    /// `true` when more matched than were returned.
    pub fn search(&mut self, query: &str, scope: Option<&Scope>, limit: usize) -> Result<(Graph, bool)> {
        let (ids, more) = self.search_ids(query, scope, limit)?;
        Ok((self.graph_of(&ids, scope)?, more))
    }

    /// The entities `ids` (in that order) and the relations among them, as a search returns them.
    pub(crate) fn graph_of(&mut self, ids: &[i64], scope: Option<&Scope>) -> Result<Graph> {
        on_memory_db!(self, "search memory", {
            let places = self.visible(self.db, scope)?;
            let entities = load_entities(self.db, ids, self.detail)?;
            let keys: HashSet<String> = entities.iter().map(|e| super::name_key(&e.name)).collect();
            let relations = relations_among(self.db, &places, &keys)?;
            Ok(Graph { entities, relations })
        })
    }

    /// The ids of the live entities `scope` sees (for filtering a vector search before ranking).
    pub(crate) fn visible_ids(&mut self, scope: Option<&Scope>) -> Result<HashSet<i64>> {
        on_memory_db!(self, "search memory", {
            let places = self.visible(self.db, scope)?;
            let b = Binds::of(&places, scope, &self.user);
            let [p0, p1, p2] = &b.places;
            let ids = self.db.query_vec(
                &format!(
                    "SELECT e.id FROM memory_entities e WHERE CAST(?1 AS BIGINT) IS NULL \
                     AND CAST(?2 AS BIGINT) IS NULL AND {VISIBLE}"
                ),
                params![None::<i64>, None::<i64>, p0.0, p0.1, p1.0, p1.1, p2.0, p2.1, b.user, b.teams, b.now],
                |r| r.get(0),
            )?;
            Ok(ids.into_iter().collect())
        })
    }

    /// [`search`](Self::search)'s ranking alone: the ids, best first, and whether more matched.
    pub(crate) fn search_ids(&mut self, query: &str, scope: Option<&Scope>, limit: usize) -> Result<(Vec<i64>, bool)> {
        on_memory_db!(self, "search memory", {
            let places = self.visible(self.db, scope)?;
            let query = query.trim();
            let want = limit as i64 + 1;
            let b = Binds::of(&places, scope, &self.user);
            let [p0, p1, p2] = &b.places;
            let mut ids: Vec<i64> = Vec::new();
            let mut seen = HashSet::new();
            let mut push = |found: Vec<i64>, ids: &mut Vec<i64>| {
                for id in found {
                    if seen.insert(id) {
                        ids.push(id);
                    }
                }
            };
            if query.is_empty() {
                return Ok((Vec::new(), false));
            }
            // Ids of visible entities from `sql`, its ?1 bound to `first` and ?2 to `limit`.
            let visible_ids = |sql: &str, first: &str, limit: i64| -> Result<Vec<i64>> {
                Ok(self.db.query_vec(
                    sql,
                    params![first, limit, p0.0, p0.1, p1.0, p1.1, p2.0, p2.1, b.user, b.teams, b.now],
                    |r| r.get(0),
                )?)
            };
            let backend = self.db.backend();
            let words = query_words(query);
            // Rank a window, then check visibility best first, a shortlist at a time: joining
            // every candidate to its entity cost a lookup each (2,000 at 100k entities).
            let shortlist_sql = match backend {
                Backend::Sqlite => format!(
                    "SELECT e.id FROM json_each(?1) j CROSS JOIN memory_entities e ON e.id = j.value \
                     WHERE {VISIBLE} LIMIT ?2"
                ),
                _ => format!(
                    "SELECT e.id FROM json_array_elements_text(CAST(?1 AS json)) AS j(value) \
                     JOIN memory_entities e ON e.id = CAST(j.value AS bigint) WHERE {VISIBLE} LIMIT ?2"
                ),
            };
            let take_visible = |ranked: Vec<i64>, ids: &mut Vec<i64>, push: &mut dyn FnMut(Vec<i64>, &mut Vec<i64>)| {
                for shortlist in ranked.chunks(want as usize * 4) {
                    let shown: HashSet<i64> =
                        visible_ids(&shortlist_sql, &json_ids(shortlist), shortlist.len() as i64)?
                            .into_iter()
                            .collect();
                    push(shortlist.iter().copied().filter(|id| shown.contains(id)).collect(), ids);
                    if ids.len() as i64 >= want {
                        break;
                    }
                }
                Ok::<_, super::Error>(())
            };
            if !words.is_empty() {
                take_visible(self.ranked(&words)?, &mut ids, &mut push)?;
            }
            if (ids.len() as i64) < want {
                // Enough to fill the page even if every word match is among them.
                let enough = want + ids.len() as i64;
                let run = |sql: &str, needle: &str| visible_ids(sql, needle, enough);
                let found = if backend != Backend::Sqlite {
                    // The trigram index on the index's text (PostgreSQL migration 2) finds a needle
                    // of three characters or more; a shorter one is a scan, newest first.
                    let needle = query.replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_");
                    run(
                        &format!(
                            "SELECT e.id FROM memory_search t JOIN memory_entities e ON e.id = t.entity_id \
                             WHERE {VISIBLE} AND lower(t.name || chr(10) || t.entity_type || chr(10) \
                             || t.observations) LIKE '%' || lower(?1) || '%' ORDER BY t.entity_id DESC LIMIT ?2"
                        ),
                        &needle,
                    )?
                } else if query.chars().count() >= 3 {
                    // Newest first. FTS5 walks a phrase of common trigrams backwards several times
                    // slower than forwards (1.8 ms against 0.5 ms at 100k entities), so read forwards
                    // first: when that finds fewer than enough, it found them all.
                    let trigram = |order: &str| {
                        format!(
                            "SELECT e.id FROM memory_trigram t CROSS JOIN memory_entities e ON e.id = t.rowid \
                         WHERE memory_trigram MATCH ?1 AND {VISIBLE} ORDER BY t.rowid {order} LIMIT ?2"
                        )
                    };
                    let needle = substring_query(query);
                    let mut all = run(&trigram("ASC"), &needle)?;
                    if (all.len() as i64) < enough {
                        all.reverse();
                        all
                    } else {
                        run(&trigram("DESC"), &needle)?
                    }
                } else {
                    // Too short for trigrams: scan, as the reference does.
                    run(
                        &format!(
                            "SELECT e.id FROM memory_entities e WHERE {VISIBLE} AND (instr(lower(e.name), lower(?1)) \
                         OR instr(lower(e.entity_type), lower(?1)) OR EXISTS (SELECT 1 FROM memory_observations o \
                         WHERE o.entity_id = e.id AND o.deleted_by IS NULL AND o.valid_until IS NULL \
                         AND instr(lower(o.content), lower(?1)))) \
                         ORDER BY e.id DESC LIMIT ?2"
                        ),
                        query,
                    )?
                };
                push(found, &mut ids);
            }
            if ids.is_empty() && words.len() > 1 {
                // Nothing holds every word nor the whole text: the entities holding some of the
                // words, best first (only then, so a match is never followed by partial ones).
                take_visible(self.ranked_any(&words)?, &mut ids, &mut push)?;
            }
            let more = ids.len() > limit;
            ids.truncate(limit);
            Ok((ids, more))
        })
    }
}
