//! `seshat sessions import`.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use seshat::store::ImportOptions;

use crate::cli::{Context, format};

/// Arguments of `sessions import`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A file written by `sessions export`, or `-` for stdin.
    file: PathBuf,
    /// Give the session a new id (needed when its id is already in the database).
    #[arg(long)]
    new_id: bool,
    /// Import a session whose structure is broken instead of refusing it: tool results that
    /// answer no call are kept in the full history but out of the live view, and calls never
    /// answered get a synthetic error result. The report counts both.
    #[arg(long)]
    repair: bool,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(ctx: &Context, args: &Args) -> anyhow::Result<ExitCode> {
    let mut input: Box<dyn BufRead> = if args.file.as_os_str() == "-" {
        Box::new(std::io::stdin().lock())
    } else {
        let file = File::open(&args.file).with_context(|| format!("cannot open {}", args.file.display()))?;
        Box::new(BufReader::new(file))
    };
    let mut store = ctx.store()?;
    let options = ImportOptions { new_id: args.new_id, repair: args.repair };
    let imported =
        store.import(&mut input, options).with_context(|| format!("cannot import {}", args.file.display()))?;
    let mut out = format::stdout();
    if args.json {
        format::json(&mut out, &imported)?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut repaired = Vec::new();
    let plural = |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    if imported.orphans > 0 {
        repaired.push(format!(
            "{} that answer no call, kept in the full history but out of the live view",
            plural(imported.orphans, "tool result", "tool results")
        ));
    }
    if imported.empty > 0 {
        repaired.push(format!("{} without parts, likewise", plural(imported.empty, "message", "messages")));
    }
    if imported.synthetic > 0 {
        repaired.push(format!(
            "{} never answered, given a synthetic error result",
            plural(imported.synthetic, "call", "calls")
        ));
    }
    let repaired = if repaired.is_empty() { String::new() } else { format!(" Repaired: {}.", repaired.join("; ")) };
    writeln!(out, "Imported session {} ({} messages).{repaired}", imported.id, imported.messages)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
