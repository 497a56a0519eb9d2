//! `seshat knowledge embed`.

use std::io::Write;
use std::process::ExitCode;

use anyhow::bail;

use crate::{Context, format};

/// Arguments of `knowledge embed`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// When the stored vectors (of documents, and of history and memory when they are embedded)
    /// were made by another model than the configured one, replace them all (without this flag
    /// the command says how many and stops).
    #[arg(long)]
    re_embed: bool,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(ctx: &Context, args: &Args) -> anyhow::Result<ExitCode> {
    let mut knowledge = super::knowledge(ctx)?;
    let Some(report) = super::embed(&mut knowledge, args.re_embed)? else {
        bail!(
            "no embedder is configured: set `embedder = \"embedder-openai\"` under [plugins] and `model` (and \
             `base_url` for a local server) under [knowledge] in config.toml"
        );
    };
    let config = ctx.config()?;
    let queued = knowledge.drain_queued(&config, args.re_embed)?;
    let mut out = format::stdout();
    if args.json {
        let mut v = serde_json::to_value(&report)?;
        for (corpus, d) in &queued {
            v[corpus.as_str()] = serde_json::to_value(d)?;
        }
        format::json(&mut out, &v)?;
    } else {
        for (corpus, d) in &queued {
            writeln!(
                out,
                "Embedded {} {} rows ({} left queued, {} without text).",
                d.embedded,
                corpus.as_str(),
                d.left,
                d.skipped
            )?;
        }
        writeln!(
            out,
            "Embedded {} chunks ({} requests){}.",
            report.embedded,
            report.requests,
            if report.replaced > 0 {
                format!(", replacing {} vectors of the previous model", report.replaced)
            } else {
                String::new()
            }
        )?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
