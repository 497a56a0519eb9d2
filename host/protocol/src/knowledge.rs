//! A document search's answer (`knowledge/search`, `seshat knowledge search --json`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Which rankings a search used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Words only (FTS5 bm25): no embedder, no vectors yet, or the embedder failed.
    Lexical,
    /// Words and vector neighbours, fused by reciprocal rank.
    Hybrid,
}

/// One search result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct KnowledgeHit {
    /// The chunk's id (`knowledge_read` takes it).
    pub id: i64,
    /// Its file.
    pub path: String,
    /// Its first line (1-based).
    pub start_line: u32,
    /// Its last line.
    pub end_line: u32,
    /// Its heading path (`A > B`), empty when none.
    pub heading: String,
    /// The matching words in `[` `]` (lexical matches), else the chunk's opening.
    pub snippet: String,
    /// The fused score (reciprocal rank fusion; higher is better).
    pub score: f64,
    /// Its 1-based rank by bm25, when the words matched.
    pub lexical_rank: Option<usize>,
    /// Its 1-based rank among the vector neighbours, when it was one.
    pub vector_rank: Option<usize>,
    /// The chunk's bm25 (FTS5's: lower is better), when the words matched.
    pub bm25: Option<f64>,
    /// The cosine of its vector and the query's, when it was a neighbour.
    pub similarity: Option<f32>,
}

/// What a search found, and how.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Found {
    /// The rankings used.
    pub mode: Mode,
    /// Why the search is lexical though an embedder is configured, or what was left out.
    pub note: Option<String>,
    /// The results, best first.
    pub hits: Vec<KnowledgeHit>,
}
