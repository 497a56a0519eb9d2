//! `seshat sessions delete`.

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
    let mut store = ctx.store()?;
    let id = store.resolve(&args.id)?;
    let info = store.session(&id)?;
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
            return Ok(ExitCode::FAILURE);
        }
    }
    store.delete_session(&id)?;
    writeln!(std::io::stdout().lock(), "Deleted session {id} ({} messages).", info.message_count)?;
    Ok(ExitCode::SUCCESS)
}
