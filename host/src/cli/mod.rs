//! Command-line parsing and dispatch: one file per subcommand.

mod format;
mod sessions;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use seshat::paths::{self, Dirs};
use seshat::store::Store;

/// Seshat keeps an AI agent's memory: every conversation saved and resumable, each request kept
/// inside the context window by compaction, and long-term notes.
#[derive(Debug, Parser)]
#[command(
    name = "seshat",
    version,
    propagate_version = true,
    max_term_width = 100
)]
pub struct Cli {
    /// Use this database file instead of the default (`$SESHAT_HOME/seshat.db`, else
    /// `~/.local/share/seshat/seshat.db`).
    #[arg(long, global = true, value_name = "PATH")]
    db: Option<PathBuf>,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// List, show, export, import and delete saved sessions.
    #[command(subcommand)]
    Sessions(sessions::SessionsCommand),
}

/// What every command may need: where files are and which project we are in.
pub struct Context {
    db: PathBuf,
    project: String,
}

impl Context {
    fn from_cli(cli: &Cli) -> anyhow::Result<Self> {
        let db = match &cli.db {
            Some(db) => db.clone(),
            None => Dirs::from_env()?.db_path(),
        };
        let cwd = std::env::current_dir().context("cannot read the current directory")?;
        Ok(Self {
            db,
            project: paths::project_key(&cwd),
        })
    }

    /// Opens the session database.
    fn store(&self) -> anyhow::Result<Store> {
        Ok(Store::open(&self.db)?)
    }
}

/// Runs the parsed command.
pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let ctx = Context::from_cli(&cli)?;
    match cli.command {
        Command::Sessions(cmd) => sessions::run(&ctx, cmd),
    }
}
