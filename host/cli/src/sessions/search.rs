//! `seshat sessions search`: find what was said in this project's sessions (or every session),
//! in the original messages — whatever compaction did to the live views.

use std::io::Write;
use std::process::ExitCode;

use serde::Serialize;
use seshat::store::HistoryScope;
use seshat_protocol::methods::HistoryHit as Hit;

use crate::{Context, format};

/// Arguments of `sessions search`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Words to look for (case and accents ignored, word forms matched: `failing` finds `failed`);
    /// an identifier such as `TF123-K45` or `src/a.rs:42` is matched exactly and ranked first.
    #[arg(required = true, num_args = 1.., value_name = "QUERY")]
    query: Vec<String>,
    /// Search every project's sessions, not only this one's.
    #[arg(long)]
    all: bool,
    /// Show at most N matches.
    #[arg(long, value_name = "N", default_value_t = 20)]
    limit: usize,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct Row<'a> {
    short_id: &'a str,
    session_id: &'a str,
    seq: u64,
    role: &'a str,
    created_at: i64,
    snippet: &'a str,
}

pub fn run(ctx: &Context, args: &Args) -> anyhow::Result<ExitCode> {
    let query = args.query.join(" ");
    if let Some(mut remote) = ctx.remote()? {
        // The service searches the caller's sessions under this machine's project key.
        let params = seshat_protocol::methods::HistorySearchParams {
            query: query.clone(),
            all: args.all,
            limit: Some(args.limit as u64),
        };
        let found = remote.request::<seshat_protocol::methods::HistorySearch>(&params)?;
        let ids = found.hits.iter().map(|h| h.session.clone()).collect();
        return print(ctx, args, &query, &found.hits, ids);
    }
    let store = ctx.store()?;
    let scope = if args.all { HistoryScope::All } else { HistoryScope::Project(&ctx.project) };
    let config = ctx.config()?;
    let hits = match seshat::retrieval::Recall::from_config(&config, &ctx.catalog(), &ctx.runtime(), &ctx.db)
        .filter(seshat::retrieval::Recall::history)
    {
        Some(mut recall) => recall.search_history(scope, &query, args.limit)?.0,
        None => store.search_history(scope, &query, args.limit)?,
    };
    let ids: Vec<&str> = hits.iter().map(|h| h.session_id.as_str()).collect();
    let short = store.short_ids(&ids)?;
    let hits: Vec<Hit> = hits.into_iter().map(Into::into).collect();
    print(ctx, args, &query, &hits, short)
}

/// Prints `hits`, each session named by its id in `ids` (short locally, whole from a service).
fn print(ctx: &Context, args: &Args, query: &str, hits: &[Hit], ids: Vec<String>) -> anyhow::Result<ExitCode> {
    let short = ids;
    let mut out = format::stdout();
    if args.json {
        let rows: Vec<Row<'_>> = hits
            .iter()
            .zip(&short)
            .map(|(h, short_id)| Row {
                short_id,
                session_id: &h.session,
                seq: h.seq,
                role: h.role.as_str(),
                created_at: h.created_at,
                snippet: &h.snippet,
            })
            .collect();
        format::json(&mut out, &rows)?;
        out.flush()?;
        return Ok(ExitCode::SUCCESS);
    }
    if hits.is_empty() {
        let place =
            if args.all { "any session".to_string() } else { format!("this project's sessions ({})", ctx.project) };
        writeln!(out, "Nothing matches `{}` in {place}.", format::plain(query))?;
        if !args.all {
            writeln!(out, "`--all` searches every project.")?;
        }
        out.flush()?;
        return Ok(ExitCode::SUCCESS);
    }
    let width = short.iter().map(String::len).max().unwrap_or(8);
    writeln!(out, "{:<width$}  {:>5}  {:<9}  {:<16}  MATCH", "SESSION", "SEQ", "ROLE", "WHEN")?;
    for (h, id) in hits.iter().zip(&short) {
        writeln!(
            out,
            "{:<width$}  {:>5}  {:<9}  {:<16}  {}",
            id,
            h.seq,
            h.role.as_str(),
            format::time(h.created_at),
            format::clip(&h.snippet, 100),
        )?;
    }
    writeln!(out, "\n`seshat sessions show <id> --full` shows a whole session.")?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
