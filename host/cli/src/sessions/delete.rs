//! `seshat sessions delete`.

use seshat_protocol::methods as m;
use std::io::{BufRead, IsTerminal, Write};
use std::process::ExitCode;

use anyhow::bail;

use crate::Context;

/// Arguments of `sessions delete`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The session id, or any unique prefix of it.
    id: String,
    /// Do not ask for confirmation.
    #[arg(long, short = 'y')]
    yes: bool,
}

pub fn run(ctx: &Context, args: &Args) -> anyhow::Result<ExitCode> {
    if let Some(mut remote) = ctx.remote()? {
        let params = m::SessionGetParams { session: args.id.clone(), full: false };
        let info = remote.request::<m::SessionGet>(&params)?.session;
        if !confirmed(args, &info)? {
            return Ok(ExitCode::FAILURE);
        }
        remote.request::<m::SessionDelete>(&m::SessionParams { session: info.id.clone() })?;
        writeln!(
            std::io::stdout().lock(),
            "Deleted session {} ({} messages) on the service.",
            info.id,
            info.message_count
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut store = ctx.store()?;
    let id = store.resolve(&args.id)?;
    let info = store.session(&id)?;
    if !confirmed(args, &info)? {
        return Ok(ExitCode::FAILURE);
    }
    store.delete_session(&id)?;
    writeln!(std::io::stdout().lock(), "Deleted session {id} ({} messages).", info.message_count)?;
    Ok(ExitCode::SUCCESS)
}

/// Whether the deletion of `info` goes ahead: `--yes`, or the user's answer on a terminal.
fn confirmed(args: &Args, info: &seshat::store::SessionInfo) -> anyhow::Result<bool> {
    let id = &info.id;
    let title = info.title.as_deref().unwrap_or("(untitled)");
    if !args.yes {
        let stdin = std::io::stdin();
        if !stdin.is_terminal() {
            bail!("refusing to delete session {id} without confirmation: pass --yes");
        }
        eprint!(
            "Delete session {id} \"{}\" and its {} messages? [y/N] ",
            super::super::format::plain(title),
            info.message_count
        );
        std::io::stderr().flush()?;
        let mut answer = String::new();
        stdin.lock().read_line(&mut answer)?;
        if !matches!(answer.trim(), "y" | "Y" | "yes" | "YES" | "Yes") {
            eprintln!("Nothing deleted.");
            return Ok(false);
        }
    }
    Ok(true)
}
