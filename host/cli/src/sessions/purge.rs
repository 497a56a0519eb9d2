//! `seshat sessions purge`: history let go — sessions older than an age, or what `[retention]`
//! sets for sessions and memory.

use std::io::{BufRead, IsTerminal, Write};
use std::process::ExitCode;

use anyhow::bail;
use seshat::config::parse_age;
use seshat::store::Purged;

use crate::Context;

/// Arguments of `sessions purge`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Delete sessions not written to for longer than AGE (90d, 12h, 2w). Without it, what
    /// [retention] in config.toml sets, for sessions and memory.
    #[arg(long, value_name = "AGE")]
    older_than: Option<String>,
    /// With --older-than: every project's sessions (by default this project's).
    #[arg(long, requires = "older_than")]
    all: bool,
    /// List what would be deleted, and delete nothing.
    #[arg(long)]
    dry_run: bool,
    /// Do not ask for confirmation.
    #[arg(long, short = 'y')]
    yes: bool,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(ctx: &Context, args: &Args) -> anyhow::Result<ExitCode> {
    if ctx.remote()?.is_some() {
        bail!(
            "sessions purge deletes from a store this machine opens: run it without --remote (a service purges by its own [retention])"
        );
    }
    // The configuration must load: its [redaction] and [retention] decide what this changes.
    ctx.config()?;
    let mut store = ctx.store()?;
    let now = seshat::store::now_ms();
    let purge = |store: &mut seshat::store::Store, dry_run: bool| -> anyhow::Result<Purged> {
        Ok(match &args.older_than {
            Some(age) => {
                let age = parse_age(age).map_err(|e| anyhow::anyhow!("--older-than: {e}"))?;
                let project = (!args.all).then_some(ctx.project.as_str());
                let sessions = store.purge_sessions(project, now.saturating_sub(age), dry_run)?;
                Purged::of_sessions(sessions, dry_run)
            }
            None => {
                let retention = ctx.config()?.retention.retention().map_err(|e| anyhow::anyhow!("[retention] {e}"))?;
                if !retention.is_set() {
                    bail!(
                        "nothing says what to purge: give --older-than AGE (like 90d), or set [retention] sessions \
                         or memory in config.toml"
                    );
                }
                let mut purged =
                    store.expire(&|p| retention.sessions_for(p), &|p| retention.memory_for(p), now, dry_run)?;
                for (team, age) in &retention.teams {
                    match store.expire_team(team, *age, now, dry_run) {
                        Ok(t) => purged.add(&t),
                        Err(e) if e.code() == "scope_denied" => {
                            eprintln!("seshat: [retention.teams.{team}] left: {e}");
                        }
                        Err(e) => return Err(e.into()),
                    }
                }
                purged
            }
        })
    };
    if !args.dry_run && !args.yes {
        let stdin = std::io::stdin();
        if !stdin.is_terminal() {
            bail!("refusing to purge without confirmation: pass --yes (--dry-run lists what would be deleted)");
        }
        let would = purge(&mut store, true)?;
        if would.sessions.is_empty() && would.entities + would.relations + would.notes == 0 {
            writeln!(std::io::stdout().lock(), "Nothing to purge.")?;
            return Ok(ExitCode::SUCCESS);
        }
        eprint!("Delete {}? [y/N] ", summary(&would));
        std::io::stderr().flush()?;
        let mut answer = String::new();
        stdin.lock().read_line(&mut answer)?;
        if !matches!(answer.trim(), "y" | "Y" | "yes" | "YES" | "Yes") {
            eprintln!("Nothing deleted.");
            return Ok(ExitCode::FAILURE);
        }
    }
    let purged = purge(&mut store, args.dry_run)?;
    if !args.dry_run && !purged.sessions.is_empty() {
        store.scrub_leftovers()?;
    }
    let mut out = std::io::stdout().lock();
    if args.json {
        writeln!(out, "{}", serde_json::to_string(&purged)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    if args.dry_run {
        for s in &purged.sessions {
            writeln!(
                out,
                "{}  {}  {} messages  last written {}",
                s.id,
                crate::format::plain(&s.project),
                s.messages,
                crate::format::time(s.updated_at)
            )?;
        }
        writeln!(out, "Would delete {}. Nothing was deleted.", summary(&purged))?;
    } else {
        writeln!(out, "Deleted {}.", summary(&purged))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `3 sessions (120 messages), 2 memory entities, 0 relations and 1 note`.
fn summary(p: &Purged) -> String {
    let messages: u64 = p.sessions.iter().map(|s| s.messages).sum();
    let mut text = format!("{} sessions ({messages} messages)", p.sessions.len());
    if p.entities + p.relations + p.notes > 0 {
        text.push_str(&format!(", {} memory entities, {} relations and {} notes", p.entities, p.relations, p.notes));
    }
    text
}
