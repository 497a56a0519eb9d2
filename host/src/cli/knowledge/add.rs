//! `seshat knowledge add`.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use seshat::knowledge::Sizing;

use super::Scope;
use crate::cli::{Context, format};

/// Arguments of `knowledge add`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Files and directories to index.
    #[arg(required = true)]
    paths: Vec<PathBuf>,
    /// Whose documents they are.
    #[arg(long, value_enum, default_value = "project")]
    scope: Scope,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(ctx: &Context, args: &Args) -> anyhow::Result<ExitCode> {
    let mut store = ctx.store()?;
    let target = super::target(ctx, args.scope);
    let bar = std::io::IsTerminal::is_terminal(&std::io::stderr()).then(|| {
        let bar = indicatif::ProgressBar::new(0);
        bar.set_style(
            indicatif::ProgressStyle::with_template("indexing {pos}/{len} files {wide_bar} {msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        bar
    });
    let report =
        seshat::knowledge::add(&mut store, &args.paths, &target, Sizing::default(), &mut |done, total, path| {
            if let Some(bar) = &bar {
                bar.set_length(total as u64);
                bar.set_position(done as u64);
                bar.set_message(format::visible(&path.display().to_string()).into_owned());
            }
        })?;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    let mut out = format::stdout();
    if args.json {
        format::json(&mut out, &report)?;
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
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
