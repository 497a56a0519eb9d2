//! Vectors for hybrid retrieval (migration 0009): which embedder and model made a corpus's
//! vectors, and the vectors of knowledge chunks. The store keeps the bytes; what they mean (int8
//! with a scale) is the retrieval module's. Every write bumps the corpus's `generation` in the
//! same transaction, so a process holding the vectors in memory reloads exactly when they change.

use rusqlite::{OptionalExtension, TransactionBehavior, params};
use serde::Serialize;

use super::{Result, Store, now_ms};

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
pub(super) fn bump(tx: &rusqlite::Transaction<'_>) -> rusqlite::Result<()> {
    tx.execute("UPDATE vector_indexes SET generation = generation + 1 WHERE corpus = 'knowledge'", [])?;
    Ok(())
}

/// Which model made the knowledge corpus's vectors and its generation: one row, cheap enough
/// for every search.
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
    /// The knowledge corpus's model, length and generation, if vectors were ever made.
    pub fn vector_head(&self) -> Result<Option<VectorHead>> {
        on_db!(self, "read the vector index", {
            Ok(self
                .conn
                .prepare_cached("SELECT model, dimensions, generation FROM vector_indexes WHERE corpus = 'knowledge'")?
                .query_row([], |r| Ok(VectorHead { model: r.get(0)?, dimensions: r.get(1)?, generation: r.get(2)? }))
                .optional()?)
        })
    }

    /// The knowledge corpus's vector index, if vectors were ever made.
    pub fn vector_index(&self) -> Result<Option<VectorIndex>> {
        on_db!(self, "read the vector index", {
            Ok(self
                .conn
                .prepare_cached(
                    "SELECT corpus, embedder, model, dimensions, generation, (SELECT count(*) FROM chunk_vectors) \
                     FROM vector_indexes WHERE corpus = 'knowledge'",
                )?
                .query_row([], |r| {
                    Ok(VectorIndex {
                        corpus: r.get(0)?,
                        embedder: r.get(1)?,
                        model: r.get(2)?,
                        dimensions: r.get(3)?,
                        generation: r.get(4)?,
                        vectors: r.get(5)?,
                    })
                })
                .optional()?)
        })
    }

    /// Records that the knowledge corpus's vectors are made by `embedder`'s `model` of
    /// `dimensions`; when another model (or length) made them before, its vectors are deleted in
    /// the same transaction (the caller asked the user first). Returns how many were deleted.
    pub fn vector_index_set(&mut self, embedder: &str, model: &str, dimensions: u32) -> Result<u64> {
        on_db!(self, "set the vector index's model", {
            let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let current: Option<(String, u32)> = tx
                .query_row("SELECT model, dimensions FROM vector_indexes WHERE corpus = 'knowledge'", [], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })
                .optional()?;
            let mut deleted = 0;
            match current {
                Some((m, d)) if m == model && d == dimensions => {
                    tx.execute("UPDATE vector_indexes SET embedder = ?1 WHERE corpus = 'knowledge'", [embedder])?;
                }
                Some(_) => {
                    deleted = tx.execute("DELETE FROM chunk_vectors", [])? as u64;
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
    pub fn chunk_vectors_clear(&mut self) -> Result<u64> {
        on_db!(self, "delete the vectors", {
            let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let deleted = tx.execute("DELETE FROM chunk_vectors", [])? as u64;
            bump(&tx)?;
            tx.commit()?;
            Ok(deleted)
        })
    }

    /// Up to `limit` chunks that have no vector yet, oldest first: (id, heading, text).
    pub fn chunks_without_vectors(&self, limit: usize) -> Result<Vec<(i64, String, String)>> {
        on_db!(self, "find chunks to embed", {
            let mut stmt = self.conn.prepare_cached(
                "SELECT c.id, c.heading, c.text FROM chunks c \
                 WHERE NOT EXISTS (SELECT 1 FROM chunk_vectors v WHERE v.chunk_id = c.id) ORDER BY c.id LIMIT ?1",
            )?;
            let rows = stmt.query_map([limit as i64], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
            Ok(rows.collect::<rusqlite::Result<_>>()?)
        })
    }

    /// How many chunks have no vector yet.
    pub fn chunks_without_vectors_count(&self) -> Result<u64> {
        on_db!(self, "count chunks to embed", {
            Ok(self.conn.query_row(
                "SELECT count(*) FROM chunks c WHERE NOT EXISTS (SELECT 1 FROM chunk_vectors v WHERE v.chunk_id = c.id)",
                [],
                |r| r.get(0),
            )?)
        })
    }

    /// Stores chunks' vectors (a chunk deleted meanwhile is skipped), in one transaction.
    /// Returns how many were stored.
    pub fn chunk_vectors_put(&mut self, vectors: &[(i64, Vec<u8>)]) -> Result<usize> {
        on_db!(self, "store vectors", {
            let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let mut stored = 0;
            {
                let mut put = tx.prepare_cached(
                    "INSERT OR REPLACE INTO chunk_vectors (chunk_id, vector) \
                     SELECT ?1, ?2 WHERE EXISTS (SELECT 1 FROM chunks WHERE id = ?1)",
                )?;
                for (id, bytes) in vectors {
                    stored += put.execute(params![id, bytes])?;
                }
            }
            bump(&tx)?;
            tx.commit()?;
            Ok(stored)
        })
    }

    /// Every chunk vector with its document, in chunk order (for the in-memory index).
    pub fn chunk_vectors(&self, each: &mut dyn FnMut(i64, i64, &[u8])) -> Result<()> {
        on_db!(self, "read the vectors", {
            let mut stmt = self.conn.prepare_cached(
                "SELECT v.chunk_id, c.document_id, v.vector FROM chunk_vectors v JOIN chunks c ON c.id = v.chunk_id \
                 ORDER BY v.chunk_id",
            )?;
            let mut rows = stmt.query([])?;
            while let Some(r) = rows.next()? {
                let bytes = r.get_ref(2)?.as_blob().map_err(rusqlite::Error::from)?;
                each(r.get(0)?, r.get(1)?, bytes);
            }
            Ok(())
        })
    }
}
