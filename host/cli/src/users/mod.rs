//! `seshat users`: the people a shared store and a network `seshat serve` know (each owns their
//! sessions and `user` memory). Acts on the store directly: whoever runs it holds the database.

use std::io::Write;
use std::process::ExitCode;

use crate::{Context, format};

/// What `seshat users` does.
#[derive(Debug, clap::Subcommand)]
pub enum UsersCommand {
    /// Add a user (then `seshat tokens create --user NAME` gives them a token).
    Add {
        /// Letters, digits, `-`, `_`, `.`; at most 64.
        name: String,
    },
    /// List the users.
    List {
        /// Print JSON instead of a list.
        #[arg(long)]
        json: bool,
    },
}

pub fn run(ctx: &Context, cmd: UsersCommand) -> anyhow::Result<ExitCode> {
    let mut store = ctx.store()?;
    let mut out = format::stdout();
    match cmd {
        UsersCommand::Add { name } => {
            store.add_user(&name)?;
            writeln!(out, "Added user {name}. Give them a token: seshat tokens create --user {name}")?;
        }
        UsersCommand::List { json } => {
            let users = store.users()?;
            if json {
                #[derive(serde::Serialize)]
                struct Row<'a> {
                    name: &'a str,
                }
                let rows: Vec<Row<'_>> = users.iter().map(|name| Row { name }).collect();
                format::json(&mut out, &rows)?;
            } else {
                for name in &users {
                    writeln!(out, "{name}")?;
                }
            }
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
