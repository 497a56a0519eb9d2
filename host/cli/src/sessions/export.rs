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
    if let Some(mut remote) = ctx.remote()? {
        return run_remote(args, &mut remote);
    }
    let store = ctx.store()?;
    let id = store.resolve(&args.id)?;
    let mut out = BufWriter::new(std::io::stdout().lock());
    store.export(&id, &mut out)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// `sessions export --remote`: the service's `session/export` of the caller's own session, the
/// same bytes a local export writes.
fn run_remote(args: &Args, remote: &mut crate::remote::Remote) -> anyhow::Result<ExitCode> {
    let params = seshat_protocol::methods::SessionParams { session: args.id.clone() };
    let jsonl = remote.request::<seshat_protocol::methods::SessionExport>(&params)?.jsonl;
    let mut out = std::io::stdout().lock();
    out.write_all(jsonl.as_bytes())?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
