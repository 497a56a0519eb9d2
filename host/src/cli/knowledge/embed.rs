//! `seshat knowledge embed`.

use std::io::Write;
use std::process::ExitCode;

use anyhow::bail;

use crate::cli::{Context, format};

/// Arguments of `knowledge embed`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// When the stored vectors were made by another model than the configured one, replace
    /// them all (without this flag the command says how many and stops).
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
    let mut out = format::stdout();
    if args.json {
        format::json(&mut out, &report)?;
    } else {
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
