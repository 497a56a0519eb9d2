//! Retrieval: lexical (FTS5 bm25) and vector nearest-neighbour rankings fused by reciprocal rank
//! fusion ([`fusion`]), over the corpora Seshat keeps. [`Knowledge`] is the document corpus:
//! indexing (through `crate::knowledge`), embedding what has no vector yet, and hybrid search
//! that says which mode it used. Without an embedder everything works lexically.
//!
//! [`Retriever`] is the seam for an application's own corpora: give a lexical ranking and,
//! optionally, a vector one, and [`hybrid`] fuses them the same way.

pub mod fusion;
mod knowledge;
pub mod queue;
mod recall;
pub mod tools;
pub mod vectors;

pub use fusion::{Fused, Weights, fuse};
pub use knowledge::{EmbedReport, Found, Knowledge, KnowledgeHit, Mode};
pub use recall::Recall;
pub use vectors::VectorSet;

use crate::plugins::EmbedPurpose;
use crate::providers::{Cancel, Embedder};

/// Errors of retrieval.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The database failed.
    #[error(transparent)]
    Store(#[from] crate::store::Error),
    /// Indexing files failed.
    #[error(transparent)]
    Index(#[from] crate::knowledge::Error),
    /// The embedder failed (the text is scrubbed of the credential). Its message carries the
    /// embedder's error whole, so that error is not also its source: a chain printed in full
    /// would say it twice.
    #[error("the embedder failed: {0}")]
    Embedder(crate::providers::Error),
    /// The index's vectors were made by another model: re-embedding replaces them, which needs
    /// the user's consent.
    #[error(
        "the knowledge index's {vectors} vectors were made by `{from}`, and the configured model is `{to}`; vectors of \
         two models cannot be mixed, so using `{to}` re-embeds all {chunks} chunks, which is done only when asked for \
         (or set [knowledge] model back to `{from}`)"
    )]
    ModelChanged {
        /// The model (and length) that made the stored vectors.
        from: String,
        /// The configured one.
        to: String,
        /// Stored vectors that would be replaced.
        vectors: u64,
        /// Chunks that would be embedded.
        chunks: u64,
    },
    /// An application's retriever failed.
    #[error("{0}")]
    Retriever(String),
}

impl From<crate::providers::Error> for Error {
    fn from(e: crate::providers::Error) -> Self {
        Error::Embedder(e)
    }
}

impl Error {
    /// A stable code for scripts.
    pub fn code(&self) -> &str {
        match self {
            Error::Store(e) => e.code(),
            Error::Index(_) => "index_failed",
            Error::Embedder(e) => e.code(),
            Error::ModelChanged { .. } => "embedding_model_changed",
            Error::Retriever(_) => "retriever_failed",
        }
    }
}

/// Result alias.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A corpus an application searches with Seshat's fusion: a lexical ranking, and a vector one
/// when it has vectors. Ids are the application's.
pub trait Retriever {
    /// The ids matching `query` by words, best first, at most `limit`.
    fn lexical(&mut self, query: &str, limit: usize) -> Result<Vec<String>>;

    /// The ids nearest `vector` (made by the embedder from the query), best first, at most
    /// `limit`. The default has no vectors.
    fn nearest(&mut self, _vector: &[f32], _limit: usize) -> Result<Vec<String>> {
        Ok(Vec::new())
    }
}

/// Searches `retriever` for `query`: its lexical ranking fused with its vector ranking when
/// `embedder` is given (the query embedded as a query), best first, at most `limit`.
pub fn hybrid(
    retriever: &mut dyn Retriever,
    embedder: Option<&mut Embedder>,
    query: &str,
    limit: usize,
    weights: Weights,
) -> Result<Vec<Fused<String>>> {
    let pool = candidates(limit);
    let lexical = retriever.lexical(query, pool)?;
    let vector = match embedder {
        Some(e) => {
            let v = e.embed(&[query.to_string()], EmbedPurpose::Query, &Cancel::default())?;
            retriever.nearest(&v[0], pool)?
        }
        None => Vec::new(),
    };
    let mut fused = fuse(&lexical, &vector, weights);
    fused.truncate(limit);
    Ok(fused)
}

/// The embedder `config` selects (`embedder = …` under `[plugins]`, its model and server under
/// `[knowledge]`), loaded from `catalog`; none when none is selected.
pub fn load_embedder(
    config: &crate::config::Config,
    catalog: &crate::plugins::Catalog,
    runtime: &crate::plugins::Runtime,
) -> Result<Option<Embedder>> {
    use crate::plugins::PluginKind;
    let Some(id) = config.selected(PluginKind::Embedder) else { return Ok(None) };
    let plugin_error = |e: crate::plugins::Error| Error::Embedder(crate::providers::Error::Plugin(e.to_string()));
    let entry = catalog.find(PluginKind::Embedder, id).map_err(plugin_error)?;
    let loaded = runtime.load(entry, config.limits(PluginKind::Embedder)).map_err(plugin_error)?;
    Ok(Some(Embedder::new(&loaded, &config.knowledge, config.options_json(PluginKind::Embedder))?))
}

/// The fusion weights `config` sets for the knowledge index (`[knowledge] rrf_k`,
/// `lexical_weight`, `vector_weight`; [`Weights::default`] where unset).
pub fn weights(config: &crate::config::Config) -> Weights {
    weights_over(config, Weights::default())
}

/// The fusion weights for history and memory ([`Recall`]): those `config` sets, else
/// [`Weights::RECALL`].
pub fn recall_weights(config: &crate::config::Config) -> Weights {
    weights_over(config, Weights::RECALL)
}

fn weights_over(config: &crate::config::Config, d: Weights) -> Weights {
    let k = &config.knowledge;
    Weights {
        k: k.rrf_k.unwrap_or(d.k),
        lexical: k.lexical_weight.unwrap_or(d.lexical),
        vector: k.vector_weight.unwrap_or(d.vector),
    }
}

pub(crate) use crate::store::ranking::candidates;
