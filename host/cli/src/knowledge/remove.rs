//! `seshat knowledge remove`: from the index only; the files stay where they are.

use std::io::Write;
use std::process::ExitCode;

use anyhow::bail;
use seshat::store::KnowledgeFilter;

use crate::{Context, format};

/// Arguments of `knowledge remove`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Document ids (`knowledge list`), or paths: a file, or a directory for everything under it.
    #[arg(required = true)]
    targets: Vec<String>,
}

pub fn run(ctx: &Context, args: &Args) -> anyhow::Result<ExitCode> {
    let mut store = ctx.store()?;
    let docs = store.knowledge_documents(KnowledgeFilter { project: &ctx.project, scope: None })?;
    let mut ids = Vec::new();
    for t in &args.targets {
        let by_id: Vec<i64> = t.parse::<i64>().ok().filter(|id| docs.iter().any(|d| d.id == *id)).into_iter().collect();
        let path = std::fs::canonicalize(t).unwrap_or_else(|_| std::path::PathBuf::from(t));
        let by_path: Vec<i64> =
            docs.iter().filter(|d| std::path::Path::new(&d.path).starts_with(&path)).map(|d| d.id).collect();
        if by_id.is_empty() && by_path.is_empty() {
            bail!(
                "`{t}` is neither an indexed document's id nor a path holding one: `seshat knowledge list` shows them"
            );
        }
        ids.extend(by_id);
        ids.extend(by_path);
    }
    ids.sort_unstable();
    ids.dedup();
    let removed = store.knowledge_remove(&ids)?;
    let mut out = format::stdout();
    writeln!(out, "Removed {removed} documents from the index (the files themselves are untouched).")?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
