//! `seshat sessions fork`: a new session that continues from any message of another, whose live
//! view is the other's as it was at that message (nothing is copied but the view's records).

use std::io::Write;
use std::process::ExitCode;

use crate::{Context, format};

/// Arguments of `sessions fork`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The session to fork (id or unique prefix).
    id: String,
    /// The last message the fork keeps (its seq, as `sessions show` lists it); default: the last.
    #[arg(long, value_name = "SEQ")]
    at: Option<u64>,
    /// The fork's title (default: the parent's).
    #[arg(long)]
    title: Option<String>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(ctx: &Context, args: &Args) -> anyhow::Result<ExitCode> {
    let mut store = ctx.store()?;
    let parent = store.resolve(&args.id)?;
    let forked = store.fork(&parent, args.at, args.title.as_deref())?;
    let mut out = format::stdout();
    if args.json {
        format::json(
            &mut out,
            &serde_json::json!({
                "session": forked.session,
                "parent": parent,
                "at": forked.at,
                "moved_from": forked.moved_from,
            }),
        )?;
    } else {
        if let Some(asked) = forked.moved_from {
            writeln!(
                out,
                "Message {asked} is inside a tool exchange: the fork starts before the exchange, after message {}.",
                forked.at
            )?;
        }
        writeln!(out, "{}", describe(&parent, &forked))?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// One line saying what a fork made and how to continue in it.
pub fn describe(parent: &str, forked: &seshat::store::Forked) -> String {
    format!(
        "Forked session {parent} after message {} into {}; continue it with `seshat chat --resume {}`.",
        forked.at, forked.session.id, forked.session.id
    )
}
