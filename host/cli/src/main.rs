//! The `seshat` command-line interface: clap parsing and dispatch, one file per subcommand. A thin
//! front end over the `seshat` library; errors and exit codes live here only.

mod audit;
mod chat;
mod compact;
mod db;
mod format;
mod hints;
mod hooks;
mod knowledge;
mod mcp;
mod memory;
mod plugins;
mod principals;
mod remote;
mod scopes;
mod serve;
mod sessions;
mod stop;
mod tokens;
mod users;

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
    /// Use this store instead of the default: a SQLite file's path or a `postgres://` URL
    /// (default: `SESHAT_DATABASE_URL`, else `[store] url` in the user's configuration, else
    /// `$SESHAT_HOME/seshat.db`, else `~/.local/share/seshat/seshat.db`).
    #[arg(long, global = true, value_name = "PATH|URL")]
    db: Option<String>,

    /// Work against a team's `seshat serve --listen` instead of a local store (`chat`, `mcp`,
    /// `memory`, `compact`, `sessions`, `knowledge search`, and an admin's `users`, `tokens`,
    /// `scopes`); the token is read
    /// from SESHAT_TOKEN.
    #[arg(long, global = true, value_name = "wss://HOST:PORT", env = "SESHAT_REMOTE")]
    remote: Option<String>,

    /// The CA that signed the remote service's certificate (PEM), when it is a private one.
    #[arg(long, global = true, value_name = "FILE", env = "SESHAT_REMOTE_CA")]
    remote_ca: Option<String>,

    /// Allow a plain `ws://` `--remote` beyond this machine (the token travels unencrypted: only
    /// through a tunnel that encrypts).
    #[arg(long, global = true, env = "SESHAT_REMOTE_INSECURE")]
    insecure_remote: bool,

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
    /// Serve Seshat's core over JSON-RPC (stdio, a Unix socket, or wss:// for a team), for programs in any language.
    Serve(serve::Args),
    /// The store as a whole: copy it between a SQLite file and a PostgreSQL database.
    #[command(subcommand)]
    Db(db::DbCommand),
    /// The users of a shared store and network service.
    #[command(subcommand)]
    Users(users::UsersCommand),
    /// Bearer tokens for clients of `seshat serve --listen ws://…`: create, list, revoke.
    #[command(subcommand)]
    Tokens(tokens::TokensCommand),
    /// The network service's audit trail: writes, refused writes, denied reads, refused logins,
    /// revocations and plugin crashes, by user and time.
    Audit(audit::Args),
    /// Team scopes: shared memory and documents, and who may read or write them.
    #[command(subcommand)]
    Scopes(scopes::ScopesCommand),
    /// Lifecycle hooks: list them, trust a project's, test them on a recorded session.
    #[command(subcommand)]
    Hooks(hooks::HooksCommand),
    /// Documents the agent can search: add files and directories, list, remove, search.
    #[command(subcommand)]
    Knowledge(knowledge::KnowledgeCommand),
    /// List, check and create plugins (trimmers, summarisers, providers).
    #[command(subcommand)]
    Plugins(plugins::PluginsCommand),
}

/// What every command may need: where files are and which project we are in.
#[derive(Clone)]
pub struct Context {
    db: seshat::store::Location,
    dirs: Dirs,
    /// The project key (the project's id or git remote, else its directory's path; see
    /// [`paths::project_key`]).
    project: String,
    /// The project's directory (the repository's root, else the current directory).
    project_dir: std::path::PathBuf,
    /// The key the project's rows had before keys travelled (its directory's path).
    path_key: String,
    /// The project key when inside a git repository or a project with an id (memory's notion of
    /// "inside a project").
    repository: Option<String>,
    /// The remote service `--remote` names.
    remote: Option<remote::Target>,
    /// Whether `--db` named the store.
    db_given: bool,
}

impl Context {
    fn from_cli(cli: &Cli) -> anyhow::Result<Self> {
        let dirs = Dirs::from_env()?;
        let cwd = std::env::current_dir().context("cannot read the current directory")?;
        let given = cli.db.as_deref().map(|db| seshat::client::location_from_argument(db, &cwd)).transpose()?;
        let db = seshat::client::store_location(given.as_ref(), &dirs)?;
        Ok(Self {
            db,
            db_given: given.is_some(),
            dirs,
            project: paths::project_key(&cwd),
            project_dir: paths::project_dir(&cwd),
            path_key: paths::path_key(&cwd),
            repository: paths::repository_key(&cwd),
            // An empty SESHAT_REMOTE_CA is no CA (as an empty SESHAT_REMOTE is no service).
            remote: remote::Target::from_cli(
                cli.remote.as_deref(),
                cli.remote_ca.as_deref().filter(|ca| !ca.is_empty()).map(std::path::Path::new),
                cli.insecure_remote,
            )?,
        })
    }

    /// This context on the store at `db`.
    fn with_db(&self, db: seshat::store::Location) -> Context {
        Context { db, ..self.clone() }
    }

    /// A connection to the `--remote` service, in this directory's project (`None` without
    /// `--remote`).
    fn remote(&self) -> anyhow::Result<Option<remote::Remote>> {
        self.remote_with(serde_json::Map::new())
    }

    /// [`Context::remote`] with more `initialize` params (`provider`, `model`, …).
    fn remote_with(&self, extra: serde_json::Map<String, serde_json::Value>) -> anyhow::Result<Option<remote::Remote>> {
        let Some(target) = &self.remote else { return Ok(None) };
        let instructions = seshat::client::prompt::read_instructions(&self.project_dir);
        Ok(Some(remote::Remote::connect(target, &self.project, &instructions, extra)?))
    }

    /// The user's and the project's configuration, merged.
    fn config(&self) -> anyhow::Result<Config> {
        Ok(Config::load(&self.dirs.config, Some(&self.project_dir))?)
    }

    /// Every installed plugin.
    fn catalog(&self) -> Catalog {
        Catalog::discover(&self.dirs.config, Some(&self.project_dir))
    }

    /// The plugin runtime, caching compiled plugins under the cache directory.
    fn runtime(&self) -> Runtime {
        // A configuration that does not load is reported by whatever reads it next.
        let cap = self.config().map_or(seshat::plugins::cache::DEFAULT_CAP_BYTES, |c| c.plugin_cache_bytes());
        Runtime::new(Some(self.dirs.cache.join("plugins"))).with_cache_cap(cap)
    }

    /// The library's environment for this directory and database, with a command's overrides.
    fn environment(&self, overrides: seshat::client::Overrides) -> anyhow::Result<seshat::client::Environment> {
        if self.path_key != self.project {
            self.store()?;
        }
        Ok(seshat::client::Environment::open(seshat::client::Overrides {
            dirs: Some(self.dirs.clone()),
            store: Some(self.db.clone()),
            project: Some(self.project.clone()),
            project_dir: Some(self.project_dir.clone()),
            ..overrides
        })?)
    }

    /// Where `plugins test` and `plugins check` try a plugin.
    fn trial_home(&self) -> seshat::client::trial::Home<'_> {
        seshat::client::trial::Home {
            store: &self.db,
            dirs: &self.dirs,
            project: self.project_dir.to_str().unwrap_or("/"),
        }
    }

    /// Opens the session database, bringing the caller's rows stored under the project's old
    /// path key under its travelling key first (see [`Store::adopt_project`]).
    fn store(&self) -> anyhow::Result<Store> {
        let mut store = Store::connect(&self.db)?;
        // What the configuration redacts (one that does not load is reported where it is used;
        // the store then redacts with the built-in rules).
        if let Ok(config) = self.config() {
            store.set_redaction(config.redaction.policy()?);
        }
        if self.path_key != self.project {
            store.adopt_project(&self.path_key, &self.project)?;
        }
        Ok(store)
    }
}

/// The longest record (line) an import, `sessions append` or `serve` reads: `[store]
/// max_record_mib`, else the reader's default.
fn record_limit(config: &Config) -> usize {
    config.store.max_record_bytes().unwrap_or(seshat::input::DEFAULT_MAX_RECORD_BYTES)
}

use format::visible;
use hints::hint;

/// Whether `command` works against a `--remote` service.
fn remote_ready(command: &Command) -> bool {
    matches!(
        command,
        Command::Mcp(_)
            | Command::Chat(_)
            | Command::Sessions(_)
            | Command::Memory(_)
            | Command::Compact(_)
            | Command::Knowledge(knowledge::KnowledgeCommand::Search(_) | knowledge::KnowledgeCommand::Add(_))
            | Command::Users(_)
            | Command::Tokens(_)
            | Command::Scopes(_)
    )
}

/// Runs the parsed command.
pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    use nix::sys::signal::Signal::{SIGHUP, SIGINT, SIGTERM};
    // Before any thread starts: the long-running commands receive their stop signals on a thread
    // of their own and store what is in flight before they exit. Chat's Ctrl-C takes the same
    // path (one SIGINT path, whatever the line editor installs for itself).
    let signals = match &cli.command {
        Command::Serve(_) | Command::Mcp(_) | Command::Chat(_) => Some(stop::block(&[SIGTERM, SIGINT, SIGHUP])?),
        _ => None,
    };
    let ctx = Context::from_cli(&cli)?;
    if ctx.remote.is_some() && !remote_ready(&cli.command) {
        anyhow::bail!(
            "this command does not work against a remote service yet: only `chat`, `mcp`, `memory`, `compact`, \
             every `sessions` command, `knowledge search` and `knowledge add`, `users`, `tokens` and `scopes` do; unset SESHAT_REMOTE (or drop --remote) to run it on this machine's store"
        );
    }
    match cli.command {
        Command::Chat(args) => chat::run(&ctx, &args, signals.context("chat's signals are blocked before it starts")?),
        Command::Sessions(cmd) => sessions::run(&ctx, cmd),
        Command::Plugins(cmd) => plugins::run(&ctx, cmd),
        Command::Memory(args) => memory::run(&ctx, &args),
        Command::Compact(args) => compact::run(&ctx, &args),
        Command::Mcp(args) => mcp::run(&ctx, &args, signals),
        Command::Serve(args) => serve::run(&ctx, &args, signals),
        Command::Knowledge(cmd) => knowledge::run(&ctx, cmd),
        Command::Db(cmd) => db::run(&ctx, cmd),
        Command::Users(cmd) => users::run(&ctx, cmd),
        Command::Tokens(cmd) => tokens::run(&ctx, cmd),
        Command::Audit(args) => audit::run(&ctx, &args),
        Command::Scopes(cmd) => scopes::run(&ctx, cmd),
        Command::Hooks(cmd) => hooks::run(&ctx, cmd),
    }
}

fn main() -> ExitCode {
    let args = Cli::parse();
    // Logs when asked for (`RUST_LOG=debug`), on stderr; coloured only on a terminal and
    // never under NO_COLOR (https://no-color.org: set and not empty).
    // A network service logs its audit lines (a write: who, what, where) and its warnings
    // unless told otherwise.
    // Its log is JSON, one object a line, with `--log-format json`.
    let network = matches!(&args.command, Command::Serve(serve) if serve.network());
    let json = matches!(&args.command, Command::Serve(serve) if serve.log_format == serve::LogFormat::Json);
    if std::env::var_os("RUST_LOG").is_some() || network || json {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        let filter = match std::env::var_os("RUST_LOG") {
            Some(_) => tracing_subscriber::EnvFilter::from_default_env(),
            None => tracing_subscriber::EnvFilter::new("warn,seshat::audit=info,seshat::service=info"),
        };
        let log = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
        if json {
            log.json().with_current_span(true).with_span_list(false).init();
        } else {
            log.with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()) && !no_color).init();
        }
    }
    if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        seshat::store::on_migration_progress(migration_progress());
    }
    match run(args) {
        Ok(code) => code,
        Err(err) => {
            if is_broken_pipe(&err) {
                // The reader went away (`seshat sessions export | head`): not an error.
                return ExitCode::SUCCESS;
            }
            eprintln!("error: {}", visible(&format!("{err:#}")));
            if let Some(hint) = hint(&err) {
                eprintln!("hint: {hint}");
            }
            ExitCode::FAILURE
        }
    }
}

fn is_broken_pipe(err: &anyhow::Error) -> bool {
    let broken = |io: &std::io::Error| io.kind() == std::io::ErrorKind::BrokenPipe;
    err.chain().any(|e| {
        e.downcast_ref::<std::io::Error>().is_some_and(broken)
            || matches!(e.downcast_ref::<seshat::store::Error>(), Some(seshat::store::Error::Io { cause, .. }) if broken(cause))
    })
}

/// A progress bar on stderr for a long database upgrade (indexing the history of a big database).
fn migration_progress() -> seshat::store::Progress {
    let bar = std::sync::Mutex::new(None::<indicatif::ProgressBar>);
    Box::new(move |what: &str, done: u64, total: u64| {
        let Ok(mut bar) = bar.lock() else { return };
        let bar = bar.get_or_insert_with(|| {
            let bar = indicatif::ProgressBar::new(total);
            let style = indicatif::ProgressStyle::with_template("{msg}: {pos}/{len} messages {wide_bar} {eta}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
            bar.set_style(style);
            bar.set_message(what.to_string());
            bar
        });
        bar.set_position(done);
        if done >= total {
            bar.finish();
        }
    })
}
