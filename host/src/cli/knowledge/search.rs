//! `seshat knowledge search`.

use std::io::Write;
use std::process::ExitCode;

use serde::Serialize;
use seshat::store::{ChunkHit, KnowledgeFilter};

use super::Scope;
use crate::cli::{Context, format};

/// Arguments of `knowledge search`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// What to look for.
    query: String,
    /// Only this scope (default: this project's documents and every user and cross one).
    #[arg(long, value_enum)]
    scope: Option<Scope>,
    /// At most this many results.
    #[arg(long, default_value_t = 10)]
    limit: usize,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct Found<'a> {
    /// `lexical` (FTS5 bm25): no embedder yet.
    mode: &'static str,
    hits: &'a [ChunkHit],
}

pub fn run(ctx: &Context, args: &Args) -> anyhow::Result<ExitCode> {
    let store = ctx.store()?;
    let filter = KnowledgeFilter { project: &ctx.project, scope: args.scope.map(Scope::as_str) };
    let hits = store.knowledge_search(filter, &args.query, args.limit)?;
    let mut out = format::stdout();
    if args.json {
        format::json(&mut out, &Found { mode: "lexical", hits: &hits })?;
    } else {
        writeln!(out, "{} results (lexical: words matched by bm25; no embedder configured)", hits.len())?;
        for h in &hits {
            let heading = if h.heading.is_empty() { String::new() } else { format!(" § {}", h.heading) };
            writeln!(out, "{}:{}-{}{heading}  [chunk {}]", h.path, h.start_line, h.end_line, h.id)?;
            writeln!(out, "  {}", h.snippet.replace('\n', " "))?;
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
