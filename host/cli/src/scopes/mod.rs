//! `seshat scopes`: team scopes, the memory and documents a team shares (`--scope team:NAME`),
//! and who may read or write them.

use std::io::Write;
use std::process::ExitCode;

use seshat::store::Access;

use crate::{Context, format};

/// What `seshat scopes` does.
#[derive(Debug, clap::Subcommand)]
pub enum ScopesCommand {
    /// Create a team scope (you get read-write access to it).
    Create {
        /// The team's name: letters, digits, `-`, `_`, `.`; at most 64.
        name: String,
    },
    /// Give a user access to a team scope (replacing what they had).
    Grant {
        /// The team.
        name: String,
        /// The user.
        user: String,
        /// Read only (default: read and write).
        #[arg(long)]
        read_only: bool,
    },
    /// Take a user's access to a team scope away.
    Revoke {
        /// The team.
        name: String,
        /// The user.
        user: String,
    },
    /// Require review of members' writes to a team's memory (or not), and say who reviews them.
    #[command(after_help = "Examples:\n  seshat scopes review infra --required true\n  \
        seshat scopes review infra --reviewer alice\n  seshat scopes review infra --reviewer bob --remove")]
    Review {
        /// The team.
        name: String,
        /// Whether members' writes to its memory become proposals a reviewer approves.
        #[arg(long, value_name = "BOOL")]
        required: Option<bool>,
        /// A member who reviews them (with --remove: no longer).
        #[arg(long, value_name = "USER")]
        reviewer: Option<String>,
        /// Take --reviewer's review away.
        #[arg(long, requires = "reviewer")]
        remove: bool,
    },
    /// List the grants of the team scopes you belong to.
    List {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
}

pub fn run(ctx: &Context, cmd: ScopesCommand) -> anyhow::Result<ExitCode> {
    let mut store = crate::principals::Principals::open(ctx)?;
    let mut out = format::stdout();
    match cmd {
        ScopesCommand::Create { name } => {
            store.create_team(&name)?;
            writeln!(out, "Created team scope team:{name}. Share it: seshat scopes grant {name} USER [--read-only]")?;
        }
        ScopesCommand::Grant { name, user, read_only } => {
            let access = if read_only { Access::Read } else { Access::Write };
            store.grant(&name, &user, access)?;
            writeln!(out, "{user} may now {} team:{name}.", if read_only { "read" } else { "read and write" })?;
        }
        ScopesCommand::Revoke { name, user } => {
            if store.revoke(&name, &user)? {
                writeln!(out, "{user} no longer has access to team:{name}.")?;
            } else {
                writeln!(out, "{user} had no access to team:{name}.")?;
            }
        }
        ScopesCommand::Review { name, required, reviewer, remove } => {
            if required.is_none() && reviewer.is_none() {
                anyhow::bail!("say what to change: --required true|false, or --reviewer USER [--remove]");
            }
            store.set_review(&name, required, reviewer.as_deref().map(|u| (u, !remove)))?;
            if let Some(required) = required {
                writeln!(
                    out,
                    "team:{name}: {}",
                    if required {
                        "members' memory writes are proposals a reviewer approves (seshat memory proposals)"
                    } else {
                        "members' memory writes are made at once"
                    }
                )?;
            }
            if let Some(user) = reviewer {
                writeln!(
                    out,
                    "{user} {} team:{name}'s proposals.",
                    if remove { "no longer reviews" } else { "reviews" }
                )?;
            }
        }
        ScopesCommand::List { json } => {
            let grants = store.grants()?;
            if json {
                #[derive(serde::Serialize)]
                struct Row<'a> {
                    scope: String,
                    user: &'a str,
                    access: &'a str,
                }
                let rows: Vec<Row<'_>> = grants
                    .iter()
                    .map(|g| Row { scope: format!("team:{}", g.team), user: &g.user, access: g.access.as_str() })
                    .collect();
                format::json(&mut out, &rows)?;
            } else if grants.is_empty() {
                writeln!(out, "No team scopes. `seshat scopes create NAME` makes one.")?;
            } else {
                writeln!(out, "{:<24}  {:<16}  ACCESS", "SCOPE", "USER")?;
                for g in &grants {
                    writeln!(
                        out,
                        "{:<24}  {:<16}  {}",
                        format!("team:{}", g.team),
                        g.user,
                        if g.access == Access::Write { "read-write" } else { "read" }
                    )?;
                }
            }
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
