//! `seshat memory`: read and edit long-term memory from the command line.

mod extracted;
mod remote;
mod review;
mod versions;

use std::io::{BufRead, IsTerminal, Write};
use std::process::ExitCode;

use anyhow::bail;
use clap::ValueEnum;
use serde_json::json;
use seshat::memory::{Graph, Note, Scope};

use super::{Context, format};

/// Arguments of `memory`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
    seshat memory                                          # show user memory\n  \
    seshat memory --scope project                          # this project's memory\n  \
    seshat memory --action set --key style --value \"short answers, no preamble\"\n  \
    seshat memory --action clear --scope user              # asks first; --yes for scripts\n  \
    seshat memory --action context                         # what would be given to the agent\n  \
    seshat memory --action search --query \"release plan\"   # matching notes, then ranked entities\n  \
    seshat memory --scope project --show-source            # who wrote each line, and where\n  \
    seshat memory history \"Release plan\"                   # every version of an entity\n  \
    seshat memory undo --session 01JF3…                    # take back what one session's agent wrote")]
#[command(args_conflicts_with_subcommands = true)]
pub struct Args {
    #[command(subcommand)]
    command: Option<versions::Command>,
    /// What to do.
    #[arg(long, value_enum, default_value_t = Action::Show)]
    action: Action,
    /// Which memory: user (about you), project (this repository), cross (shared everywhere), or
    /// team:NAME (a team's, shared with its members). Default: user for show, set and clear;
    /// all of yours and your teams' for search and context.
    #[arg(long, value_parser = parse_scope)]
    scope: Option<Scope>,
    /// The note's key (set).
    #[arg(long)]
    key: Option<String>,
    /// The note's value (set).
    #[arg(long)]
    value: Option<String>,
    /// What to search for (search).
    #[arg(long)]
    query: Option<String>,
    /// The deletion to undo (restore); `--action deleted` lists them.
    #[arg(long)]
    id: Option<i64>,
    /// At most this many entities (show, search).
    #[arg(long, value_name = "N")]
    limit: Option<usize>,
    /// Token budget (context; default from config, else 2000).
    #[arg(long, value_name = "TOKENS")]
    budget: Option<usize>,
    /// Do not ask before clearing.
    #[arg(long, short = 'y')]
    yes: bool,
    /// Say where each line came from: who wrote it, when, and for an agent's the session and
    /// message (show, search).
    #[arg(long)]
    show_source: bool,
    /// Also show the observations that were replaced, with when they stopped being true (show).
    #[arg(long)]
    history: bool,
    /// Show memory as it stood at TIME: a date (2026-12-01), a date and time (2026-12-01T09:30),
    /// or an age ago (3d) (show).
    #[arg(long, value_name = "TIME")]
    as_of: Option<String>,
    /// Keep the note this long, then let it expire: an age like 30d, 12h, 2w (set; default the
    /// scope's [memory.ttl], else forever).
    #[arg(long, value_name = "AGE")]
    ttl: Option<String>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Action {
    /// Show notes and entities of a scope.
    Show,
    /// Set a note: --key and --value.
    Set,
    /// Remove everything in a scope (a JSONL backup is written first).
    Clear,
    /// Print the memory context a new session is given.
    Context,
    /// Search notes and the graph (ranked): --query.
    Search,
    /// List deletions that can be restored.
    Deleted,
    /// Undo a deletion: --id.
    Restore,
}

/// Parses a `--scope` value: `user`, `project`, `cross` or `team:NAME`.
pub fn parse_scope(value: &str) -> Result<Scope, String> {
    Scope::parse(value).ok_or_else(|| {
        format!(
            "`{}` is not a scope: use user, project, cross or team:NAME (NAME: letters, digits, `-`, `_`, `.`)",
            value.escape_debug()
        )
    })
}

pub fn run(ctx: &Context, args: &Args) -> anyhow::Result<ExitCode> {
    if let Some(command) = &args.command {
        return versions::run(ctx, command);
    }
    let as_of = args.as_of.as_deref().map(parse_time).transpose()?;
    if as_of.is_some() && args.action != Action::Show {
        bail!("--as-of shows memory as it stood then: use it with --action show");
    }
    let ttl = args.ttl.as_deref().map(|t| seshat::config::parse_age(t).map_err(|e| anyhow::anyhow!("--ttl: {e}")));
    let ttl = ttl.transpose()?;
    if ttl.is_some() && args.action != Action::Set {
        bail!(
            "--ttl sets how long a note is kept: use it with --action set (an entity's: seshat memory expire NAME --ttl AGE)"
        );
    }
    if let Some(mut service) = ctx.remote()? {
        if as_of.is_some() {
            bail!("--as-of reads a store this machine opens: run it without --remote");
        }
        return remote::run(ctx, args, &mut service);
    }
    let config = ctx.config()?;
    let ttls = seshat::memory::Ttls::parse(&config.memory.ttl).map_err(|e| anyhow::anyhow!("config.toml: {e}"))?;
    let mut store = ctx.store()?;
    let mut memory = store
        .memory(ctx.repository.as_deref())
        .with_sources(args.show_source)
        .with_history(args.history)
        .as_of(as_of)
        .with_ttls(ttls);
    let scope: Option<Scope> = args.scope.clone();
    let mut out = format::stdout();
    match args.action {
        Action::Show => {
            let scope = scope.unwrap_or(Scope::User);
            let notes = memory.notes(&scope)?;
            let (graph, more) = memory.read_graph(Some(&scope), 0, args.limit.unwrap_or(100))?;
            print_show(&mut out, args.json, &scope, memory.project(), &notes, &graph, more)?;
        }
        Action::Set => {
            let (key, value) = note_to_set(args)?;
            let scope = scope.unwrap_or(Scope::User);
            let note = memory.set_note_for(scope, key.trim(), value, ttl)?;
            print_set(&mut out, args.json, &note)?;
        }
        Action::Clear => {
            let scope = scope.unwrap_or(Scope::User);
            if !confirm_clear(args, memory.project(), &scope)? {
                return Ok(ExitCode::FAILURE);
            }
            let (backup, records) = memory.clear(&scope, &ctx.dirs.data.join("backups"))?;
            print_cleared(&mut out, args.json, &scope, records as u64, Some(&backup))?;
        }
        Action::Context => {
            let budget = args
                .budget
                .unwrap_or_else(|| config.memory_context_tokens().unwrap_or(seshat::memory::DEFAULT_CONTEXT_TOKENS));
            print_context(&mut out, args.json, &memory.context(budget)?)?;
        }
        Action::Search => {
            let Some(query) = &args.query else { bail!("--action search needs --query") };
            let notes = memory.search_notes(query, scope.as_ref())?;
            let limit = args.limit.unwrap_or(20);
            let (graph, more) =
                match seshat::retrieval::Recall::from_config(&config, &ctx.catalog(), &ctx.runtime(), &ctx.db)
                    .filter(seshat::retrieval::Recall::memory)
                {
                    Some(mut recall) => recall.search_memory(&mut memory, query, scope.as_ref(), limit)?,
                    None => memory.search(query, scope.as_ref(), limit)?,
                };
            print_search(&mut out, args.json, query, &notes, &graph, more)?;
        }
        Action::Deleted => print_deletions(&mut out, args.json, &memory.deletions()?)?,
        Action::Restore => {
            let Some(id) = args.id else { bail!("--action restore needs --id (see `seshat memory --action deleted`)") };
            print_restored(&mut out, args.json, &memory.restore(id)?)?;
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// A time `--as-of` names, in Unix milliseconds: a date (local midnight), a date and time (local),
/// an RFC 3339 instant, or an age ago (`3d`).
fn parse_time(text: &str) -> anyhow::Result<i64> {
    let text = text.trim();
    if let Ok(age) = seshat::config::parse_age(text) {
        return Ok(seshat::store::now_ms().saturating_sub(age));
    }
    if let Ok(t) = text.parse::<jiff::Timestamp>() {
        return Ok(t.as_millisecond());
    }
    let zone = jiff::tz::TimeZone::system();
    if let Ok(dt) = text.parse::<jiff::civil::DateTime>()
        && let Ok(t) = zone.to_timestamp(dt)
    {
        return Ok(t.as_millisecond());
    }
    if let Ok(d) = text.parse::<jiff::civil::Date>()
        && let Ok(t) = zone.to_timestamp(d.to_datetime(jiff::civil::Time::midnight()))
    {
        return Ok(t.as_millisecond());
    }
    bail!(
        "--as-of `{text}` is not a time: give a date (2026-12-01), a date and time (2026-12-01T09:30) or an age ago (3d)"
    )
}

/// Asks before clearing `scope` (unless `--yes`); whether to go on. Without a terminal to ask on,
/// `--yes` is required.
fn confirm_clear(args: &Args, project: Option<&str>, scope: &Scope) -> anyhow::Result<bool> {
    if args.yes {
        return Ok(true);
    }
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        bail!("refusing to clear {scope} memory without confirmation: pass --yes");
    }
    eprint!("Clear all {scope} memory{}? A backup is written first. [y/N] ", where_(project, scope));
    std::io::stderr().flush()?;
    let mut answer = String::new();
    stdin.lock().read_line(&mut answer)?;
    let yes = matches!(answer.trim(), "y" | "Y" | "yes" | "Yes" | "YES");
    if !yes {
        eprintln!("Nothing cleared.");
    }
    Ok(yes)
}

/// What a clear removed, and where its backup is (`None`: on the service's machine).
fn print_cleared(
    out: &mut format::Out,
    json: bool,
    scope: &Scope,
    records: u64,
    backup: Option<&std::path::Path>,
) -> anyhow::Result<()> {
    if json {
        format::json(out, &json!({"scope": scope, "records": records, "backup": backup}))?;
    } else {
        let kept = backup.map_or_else(|| "kept on the service".to_string(), |b| b.display().to_string());
        writeln!(out, "Cleared {scope} memory ({records} records). Backup: {kept}")?;
    }
    Ok(())
}

/// The memory context a session is given.
fn print_context(out: &mut format::Out, json: bool, context: &seshat::memory::MemoryContext) -> anyhow::Result<()> {
    if json {
        format::json(out, context)?;
    } else if context.text.is_empty() {
        writeln!(out, "(no long-term memory yet: nothing would be given to the agent)")?;
    } else {
        write!(out, "{}", context.text)?;
    }
    Ok(())
}

/// The deletions that can be restored.
fn print_deletions(out: &mut format::Out, json: bool, deletions: &[seshat::memory::Deletion]) -> anyhow::Result<()> {
    if json {
        format::json(out, &deletions)?;
    } else if deletions.is_empty() {
        writeln!(out, "Nothing to restore.")?;
    } else {
        for d in deletions {
            writeln!(out, "{:>5}  {}  {}  {}", d.id, format::time(d.created_at), d.origin, d.summary)?;
        }
        writeln!(out, "Undo one with: seshat memory --action restore --id <ID>")?;
    }
    Ok(())
}

/// A restored deletion.
fn print_restored(out: &mut format::Out, json: bool, d: &seshat::memory::Deletion) -> anyhow::Result<()> {
    if json {
        format::json(out, d)?;
    } else {
        writeln!(out, "Restored deletion {} ({}: {}).", d.id, d.origin, d.summary)?;
    }
    Ok(())
}

fn title(scope: &Scope) -> String {
    match scope {
        Scope::User => "User".into(),
        Scope::Project => "Project".into(),
        Scope::Cross => "Cross-project".into(),
        Scope::Team(team) => format!("Team {team}"),
    }
}

fn where_(project: Option<&str>, scope: &Scope) -> String {
    match (scope, project) {
        (Scope::Project, Some(p)) => format!(" of {p}"),
        _ => String::new(),
    }
}

/// The key and value `--action set` names, checked.
fn note_to_set(args: &Args) -> anyhow::Result<(&str, &str)> {
    let (Some(key), Some(value)) = (&args.key, &args.value) else {
        bail!("--action set needs --key and --value, e.g. --key style --value \"short answers\"");
    };
    if key.trim().is_empty() {
        bail!("--key must not be empty");
    }
    Ok((key.trim(), value))
}

/// What `--action show` prints: a scope's notes and a page of its graph.
fn print_show(
    out: &mut format::Out,
    json: bool,
    scope: &Scope,
    project: Option<&str>,
    notes: &[Note],
    graph: &Graph,
    more: bool,
) -> anyhow::Result<()> {
    if json {
        format::json(
            out,
            &json!({"scope": scope, "notes": notes, "entities": graph.entities, "relations": graph.relations, "more": more}),
        )?;
        return Ok(());
    }
    writeln!(out, "{} memory{}", title(scope), where_(project, scope))?;
    if notes.is_empty() && graph.entities.is_empty() {
        writeln!(out, "  (empty)")?;
    }
    for n in notes {
        writeln!(out, "  {}: {}{}", n.key, n.value, expiry(n.expires_at))?;
        if let Some(source) = &n.source {
            writeln!(out, "      ↳ {}", versions::describe(source))?;
        }
    }
    render_graph(out, graph)?;
    if more {
        writeln!(out, "  … more entities: pass a larger --limit")?;
    }
    Ok(())
}

/// What `--action set` prints about the note it set.
fn print_set(out: &mut format::Out, json: bool, note: &Note) -> anyhow::Result<()> {
    if json {
        format::json(out, note)?;
    } else {
        writeln!(out, "Set `{}` in {} memory.", note.key, note.scope)?;
    }
    Ok(())
}

/// What `--action search` prints: matching notes, then the ranked entities.
fn print_search(
    out: &mut format::Out,
    json: bool,
    query: &str,
    notes: &[Note],
    graph: &Graph,
    more: bool,
) -> anyhow::Result<()> {
    if json {
        format::json(
            out,
            &json!({"notes": notes, "entities": graph.entities, "relations": graph.relations, "more": more}),
        )?;
        return Ok(());
    }
    if notes.is_empty() && graph.entities.is_empty() {
        writeln!(out, "No memory matches `{query}`.")?;
    }
    for n in notes {
        writeln!(out, "  {}: {} [{}]{}", n.key, n.value, n.scope, expiry(n.expires_at))?;
        if let Some(source) = &n.source {
            writeln!(out, "      ↳ {}", versions::describe(source))?;
        }
    }
    render_graph(out, graph)?;
    if more {
        writeln!(out, "… more matched: pass a larger --limit or a narrower --query")?;
    }
    Ok(())
}

/// ` (expires 2026-12-31 10:00)` for a line with an expiry.
fn expiry(at: Option<i64>) -> String {
    at.map(|at| format!(" (expires {})", format::time(at))).unwrap_or_default()
}

fn render_graph(out: &mut dyn Write, graph: &Graph) -> std::io::Result<()> {
    for e in &graph.entities {
        writeln!(out, "  {} ({}) [{}]{}", e.name, e.entity_type, e.scope, expiry(e.expires_at))?;
        if let Some(source) = &e.source {
            writeln!(out, "    ↳ created by {}", versions::describe(source))?;
        }
        for (i, o) in e.observations.iter().enumerate() {
            writeln!(out, "    - {o}")?;
            if let Some(Some(source)) = e.observation_sources.get(i) {
                writeln!(out, "      ↳ {}", versions::describe(source))?;
            }
        }
        for c in &e.conflicts {
            writeln!(out, "    ! `{}` may contradict `{}` (neither replaces the other)", c.observation, c.contradicts)?;
        }
        for p in &e.past_observations {
            let by = p.replaced_by.as_ref().map(|r| format!(", replaced by `{r}`")).unwrap_or_default();
            writeln!(out, "    ~ {} (until {}{by})", p.content, format::time(p.valid_until))?;
        }
    }
    for r in &graph.relations {
        writeln!(out, "  {} —{}→ {}", r.from, r.relation_type, r.to)?;
    }
    Ok(())
}
