//! Command-line parsing and dispatch: one file per subcommand.

mod chat;
mod compact;
mod format;
pub(crate) mod hints;
mod knowledge;
mod mcp;
mod memory;
mod plugins;
mod serve;
mod sessions;
mod stop;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use seshat::config::Config;
use seshat::paths::{self, Dirs};
use seshat::plugins::{Catalog, Runtime};
use seshat::store::Store;

/// Seshat keeps an AI agent's memory: every conversation saved and resumable, each request kept
/// inside the context window by compaction, and long-term notes.
#[derive(Debug, Parser)]
#[command(name = "seshat", version, propagate_version = true, max_term_width = 100)]
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
    /// Talk to a model: streaming, tools, memory; every turn saved and resumable.
    Chat(chat::Args),
    /// List, show, export, import and delete saved sessions.
    #[command(subcommand)]
    Sessions(sessions::SessionsCommand),
    /// Compact a session now: trim large tool results, summarise older messages.
    Compact(compact::Args),
    /// Show and edit long-term memory: notes and the knowledge graph.
    Memory(memory::Args),
    /// Serve the memory tools over MCP (stdio) for other agents.
    Mcp(mcp::Args),
    /// Serve Seshat's core over JSON-RPC on stdio, for programs in any language (the Go SDK).
    Serve(serve::Args),
    /// Documents the agent can search: add files and directories, list, remove, search.
    #[command(subcommand)]
    Knowledge(knowledge::KnowledgeCommand),
    /// List, check and create plugins (trimmers, summarisers, providers).
    #[command(subcommand)]
    Plugins(plugins::PluginsCommand),
}

/// What every command may need: where files are and which project we are in.
pub struct Context {
    db: PathBuf,
    dirs: Dirs,
    /// The project key (the repository, else the current directory).
    project: String,
    /// The project key when inside a git repository (memory's notion of "inside a project").
    repository: Option<String>,
}

impl Context {
    fn from_cli(cli: &Cli) -> anyhow::Result<Self> {
        let dirs = Dirs::from_env()?;
        let db = cli.db.clone().unwrap_or_else(|| dirs.db_path());
        let cwd = std::env::current_dir().context("cannot read the current directory")?;
        Ok(Self { db, dirs, project: paths::project_key(&cwd), repository: paths::repository_key(&cwd) })
    }

    /// The user's and the project's configuration, merged.
    fn config(&self) -> anyhow::Result<Config> {
        Ok(Config::load(&self.dirs.config, Some(Path::new(&self.project)))?)
    }

    /// Every installed plugin.
    fn catalog(&self) -> Catalog {
        Catalog::discover(&self.dirs.config, Some(Path::new(&self.project)))
    }

    /// The plugin runtime, caching compiled plugins under the cache directory.
    fn runtime(&self) -> Runtime {
        Runtime::new(Some(self.dirs.cache.join("plugins")))
    }

    /// The library's environment for this directory and database, with a command's overrides.
    fn environment(&self, overrides: seshat::client::Overrides) -> anyhow::Result<seshat::client::Environment> {
        Ok(seshat::client::Environment::open(seshat::client::Overrides {
            dirs: Some(self.dirs.clone()),
            db: Some(self.db.clone()),
            project: Some(self.project.clone()),
            ..overrides
        })?)
    }

    /// Opens the session database.
    fn store(&self) -> anyhow::Result<Store> {
        Ok(Store::open(&self.db)?)
    }
}

/// The longest record (line) an import, `sessions append` or `serve` reads: `[store]
/// max_record_mib`, else the reader's default.
fn record_limit(config: &Config) -> usize {
    config.store.max_record_bytes().unwrap_or(seshat::input::DEFAULT_MAX_RECORD_BYTES)
}

pub use format::visible;
pub use hints::hint;

/// Runs the parsed command.
pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    use nix::sys::signal::Signal::{SIGHUP, SIGINT, SIGTERM};
    // Before any thread starts: the long-running commands receive their stop signals on a thread
    // of their own and store what is in flight before they exit (chat reads Ctrl-C itself).
    let signals = match &cli.command {
        Command::Serve(_) | Command::Mcp(_) => Some(stop::block(&[SIGTERM, SIGINT, SIGHUP])?),
        Command::Chat(_) => Some(stop::block(&[SIGTERM, SIGHUP])?),
        _ => None,
    };
    let ctx = Context::from_cli(&cli)?;
    match cli.command {
        Command::Chat(args) => chat::run(&ctx, &args, signals),
        Command::Sessions(cmd) => sessions::run(&ctx, cmd),
        Command::Plugins(cmd) => plugins::run(&ctx, cmd),
        Command::Memory(args) => memory::run(&ctx, &args),
        Command::Compact(args) => compact::run(&ctx, &args),
        Command::Mcp(args) => mcp::run(&ctx, &args, signals),
        Command::Serve(args) => serve::run(&ctx, &args, signals),
        Command::Knowledge(cmd) => knowledge::run(&ctx, cmd),
    }
}
