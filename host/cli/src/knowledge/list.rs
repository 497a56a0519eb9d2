//! `seshat knowledge list`.

use std::io::Write;
use std::process::ExitCode;

use seshat::store::KnowledgeFilter;

use super::Scope;
use crate::{Context, format};

/// Arguments of `knowledge list`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Only this scope (default: this project's documents, every user and cross one, and your teams'; `team:NAME` names a team).
    #[arg(long, value_parser = crate::memory::parse_scope)]
    scope: Option<Scope>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(ctx: &Context, args: &Args) -> anyhow::Result<ExitCode> {
    let store = ctx.store()?;
    let docs = store.knowledge_documents(KnowledgeFilter { project: &ctx.project, scope: args.scope.as_ref() })?;
    let mut out = format::stdout();
    if args.json {
        format::json(&mut out, &docs)?;
    } else if docs.is_empty() {
        writeln!(out, "No documents indexed here: `seshat knowledge add <path>` indexes files and directories.")?;
    } else {
        writeln!(out, "{:<6} {:<8} {:<9} {:>7} {:>9}  PATH", "ID", "SCOPE", "KIND", "CHUNKS", "BYTES")?;
        for d in &docs {
            writeln!(out, "{:<6} {:<8} {:<9} {:>7} {:>9}  {}", d.id, d.scope, d.kind, d.chunks, d.bytes, d.path)?;
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
