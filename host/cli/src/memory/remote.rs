//! `seshat memory --remote`: a team service's memory, as the caller may see it — the service
//! answers with the caller's user memory, this machine's project's memory and the team scopes
//! granted to the caller, and refuses writes to a scope the caller may only read.

use std::io::Write as _;
use std::process::ExitCode;

use anyhow::bail;
use clap::ValueEnum as _;
use serde_json::{Value, json};
use seshat::memory::{Graph, Scope};
use seshat_protocol::methods::{self as m, Method as _};

use super::{Action, Args, note_to_set, print_search, print_set, print_show};
use crate::{Context, format, remote::Remote};

/// Runs `memory` against `service`.
pub fn run(ctx: &Context, args: &Args, service: &mut Remote) -> anyhow::Result<ExitCode> {
    let scope = args.scope.clone();
    let mut out = format::stdout();
    match args.action {
        Action::Show => {
            let scope = scope.unwrap_or(Scope::User);
            let notes = service.call(m::NotesList::NAME, &json!({"scope": scope}))??;
            let notes: m::NotesResult = read(notes, "notes")?;
            let limit = args.limit.unwrap_or(100);
            let graph = service.call("memory/read_graph", &json!({"scope": scope, "limit": limit}))??;
            let more = graph.get("note").is_some();
            let graph: Graph = read(graph, "graph")?;
            print_show(&mut out, args.json, &scope, Some(&ctx.project), &notes.notes, &graph, more)?;
        }
        Action::Set => {
            let (key, value) = note_to_set(args)?;
            let params = m::NotesSetParams { key: key.to_string(), value: value.to_string(), scope };
            let set: m::NoteResult = read(service.call(m::NotesSet::NAME, &serde_json::to_value(params)?)??, "note")?;
            print_set(&mut out, args.json, &set.note)?;
        }
        Action::Search => {
            let Some(query) = &args.query else { bail!("--action search needs --query") };
            let params = m::NotesSearchParams { query: query.clone(), scope: scope.clone() };
            let notes: m::NotesResult =
                read(service.call(m::NotesSearch::NAME, &serde_json::to_value(params)?)??, "notes")?;
            let mut params = json!({"query": query, "limit": args.limit.unwrap_or(20)});
            if let Some(scope) = &scope {
                params["scope"] = serde_json::to_value(scope)?;
            }
            let graph = service.call("memory/search_nodes", &params)??;
            let more = graph.get("note").is_some();
            let graph: Graph = read(graph, "graph")?;
            print_search(&mut out, args.json, query, &notes.notes, &graph, more)?;
        }
        Action::Clear | Action::Context | Action::Deleted | Action::Restore => bail!(
            "`memory --action {}` does not work against a remote service: show, set and search do \
             (unset SESHAT_REMOTE, or drop --remote, to run it on this machine's store)",
            args.action.to_possible_value().map(|v| v.get_name().to_string()).unwrap_or_default()
        ),
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// The service's answer read as `T`, or an error saying which answer could not be read.
fn read<T: serde::de::DeserializeOwned>(answer: Value, what: &str) -> anyhow::Result<T> {
    serde_json::from_value(answer).map_err(|e| anyhow::anyhow!("the service's {what} cannot be read: {e}"))
}
