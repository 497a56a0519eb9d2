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
    /// Show each fork under the session it was forked from, and each rewound branch (JSON rows
    /// gain `depth` and `rewinds`).
    #[arg(long)]
    tree: bool,
}

#[derive(Serialize)]
struct Row<'a> {
    short_id: &'a str,
    /// How deep under its listed ancestors a fork sits (with `--tree`).
    #[serde(skip_serializing_if = "Option::is_none")]
    depth: Option<usize>,
    /// The rewound branches in force (with `--tree`).
    #[serde(skip_serializing_if = "Option::is_none")]
    rewinds: Option<Vec<seshat::store::Rewind>>,
    #[serde(flatten)]
    session: &'a SessionInfo,
}

/// The listed sessions' indices in tree order (each fork after the session it was forked from,
/// forks oldest first) with their depth; a fork whose parent is not listed is a root.
fn tree(sessions: &[SessionInfo]) -> Vec<(usize, usize)> {
    let listed: std::collections::HashSet<&str> = sessions.iter().map(|s| s.id.as_str()).collect();
    let mut children: std::collections::HashMap<&str, Vec<usize>> = std::collections::HashMap::new();
    let mut roots = Vec::new();
    for (i, s) in sessions.iter().enumerate() {
        // A fork, or an imported one that remembers where it came from.
        let parent = s.parent_id.as_deref().or_else(|| s.metadata["forked_from"]["session"].as_str());
        match parent.filter(|p| listed.contains(p)) {
            Some(p) => children.entry(p).or_default().push(i),
            None => roots.push(i),
        }
    }
    for list in children.values_mut() {
        list.sort_by_key(|&i| (sessions[i].created_at, sessions[i].id.as_str()));
    }
    let mut out = Vec::with_capacity(sessions.len());
    let mut stack: Vec<(usize, usize)> = roots.into_iter().rev().map(|i| (i, 0)).collect();
    while let Some((i, depth)) = stack.pop() {
        out.push((i, depth));
        if let Some(kids) = children.get(sessions[i].id.as_str()) {
            stack.extend(kids.iter().rev().map(|&k| (k, depth + 1)));
        }
    }
    out
}

/// The table's header.
fn write_header(out: &mut impl Write, width: usize) -> std::io::Result<()> {
    writeln!(out, "{:<width$}  {:<16}  {:>8}  {:<14}  TITLE", "ID", "UPDATED", "MESSAGES", "CONTEXT")
}

/// One session's row (indented `depth` under its parent in a tree).
fn write_row(
    out: &mut impl Write,
    width: usize,
    id: &str,
    s: &SessionInfo,
    depth: Option<usize>,
) -> std::io::Result<()> {
    let indent = depth.filter(|&d| d > 0).map(|d| format!("{}└ ", "  ".repeat(d - 1))).unwrap_or_default();
    let lineage = match (&s.parent_id, s.fork_seq) {
        (Some(parent), Some(at)) => format!(" (fork of {} after {at})", &parent[..parent.len().min(8)]),
        _ => String::new(),
    };
    writeln!(
        out,
        "{:<width$}  {:<16}  {:>8}  {:<14}  {indent}{}{lineage}",
        id,
        format::time(s.updated_at),
        s.message_count,
        format::context_use(s.context_tokens, s.context_window),
        format::clip(s.title.as_deref().unwrap_or("(untitled)"), 60),
    )
}

/// `sessions list --remote`: the service's `session/list` for this project (or all), whole ids.
fn run_remote(ctx: &Context, args: &Args, remote: &mut crate::remote::Remote) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(!args.tree, "--tree does not work against a remote service yet: list without it");
    let mut params = serde_json::json!({"all": args.all});
    if let Some(limit) = args.limit {
        params["limit"] = limit.into();
    }
    let listed = remote.call("session/list", &params)??;
    let sessions: Vec<SessionInfo> = serde_json::from_value(listed["sessions"].clone())
        .map_err(|e| anyhow::anyhow!("the service's session list cannot be read: {e}"))?;
    let mut out = format::stdout();
    if args.json {
        let rows: Vec<Row<'_>> =
            sessions.iter().map(|s| Row { short_id: &s.id, depth: None, rewinds: None, session: s }).collect();
        format::json(&mut out, &rows)?;
    } else if sessions.is_empty() {
        writeln!(out, "No sessions in this project ({}) on the service. `--all` lists every project.", ctx.project)?;
    } else {
        let width = sessions.iter().map(|s| s.id.len()).max().unwrap_or(26);
        write_header(&mut out, width)?;
        for s in &sessions {
            write_row(&mut out, width, &s.id, s, None)?;
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

pub fn run(ctx: &Context, args: &Args) -> anyhow::Result<ExitCode> {
    if let Some(mut remote) = ctx.remote()? {
        return run_remote(ctx, args, &mut remote);
    }
    let store = ctx.store()?;
    let filter = ListFilter { project: (!args.all).then(|| ctx.project.clone()), limit: args.limit };
    let sessions = store.list_sessions(&filter)?;
    let ids: Vec<&str> = sessions.iter().map(|s| s.id.as_str()).collect();
    let short = store.short_ids(&ids)?;
    let order: Vec<(usize, Option<usize>)> = if args.tree {
        tree(&sessions).into_iter().map(|(i, d)| (i, Some(d))).collect()
    } else {
        (0..sessions.len()).map(|i| (i, None)).collect()
    };
    let mut out = format::stdout();
    if args.json {
        let mut rows: Vec<Row<'_>> = Vec::with_capacity(order.len());
        for &(i, depth) in &order {
            let rewinds = if args.tree { Some(store.live_rewinds(&sessions[i].id)?) } else { None };
            rows.push(Row { short_id: &short[i], depth, rewinds, session: &sessions[i] });
        }
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
    write_header(&mut out, width)?;
    for &(i, depth) in &order {
        let (s, id) = (&sessions[i], &short[i]);
        write_row(&mut out, width, id, s, depth)?;
        if args.tree {
            let pad = " ".repeat(width + 2 + 16 + 2 + 8 + 2 + 14 + 2);
            for r in store.live_rewinds(&s.id)? {
                writeln!(
                    out,
                    "{pad}{}  ┄ rewound {}–{} (a branch: `seshat sessions fork {id} --at {}`)",
                    "  ".repeat(depth.unwrap_or(0)),
                    r.from_seq,
                    r.through_seq,
                    r.through_seq
                )?;
            }
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
