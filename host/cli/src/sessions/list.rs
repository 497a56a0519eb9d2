//! `seshat sessions list`.

use std::collections::BTreeMap;
use std::io::Write;
use std::process::ExitCode;

use serde::Serialize;
use seshat::store::{ListFilter, Rewind, SessionInfo};

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
    rewinds: Option<Vec<Rewind>>,
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
/// The width of the PROJECT column (`--all`): a project key's last characters.
const PROJECT_WIDTH: usize = 24;

fn write_header(out: &mut impl Write, width: usize, project: bool) -> std::io::Result<()> {
    let project = if project { format!("{:<PROJECT_WIDTH$}  ", "PROJECT") } else { String::new() };
    writeln!(out, "{:<width$}  {project}{:<16}  {:>8}  {:<14}  TITLE", "ID", "UPDATED", "MESSAGES", "CONTEXT")
}

/// A project key as its column shows it: whole when it fits, else its end (the repository's or
/// directory's name) after an ellipsis.
fn project_cell(key: &str) -> String {
    let chars: Vec<char> = key.chars().collect();
    if chars.len() <= PROJECT_WIDTH {
        return key.to_string();
    }
    let tail: String = chars[chars.len() - (PROJECT_WIDTH - 1)..].iter().collect();
    format!("…{tail}")
}

/// One session's row (indented `depth` under its parent in a tree).
fn write_row(
    out: &mut impl Write,
    width: usize,
    id: &str,
    s: &SessionInfo,
    depth: Option<usize>,
    project: bool,
) -> std::io::Result<()> {
    let indent = depth.filter(|&d| d > 0).map(|d| format!("{}└ ", "  ".repeat(d - 1))).unwrap_or_default();
    let lineage = match (&s.parent_id, s.fork_seq) {
        (Some(parent), Some(at)) => format!(" (fork of {} after {at})", &parent[..parent.len().min(8)]),
        _ => String::new(),
    };
    let project = if project {
        format!("{:<PROJECT_WIDTH$}  ", format::visible(&project_cell(&s.project)))
    } else {
        String::new()
    };
    writeln!(
        out,
        "{:<width$}  {project}{:<16}  {:>8}  {:<14}  {indent}{}{lineage}",
        id,
        format::time(s.updated_at),
        s.message_count,
        format::context_use(s.context_tokens, s.context_window),
        format::clip(s.title.as_deref().unwrap_or("(untitled)"), 60),
    )
}

/// What is listed: the sessions with the ids to show and, with `--tree`, their rewinds in force.
struct Listing {
    sessions: Vec<SessionInfo>,
    /// Each session's id as shown: its shortest unique prefix here, whole on a service.
    ids: Vec<String>,
    /// Rewinds in force by session (with `--tree`; a session without any is absent).
    rewinds: BTreeMap<String, Vec<Rewind>>,
    /// Listed from a service.
    remote: bool,
}

/// The service's `session/list` for this project (or all).
fn remote(args: &Args, remote: &mut crate::remote::Remote) -> anyhow::Result<Listing> {
    let params = seshat_protocol::methods::SessionListParams {
        all: args.all,
        limit: args.limit.map(|l| l as u64),
        rewinds: args.tree,
    };
    let listed = remote.request::<seshat_protocol::methods::SessionList>(&params)?;
    let ids = listed.sessions.iter().map(|s| s.id.clone()).collect();
    Ok(Listing { sessions: listed.sessions, ids, rewinds: listed.rewinds, remote: true })
}

/// The store's sessions of this project (or all).
fn local(ctx: &Context, args: &Args) -> anyhow::Result<Listing> {
    let store = ctx.store()?;
    let filter = ListFilter { project: (!args.all).then(|| ctx.project.clone()), limit: args.limit };
    let sessions = store.list_sessions(&filter)?;
    let all: Vec<&str> = sessions.iter().map(|s| s.id.as_str()).collect();
    let ids = store.short_ids(&all)?;
    let rewinds = if args.tree { store.live_rewinds_of(&sessions)? } else { BTreeMap::new() };
    Ok(Listing { sessions, ids, rewinds, remote: false })
}

pub fn run(ctx: &Context, args: &Args) -> anyhow::Result<ExitCode> {
    let listing = match ctx.remote()? {
        Some(mut service) => remote(args, &mut service)?,
        None => local(ctx, args)?,
    };
    let Listing { sessions, ids, rewinds, .. } = &listing;
    let order: Vec<(usize, Option<usize>)> = if args.tree {
        tree(sessions).into_iter().map(|(i, d)| (i, Some(d))).collect()
    } else {
        (0..sessions.len()).map(|i| (i, None)).collect()
    };
    let rewinds_of = |id: &str| rewinds.get(id).cloned().unwrap_or_default();
    let mut out = format::stdout();
    if args.json {
        let rows: Vec<Row<'_>> = order
            .iter()
            .map(|&(i, depth)| Row {
                short_id: &ids[i],
                depth,
                rewinds: args.tree.then(|| rewinds_of(&sessions[i].id)),
                session: &sessions[i],
            })
            .collect();
        format::json(&mut out, &rows)?;
        out.flush()?;
        return Ok(ExitCode::SUCCESS);
    }
    if sessions.is_empty() {
        let on = if listing.remote { " on the service" } else { "" };
        if args.all {
            writeln!(out, "No sessions yet{on}.")?;
        } else {
            writeln!(out, "No sessions in this project ({}){on}. `--all` lists every project.", ctx.project)?;
        }
        out.flush()?;
        return Ok(ExitCode::SUCCESS);
    }
    let width = ids.iter().map(String::len).max().unwrap_or(8);
    write_header(&mut out, width, args.all)?;
    for &(i, depth) in &order {
        let (s, id) = (&sessions[i], &ids[i]);
        write_row(&mut out, width, id, s, depth, args.all)?;
        let project = if args.all { PROJECT_WIDTH + 2 } else { 0 };
        let pad = " ".repeat(width + 2 + project + 16 + 2 + 8 + 2 + 14 + 2);
        for r in rewinds.get(&s.id).into_iter().flatten() {
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
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
