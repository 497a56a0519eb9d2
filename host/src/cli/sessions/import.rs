//! `seshat sessions import`.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;

use crate::cli::Context;

/// Arguments of `sessions import`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A file written by `sessions export`, or `-` for stdin.
    file: PathBuf,
    /// Give the session a new id (needed when its id is already in the database).
    #[arg(long)]
    new_id: bool,
}

pub fn run(ctx: &Context, args: &Args) -> anyhow::Result<ExitCode> {
    let mut input: Box<dyn BufRead> = if args.file.as_os_str() == "-" {
        Box::new(std::io::stdin().lock())
    } else {
        let file = File::open(&args.file).with_context(|| format!("cannot open {}", args.file.display()))?;
        Box::new(BufReader::new(file))
    };
    let mut store = ctx.store()?;
    let id = store.import(&mut input, args.new_id).with_context(|| format!("cannot import {}", args.file.display()))?;
    let info = store.session(&id)?;
    writeln!(std::io::stdout().lock(), "Imported session {id} ({} messages).", info.message_count)?;
    Ok(ExitCode::SUCCESS)
}
