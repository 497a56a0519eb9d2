//! `seshat knowledge search`.

use std::io::Write;
use std::process::ExitCode;

use seshat::retrieval::Mode;
use seshat::store::KnowledgeFilter;

use super::Scope;
use crate::{Context, format};

/// Arguments of `knowledge search`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// What to look for.
    query: String,
    /// Only this scope (default: this project's documents, every user and cross one, and your teams'; `team:NAME` names a team).
    #[arg(long, value_parser = crate::memory::parse_scope)]
    scope: Option<Scope>,
    /// At most this many results.
    #[arg(long, default_value_t = 10)]
    limit: usize,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(ctx: &Context, args: &Args) -> anyhow::Result<ExitCode> {
    let (found, embedder) = match ctx.remote()? {
        Some(mut remote) => {
            anyhow::ensure!(
                args.scope.is_none(),
                "--scope does not work against a remote service yet: search without it"
            );
            let params = seshat_protocol::methods::KnowledgeSearchParams {
                query: args.query.clone(),
                limit: Some(args.limit as u64),
            };
            let found = remote.request::<seshat_protocol::methods::KnowledgeSearch>(&params)?;
            (found, true)
        }
        None => {
            let mut knowledge = super::knowledge(ctx)?;
            let filter = KnowledgeFilter { project: &ctx.project, scope: args.scope.as_ref() };
            let found = knowledge.search(filter, &args.query, args.limit)?;
            (found, knowledge.embedder().is_some())
        }
    };
    let mut out = format::stdout();
    if args.json {
        format::json(&mut out, &found)?;
    } else {
        let how = match found.mode {
            Mode::Lexical if !embedder => "lexical: words matched by bm25; no embedder configured",
            Mode::Lexical => "lexical: words matched by bm25",
            Mode::Hybrid => "hybrid: words (bm25) and meaning (vectors), fused by rank",
        };
        writeln!(out, "{} results ({how})", found.hits.len())?;
        if let Some(note) = &found.note {
            writeln!(out, "note: {note}")?;
        }
        for h in &found.hits {
            let heading = if h.heading.is_empty() { String::new() } else { format!(" § {}", h.heading) };
            writeln!(out, "{}:{}-{}{heading}  [chunk {}]", h.path, h.start_line, h.end_line, h.id)?;
            writeln!(out, "  {}", h.snippet.replace('\n', " "))?;
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
