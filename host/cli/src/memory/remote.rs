//! `seshat memory --remote`: a team service's memory, as the caller may see it — the service
//! answers with the caller's user memory, this machine's project's memory and the team scopes
//! granted to the caller, and refuses writes to a scope the caller may only read.

use std::io::Write as _;
use std::process::ExitCode;

use anyhow::bail;
use seshat::memory::{Graph, Scope};
use seshat_protocol::memory_tools as mt;
use seshat_protocol::methods as m;

use super::{
    Action, Args, confirm_clear, note_to_set, print_cleared, print_context, print_deletions, print_restored,
    print_search, print_set, print_show,
};
use crate::{Context, format, remote::Remote};

/// Runs `memory` against `service`.
pub fn run(ctx: &Context, args: &Args, service: &mut Remote) -> anyhow::Result<ExitCode> {
    let scope = args.scope.clone();
    let mut out = format::stdout();
    match args.action {
        Action::Show => {
            let scope = scope.unwrap_or(Scope::User);
            let mut notes = service.request::<m::NotesList>(&m::NotesListParams { scope: Some(scope.clone()) })?;
            unsourced(&mut notes.notes, args.show_source);
            let limit = args.limit.unwrap_or(100);
            let params = mt::ReadGraphParams { scope: Some(scope.clone()), limit: Some(limit), offset: None };
            let page = service.request::<m::MemoryReadGraph>(&params)?;
            let more = page.note.is_some();
            let graph = sourced(Graph { entities: page.entities, relations: page.relations }, args.show_source);
            print_show(&mut out, args.json, &scope, Some(&ctx.project), &notes.notes, &graph, more)?;
        }
        Action::Set => {
            let (key, value) = note_to_set(args)?;
            let ttl = args.ttl.clone();
            let params = m::NotesSetParams { key: key.to_string(), value: value.to_string(), scope, ttl };
            let set = service.request::<m::NotesSet>(&params)?;
            print_set(&mut out, args.json, &set.note)?;
        }
        Action::Search => {
            let Some(query) = &args.query else { bail!("--action search needs --query") };
            let params = m::NotesSearchParams { query: query.clone(), scope: scope.clone() };
            let mut notes = service.request::<m::NotesSearch>(&params)?;
            unsourced(&mut notes.notes, args.show_source);
            let params = mt::SearchNodesParams { query: query.clone(), scope, limit: Some(args.limit.unwrap_or(20)) };
            let page = service.request::<m::MemorySearchNodes>(&params)?;
            let more = page.note.is_some();
            let graph = sourced(Graph { entities: page.entities, relations: page.relations }, args.show_source);
            print_search(&mut out, args.json, query, &notes.notes, &graph, more)?;
        }
        Action::Clear => {
            let scope = scope.unwrap_or(Scope::User);
            if !confirm_clear(args, Some(&ctx.project), &scope)? {
                return Ok(ExitCode::FAILURE);
            }
            let params = m::MemoryClearParams { scope };
            let cleared = service.request::<m::MemoryClear>(&params)?;
            print_cleared(&mut out, args.json, &cleared.scope, cleared.records, None)?;
        }
        Action::Context => {
            let params = m::MemoryContextParams { budget: args.budget.map(|b| b as u64) };
            let context = service.request::<m::MemoryContextGet>(&params)?;
            print_context(&mut out, args.json, &context)?;
        }
        Action::Deleted => {
            let listed = service.request::<m::MemoryDeletions>(&m::Empty {})?;
            print_deletions(&mut out, args.json, &listed.deletions)?;
        }
        Action::Restore => {
            let Some(id) = args.id else { bail!("--action restore needs --id (see `seshat memory --action deleted`)") };
            let restored = service.request::<m::MemoryRestore>(&m::MemoryRestoreParams { id })?;
            print_restored(&mut out, args.json, &restored)?;
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// `graph` with the provenance the service always sends left out unless `--show-source` asked.
fn sourced(mut graph: Graph, show: bool) -> Graph {
    if !show {
        for e in &mut graph.entities {
            e.source = None;
            e.observation_sources.clear();
        }
    }
    graph
}

/// `notes` with their provenance left out unless `--show-source` asked.
fn unsourced(notes: &mut [seshat::memory::Note], show: bool) {
    if !show {
        for n in notes {
            n.source = None;
        }
    }
}
