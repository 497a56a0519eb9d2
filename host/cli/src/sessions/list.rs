//! `seshat sessions list`.

use std::io::Write;
use std::process::ExitCode;

use serde::Serialize;
use seshat::store::{ListFilter, SessionInfo};

use crate::{Context, format};

/// Arguments of `sessions list`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// Show at most N sessions.
    #[arg(long, value_name = "N")]
    limit: Option<usize>,
    /// Sessions of every project, not only this one.
    #[arg(long)]
    all: bool,
}

#[derive(Serialize)]
struct Row<'a> {
    short_id: &'a str,
    #[serde(flatten)]
    session: &'a SessionInfo,
}

pub fn run(ctx: &Context, args: &Args) -> anyhow::Result<ExitCode> {
    let store = ctx.store()?;
    let filter = ListFilter { project: (!args.all).then(|| ctx.project.clone()), limit: args.limit };
    let sessions = store.list_sessions(&filter)?;
    let ids: Vec<&str> = sessions.iter().map(|s| s.id.as_str()).collect();
    let short = store.short_ids(&ids)?;
    let mut out = format::stdout();
    if args.json {
        let rows: Vec<Row<'_>> =
            sessions.iter().zip(&short).map(|(session, short_id)| Row { short_id, session }).collect();
        format::json(&mut out, &rows)?;
        out.flush()?;
        return Ok(ExitCode::SUCCESS);
    }
    if sessions.is_empty() {
        if args.all {
            writeln!(out, "No sessions yet.")?;
        } else {
            writeln!(out, "No sessions in this project ({}). `--all` lists every project.", ctx.project)?;
        }
        out.flush()?;
        return Ok(ExitCode::SUCCESS);
    }
    let width = short.iter().map(String::len).max().unwrap_or(8);
    writeln!(out, "{:<width$}  {:<16}  {:>8}  {:<14}  TITLE", "ID", "UPDATED", "MESSAGES", "CONTEXT")?;
    for (s, id) in sessions.iter().zip(&short) {
        writeln!(
            out,
            "{:<width$}  {:<16}  {:>8}  {:<14}  {}",
            id,
            format::time(s.updated_at),
            s.message_count,
            format::context_use(s.context_tokens, s.context_window),
            format::clip(s.title.as_deref().unwrap_or("(untitled)"), 60),
        )?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
