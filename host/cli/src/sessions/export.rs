//! `seshat sessions export`.

use std::io::{BufWriter, Write};
use std::process::ExitCode;

use crate::Context;

/// Arguments of `sessions export`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The session id, or any unique prefix of it.
    id: String,
}

pub fn run(ctx: &Context, args: &Args) -> anyhow::Result<ExitCode> {
    let store = ctx.store()?;
    let id = store.resolve(&args.id)?;
    let mut out = BufWriter::new(std::io::stdout().lock());
    store.export(&id, &mut out)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
