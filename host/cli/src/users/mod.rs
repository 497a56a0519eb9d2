//! `seshat users`: the people a shared store and a network `seshat serve` know (each owns their
//! sessions and `user` memory). Acts on the store directly, as its operator (an admin who can
//! never be locked out): whoever runs it holds the database. With `--remote`, on the service, as
//! the token's user, who must be an admin.

use std::io::Write;
use std::process::ExitCode;

use crate::{Context, format};

/// What `seshat users` does.
#[derive(Debug, clap::Subcommand)]
pub enum UsersCommand {
    /// Add a user (then `seshat tokens create --user NAME` gives them a token). Names are unique
    /// whatever their case.
    Add {
        /// Letters, digits, `-`, `_`, `.`; at most 64.
        name: String,
        /// An admin: manages users, tokens and team scopes.
        #[arg(long)]
        admin: bool,
    },
    /// List the users, with their role and state.
    List {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Disable a user: their tokens are refused and their open connections closed; nothing of
    /// theirs is deleted (`users enable` lets them back).
    Disable {
        /// The user.
        name: String,
    },
    /// Enable a disabled user again.
    Enable {
        /// The user.
        name: String,
    },
    /// Remove a user: their tokens and grants go at once, their open connections are closed. A
    /// user who owns sessions, memory or documents is refused unless `--purge` deletes those too.
    Remove {
        /// The user.
        name: String,
        /// Delete what they own with them.
        #[arg(long)]
        purge: bool,
    },
    /// Rename a user, with everything they own; their tokens go on working.
    Rename {
        /// The user's name now.
        old: String,
        /// Their new name.
        new: String,
    },
    /// Make a user an admin (`--off`: no longer one).
    Admin {
        /// The user.
        name: String,
        /// Take the role away instead.
        #[arg(long)]
        off: bool,
    },
}

pub fn run(ctx: &Context, cmd: UsersCommand) -> anyhow::Result<ExitCode> {
    let mut store = crate::principals::Principals::open(ctx)?;
    let mut out = format::stdout();
    match cmd {
        UsersCommand::Add { name, admin } => {
            store.add_user(&name, admin)?;
            let role = if admin { " (an admin)" } else { "" };
            writeln!(out, "Added user {name}{role}. Give them a token: seshat tokens create --user {name}")?;
        }
        UsersCommand::List { json } => {
            let users = store.users()?;
            if json {
                format::json(&mut out, &users)?;
            } else {
                writeln!(out, "{:<24}  {:<6}  {:<26}  CREATED", "NAME", "ROLE", "STATE")?;
                for u in &users {
                    let state =
                        u.disabled_at.map_or_else(|| "active".to_string(), |t| format!("disabled {}", format::time(t)));
                    let role = if u.admin { "admin" } else { "user" };
                    writeln!(out, "{:<24}  {role:<6}  {state:<26}  {}", u.name, format::time(u.created_at))?;
                }
            }
        }
        UsersCommand::Disable { name } => {
            let changed = store.disable_user(&name, true)?;
            let said = if changed { "Disabled" } else { "Already disabled:" };
            writeln!(out, "{said} {name}. Their tokens are refused until `seshat users enable {name}`.")?;
        }
        UsersCommand::Enable { name } => {
            let changed = store.disable_user(&name, false)?;
            writeln!(out, "{} {name}.", if changed { "Enabled" } else { "Already enabled:" })?;
        }
        UsersCommand::Remove { name, purge } => {
            let removed = store.remove_user(&name, purge)?;
            writeln!(
                out,
                "Removed {name}: {} tokens, {} sessions, {} memory records and {} documents.",
                removed.tokens, removed.sessions, removed.memory, removed.documents
            )?;
        }
        UsersCommand::Rename { old, new } => {
            store.rename_user(&old, &new)?;
            writeln!(out, "Renamed {old} to {new}; their tokens go on working.")?;
        }
        UsersCommand::Admin { name, off } => {
            let changed = store.set_admin(&name, !off)?;
            let now = if off { "not an admin" } else { "an admin" };
            writeln!(out, "{name} is {now}{}.", if changed { " now" } else { " already" })?;
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
