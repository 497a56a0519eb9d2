//! `seshat knowledge add`.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use super::Scope;
use crate::{Context, format};

/// Arguments of `knowledge add`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Files and directories to index.
    #[arg(required = true)]
    paths: Vec<PathBuf>,
    /// Whose documents they are.
    #[arg(long, default_value = "project", value_parser = crate::memory::parse_scope)]
    scope: Scope,
    /// When the stored vectors were made by another model than the configured one, replace
    /// them all (the count is said first without this flag).
    #[arg(long)]
    re_embed: bool,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(serde::Serialize)]
struct Report<'a> {
    #[serde(flatten)]
    index: &'a seshat::knowledge::AddReport,
    /// What embedding did; null without an embedder.
    embedding: Option<seshat::retrieval::EmbedReport>,
}

pub fn run(ctx: &Context, args: &Args) -> anyhow::Result<ExitCode> {
    if let Some(remote) = ctx.remote()? {
        return super::add_remote::run(remote, &args.paths, &args.scope, args.json);
    }
    let mut knowledge = super::knowledge(ctx)?;
    let target = super::target(ctx, &args.scope);
    let bar = super::bar("indexing {pos}/{len} files {wide_bar} {msg}");
    let report = knowledge.add(&args.paths, &target, &mut |done, total, path| {
        if let Some(bar) = &bar {
            bar.set_length(total as u64);
            bar.set_position(done as u64);
            bar.set_message(format::visible(&path.display().to_string()).into_owned());
        }
    })?;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    // The index is written: embedding failing leaves it lexical, and says how to finish.
    let embedding = super::embed(&mut knowledge, args.re_embed).map_err(|e| {
        e.context(format!(
            "indexed {} files ({} chunks), searchable by words; making their vectors failed",
            report.indexed, report.chunks
        ))
    })?;
    let mut out = format::stdout();
    if args.json {
        format::json(&mut out, &Report { index: &report, embedding: embedding.clone() })?;
    } else {
        writeln!(
            out,
            "Indexed {} of {} files ({} chunks), {} unchanged, {} removed (their files are gone), {} skipped.",
            report.indexed,
            report.files,
            report.chunks,
            report.unchanged,
            report.removed,
            report.skipped.len()
        )?;
        for s in &report.skipped {
            writeln!(out, "  skipped {}: {}", s.path.display(), s.why)?;
        }
        match &embedding {
            Some(e) => writeln!(
                out,
                "Embedded {} chunks ({} requests{}{}).",
                e.embedded,
                e.requests,
                if e.split > 0 { format!(", {} texts split to fit the model", e.split) } else { String::new() },
                if e.replaced > 0 {
                    format!(", {} vectors of the previous model replaced", e.replaced)
                } else {
                    String::new()
                }
            )?,
            None => writeln!(out, "No embedder configured: search is lexical (words, bm25).")?,
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
