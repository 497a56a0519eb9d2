//! Vectors for hybrid retrieval (migration 0009): which embedder and model made a corpus's
//! vectors, and the vectors of knowledge chunks. The store keeps the bytes; what they mean (int8
//! with a scale) is the retrieval module's. Every write bumps the corpus's `generation` in the
//! same transaction, so a process holding the vectors in memory reloads exactly when they change.

use serde::Serialize;

use super::db::{Backend, Tx, Value, params};
use super::{Error, Result, Store, now_ms};

/// Which embedder and model made a corpus's vectors.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VectorIndex {
    /// The corpus (`knowledge`).
    pub corpus: String,
    /// The embedder plugin's id.
    pub embedder: String,
    /// The model.
    pub model: String,
    /// The vectors' length.
    pub dimensions: u32,
    /// Grows with every change to the corpus's vectors.
    pub generation: i64,
    /// How many vectors it holds.
    pub vectors: u64,
}

/// Marks the knowledge corpus changed (its chunks or vectors), inside the writer's transaction.
pub(super) fn bump(tx: &Tx<'_>) -> Result<()> {
    tx.execute("UPDATE vector_indexes SET generation = generation + 1 WHERE corpus = 'knowledge'", params![])?;
    Ok(())
}

/// Which model made a corpus's vectors, their length (0 before the first) and the corpus's
/// generation: one row, cheap enough for every search.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VectorHead {
    /// The model.
    pub model: String,
    /// The vectors' length.
    pub dimensions: u32,
    /// The generation.
    pub generation: i64,
}

impl Store {
    /// `corpus`'s model, length and generation (`knowledge`, `history`, `memory`), if its vector
    /// index was ever made.
    pub(crate) fn vector_head(&self, corpus: &str) -> Result<Option<VectorHead>> {
        on_db!(self, "read the vector index", {
            self.db.query_opt(
                "SELECT model, dimensions, generation FROM vector_indexes WHERE corpus = ?1",
                params![corpus],
                |r| Ok(VectorHead { model: r.get(0)?, dimensions: r.get(1)?, generation: r.get(2)? }),
            )
        })
    }

    /// The knowledge corpus's vector index, if vectors were ever made.
    pub fn vector_index(&self) -> Result<Option<VectorIndex>> {
        on_db!(self, "read the vector index", {
            self.db.query_opt(
                "SELECT corpus, embedder, model, dimensions, generation, (SELECT count(*) FROM chunk_vectors) \
                 FROM vector_indexes WHERE corpus = 'knowledge'",
                params![],
                |r| {
                    Ok(VectorIndex {
                        corpus: r.get(0)?,
                        embedder: r.get(1)?,
                        model: r.get(2)?,
                        dimensions: r.get(3)?,
                        generation: r.get(4)?,
                        vectors: r.get(5)?,
                    })
                },
            )
        })
    }

    /// Records that the knowledge corpus's vectors are made by `embedder`'s `model` of
    /// `dimensions`; when another model (or length) made them before, its vectors are deleted in
    /// the same transaction (the caller asked the user first). Returns how many were deleted.
    pub fn vector_index_set(&mut self, embedder: &str, model: &str, dimensions: u32) -> Result<u64> {
        on_db!(self, "set the vector index's model", {
            let tx = self.db.transaction()?;
            let current: Option<(String, u32)> = tx.query_opt(
                "SELECT model, dimensions FROM vector_indexes WHERE corpus = 'knowledge'",
                params![],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?;
            let mut deleted = 0;
            match current {
                Some((m, d)) if m == model && d == dimensions => {
                    tx.execute(
                        "UPDATE vector_indexes SET embedder = ?1 WHERE corpus = 'knowledge'",
                        params![embedder],
                    )?;
                }
                Some(_) => {
                    deleted = tx.execute("DELETE FROM chunk_vectors", params![])? as u64;
                    tx.execute(
                        "UPDATE vector_indexes SET embedder = ?1, model = ?2, dimensions = ?3, \
                         generation = generation + 1, created_at = ?4 WHERE corpus = 'knowledge'",
                        params![embedder, model, dimensions, now_ms()],
                    )?;
                }
                None => {
                    tx.execute(
                        "INSERT INTO vector_indexes (corpus, embedder, model, dimensions, created_at) \
                         VALUES ('knowledge', ?1, ?2, ?3, ?4)",
                        params![embedder, model, dimensions, now_ms()],
                    )?;
                }
            }
            tx.commit()?;
            Ok(deleted)
        })
    }

    /// Deletes every chunk vector (re-embedding with another model, which the user agreed to).
    /// Returns how many went.
    pub(crate) fn chunk_vectors_clear(&mut self) -> Result<u64> {
        on_db!(self, "delete the vectors", {
            let tx = self.db.transaction()?;
            let deleted = tx.execute("DELETE FROM chunk_vectors", params![])? as u64;
            bump(&tx)?;
            tx.commit()?;
            Ok(deleted)
        })
    }

    /// Up to `limit` chunks that have no vector yet, oldest first: (id, heading, text).
    pub fn chunks_without_vectors(&self, limit: usize) -> Result<Vec<(i64, String, String)>> {
        on_db!(self, "find chunks to embed", {
            self.db.query_vec(
                "SELECT c.id, c.heading, c.text FROM chunks c \
                 WHERE NOT EXISTS (SELECT 1 FROM chunk_vectors v WHERE v.chunk_id = c.id) ORDER BY c.id LIMIT ?1",
                params![limit as i64],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
        })
    }

    /// How many chunks have no vector yet.
    pub fn chunks_without_vectors_count(&self) -> Result<u64> {
        on_db!(self, "count chunks to embed", {
            self.db.query_value(
                "SELECT count(*) FROM chunks c WHERE NOT EXISTS (SELECT 1 FROM chunk_vectors v WHERE v.chunk_id = c.id)",
                params![],
            )
        })
    }

    /// Stores chunks' vectors (a chunk deleted meanwhile is skipped), in one transaction.
    /// Returns how many were stored.
    pub fn chunk_vectors_put(&mut self, vectors: &[(i64, Vec<u8>)]) -> Result<usize> {
        on_db!(self, "store vectors", {
            let tx = self.db.transaction()?;
            let mut stored = 0;
            for (id, bytes) in vectors {
                stored += tx.execute(
                    "INSERT INTO chunk_vectors (chunk_id, vector) \
                     SELECT ?1, ?2 WHERE EXISTS (SELECT 1 FROM chunks WHERE id = ?1) \
                     ON CONFLICT (chunk_id) DO UPDATE SET vector = excluded.vector",
                    params![id, bytes],
                )?;
            }
            bump(&tx)?;
            tx.commit()?;
            Ok(stored)
        })
    }

    /// Every chunk vector with its document, in chunk order (for the in-memory index).
    pub fn chunk_vectors(&self, each: &mut dyn FnMut(i64, i64, &[u8])) -> Result<()> {
        on_db!(self, "read the vectors", {
            self.db.for_each(
                "SELECT v.chunk_id, c.document_id, v.vector FROM chunk_vectors v JOIN chunks c ON c.id = v.chunk_id \
                 ORDER BY v.chunk_id",
                params![],
                |r| {
                    each(r.get(0)?, r.get(1)?, blob(r.value(2)?)?);
                    Ok(true)
                },
            )
        })
    }
}

/// A corpus embedded only when the user opts in: history messages or memory entities.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Queued {
    /// Session messages (`[knowledge] embed_history`).
    History,
    /// Memory entities (`[knowledge] embed_memory`).
    Memory,
}

impl Queued {
    /// The corpus's name in the tables.
    pub fn as_str(self) -> &'static str {
        match self {
            Queued::History => "history",
            Queued::Memory => "memory",
        }
    }

    fn vectors_table(self) -> (&'static str, &'static str) {
        match self {
            Queued::History => ("message_vectors", "message_id"),
            Queued::Memory => ("entity_vectors", "entity_id"),
        }
    }

    /// Every row of the corpus that should have a vector (for the backfill when embedding is
    /// turned on).
    fn all_rows(self) -> &'static str {
        match self {
            Queued::History => "SELECT id FROM messages",
            Queued::Memory => "SELECT id FROM memory_entities WHERE deleted_by IS NULL AND staged = 0",
        }
    }
}

/// A queued row's text to embed; `None` when the row is gone or has no text.
pub type QueuedText = (i64, Option<String>);

/// A message shorter than this many characters is embedded with the end of the message before
/// it (measured on the recall benchmark's tuning split, kept when its held-out split agreed).
const SHORT_MESSAGE_CHARS: usize = 200;

/// How much of the message before it a short message is embedded with, in characters.
const CONTEXT_CHARS: usize = 300;

/// A message's text as its vector is made: a short one with the end of the message before it,
/// which says what it answers ("Yes, the second one." alone means nothing). The words index and
/// the snippets keep the message's own text.
fn with_context(text: &str, before: Option<&str>) -> String {
    match before {
        Some(b) if text.chars().count() < SHORT_MESSAGE_CHARS && !b.trim().is_empty() => {
            let skip = b.chars().count().saturating_sub(CONTEXT_CHARS);
            let tail: String = b.chars().skip(skip).collect();
            format!("{tail}\n{text}")
        }
        _ => text.to_string(),
    }
}

impl Store {
    /// The vector index of a queued corpus, if embedding it was ever turned on.
    pub fn queued_index(&self, corpus: Queued) -> Result<Option<(VectorIndex, bool)>> {
        on_db!(self, "read the vector index", {
            let (table, _) = corpus.vectors_table();
            self.db.query_opt(
                &format!(
                    "SELECT corpus, embedder, model, dimensions, generation, (SELECT count(*) FROM {table}), enabled \
                     FROM vector_indexes WHERE corpus = ?1"
                ),
                params![corpus.as_str()],
                |r| {
                    Ok((
                        VectorIndex {
                            corpus: r.get(0)?,
                            embedder: r.get(1)?,
                            model: r.get(2)?,
                            dimensions: r.get(3)?,
                            generation: r.get(4)?,
                            vectors: r.get(5)?,
                        },
                        r.get::<i64>(6)? == 1,
                    ))
                },
            )
        })
    }

    /// Turns embedding `corpus` on with `embedder`'s `model`: from now on every new row is queued
    /// in its own transaction. The first time (or after [`Store::embedding_replace`]), every
    /// existing row without a vector is queued too. Returns how many rows were queued now.
    pub(crate) fn embedding_enable(&mut self, corpus: Queued, embedder: &str, model: &str) -> Result<u64> {
        on_db!(self, "turn embedding on", {
            let tx = self.db.transaction()?;
            let enabled: Option<i64> =
                tx.query_opt("SELECT enabled FROM vector_indexes WHERE corpus = ?1", params![corpus.as_str()], |r| {
                    r.get(0)
                })?;
            let queued = match enabled {
                Some(1) => 0,
                found => {
                    if found.is_none() {
                        tx.execute(
                            "INSERT INTO vector_indexes (corpus, embedder, model, dimensions, created_at) \
                             VALUES (?1, ?2, ?3, 0, ?4)",
                            params![corpus.as_str(), embedder, model, now_ms()],
                        )?;
                    } else {
                        tx.execute(
                            "UPDATE vector_indexes SET enabled = 1 WHERE corpus = ?1",
                            params![corpus.as_str()],
                        )?;
                    }
                    let (table, key) = corpus.vectors_table();
                    tx.execute(
                        &format!(
                            "INSERT INTO embed_queue (corpus, item, queued_at) SELECT ?1, r.id, ?2 \
                             FROM ({}) r WHERE NOT EXISTS (SELECT 1 FROM {table} v WHERE v.{key} = r.id) \
                             ON CONFLICT DO NOTHING",
                            corpus.all_rows()
                        ),
                        params![corpus.as_str(), now_ms()],
                    )? as u64
                }
            };
            tx.commit()?;
            Ok(queued)
        })
    }

    /// Turns queuing off for `corpus` (the user opted out): the queue is emptied, the vectors
    /// made so far are kept. Returns whether it was on.
    pub(crate) fn embedding_disable(&mut self, corpus: Queued) -> Result<bool> {
        on_db!(self, "turn embedding off", {
            let tx = self.db.transaction()?;
            let changed = tx.execute(
                "UPDATE vector_indexes SET enabled = 0 WHERE corpus = ?1 AND enabled = 1",
                params![corpus.as_str()],
            )?;
            tx.execute("DELETE FROM embed_queue WHERE corpus = ?1", params![corpus.as_str()])?;
            tx.commit()?;
            Ok(changed > 0)
        })
    }

    /// Replaces `corpus`'s vectors (another model, with the user's consent): all deleted, the
    /// model recorded, every row queued again. Returns how many vectors went.
    pub(crate) fn embedding_replace(&mut self, corpus: Queued, embedder: &str, model: &str) -> Result<u64> {
        on_db!(self, "replace the vectors", {
            let tx = self.db.transaction()?;
            let (table, _) = corpus.vectors_table();
            let deleted = tx.execute(&format!("DELETE FROM {table}"), params![])? as u64;
            tx.execute(
                "UPDATE vector_indexes SET embedder = ?2, model = ?3, dimensions = 0, enabled = 1, \
                 generation = generation + 1 WHERE corpus = ?1",
                params![corpus.as_str(), embedder, model],
            )?;
            tx.execute(
                &format!(
                    "INSERT INTO embed_queue (corpus, item, queued_at) SELECT ?1, r.id, ?2 FROM ({}) r \
                     ON CONFLICT DO NOTHING",
                    corpus.all_rows()
                ),
                params![corpus.as_str(), now_ms()],
            )?;
            tx.commit()?;
            Ok(deleted)
        })
    }

    /// How many rows of `corpus` wait for a vector.
    pub fn embed_queue_len(&self, corpus: Queued) -> Result<u64> {
        on_db!(self, "read the embedding queue", {
            self.db.query_value("SELECT count(*) FROM embed_queue WHERE corpus = ?1", params![corpus.as_str()])
        })
    }

    /// Claims the oldest `limit` queued rows of `corpus` no worker holds for `lease`, and returns
    /// them with the text to embed: a message's searchable text (as the history index holds it),
    /// an entity's name, type and observations. A row is free when unclaimed, when its claim
    /// lapsed, or when the worker that claimed it is gone (its process on this machine, for a
    /// SQLite file; its connection, for PostgreSQL), so a killed worker's rows are taken at once.
    /// Workers in other processes or on other machines claim other rows meanwhile (on PostgreSQL
    /// `FOR UPDATE SKIP LOCKED`; a SQLite file has one writer at a time), so no row is embedded
    /// twice while its claim holds; [`Store::embed_queue_done`] takes the rows off the queue, a
    /// failure frees them.
    pub fn embed_queue_claim(
        &mut self,
        corpus: Queued,
        limit: usize,
        lease: std::time::Duration,
    ) -> Result<Vec<QueuedText>> {
        on_db!(self, "claim from the embedding queue", {
            let now = now_ms();
            let until = now.saturating_add(i64::try_from(lease.as_millis()).unwrap_or(i64::MAX));
            let claimed: Vec<i64> = match self.db.backend() {
                Backend::Sqlite => {
                    let tx = self.db.transaction()?;
                    let holders: Vec<String> = tx.query_vec(
                        "SELECT DISTINCT claimed_by FROM embed_queue WHERE corpus = ?1 AND claimed_until > ?2 \
                         AND claimed_by IS NOT NULL",
                        params![corpus.as_str(), now],
                        |r| r.get(0),
                    )?;
                    for gone in holders.iter().filter(|h| !process_alive(h)) {
                        tx.execute(
                            "UPDATE embed_queue SET claimed_until = NULL, claimed_by = NULL WHERE claimed_by = ?1",
                            params![gone],
                        )?;
                    }
                    let items: Vec<i64> = tx.query_vec(
                        "SELECT item FROM embed_queue WHERE corpus = ?1 AND (claimed_until IS NULL OR claimed_until <= ?2) \
                         ORDER BY queued_at, item LIMIT ?3",
                        params![corpus.as_str(), now, limit as i64],
                        |r| r.get(0),
                    )?;
                    tx.execute(
                        &format!(
                            "UPDATE embed_queue SET claimed_until = ?2, claimed_by = ?4 WHERE corpus = ?1 AND item IN {}",
                            super::db::ids_in(Backend::Sqlite, 3)
                        ),
                        params![corpus.as_str(), until, json_ids(&items), format!("os:{}", std::process::id())],
                    )?;
                    tx.commit()?;
                    items
                }
                _ => {
                    // The rows are picked once (a materialised CTE): a subquery in the FROM of an
                    // UPDATE may be scanned again by the plan, and each scan with SKIP LOCKED
                    // picks rows the last one left, claiming more than `limit`.
                    let mut rows: Vec<(i64, i64)> = self.db.query_vec(
                        "WITH c AS MATERIALIZED (SELECT item FROM embed_queue e WHERE corpus = ?1 \
                         AND (claimed_until IS NULL OR claimed_until <= ?2 OR NOT EXISTS (SELECT 1 FROM \
                         pg_stat_activity a WHERE 'pg:' || a.pid = e.claimed_by)) \
                         ORDER BY queued_at, item LIMIT ?4 FOR UPDATE SKIP LOCKED) \
                         UPDATE embed_queue q SET claimed_until = ?3, claimed_by = 'pg:' || pg_backend_pid() \
                         FROM c WHERE q.corpus = ?1 AND q.item = c.item RETURNING q.queued_at, q.item",
                        params![corpus.as_str(), now, until, limit as i64],
                        |r| Ok((r.get(0)?, r.get(1)?)),
                    )?;
                    rows.sort_unstable();
                    rows.into_iter().map(|(_, item)| item).collect()
                }
            };
            if claimed.is_empty() {
                return Ok(Vec::new());
            }
            let backend = self.db.backend();
            let sql = match corpus {
                Queued::History => format!(
                    "SELECT q.item, m.parts, p.parts FROM embed_queue q LEFT JOIN messages m ON m.id = q.item \
                     LEFT JOIN messages p ON p.session_id = m.session_id AND p.seq = m.seq - 1 \
                     WHERE q.corpus = 'history' AND q.item IN {} ORDER BY q.queued_at, q.item",
                    super::db::ids_in(backend, 1)
                ),
                Queued::Memory => match backend {
                    Backend::Sqlite => format!(
                        "SELECT q.item, CASE WHEN f.rowid IS NULL THEN NULL ELSE \
                         f.name || ' (' || f.entity_type || ')' || char(10) || f.observations END \
                         , NULL FROM embed_queue q LEFT JOIN memory_fts f ON f.rowid = q.item \
                         WHERE q.corpus = 'memory' AND q.item IN {} ORDER BY q.queued_at, q.item",
                        super::db::ids_in(backend, 1)
                    ),
                    _ => format!(
                        "SELECT q.item, CASE WHEN f.entity_id IS NULL THEN NULL ELSE \
                         f.name || ' (' || f.entity_type || ')' || chr(10) || f.observations END \
                         , NULL FROM embed_queue q LEFT JOIN memory_search f ON f.entity_id = q.item \
                         WHERE q.corpus = 'memory' AND q.item IN {} ORDER BY q.queued_at, q.item",
                        super::db::ids_in(backend, 1)
                    ),
                },
            };
            let rows = self.db.query_vec(&sql, params![json_ids(&claimed)], |r| {
                Ok((r.get::<i64>(0)?, r.get::<Option<String>>(1)?, r.get::<Option<String>>(2)?))
            })?;
            let mut out = Vec::new();
            for (item, text, before) in rows {
                let text = match (corpus, text) {
                    (Queued::History, Some(parts)) => {
                        let text_of = |parts: &str| {
                            let parts: Vec<crate::conversation::Part> = serde_json::from_str(parts).unwrap_or_default();
                            super::history::index_text(&parts)
                        };
                        Some(with_context(&text_of(&parts), before.as_deref().map(text_of).as_deref()))
                    }
                    (_, t) => t,
                };
                out.push((item, text.filter(|t| !t.trim().is_empty())));
            }
            Ok(out)
        })
    }

    /// Stores vectors for queued rows and takes `done` (those and any skipped) off the queue, in
    /// one transaction; records the vectors' length the first time. A row deleted meanwhile gets
    /// no vector.
    pub fn embed_queue_done(
        &mut self,
        corpus: Queued,
        vectors: &[(i64, Vec<u8>)],
        done: &[i64],
        dimensions: u32,
    ) -> Result<usize> {
        on_db!(self, "store vectors", {
            let tx = self.db.transaction()?;
            let (table, key) = corpus.vectors_table();
            let source = match corpus {
                Queued::History => "messages",
                Queued::Memory => "memory_entities",
            };
            let mut stored = 0;
            let put = format!(
                "INSERT INTO {table} ({key}, vector) SELECT ?1, ?2 WHERE EXISTS (SELECT 1 FROM {source} WHERE id = ?1) \
                 ON CONFLICT ({key}) DO UPDATE SET vector = excluded.vector"
            );
            for (id, bytes) in vectors {
                stored += tx.execute(&put, params![id, bytes])?;
            }
            for id in done {
                tx.execute("DELETE FROM embed_queue WHERE corpus = ?1 AND item = ?2", params![corpus.as_str(), id])?;
            }
            // A batch with no text to embed says nothing of the length: keep what was recorded.
            tx.execute(
                "UPDATE vector_indexes SET dimensions = CASE WHEN ?2 > 0 THEN ?2 ELSE dimensions END, \
                 generation = generation + 1 WHERE corpus = ?1",
                params![corpus.as_str(), dimensions],
            )?;
            tx.commit()?;
            Ok(stored)
        })
    }

    /// Counts a failed attempt on queued rows: they stay queued, free for the next claim.
    pub fn embed_queue_failed(&mut self, corpus: Queued, items: &[i64]) -> Result<()> {
        on_db!(self, "update the embedding queue", {
            let tx = self.db.transaction()?;
            for id in items {
                tx.execute(
                    "UPDATE embed_queue SET attempts = attempts + 1, claimed_until = NULL, claimed_by = NULL \
                     WHERE corpus = ?1 AND item = ?2",
                    params![corpus.as_str(), id],
                )?;
            }
            tx.commit()?;
            Ok(())
        })
    }

    /// The vectors of the messages in `scope` (message id, encoded vector).
    pub fn message_vectors(&self, scope: super::HistoryScope<'_>, each: &mut dyn FnMut(i64, &[u8])) -> Result<()> {
        on_db!(self, "read the vectors", {
            let keys = scope.keys(&self.db, &self.user)?;
            let sql = format!(
                "SELECT v.message_id, v.vector FROM message_vectors v JOIN messages m ON m.id = v.message_id \
                 WHERE {} AND {}",
                super::lineage::in_lineage(self.db.backend(), 1),
                super::history::in_sessions(2, 3)
            );
            self.db.for_each(&sql, params![keys.lineage, keys.project, keys.owner], |r| {
                each(r.get(0)?, blob(r.value(1)?)?);
                Ok(true)
            })
        })
    }

    /// The vectors of live memory entities (entity id, encoded vector); the caller keeps those
    /// its scope may see.
    pub(crate) fn entity_vectors(&self, each: &mut dyn FnMut(i64, &[u8])) -> Result<()> {
        on_db!(self, "read the vectors", {
            self.db.for_each(
                "SELECT v.entity_id, v.vector FROM entity_vectors v JOIN memory_entities e ON e.id = v.entity_id \
                 WHERE e.deleted_by IS NULL AND e.staged = 0",
                params![],
                |r| {
                    each(r.get(0)?, blob(r.value(1)?)?);
                    Ok(true)
                },
            )
        })
    }
}

/// Whether the worker a SQLite claim names (`os:<pid>`, a process on this machine) still runs.
fn process_alive(holder: &str) -> bool {
    let Some(pid) = holder.strip_prefix("os:").and_then(|p| p.parse::<i32>().ok()) else { return true };
    #[cfg(unix)]
    {
        // Signal 0 checks the process exists; EPERM means it does (another user's).
        !matches!(nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None), Err(nix::errno::Errno::ESRCH))
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        true
    }
}

/// Ids as a JSON array, for [`super::db::ids_in`].
fn json_ids(ids: &[i64]) -> String {
    serde_json::to_string(ids).unwrap_or_else(|_| "[]".into())
}

/// A vector column's bytes, borrowed from its row.
fn blob(value: Value<'_>) -> Result<&[u8]> {
    match value {
        Value::Blob(bytes) => Ok(bytes),
        _ => Err(Error::Corrupt { table: "vectors", message: "a vector is not stored as bytes".into() }),
    }
}

#[cfg(test)]
mod tests {
    use super::{CONTEXT_CHARS, SHORT_MESSAGE_CHARS, with_context};

    #[test]
    fn a_short_message_is_embedded_with_the_end_of_the_one_before() {
        let question = format!("{}Which storage engine do we pick for the queue?", "x".repeat(400));
        let got = with_context("The second one.", Some(&question));
        assert!(got.ends_with("Which storage engine do we pick for the queue?\nThe second one."), "{got}");
        assert_eq!(got.chars().count(), CONTEXT_CHARS + "\nThe second one.".chars().count());
        // A long message stands alone, and so does the first of a session.
        let long = "y".repeat(SHORT_MESSAGE_CHARS);
        assert_eq!(with_context(&long, Some(&question)), long);
        assert_eq!(with_context("The second one.", None), "The second one.");
        assert_eq!(with_context("The second one.", Some("  ")), "The second one.");
    }
}
