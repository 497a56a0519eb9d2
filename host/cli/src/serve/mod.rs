//! `seshat serve`: Seshat's core over JSON-RPC 2.0, one JSON object per line on stdio, for
//! programs in any language (the Go SDK drives it). The protocol is `host/protocol/protocol.md`, with
//! the JSON Schema the tests check recorded traffic against.
//!
//! The core is `seshat_server`'s; this module frames it. One thread reads the client's lines and
//! answers what is quick (sessions, memory, knowledge, config) at once; a turn runs on a worker of
//! the server's bounded pool and streams notifications, so a client can interrupt it or work on
//! other sessions meanwhile. The server calls the client back
//! (`tool/call`) when the model uses a tool the client registered. One writer puts whole lines on
//! stdout. At the input's end the turns in flight are interrupted (what arrived is stored, as
//! Ctrl-C does) and the server exits. With `--listen unix:PATH` it serves several clients, each
//! connection as stdio is served; a session is busy for all of them while one runs a turn in it.
//! With `--listen ws://HOST:PORT` or `wss://HOST:PORT` it serves clients on other machines, each
//! acting for the user its token names (see [`network`]).

mod access;
mod files;
mod handshakes;
mod memory;
mod network;
mod probes;
mod reload;
mod retention;
mod source;
mod token_check;

use std::io::{BufRead, Write as _};
use std::process::ExitCode;
use std::sync::Arc;

use super::Context;
use seshat_server::{Connection, Home, Output, Service, Settings};

/// Arguments of `serve`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Speaks JSON-RPC 2.0 on stdin/stdout, one object per line: see host/protocol/protocol.md.\n\
Over the network (ws:// or wss://) each client sends `Authorization: Bearer TOKEN` (`seshat tokens create`).")]
pub struct Args {
    /// The service's own configuration file, in config.toml's form, read instead of the user's
    /// and the project's (with `listen`, `tls_cert`, `tls_key` under [serve]); SIGHUP reads it
    /// again (certificates, limits, providers) without dropping a connection.
    #[arg(long, value_name = "FILE")]
    config: Option<std::path::PathBuf>,
    /// Serve several clients instead of stdio: `unix:PATH` (a Unix socket, created mode 0600), or
    /// `ws://HOST:PORT` / `wss://HOST:PORT` (WebSocket, one JSON-RPC message per text frame).
    #[arg(long, value_name = "unix:PATH|wss://HOST:PORT")]
    listen: Option<String>,
    /// The TLS certificate chain for a `wss://` address (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    tls_cert: Option<std::path::PathBuf>,
    /// The TLS private key for a `wss://` address (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    tls_key: Option<std::path::PathBuf>,
    /// Allow a plain `ws://` address beyond loopback (behind a proxy that encrypts).
    #[arg(long)]
    insecure_listen: bool,
    /// How the log on stderr is written: `text` lines, or `json`, one object a line (the
    /// request id of the JSON-RPC call that caused it in each, the audit events among them).
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
}

/// How the service writes its log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Lines for a person.
    Text,
    /// One JSON object a line, for a log pipeline.
    Json,
}

impl Args {
    /// Whether this serves network clients (whose writes are audited in the log).
    pub fn network(&self) -> bool {
        let from_file = || {
            let file = self.config.as_deref()?;
            seshat::config::Config::load_service(file).ok()?.serve.listen
        };
        self.listen.clone().or_else(from_file).is_some_and(|l| l.starts_with("ws://") || l.starts_with("wss://"))
    }
}

/// How long a stop signal waits for the turns in flight to store what they have.
const STOP_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

pub fn run(ctx: &Context, args: &Args, signals: Option<super::stop::Signals>) -> anyhow::Result<ExitCode> {
    let source = source::Source::new(ctx, args);
    // A service reads its configuration once, and refuses to start on a bad one; a local one
    // (stdio, a Unix socket) reads the files at each use and says what is wrong there.
    let strict = args.config.is_some() || args.network();
    let read = match source.read() {
        Ok(read) => read,
        Err(e) if strict => return Err(e),
        Err(_) => source.flags_only(),
    };
    let ctx = &match source.store(&read.config, ctx)? {
        Some(db) => ctx.with_db(db),
        None => ctx.clone(),
    };
    let busy = Service::new(read.config.serve.turn_workers());
    let settings = Settings::new(read.config.clone());
    let home = if strict { home(ctx)?.with_settings(settings.clone()) } else { home(ctx)? };
    let network = match &read.listen {
        Some(listen) => {
            network::parse(listen, read.tls_cert.as_deref(), read.tls_key.as_deref(), read.insecure_listen)?
        }
        None => None,
    };
    if network.is_none() && (read.tls_cert.is_some() || read.insecure_listen) {
        anyhow::bail!("--tls-cert, --tls-key and --insecure-listen are for `--listen ws://…` or `wss://…` addresses");
    }
    if let Some(network) = network {
        let metrics_listen = read.config.serve.metrics_listen.clone();
        let live = reload::Live { source, settings, listen: read.listen.unwrap_or_default(), metrics_listen };
        return serve_network(ctx, &home, network, busy, signals, args.log_format, live);
    }
    if let Some(signals) = signals {
        // As at the end of the input: every turn in flight is interrupted and stores what arrived.
        let busy = busy.clone();
        let socket = read.listen.as_deref().and_then(|a| a.strip_prefix("unix:")).map(std::path::PathBuf::from);
        signals.on_stop(move |signal| {
            let left = busy.stop_all(STOP_WAIT);
            if left > 0 {
                let _ = writeln!(
                    std::io::stderr(),
                    "seshat serve: {left} turn(s) still running after {} s; exiting",
                    STOP_WAIT.as_secs()
                );
            }
            if let Some(path) = socket {
                let _ = std::fs::remove_file(path);
            }
            tracing::debug!(?signal, "stopped");
            std::process::exit(0);
        });
    }
    match &read.listen {
        None => {
            let stdin = std::io::stdin();
            // The one client stopped reading: what is in flight is stored, and the server exits
            // (its reading thread may be blocked on stdin).
            let stuck = busy.clone();
            let disconnect = Arc::new(move || {
                stuck.stop_all(STOP_WAIT);
                std::process::exit(1);
            });
            connection(&home, stdin.lock(), Output::Write(Box::new(std::io::stdout())), &busy, disconnect);
            Ok(ExitCode::SUCCESS)
        }
        Some(address) => {
            let Some(path) = address.strip_prefix("unix:") else {
                anyhow::bail!(
                    "--listen takes unix:PATH (a Unix socket), ws://HOST:PORT or wss://HOST:PORT, not `{address}`"
                );
            };
            listen(&home, std::path::Path::new(path), &busy)
        }
    }
}

/// Serves network clients until a stop signal: then no new client is accepted, the turns in flight
/// get `[serve] grace_secs` to finish, and those still running are interrupted (each stores what
/// arrived) before the process exits. SIGHUP reloads the configuration instead (see
/// [`reload`]).
fn serve_network(
    ctx: &Context,
    home: &Home,
    network: network::Network,
    busy: Service,
    signals: Option<super::stop::Signals>,
    log_format: LogFormat,
    live: reload::Live,
) -> anyhow::Result<ExitCode> {
    let stop = Arc::new(network::Stop::new());
    let (reload, reloads) = tokio::sync::mpsc::unbounded_channel();
    if let Some(signals) = signals {
        let (busy, stop, settings) = (busy.clone(), stop.clone(), live.settings.clone());
        let mut stopping = false;
        signals.on_each(move |signal| {
            if signal == nix::sys::signal::Signal::SIGHUP {
                let _ = reload.send(());
                return;
            }
            if std::mem::replace(&mut stopping, true) {
                return;
            }
            // The grace period in force now (a reload may have changed it).
            let grace = settings.config().serve.grace();
            // New turns are refused before the listener closes, so a client that sees it closed
            // is refused a turn too.
            busy.refuse_new();
            stop.stop_accepting();
            tracing::info!(target: "seshat::service", ?signal, grace_secs = grace.as_secs(), "stopping: draining the turns in flight");
            let running = busy.drain(grace);
            tracing::info!(target: "seshat::service", still_running = running, "drained");
            if running > 0 {
                tracing::warn!(
                    target: "seshat::service",
                    still_running = running,
                    "{running} turn(s) still running after {} s; interrupting them",
                    grace.as_secs()
                );
                busy.stop_all(STOP_WAIT);
            }
            // Each client gets what was queued for it (a turn's last events) before it is closed.
            stop.close_all(STOP_WAIT);
            tracing::info!(target: "seshat::service", ?signal, still_running = running, "stopped");
            std::process::exit(0);
        });
    }
    network::serve(ctx, Arc::new(home.clone()), network, busy, &stop, log_format, live, reloads)?;
    Ok(ExitCode::SUCCESS)
}

/// Serves clients connecting to a Unix socket at `path` (mode 0600: only this user), each
/// connection as stdio is served, until the process is stopped.
fn listen(home: &Home, path: &std::path::Path, busy: &Service) -> anyhow::Result<ExitCode> {
    if path.exists() {
        // A socket left by a server that is gone; anything else is not ours to remove.
        let stale = std::os::unix::net::UnixStream::connect(path).is_err()
            && std::fs::symlink_metadata(path).is_ok_and(|m| std::os::unix::fs::FileTypeExt::is_socket(&m.file_type()));
        anyhow::ensure!(stale, "{} exists (another seshat serve, or not a socket): pick another path", path.display());
        std::fs::remove_file(path)?;
    }
    let listener = bind_private(path).map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", path.display()))?;
    eprintln!("seshat serve: listening on unix:{}", path.display());
    std::thread::scope(|scope| {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            let (Ok(reader), Ok(closer)) = (stream.try_clone(), stream.try_clone()) else { continue };
            let disconnect = Arc::new(move || {
                let _ = closer.shutdown(std::net::Shutdown::Both);
            });
            let output = Output::Write(Box::new(stream));
            scope.spawn(move || connection(home, std::io::BufReader::new(reader), output, busy, disconnect));
        }
    });
    Ok(ExitCode::SUCCESS)
}

/// Binds a Unix socket at `path` that only this user may connect to from the moment it exists:
/// bound in a new private (0700) directory beside `path`, made 0600 there, then renamed into
/// place — never visible under the process's umask, however permissive.
fn bind_private(path: &std::path::Path) -> std::io::Result<std::os::unix::net::UnixListener> {
    use std::os::unix::fs::PermissionsExt;
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(std::path::Path::new("."));
    let private = tempfile::Builder::new().prefix(".seshat-listen-").tempdir_in(parent)?;
    std::fs::set_permissions(private.path(), std::fs::Permissions::from_mode(0o700))?;
    let staged = private.path().join("socket");
    let listener = std::os::unix::net::UnixListener::bind(&staged)?;
    std::fs::set_permissions(&staged, std::fs::Permissions::from_mode(0o600))?;
    std::fs::rename(&staged, path)?;
    Ok(listener)
}

/// Serves one local client (stdio, a Unix socket): its lines from `reader`, the answers to
/// `output`. At the input's end its turns in flight are interrupted (each stores what arrived)
/// and waited for; a tool call waiting for its answer fails at once.
fn connection(
    home: &Home,
    mut reader: impl BufRead,
    output: Output,
    service: &Service,
    disconnect: Arc<dyn Fn() + Send + Sync>,
) {
    let mut conn = Connection::open(home, output, service, disconnect, None, None);
    let mut line = Vec::new();
    loop {
        match seshat::input::next_line(&mut reader, &mut line, conn.limit()) {
            Ok(seshat::input::Line::End) | Err(_) => break,
            Ok(seshat::input::Line::Read) => {
                if !conn.feed(&line) {
                    break;
                }
            }
            Ok(seshat::input::Line::TooLong) => {
                conn.too_long();
                break;
            }
        }
    }
    conn.close();
}

/// Where `serve` works: this directory's project and store, the project's rows stored under its
/// old path key brought under its travelling key first (when it has one; a store that cannot be
/// opened now is said by the first request that needs it).
fn home(ctx: &Context) -> anyhow::Result<Home> {
    if ctx.path_key != ctx.project
        && let Err(e) = ctx.store()
    {
        tracing::warn!("cannot bring the project's rows under its key yet: {e:#}");
    }
    Ok(Home::new(
        ctx.dirs.clone(),
        ctx.db.clone(),
        ctx.project.clone(),
        ctx.project_dir.clone(),
        ctx.repository.clone(),
    ))
}
