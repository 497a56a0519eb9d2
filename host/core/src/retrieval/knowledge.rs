//! The document corpus: chunks indexed by `crate::knowledge`, their vectors (when an embedder is
//! configured) and hybrid search over both.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::vectors::{self, VectorSet};
use super::{Error, Result, Weights, candidates, fuse};
use crate::knowledge::{AddReport, Sizing, Target};
use crate::plugins::EmbedPurpose;
use crate::providers::{Cancel, Embedder};
use crate::store::ranking::Ranking;
use crate::store::{ChunkHit, KnowledgeFilter, Store};
pub use seshat_protocol::knowledge::{Found, KnowledgeHit, Mode};

/// What embedding the pending chunks did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct EmbedReport {
    /// Chunks embedded.
    pub embedded: u64,
    /// Vectors of another model deleted first (with consent).
    pub replaced: u64,
    /// Requests sent to the embedder.
    pub requests: u64,
    /// Texts split because they were longer than the model takes.
    pub split: u64,
}

/// The document corpus of one database, with its embedder when one is configured.
pub struct Knowledge {
    store: Store,
    embedder: Option<Embedder>,
    weights: Weights,
    ranking: Ranking,
    /// The vectors in memory and the generation they were loaded at.
    cache: Option<Cached>,
}

impl std::fmt::Debug for Knowledge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Knowledge").field("embedder", &self.embedder).finish_non_exhaustive()
    }
}

/// How many chunks are embedded per store transaction.
const EMBED_BATCH: usize = 256;

impl Knowledge {
    /// The corpus in `store`, embedded by `embedder` when given, fused with `weights`.
    pub fn new(store: Store, embedder: Option<Embedder>, weights: Weights) -> Self {
        Knowledge { store, embedder, weights, ranking: Ranking::default(), cache: None }
    }

    /// The same corpus, ranked by words under `ranking` (the retrieval benchmark measures each
    /// rule this way).
    pub fn with_ranking(mut self, ranking: Ranking) -> Self {
        self.ranking = ranking;
        self
    }

    /// Opens the database at `path` (created and migrated as needed), lexical only; add an
    /// embedder with [`with_embedder`](Self::with_embedder).
    pub fn open(path: &Path) -> Result<Self> {
        Ok(Self::new(Store::open(path)?, None, Weights::default()))
    }

    /// The same corpus embedded by `embedder`.
    pub fn with_embedder(mut self, embedder: Embedder) -> Self {
        self.embedder = Some(embedder);
        self.cache = None;
        self
    }

    /// The store underneath.
    pub fn store(&mut self) -> &mut Store {
        &mut self.store
    }

    /// The embedder, when one is configured.
    pub fn embedder(&self) -> Option<&Embedder> {
        self.embedder.as_ref()
    }

    /// Indexes `paths` into `target` (files walked as ripgrep does, re-indexed only when
    /// changed, vanished ones dropped); `progress` hears of each file. Vectors are made by
    /// [`embed_pending`](Self::embed_pending).
    pub fn add(
        &mut self,
        paths: &[PathBuf],
        target: &Target,
        progress: &mut dyn FnMut(usize, usize, &Path),
    ) -> Result<AddReport> {
        Ok(crate::knowledge::add(&mut self.store, paths, target, Sizing::default(), progress)?)
    }

    /// Embeds every chunk that has no vector yet; `progress` hears (done, total). When the
    /// stored vectors were made by another model, refuses ([`Error::ModelChanged`], with the
    /// counts) unless `re_embed`, which replaces them. Without an embedder, does nothing.
    pub fn embed_pending(&mut self, re_embed: bool, progress: &mut dyn FnMut(u64, u64)) -> Result<EmbedReport> {
        let Some(embedder) = self.embedder.as_mut() else { return Ok(EmbedReport::default()) };
        let mut report = EmbedReport::default();
        let total = self.store.chunks_without_vectors_count()?;
        let index = self.store.vector_index()?;
        let model = embedder.model().to_string();
        let changed = |dims: Option<u32>| {
            index.as_ref().is_some_and(|i| i.model != model || dims.is_some_and(|d| d != i.dimensions))
        };
        if changed(embedder.dimensions()) {
            let i = index.as_ref().expect("changed implies an index");
            if !re_embed {
                return Err(Error::ModelChanged {
                    from: format!("{} ({} dimensions)", i.model, i.dimensions),
                    to: embedder.model().to_string(),
                    vectors: i.vectors,
                    chunks: i.vectors + total,
                });
            }
            report.replaced = self.store.chunk_vectors_clear()?;
        }
        let mut total = total + report.replaced;
        let mut done = 0;
        let mut checked = false;
        progress(0, total);
        // One request's worth at a time: the progress moves with each answer, and each is kept at
        // once, so a failure later loses none of it (embedding again takes up the rest).
        let step = embedder.max_batch().clamp(1, EMBED_BATCH);
        loop {
            let pending = self.store.chunks_without_vectors(step)?;
            if pending.is_empty() {
                break;
            }
            let texts: Vec<String> = pending
                .iter()
                .map(
                    |(_, heading, text)| if heading.is_empty() { text.clone() } else { format!("{heading}\n\n{text}") },
                )
                .collect();
            let (vectors, split) = embed_documents(embedder, &texts)?;
            report.split += split;
            if !checked {
                // The model's length is known now, if it was not before.
                let dims = vectors.first().map(|v| v.len() as u32).unwrap_or(1);
                if changed(Some(dims)) && !re_embed {
                    let i = index.as_ref().expect("changed implies an index");
                    return Err(Error::ModelChanged {
                        from: format!("{} ({} dimensions)", i.model, i.dimensions),
                        to: format!("{} ({dims} dimensions)", embedder.model()),
                        vectors: i.vectors,
                        chunks: i.vectors + total,
                    });
                }
                // Vectors of the same model but another length go too (with consent, checked above).
                let dropped = self.store.vector_index_set(embedder.plugin_id(), embedder.model(), dims)?;
                report.replaced += dropped;
                total += dropped;
                checked = true;
            }
            let rows: Vec<(i64, Vec<u8>)> =
                pending.iter().zip(&vectors).map(|((id, _, _), v)| (*id, vectors::encode(v))).collect();
            self.store.chunk_vectors_put(&rows)?;
            done += rows.len() as u64;
            report.embedded += rows.len() as u64;
            progress(done, total);
        }
        report.requests = embedder.requests();
        Ok(report)
    }

    /// Searches the chunks `filter` covers for `query`: bm25, fused with the vector neighbours
    /// of the query when an embedder is configured and the stored vectors are its model's. The
    /// filter applies before ranking on both sides. An embedder that fails makes the search
    /// lexical, with the failure in [`Found::note`].
    pub fn search(&mut self, filter: KnowledgeFilter<'_>, query: &str, limit: usize) -> Result<Found> {
        // Where the embeddings go, said with any note (a local server, or a provider's API).
        let whence = self
            .embedder
            .as_ref()
            .map(|e| format!(" (embeddings: `{}` at {})", e.model(), e.base_url()))
            .unwrap_or_default();
        let vector = match self.query_vector(query) {
            Ok(v) => v.map(Ok),
            Err(e @ (Error::Embedder(_) | Error::ModelChanged { .. })) => Some(Err(e.to_string())),
            Err(e) => return Err(e),
        };
        match vector {
            Some(Ok(v)) => self.search_by_vector(filter, query, Some(&v), limit),
            Some(Err(note)) => {
                let mut found = self.search_by_vector(filter, query, None, limit)?;
                found.note = Some(format!("{note}{whence}"));
                Ok(found)
            }
            None => {
                let mut found = self.search_by_vector(filter, query, None, limit)?;
                if self.embedder.is_some() && found.note.is_none() {
                    found.note = Some(format!(
                        "no chunk has a vector yet: embed the documents to search them by meaning{whence}"
                    ));
                }
                Ok(found)
            }
        }
    }

    /// The query's vector, when there is an embedder and vectors of its model to compare it
    /// with; an error when the stored vectors are another model's.
    fn query_vector(&mut self, query: &str) -> Result<Option<Vec<f32>>> {
        let Some(embedder) = self.embedder.as_mut() else { return Ok(None) };
        let Some(head) = self.store.vector_head("knowledge")? else { return Ok(None) };
        if head.model != embedder.model() {
            let index = self.store.vector_index()?.expect("the head was just read");
            return Err(Error::ModelChanged {
                from: format!("{} ({} dimensions)", index.model, index.dimensions),
                to: embedder.model().to_string(),
                vectors: index.vectors,
                chunks: index.vectors + self.store.chunks_without_vectors_count()?,
            });
        }
        let mut v = embedder.embed(&[query.to_string()], EmbedPurpose::Query, &Cancel::default())?;
        Ok(v.pop())
    }

    /// [`search`](Self::search) with the query's vector already made (`None`: lexical only), for
    /// callers that embed queries themselves (and benchmarks, which leave embedding out).
    pub fn search_by_vector(
        &mut self,
        filter: KnowledgeFilter<'_>,
        query: &str,
        vector: Option<&[f32]>,
        limit: usize,
    ) -> Result<Found> {
        let pool = candidates(limit);
        let lexical = self.store.knowledge_search_ranked(filter, query, pool, &self.ranking)?;
        let (neighbours, note) = match vector {
            Some(v) => {
                let (n, note) = self.nearest(filter, v, pool)?;
                (Some(n), note)
            }
            None => (None, None),
        };
        let mode = if neighbours.is_some() { Mode::Hybrid } else { Mode::Lexical };
        let neighbours = neighbours.unwrap_or_default();
        let lexical_ids: Vec<i64> = lexical.iter().map(|h| h.id).collect();
        let vector_ids: Vec<i64> = neighbours.iter().map(|n| n.0).collect();
        let mut fused = fuse(&lexical_ids, &vector_ids, self.weights);
        fused.truncate(limit);
        let only_vector: Vec<i64> = fused.iter().filter(|f| f.lexical_rank.is_none()).map(|f| f.id).collect();
        let fetched = self.store.knowledge_chunk_hits(filter, &only_vector)?;
        let hits = fused
            .into_iter()
            .filter_map(|f| {
                let chunk: &ChunkHit = match f.lexical_rank {
                    Some(r) => &lexical[r - 1],
                    None => fetched.iter().find(|c| c.id == f.id)?,
                };
                Some(KnowledgeHit {
                    id: chunk.id,
                    path: chunk.path.clone(),
                    start_line: chunk.start_line,
                    end_line: chunk.end_line,
                    heading: chunk.heading.clone(),
                    snippet: chunk.snippet.clone(),
                    score: f.score,
                    lexical_rank: f.lexical_rank,
                    vector_rank: f.vector_rank,
                    bm25: f.lexical_rank.map(|_| chunk.score),
                    similarity: f.vector_rank.map(|r| neighbours[r - 1].1),
                })
            })
            .collect();
        Ok(Found { mode, note, hits })
    }

    /// Embeds the history and memory queued for `config`'s opted-in corpora (turning them on
    /// first, which queues every row without a vector), with this corpus's embedder. A corpus
    /// whose vectors another model made is refused ([`Error::ModelChanged`]) unless `re_embed`,
    /// which replaces them. Returns what each drained.
    pub fn drain_queued(
        &mut self,
        config: &crate::config::Config,
        re_embed: bool,
    ) -> Result<Vec<(crate::store::Queued, super::queue::Drained)>> {
        let Some(embedder) = self.embedder.as_mut() else { return Ok(Vec::new()) };
        let on = super::queue::opted_in(config);
        if re_embed {
            for &corpus in &on {
                if self.store.queued_index(corpus)?.is_some_and(|(i, _)| i.model != embedder.model()) {
                    super::queue::replace(&mut self.store, corpus, embedder)?;
                }
            }
        }
        let backfilled = super::queue::sync(&mut self.store, config, embedder)?;
        let mut out = Vec::new();
        for corpus in on {
            let mut d = super::queue::drain(&mut self.store, embedder, corpus, &|| false)?;
            d.backfilled = backfilled.iter().find(|(c, _)| *c == corpus).map_or(0, |(_, n)| *n);
            out.push((corpus, d));
        }
        Ok(out)
    }

    /// One chunk whole, by id, among the documents `filter` covers.
    pub fn chunk(&self, filter: KnowledgeFilter<'_>, id: i64) -> Result<Option<crate::store::ChunkText>> {
        Ok(self.store.knowledge_chunk(filter, id)?)
    }

    /// The stored vectors nearest `vector` among the chunks `filter` covers, with a note when
    /// some chunks have no vector yet.
    fn nearest(&mut self, filter: KnowledgeFilter<'_>, vector: &[f32], pool: usize) -> Result<Neighbours> {
        let Some(head) = self.store.vector_head("knowledge")? else { return Ok((Vec::new(), None)) };
        let allowed: HashSet<i64> = self.store.knowledge_document_ids(filter)?.into_iter().collect();
        let cached = self.vectors(head.generation, head.dimensions as usize)?;
        let pending = cached.pending;
        let found = cached.set.nearest(vector, pool, &|doc| allowed.contains(&doc));
        let note = (pending > 0).then(|| {
            format!("{pending} chunks have no vector yet and were matched by words only until they are embedded")
        });
        Ok((found, note))
    }

    /// The vectors in memory (and how many chunks have none), loaded again when the corpus's
    /// generation moved.
    fn vectors(&mut self, generation: i64, dims: usize) -> Result<&Cached> {
        if !matches!(&self.cache, Some(c) if c.generation == generation && c.set.dims() == dims) {
            let mut set = VectorSet::new(dims);
            self.store.chunk_vectors(&mut |id, doc, bytes| {
                set.push(id, doc, bytes);
            })?;
            let pending = self.store.chunks_without_vectors_count()?;
            self.cache = Some(Cached { generation, set, pending });
        }
        Ok(self.cache.as_ref().expect("just loaded"))
    }
}

/// Vector neighbours (chunk id, cosine), best first, and a note on what they could not cover.
type Neighbours = (Vec<(i64, f32)>, Option<String>);

/// The vectors held in memory, for the generation they were read at.
struct Cached {
    generation: i64,
    set: VectorSet,
    pending: u64,
}

/// Embeds documents, each split into pieces the model takes when it is longer (never cut): a
/// split text's vector is the mean of its pieces' unit vectors. Returns the vectors and how many
/// texts were split.
pub(crate) fn embed_documents(embedder: &mut Embedder, texts: &[String]) -> Result<(Vec<Vec<f32>>, u64)> {
    match embed_pieces(embedder, texts) {
        // A text the server refused for its length lowered the embedder's input limit: cut
        // again to it and send once more.
        Err(Error::Embedder(crate::providers::Error::Refused { .. })) => embed_pieces(embedder, texts),
        other => other,
    }
}

/// [`embed_documents`]' one attempt, with the embedder's input limit as it stands.
fn embed_pieces(embedder: &mut Embedder, texts: &[String]) -> Result<(Vec<Vec<f32>>, u64)> {
    // The estimate is approximate: keep a margin under the model's limit.
    let max = (embedder.max_input_tokens() as usize * 9 / 10).max(8);
    let mut pieces: Vec<String> = Vec::with_capacity(texts.len());
    let mut owners: Vec<usize> = Vec::with_capacity(texts.len());
    let mut split = 0;
    for (i, t) in texts.iter().enumerate() {
        let parts = crate::knowledge::chunk::pieces(t, max);
        if parts.len() > 1 {
            split += 1;
        }
        for p in parts {
            pieces.push(p);
            owners.push(i);
        }
    }
    let vectors = embedder.embed(&pieces, EmbedPurpose::Document, &Cancel::default())?;
    let dims = vectors.first().map_or(0, Vec::len);
    let mut out = vec![vec![0f32; dims]; texts.len()];
    for (v, &owner) in vectors.iter().zip(&owners) {
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(f32::MIN_POSITIVE);
        for (o, x) in out[owner].iter_mut().zip(v) {
            *o += x / norm;
        }
    }
    Ok((out, split))
}
