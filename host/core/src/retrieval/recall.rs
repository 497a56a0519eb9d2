//! Hybrid search over what the agent lived through: session history (`history_search`, `seshat
//! sessions search`) and the memory graph (`memory_search_nodes`, `seshat memory --action
//! search`), when the user opted in to embedding them (`[knowledge] embed_history`,
//! `embed_memory`). Words rank as they always did; the query's vector ranks the rows that have
//! one (filtered by scope and project before ranking); the two are fused. Rows still queued for
//! a vector are found by their words meanwhile. Without an embedder nothing here runs: history and
//! memory search return what they return lexically.

use super::vectors::VectorSet;
use super::{Result, Weights, candidates, fuse};
use crate::memory::{Graph, Memory, Scope};
use crate::plugins::EmbedPurpose;
use crate::providers::{Cancel, Embedder};
use crate::store::ranking::Ranking;
use crate::store::{HistoryHit, HistoryScope, Queued, Store};

/// The embedder and fusion weights for history and memory, and which of them are embedded.
#[derive(Debug)]
pub struct Recall {
    /// Its own connection to the database (the vectors are read here).
    store: Store,
    embedder: Embedder,
    weights: Weights,
    ranking: Ranking,
    history: bool,
    memory: bool,
}

impl Recall {
    /// Hybrid search for the corpora the user opted in to (`history`, `memory`), reading vectors
    /// through `store` (a connection of its own).
    pub fn new(store: Store, embedder: Embedder, weights: Weights, history: bool, memory: bool) -> Self {
        Recall { store, embedder, weights, ranking: Ranking::default(), history, memory }
    }

    /// The same, ranking history by words under `ranking` (the retrieval benchmark measures
    /// each rule this way).
    pub fn with_ranking(mut self, ranking: Ranking) -> Self {
        self.ranking = ranking;
        self
    }

    /// The one `config` asks for: none unless an embedder is configured and history or memory
    /// is opted in; an embedder that cannot be loaded is logged and leaves search lexical.
    pub fn from_config(
        config: &crate::config::Config,
        catalog: &crate::plugins::Catalog,
        runtime: &crate::plugins::Runtime,
        db: &crate::store::Location,
    ) -> Option<Self> {
        let on = super::queue::opted_in(config);
        if on.is_empty() {
            return None;
        }
        let embedder = match super::load_embedder(config, catalog, runtime) {
            Ok(Some(e)) => e,
            Ok(None) => return None,
            Err(e) => {
                tracing::warn!("history and memory search are lexical: {e}");
                return None;
            }
        };
        let store = Store::connect(db).ok()?;
        Some(Recall::new(
            store,
            embedder,
            super::recall_weights(config),
            on.contains(&Queued::History),
            on.contains(&Queued::Memory),
        ))
    }

    /// The same search acting for `user` (see [`Store::acting_for`]).
    pub fn acting_for(mut self, user: &str) -> Self {
        self.store = self.store.acting_for(user);
        self
    }

    /// Whether history search is hybrid.
    pub fn history(&self) -> bool {
        self.history
    }

    /// Whether memory search is hybrid.
    pub fn memory(&self) -> bool {
        self.memory
    }

    /// The query's vector when `corpus` has vectors of this embedder's model; `None` otherwise
    /// (then the search is lexical), and when the embedder fails (logged, never fatal).
    fn query_vector(&mut self, corpus: Queued, query: &str) -> Option<Vec<f32>> {
        // One row read (no count of the vectors): a length is recorded once vectors were made.
        let head = self.store.vector_head(corpus.as_str()).ok()??;
        if head.model != self.embedder.model() || head.dimensions == 0 {
            return None;
        }
        match self.embedder.embed(&[query.to_string()], EmbedPurpose::Query, &Cancel::default()) {
            Ok(mut v) => v.pop(),
            Err(e) => {
                tracing::warn!("{} search is lexical: the embedder failed: {e}", corpus.as_str());
                None
            }
        }
    }

    /// The messages of `scope` matching `query`: bm25 fused with vector neighbours when history
    /// is embedded. Returns the hits and whether vectors took part.
    pub fn search_history(
        &mut self,
        scope: HistoryScope<'_>,
        query: &str,
        limit: usize,
    ) -> Result<(Vec<HistoryHit>, bool)> {
        let vector = if self.history { self.query_vector(Queued::History, query) } else { None };
        let Some(vector) = vector else {
            return Ok((self.store.search_history_ranked(scope, query, limit, &self.ranking)?, false));
        };
        let pool = candidates(limit);
        let lexical = self.store.search_history_ranked(scope, query, pool, &self.ranking)?;
        let mut set: Option<VectorSet> = None;
        self.store.message_vectors(scope, &mut |id, bytes| {
            let s = set.get_or_insert_with(|| VectorSet::new(super::vectors::dimensions(bytes)));
            s.push(id, 0, bytes);
        })?;
        let near: Vec<i64> = set
            .map(|s| s.nearest(&vector, pool, &|_| true).into_iter().map(|(id, _)| id).collect())
            .unwrap_or_default();
        let lexical_ids: Vec<i64> = lexical.iter().map(|h| h.message_id).collect();
        let mut fused = fuse(&lexical_ids, &near, self.weights);
        fused.truncate(limit);
        let only_vector: Vec<i64> = fused.iter().filter(|f| f.lexical_rank.is_none()).map(|f| f.id).collect();
        let fetched = self.store.history_hits_by_id(scope, &only_vector)?;
        let hits = fused
            .iter()
            .filter_map(|f| match f.lexical_rank {
                Some(r) => Some(lexical[r - 1].clone()),
                None => fetched.iter().find(|h| h.message_id == f.id).cloned(),
            })
            .collect();
        Ok((hits, true))
    }

    /// The entities `scope` sees matching `query`, as the memory search returns them, fused with
    /// their vector neighbours when memory is embedded; `true` when more matched. (The memory
    /// tools' [`Searcher`](crate::memory::tools::Searcher).)
    pub fn search_memory(
        &mut self,
        memory: &mut Memory<'_>,
        query: &str,
        scope: Option<&Scope>,
        limit: usize,
    ) -> std::result::Result<(Graph, bool), crate::memory::Error> {
        let vector =
            if self.memory && !query.trim().is_empty() { self.query_vector(Queued::Memory, query) } else { None };
        let Some(vector) = vector else { return memory.search(query, scope, limit) };
        let pool = candidates(limit);
        let (lexical, more) = memory.search_ids(query, scope, pool)?;
        let visible = memory.visible_ids(scope)?;
        let mut set: Option<VectorSet> = None;
        self.store
            .entity_vectors(&mut |id, bytes| {
                if visible.contains(&id) {
                    let s = set.get_or_insert_with(|| VectorSet::new(super::vectors::dimensions(bytes)));
                    s.push(id, 0, bytes);
                }
            })
            .map_err(crate::memory::Error::Database)?;
        let near: Vec<i64> = set
            .map(|s| s.nearest(&vector, pool, &|_| true).into_iter().map(|(id, _)| id).collect())
            .unwrap_or_default();
        let mut fused = fuse(&lexical, &near, self.weights);
        let more = more || fused.len() > limit;
        fused.truncate(limit);
        let ids: Vec<i64> = fused.iter().map(|f| f.id).collect();
        Ok((memory.graph_of(&ids, scope)?, more))
    }
}
