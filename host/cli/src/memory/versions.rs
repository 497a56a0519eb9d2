//! `seshat memory history | revert | undo | expire`: an entity's versions, bringing one back,
//! taking back what one session's agent wrote, and when an entity expires.

use std::io::Write as _;
use std::process::ExitCode;

use anyhow::bail;
use seshat::memory::{Entity, EntityVersion, Scope, Source, SourceKind, Undone};
use seshat_protocol::methods as m;

use super::parse_scope;
use crate::{Context, format};

/// The subcommands of `memory`.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Every version of an entity: what each change made it, who made it and when.
    #[command(after_help = "Example:\n  seshat memory history \"Release plan\"")]
    History {
        /// The entity's name (any case).
        name: String,
        /// Where it lives (default: looked up in the project, user, cross, then your teams).
        #[arg(long, value_parser = parse_scope)]
        scope: Option<Scope>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Bring an entity back to one of its versions (a new version; what it drops stays restorable).
    #[command(after_help = "Example:\n  seshat memory revert \"Release plan\" --to 2")]
    Revert {
        /// The entity's name (any case).
        name: String,
        /// The version to bring back, as `seshat memory history NAME` numbers them.
        #[arg(long, value_name = "VERSION")]
        to: u32,
        /// Where it lives.
        #[arg(long, value_parser = parse_scope)]
        scope: Option<Scope>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Take back everything one session's agent wrote to memory (restorable as one deletion).
    #[command(after_help = "Example:\n  seshat memory undo --session 01JF3…")]
    Undo {
        /// The session (`seshat sessions list` shows them; `--show-source` names the one that wrote a line).
        #[arg(long)]
        session: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Writes to the memory of teams that require review: those waiting for you, and your own.
    #[command(after_help = "Examples:\n  seshat memory proposals\n  seshat memory proposals --team infra --all")]
    Proposals {
        /// Only this team's.
        #[arg(long)]
        team: Option<String>,
        /// Decided ones too.
        #[arg(long)]
        all: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Approve a proposal: its write is made, as its proposer's.
    Approve {
        /// The proposal, as `seshat memory proposals` lists it.
        id: i64,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Reject a proposal: nothing of it is written.
    Reject {
        /// The proposal.
        id: i64,
        /// Why (kept with it, shown to its proposer).
        #[arg(long)]
        reason: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Read a session with the memory extractor: what the user stated as lasting is written to
    /// memory, as after each turn of a chat with `[memory] extract` set (messages it read before
    /// are not read again).
    #[command(
        after_help = "Examples:\n  seshat memory extract 01JF3…\n  seshat memory extract 01JF3… --extractor extractor"
    )]
    Extract {
        /// The session (an id or a unique prefix).
        session: String,
        /// The extractor (default: the one `[memory] extract` names). Its model calls, if it makes
        /// any, find no model here: `extractor-model` reads in `seshat chat`.
        #[arg(long, value_name = "ID")]
        extractor: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Set when an entity expires: it then leaves the memory context and search, and is purged.
    #[command(after_help = "Examples:\n  seshat memory expire \"Sprint 12\" --ttl 14d\n  \
        seshat memory expire \"Sprint 12\" --ttl never")]
    Expire {
        /// The entity's name (any case).
        name: String,
        /// How long from now: an age like 30d, 12h, 2w; or `never`.
        #[arg(long, value_name = "AGE")]
        ttl: String,
        /// Where it lives.
        #[arg(long, value_parser = parse_scope)]
        scope: Option<Scope>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

/// Runs a `memory` subcommand, here or on the service `--remote` names.
pub fn run(ctx: &Context, command: &Command) -> anyhow::Result<ExitCode> {
    let mut out = format::stdout();
    let mut remote = ctx.remote()?;
    match command {
        Command::History { name, scope, json } => {
            let (name, scope, versions) = match remote.as_mut() {
                Some(service) => {
                    let params = m::MemoryHistoryParams { name: name.clone(), scope: scope.clone() };
                    let found = service.request::<m::MemoryHistory>(&params)?;
                    (found.name, found.scope, found.versions)
                }
                None => ctx.store()?.memory(ctx.repository.as_deref()).history(name, scope.as_ref())?,
            };
            print_history(&mut out, *json, &name, &scope, &versions)?;
        }
        Command::Revert { name, to, scope, json } => {
            let (version, entity) = match remote.as_mut() {
                Some(service) => {
                    let params = m::MemoryRevertParams { name: name.clone(), to: *to, scope: scope.clone() };
                    let done = service.request::<m::MemoryRevert>(&params)?;
                    (done.version, done.entity)
                }
                None => ctx.store()?.memory(ctx.repository.as_deref()).revert(name, *to, scope.as_ref())?,
            };
            print_reverted(&mut out, *json, *to, version, &entity)?;
        }
        Command::Undo { session, json } => {
            let undone = match remote.as_mut() {
                Some(service) => service.request::<m::MemoryUndo>(&m::MemoryUndoParams { session: session.clone() })?,
                None => ctx.store()?.memory(ctx.repository.as_deref()).undo_session(session)?,
            };
            print_undone(&mut out, *json, &undone)?;
        }
        Command::Proposals { team, all, json } => {
            let proposals = match remote.as_mut() {
                Some(service) => {
                    let params = m::MemoryProposalsParams { team: team.clone(), all: *all };
                    service.request::<m::MemoryProposals>(&params)?.proposals
                }
                None => ctx.store()?.memory(ctx.repository.as_deref()).proposals(team.as_deref(), *all)?,
            };
            super::review::print_proposals(&mut out, *json, &proposals)?;
        }
        Command::Approve { id, json } => {
            let decided = match remote.as_mut() {
                Some(service) => {
                    service.request::<m::MemoryApprove>(&m::MemoryDecideParams { id: *id, reason: None })?
                }
                None => ctx.store()?.memory(ctx.repository.as_deref()).approve(*id)?,
            };
            super::review::print_decided(&mut out, *json, &decided)?;
        }
        Command::Reject { id, reason, json } => {
            let decided = match remote.as_mut() {
                Some(service) => {
                    service.request::<m::MemoryReject>(&m::MemoryDecideParams { id: *id, reason: reason.clone() })?
                }
                None => ctx.store()?.memory(ctx.repository.as_deref()).reject(*id, reason.as_deref())?,
            };
            super::review::print_decided(&mut out, *json, &decided)?;
        }
        Command::Extract { session, extractor, json } => {
            if remote.is_some() {
                bail!("memory extract reads a store this machine opens: run it without --remote");
            }
            let env = ctx.environment(seshat::client::Overrides::default())?;
            let Some(mut extraction) = env.extraction_with(extractor.as_deref())? else {
                bail!("no extractor is set: name one with --extractor (e.g. `extractor`) or set [memory] extract");
            };
            let mut store = ctx.store()?;
            let id = store.resolve(session)?;
            let project = store.session(&id)?.project;
            let models: std::sync::Arc<dyn seshat::compaction::ModelClient> =
                std::sync::Arc::new(seshat::compaction::NoModels);
            let done = extraction.run(
                &mut store,
                &id,
                &project,
                seshat::plugins::ExtractMoment::SessionEnd,
                1,
                (models, "none"),
            )?;
            super::extracted::print(&mut out, *json, extraction.plugin_id(), &done)?;
        }
        Command::Expire { name, ttl, scope, json } => {
            if remote.is_some() {
                bail!("memory expire changes a store this machine opens: run it without --remote");
            }
            let ttl = match ttl.trim() {
                "never" | "none" => None,
                age => Some(seshat::config::parse_age(age).map_err(|e| anyhow::anyhow!("--ttl: {e}"))?),
            };
            let (name, at) = ctx.store()?.memory(ctx.repository.as_deref()).expire_entity(name, ttl, scope.as_ref())?;
            if *json {
                format::json(&mut out, &serde_json::json!({"name": name, "expiresAt": at}))?;
            } else {
                match at {
                    Some(at) => writeln!(out, "{name} expires {}.", format::time(at))?,
                    None => writeln!(out, "{name} no longer expires.")?,
                }
            }
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// Where a line came from, for people: `the agent in session 01J… at message 12, 2026-12-07 17:30`.
pub fn describe(source: &Source) -> String {
    let when = format::time(source.at);
    let who = match source.kind {
        SourceKind::User => format!("{} by hand", source.user),
        SourceKind::Agent => "the agent".to_string(),
        SourceKind::Mcp => "an agent over MCP".to_string(),
        SourceKind::Import => "an import".to_string(),
        SourceKind::Extraction => format!("the extractor {}", source.plugin.as_deref().unwrap_or("?")),
        _ => "?".to_string(),
    };
    match (&source.session, source.seq) {
        (Some(session), Some(seq)) => {
            format!("{who} in session {session} at message {seq}, {when} (seshat sessions show {session} --at {seq})")
        }
        (Some(session), None) => format!("{who} in session {session}, {when}"),
        _ => format!("{who}, {when}"),
    }
}

fn print_history(
    out: &mut format::Out,
    json: bool,
    name: &str,
    scope: &Scope,
    versions: &[EntityVersion],
) -> anyhow::Result<()> {
    if json {
        format::json(out, &serde_json::json!({"name": name, "scope": scope, "versions": versions}))?;
        return Ok(());
    }
    writeln!(out, "{name} [{scope}]")?;
    if versions.is_empty() {
        writeln!(out, "  No change to it has been recorded (it was written before versions were kept).")?;
    }
    for v in versions {
        let by = v.source.as_ref().map(|s| format!(" — {}", describe(s))).unwrap_or_default();
        writeln!(out, "  v{}  {}  {}{by}", v.version, format::time(v.at), v.change)?;
        if v.deleted {
            writeln!(out, "      (deleted)")?;
        }
        for o in &v.observations {
            writeln!(out, "      - {o}")?;
        }
    }
    if let Some(last) = versions.last()
        && versions.len() > 1
    {
        writeln!(out, "Bring one back with: seshat memory revert \"{name}\" --to <VERSION> (now v{})", last.version)?;
    }
    Ok(())
}

fn print_reverted(out: &mut format::Out, json: bool, to: u32, version: u32, entity: &Entity) -> anyhow::Result<()> {
    if json {
        format::json(out, &serde_json::json!({"version": version, "entity": entity}))?;
    } else {
        writeln!(out, "{} is back to version {to} (now version {version}):", entity.name)?;
        for o in &entity.observations {
            writeln!(out, "  - {o}")?;
        }
    }
    Ok(())
}

fn print_undone(out: &mut format::Out, json: bool, u: &Undone) -> anyhow::Result<()> {
    if json {
        format::json(out, u)?;
        return Ok(());
    }
    let total = u.observations_removed
        + u.observations_restored
        + u.entities_removed
        + u.relations_removed
        + u.deletions_restored;
    if total == 0 {
        writeln!(out, "Session {} wrote nothing to your memory that is still there.", u.session)?;
        return Ok(());
    }
    writeln!(
        out,
        "Took back what session {} wrote: {} observations and {} relations removed, {} entities removed, {} replaced \
         observations current again, {} deletions restored.",
        u.session,
        u.observations_removed,
        u.relations_removed,
        u.entities_removed,
        u.observations_restored,
        u.deletions_restored
    )?;
    if !u.entities.is_empty() {
        writeln!(out, "Entities changed: {}", u.entities.join(", "))?;
    }
    if let Some(d) = u.deletion {
        writeln!(out, "Undo this with: seshat memory --action restore --id {d}")?;
    }
    Ok(())
}
