//! `seshat serve`: Seshat's core over JSON-RPC 2.0, one JSON object per line on stdio, for
//! programs in any language (the Go SDK drives it). The protocol is `host/protocol/protocol.md`, with
//! the JSON Schema the tests check recorded traffic against.
//!
//! One thread reads the client's lines and answers what is quick (sessions, memory, knowledge,
//! config) at once; a turn runs in a thread of its own and streams notifications, so a client can
//! interrupt it or work on other sessions meanwhile. The server calls the client back
//! (`tool/call`) when the model uses a tool the client registered. One writer puts whole lines on
//! stdout. At the input's end the turns in flight are interrupted (what arrived is stored, as
//! Ctrl-C does) and the server exits. With `--listen unix:PATH` it serves several clients, each
//! connection as stdio is served; a session is busy for all of them while one runs a turn in it.
//! With `--listen ws://HOST:PORT` or `wss://HOST:PORT` it serves clients on other machines, each
//! acting for the user its token names (see [`network`]).

mod access;
mod counts;
mod files;
mod handshakes;
mod network;
mod pool;
mod principals;
mod rpc;
mod token_check;
mod turns;

use std::collections::HashMap;
use std::io::{BufRead, Write as _};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use super::Context;
use rpc::{Outbox, RpcError};
use seshat::memory::tools;

/// Arguments of `serve`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Speaks JSON-RPC 2.0 on stdin/stdout, one object per line: see host/protocol/protocol.md.\n\
Over the network (ws:// or wss://) each client sends `Authorization: Bearer TOKEN` (`seshat tokens create`).")]
pub struct Args {
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
}

impl Args {
    /// Whether this serves network clients (whose writes are audited in the log).
    pub fn network(&self) -> bool {
        self.listen.as_deref().is_some_and(|l| l.starts_with("ws://") || l.starts_with("wss://"))
    }
}

/// The longest project key a network client may name.
const MAX_PROJECT_KEY: usize = 1024;

/// The most instruction text a network client may send (each file is cut at 64 KiB anyway).
const MAX_INSTRUCTIONS: usize = 256 << 10;

/// Who a network connection acts for.
#[derive(Debug, Clone, Default)]
struct Acting {
    /// The token's user (`None`: the local user, on stdio or a Unix socket).
    user: Option<String>,
    /// The token's id.
    token: Option<String>,
    /// The client's address.
    peer: Option<String>,
    /// The token allows reads only.
    read_only: bool,
    /// Turns the user may run at once.
    max_turns: usize,
    /// Sessions the user may keep open at once, and the server.
    max_sessions: usize,
    max_workers: usize,
}

/// What a client registered at `initialize`, shared with the turns.
#[derive(Debug, Clone, Default)]
pub(crate) struct ClientSetup {
    /// Tools the client runs (`tool/call`): name, description, JSON Schema.
    pub(crate) tools: Vec<seshat::tool::ToolDef>,
    /// `auto_compact` (default true).
    pub(crate) auto_compact: Option<bool>,
    /// `compact_summary_model`.
    pub(crate) summary_model: Option<String>,
    /// `provider`.
    pub(crate) provider: Option<String>,
    /// `model`.
    pub(crate) model: Option<String>,
    /// `window`.
    pub(crate) window: Option<u64>,
}

/// How long a stop signal waits for the turns in flight to store what they have.
const STOP_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

pub fn run(ctx: &Context, args: &Args, signals: Option<super::stop::Signals>) -> anyhow::Result<ExitCode> {
    let busy = turns::Busy::default();
    busy.size_pool(ctx.config().map(|c| c.serve.turn_workers()).unwrap_or(pool::DEFAULT_WORKERS));
    let network = match &args.listen {
        Some(listen) => {
            network::parse(listen, args.tls_cert.as_deref(), args.tls_key.as_deref(), args.insecure_listen)?
        }
        None => None,
    };
    if network.is_none() && (args.tls_cert.is_some() || args.insecure_listen) {
        anyhow::bail!("--tls-cert, --tls-key and --insecure-listen are for `--listen ws://…` or `wss://…` addresses");
    }
    if let Some(network) = network {
        return serve_network(ctx, network, busy, signals);
    }
    if let Some(signals) = signals {
        // As at the end of the input: every turn in flight is interrupted and stores what arrived.
        let busy = busy.clone();
        let socket = args.listen.as_deref().and_then(|a| a.strip_prefix("unix:")).map(std::path::PathBuf::from);
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
    match &args.listen {
        None => {
            let stdin = std::io::stdin();
            // The one client stopped reading: what is in flight is stored, and the server exits
            // (its reading thread may be blocked on stdin).
            let stuck = busy.clone();
            let disconnect = Arc::new(move || {
                stuck.stop_all(STOP_WAIT);
                std::process::exit(1);
            });
            connection(ctx, stdin.lock(), Output::Write(Box::new(std::io::stdout())), &busy, disconnect, None, None);
            Ok(ExitCode::SUCCESS)
        }
        Some(address) => {
            let Some(path) = address.strip_prefix("unix:") else {
                anyhow::bail!(
                    "--listen takes unix:PATH (a Unix socket), ws://HOST:PORT or wss://HOST:PORT, not `{address}`"
                );
            };
            listen(ctx, std::path::Path::new(path), &busy)
        }
    }
}

/// Serves network clients until a stop signal: then no new client is accepted, the turns in flight
/// get `[serve] grace_secs` to finish, and those still running are interrupted (each stores what
/// arrived) before the process exits.
fn serve_network(
    ctx: &Context,
    network: network::Network,
    busy: turns::Busy,
    signals: Option<super::stop::Signals>,
) -> anyhow::Result<ExitCode> {
    let grace = ctx.config().map(|c| c.serve.grace()).unwrap_or_default();
    let stop = Arc::new(network::Stop::new());
    if let Some(signals) = signals {
        let (busy, stop) = (busy.clone(), stop.clone());
        signals.on_stop(move |signal| {
            // New turns are refused before the listener closes, so a client that sees it closed
            // is refused a turn too.
            busy.refuse_new();
            stop.stop_accepting();
            let running = busy.drain(grace);
            if running > 0 {
                let _ = writeln!(
                    std::io::stderr(),
                    "seshat serve: {running} turn(s) still running after {} s; interrupting them",
                    grace.as_secs()
                );
                busy.stop_all(STOP_WAIT);
            }
            // Each client gets what was queued for it (a turn's last events) before it is closed.
            stop.close_all(STOP_WAIT);
            tracing::debug!(?signal, "stopped");
            std::process::exit(0);
        });
    }
    network::serve(Arc::new(ctx.clone()), network, busy, &stop)?;
    Ok(ExitCode::SUCCESS)
}

/// Serves clients connecting to a Unix socket at `path` (mode 0600: only this user), each
/// connection as stdio is served, until the process is stopped.
fn listen(ctx: &Context, path: &std::path::Path, busy: &turns::Busy) -> anyhow::Result<ExitCode> {
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
            scope.spawn(move || connection(ctx, std::io::BufReader::new(reader), output, busy, disconnect, None, None));
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

/// Serves one client: its lines from `reader`, the answers to `writer`. At the input's end its
/// turns in flight are interrupted (each stores what arrived) and waited for; a tool call
/// waiting for its answer fails at once. A network connection acts for its `caller`.
fn connection(
    ctx: &Context,
    mut reader: impl BufRead,
    output: Output,
    busy: &turns::Busy,
    disconnect: Arc<dyn Fn() + Send + Sync>,
    caller: Option<&seshat::store::Caller>,
    peer: Option<std::net::SocketAddr>,
) {
    let mut conn = Connection::open(ctx, output, busy, disconnect, caller, peer);
    let mut line = Vec::new();
    loop {
        match seshat::input::next_line(&mut reader, &mut line, conn.limit) {
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

/// One client's connection, fed its lines one at a time: by a reading thread (stdio, a Unix
/// socket) or by a network connection's task, which lends it to a thread of the runtime's pool for
/// each message — an idle network connection holds no thread.
struct Connection {
    server: Server,
    outbox: Outbox,
    pending: rpc::Pending,
    /// The longest line read.
    limit: usize,
    /// Lines read so far.
    number: u64,
    /// The thread writing the answers (stdio, a Unix socket).
    writing: Option<std::thread::JoinHandle<()>>,
}

impl Connection {
    /// A connection writing to `output`, acting for `caller` (a network client's) or the local
    /// user.
    fn open(
        ctx: &Context,
        output: Output,
        busy: &turns::Busy,
        disconnect: Arc<dyn Fn() + Send + Sync>,
        caller: Option<&seshat::store::Caller>,
        peer: Option<std::net::SocketAddr>,
    ) -> Connection {
        let ctx = match caller {
            Some(caller) => ctx.for_user(&caller.user),
            None => ctx.clone(),
        };
        // The connection's configuration, read once (defaults when it cannot be read).
        let env = ctx.environment(Default::default()).ok();
        let config = env.as_ref().map(|e| e.config().clone()).unwrap_or_default();
        let acting = Acting {
            user: caller.map(|c| c.user.clone()),
            token: caller.map(|c| c.token.clone()),
            peer: peer.map(|p| p.to_string()),
            read_only: caller.is_some_and(|c| c.read_only),
            max_turns: config.serve.max_turns_per_user(),
            max_sessions: config.serve.max_sessions_per_user(),
            max_workers: config.serve.max_workers(),
        };
        let limit = crate::record_limit(&config);
        let limit_unread = config.serve.max_unread_bytes();
        let (outbox, writing) = match output {
            Output::Write(writer) => {
                let (outbox, lines) = Outbox::new(limit_unread, disconnect);
                (outbox, Some(std::thread::spawn(move || rpc::write_lines(lines, writer))))
            }
            Output::Task(task) => (Outbox::to_task(limit_unread, disconnect, task), None),
        };
        let pending: rpc::Pending = Arc::new(Mutex::new(HashMap::new()));
        let server = Server {
            ctx,
            db: None,
            knowledge: None,
            recall: None,
            // What the connection's memory calls write is embedded by a thread of its own (when
            // memory or history is embedded), never delaying an answer.
            background: env.as_ref().and_then(seshat::client::Environment::background),
            env,
            outbox: outbox.clone(),
            pending: pending.clone(),
            setup: None,
            turns: turns::Turns::new(busy.clone()),
            acting,
        };
        Connection { server, outbox, pending, limit, number: 0, writing }
    }

    /// Serves one line (its line break included or not); false when the connection should end.
    fn feed(&mut self, line: &[u8]) -> bool {
        if line.len() > self.limit {
            self.too_long();
            return false;
        }
        self.number += 1;
        if self.outbox.overflowed() {
            return false;
        }
        let Ok(text) = std::str::from_utf8(line) else {
            let number = self.number;
            self.outbox
                .error(Value::Null, RpcError::parse(format!("line {number} is not valid UTF-8: send JSON in UTF-8")));
            return true;
        };
        let text = text.trim_end_matches(['\n', '\r']);
        if !text.trim().is_empty() {
            self.server.line(text);
        }
        true
    }

    /// The line being read is longer than the connection reads: nothing of it is applied; the
    /// client is told, and the connection ends.
    fn too_long(&mut self) {
        self.number += 1;
        let number = self.number;
        self.outbox.error(
            Value::Null,
            RpcError::invalid_request(format!(
                "line {number} is longer than {}, the longest line the server reads (`max_record_mib` under [store] \
                 in config.toml): the connection is closed",
                seshat::input::describe_limit(self.limit)
            )),
        );
    }

    /// The client is gone: tool calls waiting for it fail, its turns in flight are interrupted
    /// and store what arrived, and what is queued for it is written.
    fn close(self) {
        let Connection { mut server, outbox, pending, writing, .. } = self;
        pending.lock().map(|mut p| p.clear()).ok();
        server.turns.interrupt_all();
        server.turns.join_all();
        drop(server);
        drop(outbox);
        if let Some(writing) = writing {
            let _ = writing.join();
        }
    }
}

/// `text` with the server's own places — its directories, its database's path or address — put
/// as words: what a network client is told never names where the server keeps things.
pub(crate) fn hide_paths(text: &str, ctx: &Context) -> String {
    let mut out = text.to_string();
    let places = [
        (ctx.db.to_string(), "the server's database"),
        (ctx.dirs.data.display().to_string(), "the server's data directory"),
        (ctx.dirs.config.display().to_string(), "the server's configuration directory"),
        (ctx.dirs.cache.display().to_string(), "the server's cache directory"),
    ];
    for (place, words) in places {
        if place.len() > 1 {
            out = out.replace(&place, words);
        }
    }
    out
}

/// Where a connection's answers go.
enum Output {
    /// Written line by line, by a thread of the connection's own.
    Write(Box<dyn std::io::Write + Send>),
    /// Sent as frames by the network connection's socket task (which holds the other end).
    Task(rpc::ToTask),
}

struct Server {
    /// The command's context; a network client's acts for its user, in the project it names.
    ctx: Context,
    /// The database, for the requests answered on the reading thread.
    db: Option<seshat::store::Store>,
    /// The document corpus, made on the first `knowledge/search` and kept: its embedder loaded
    /// once, its vectors held in memory between searches.
    knowledge: Option<seshat::retrieval::Knowledge>,
    /// The library's environment for this connection (none when the configuration cannot be read).
    env: Option<seshat::client::Environment>,
    /// Hybrid memory search (when memory is embedded), made on the first memory call and kept.
    recall: Option<Option<seshat::retrieval::Recall>>,
    /// Embeds what the memory calls write, when memory is embedded.
    background: Option<seshat::retrieval::queue::Background>,
    outbox: Outbox,
    pending: rpc::Pending,
    setup: Option<ClientSetup>,
    turns: turns::Turns,
    /// Who the connection acts for.
    acting: Acting,
}

impl Server {
    fn line(&mut self, text: &str) {
        let msg: Value = match serde_json::from_str(text) {
            Ok(v) => v,
            Err(e) => return self.outbox.error(Value::Null, RpcError::parse(format!("the line is not JSON: {e}"))),
        };
        let id = msg.get("id").cloned();
        if id.as_ref().is_some_and(|id| !(id.is_string() || id.is_number() || id.is_null())) {
            return self
                .outbox
                .error(Value::Null, RpcError::invalid_request("`id` must be a string or a number (JSON-RPC 2.0)"));
        }
        // A response to one of the server's own requests (`tool/call`).
        if msg.get("method").is_none() && id.is_some() && (msg.get("result").is_some() || msg.get("error").is_some()) {
            rpc::deliver(&self.pending, &msg);
            return;
        }
        let Some(method) = msg.get("method").and_then(Value::as_str) else {
            return self.outbox.error(
                id.unwrap_or(Value::Null),
                RpcError::invalid_request("a request needs a string `method` (and `jsonrpc`: \"2.0\")"),
            );
        };
        if msg.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            return self
                .outbox
                .error(id.unwrap_or(Value::Null), RpcError::invalid_request("`jsonrpc` must be \"2.0\""));
        }
        let params = msg.get("params").cloned().unwrap_or_else(|| json!({}));
        let Some(id) = id else {
            // Notifications the server understands: none change state yet.
            return;
        };
        // Reading the configuration needs no session settings: a client may check it first.
        if method != "initialize" && method != "config/get" && self.setup.is_none() {
            return self.outbox.error(id, RpcError::not_initialized());
        }
        // The method's access rule, declared with it in the protocol: an unknown method is
        // answered by the dispatch below.
        let writes = seshat_protocol::methods::access(method).is_some_and(|a| a.writes());
        if writes && self.acting.read_only {
            let refused = RpcError::read_only(method);
            self.audit(method, &params, None, Some(&refused), writes);
            return self.outbox.error(id, refused);
        }
        let answer = self.call(method, &params, id.clone());
        self.audit(method, &params, answer.as_ref().ok().and_then(Option::as_ref), answer.as_ref().err(), writes);
        match answer {
            Ok(Some(result)) => self.outbox.result(id, result),
            Ok(None) => {} // answered later, by a worker
            Err(mut e) => {
                if self.acting.user.is_some() {
                    e.message = hide_paths(&e.message, &self.ctx);
                }
                self.outbox.error(id, e)
            }
        }
    }

    /// Runs `f` with the connection's turns and what a turn or compaction needs of it.
    fn with_link<R>(&mut self, setup: &ClientSetup, f: impl FnOnce(&mut turns::Turns, turns::Link<'_>) -> R) -> R {
        let link = turns::Link {
            ctx: &self.ctx,
            setup,
            outbox: &self.outbox,
            pending: &self.pending,
            user: self.acting.user.as_deref(),
            max_turns: self.acting.max_turns,
            max_sessions: self.acting.max_sessions,
            max_workers: self.acting.max_workers,
        };
        f(&mut self.turns, link)
    }

    /// A network client's project: its key and the instructions it read on its machine. The
    /// connection's environment and memory search are made again for it.
    fn enter_project(
        &mut self,
        project: Option<&str>,
        instructions: Vec<seshat_protocol::methods::InstructionFile>,
    ) -> Result<(), RpcError> {
        let project = project.unwrap_or_default();
        if project.len() > MAX_PROJECT_KEY || project.chars().any(char::is_control) {
            return Err(RpcError::invalid_params(format!(
                "`project` must be a project key of at most {MAX_PROJECT_KEY} bytes without control characters \
                 (a normalised git remote, a `.seshat/project` id, or a path)"
            )));
        }
        let size: usize = instructions.iter().map(|f| f.name.len() + f.text.len()).sum();
        if size > MAX_INSTRUCTIONS || instructions.iter().any(|f| f.name.trim().is_empty()) {
            return Err(RpcError::invalid_params(format!(
                "`instructions` must name each file and hold at most {} KiB in all",
                MAX_INSTRUCTIONS >> 10
            )));
        }
        let given = instructions.into_iter().map(|f| (f.name, f.text)).collect();
        self.ctx = self.ctx.in_project(project, given);
        self.env = self.ctx.environment(Default::default()).ok();
        self.recall = None;
        self.knowledge = None;
        Ok(())
    }

    /// The audit line of a write a network client made: who, which method, on which session or
    /// scope.
    /// Audits a network client's call: a write done (naming what it wrote), a write refused, a
    /// read denied — in the log and in the store's trail (`seshat audit`).
    fn audit(
        &mut self,
        method: &str,
        params: &Value,
        result: Option<&Value>,
        refused: Option<&RpcError>,
        writes: bool,
    ) {
        const DENIALS: &[&str] =
            &["read_only_token", "scope_denied", "session_not_found", "chunk_not_found", "admin_only"];
        let Some(user) = self.acting.user.clone() else { return };
        let code = refused.map(|e| e.stable().to_string());
        let event = match (code.as_deref(), writes) {
            (None, true) => "write",
            (Some(c), true) if DENIALS.contains(&c) => "refused_write",
            (Some(c), false) if DENIALS.contains(&c) => "denied_read",
            _ => return,
        };
        let field =
            |v: &Value, name: &str| v.get(name).map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string));
        // What it touched: the session or scope it names, or the session it made.
        // (An admin method's user, team or token id; never a token's secret.)
        let target = field(params, "session")
            .or_else(|| field(params, "scope"))
            .or_else(|| field(params, "team").map(|t| format!("team:{t}")))
            .or_else(|| field(params, "name"))
            .or_else(|| field(params, "user"))
            .or_else(|| result.and_then(|r| r.get("session")).and_then(|s| field(s, "id")))
            .or_else(|| result.and_then(|r| field(r, "id")));
        tracing::info!(target: "seshat::audit", %user, method, target = target.as_deref().unwrap_or(""), event, code = code.as_deref().unwrap_or(""));
        let mut record = seshat::store::AuditEvent::new(event);
        record.user = Some(user);
        record.token.clone_from(&self.acting.token);
        record.peer.clone_from(&self.acting.peer);
        record.method = Some(method.to_string());
        record.target = target;
        record.code = code;
        if let Err(e) =
            self.store().map_err(|e| e.message).and_then(|s| s.record_audit(&record).map_err(|e| e.to_string()))
        {
            tracing::warn!("cannot record an audit event: {e}");
        }
    }

    /// Runs one method: `Ok(Some)` answers now, `Ok(None)` means a worker answers later.
    fn call(&mut self, method: &str, params: &Value, id: Value) -> Result<Option<Value>, RpcError> {
        use seshat_protocol::methods::{self as m, Request as R};
        let request = match R::parse(method, params) {
            Some(parsed) => {
                parsed.map_err(|e| RpcError::invalid_params(format!("{e} (host/protocol/protocol.md lists them)")))?
            }
            None => return Err(RpcError::method_not_found(method)),
        };
        match request {
            R::Initialize(p) => {
                if let Some(version) = &p.protocol_version {
                    seshat_protocol::check_version(version, seshat_protocol::Peer::Client)
                        .map_err(|e| RpcError::seshat("protocol_mismatch", e))?;
                }
                // A provider that cannot be selected is refused now, not at the first turn.
                if let Some(name) = &p.provider {
                    let config = self.ctx.config().map_err(|e| RpcError::seshat("invalid_config", format!("{e:#}")))?;
                    seshat::client::check_provider(&config, &self.ctx.catalog(), name)
                        .map_err(|e| RpcError::seshat(e.code(), e.to_string()))?;
                }
                if self.acting.user.is_some() {
                    self.enter_project(p.project.as_deref(), p.instructions)?;
                }
                let tools = p
                    .tools
                    .into_iter()
                    .map(|t| {
                        let schema = t.input_schema.unwrap_or_else(|| json!({"type": "object"}));
                        seshat::tool::ToolDef::new(t.name, t.description, schema)
                    })
                    .collect();
                self.setup = Some(ClientSetup {
                    tools,
                    auto_compact: p.auto_compact,
                    summary_model: p.compact_summary_model,
                    provider: p.provider,
                    model: p.model,
                    window: p.window,
                });
                rpc::answer::<m::Initialize>(&m::InitializeResult {
                    protocol_version: seshat_protocol::PROTOCOL_VERSION.into(),
                    server_info: m::ServerInfo { name: "seshat".into(), version: env!("CARGO_PKG_VERSION").into() },
                    capabilities: m::Capabilities {
                        turns: true,
                        tools: true,
                        memory: true,
                        knowledge: true,
                        compaction: true,
                    },
                })
            }
            R::SessionNew(p) => {
                if let Some(window) = p.window
                    && let Some(e) = seshat::window::too_small(
                        p.model.as_deref().unwrap_or("the model"),
                        window,
                        seshat::window::WindowSource::Flag,
                    )
                {
                    return Err(RpcError::invalid_params(e));
                }
                let new = seshat::store::NewSession {
                    project: self.ctx.project.clone(),
                    title: p.title,
                    provider: p.provider,
                    model: p.model,
                    context_window: p.window,
                    metadata: None,
                };
                let session = self.store()?.create_session(new).map_err(RpcError::from_store)?;
                rpc::answer::<m::SessionNew>(&m::SessionResult { session })
            }
            R::SessionList(p) => {
                let filter = seshat::store::ListFilter {
                    project: (!p.all).then(|| self.ctx.project.clone()),
                    limit: p.limit.map(|l| l as usize),
                };
                let store = self.store()?;
                let sessions = store.list_sessions(&filter).map_err(RpcError::from_store)?;
                let rewinds = if p.rewinds {
                    store.live_rewinds_of(&sessions).map_err(RpcError::from_store)?
                } else {
                    Default::default()
                };
                rpc::answer::<m::SessionList>(&m::SessionListResult { sessions, rewinds })
            }
            R::SessionGet(p) => {
                let store = &*self.store()?;
                let id = store.resolve(&p.session).map_err(RpcError::from_store)?;
                let session = store.session(&id).map_err(RpcError::from_store)?;
                let view = (&store.live_view(&id).map_err(RpcError::from_store)?).into();
                let history = if p.full { Some(store.full_history(&id).map_err(RpcError::from_store)?) } else { None };
                rpc::answer::<m::SessionGet>(&m::SessionGetResult { session, view, history })
            }
            R::SessionDelete(p) => {
                let id = self.store()?.resolve(&p.session).map_err(RpcError::from_store)?;
                if self.turns.busy(&id) {
                    return Err(RpcError::busy(&id));
                }
                self.turns.forget(&id);
                self.store()?.delete_session(&id).map_err(RpcError::from_store)?;
                rpc::answer::<m::SessionDelete>(&m::SessionDeleteResult { deleted: id })
            }
            R::TurnStart(p) => {
                let session = self.store()?.resolve(&p.session).map_err(RpcError::from_store)?;
                if p.text.trim().is_empty() {
                    return Err(RpcError::invalid_params("`text` is empty: give the user's message"));
                }
                if let Some(key) = &p.idempotency_key
                    && (key.is_empty()
                        || key.len() > seshat::store::MAX_TURN_KEY_BYTES
                        || key.chars().any(char::is_control))
                {
                    return Err(RpcError::invalid_params(format!(
                        "`idempotency_key` has {} bytes: give 1 to {} bytes without control characters, one key per \
                         request",
                        key.len(),
                        seshat::store::MAX_TURN_KEY_BYTES
                    )));
                }
                let setup = self.setup.clone().unwrap_or_default();
                let (text, key) = (p.text, p.idempotency_key);
                self.with_link(&setup, |turns, link| turns.start(link, &session, text, key, id))?;
                Ok(None)
            }
            R::TurnInterrupt(p) => {
                let session = self.store()?.resolve(&p.session).map_err(RpcError::from_store)?;
                rpc::answer::<m::TurnInterrupt>(&m::TurnInterruptResult { interrupted: self.turns.interrupt(&session) })
            }
            R::SessionCompact(p) => {
                let session = self.store()?.resolve(&p.session).map_err(RpcError::from_store)?;
                let setup = self.setup.clone().unwrap_or_default();
                let how = turns::Compacting { instructions: p.instructions, until: p.until, dry_run: p.dry_run };
                self.with_link(&setup, |turns, link| turns.compact(link, &session, how, id))?;
                Ok(None)
            }
            R::SessionFork(p) => {
                let store = self.store()?;
                let id = store.resolve(&p.session).map_err(RpcError::from_store)?;
                let forked = store.fork(&id, p.at, p.title.as_deref()).map_err(RpcError::from_store)?;
                rpc::answer::<m::SessionFork>(&m::SessionForkResult {
                    session: forked.session,
                    at: forked.at,
                    moved_from: forked.moved_from,
                })
            }
            R::SessionRewind(p) => {
                let id = self.store()?.resolve(&p.session).map_err(RpcError::from_store)?;
                if self.turns.busy(&id) {
                    return Err(RpcError::busy(&id));
                }
                let (rewound, request) = match (p.to, p.last, p.undo) {
                    (None, None, true) => (self.store()?.undo_rewind(&id).map_err(RpcError::from_store)?, None),
                    (Some(to), None, false) => (self.rewind(&id, to)?, None),
                    (None, Some(n), false) => {
                        let found = self.store()?.nth_last_request(&id, n.max(1)).map_err(RpcError::from_store)?;
                        let Some((seq, text)) = found else {
                            return Err(RpcError::from_store(seshat::store::Error::NothingToRewind(id)));
                        };
                        (self.rewind(&id, seq)?, Some(text))
                    }
                    _ => {
                        return Err(RpcError::invalid_params(
                            "give one of `to` (a seq), `last` (the n-th-last request) or `undo: true`",
                        ));
                    }
                };
                rpc::answer::<m::SessionRewind>(&m::SessionRewindResult {
                    from_seq: rewound.from_seq,
                    through_seq: rewound.through_seq,
                    retracted_compactions: rewound.retracted_compactions,
                    moved_from: rewound.moved_from,
                    undone: p.undo,
                    request,
                })
            }
            R::ConfigGet(m::Empty {}) => {
                let config = self.ctx.config().map_err(|e| RpcError::seshat("invalid_config", format!("{e:#}")))?;
                let providers = seshat::client::provider_names(&config, &self.ctx.catalog());
                rpc::answer::<m::ConfigGet>(&m::ConfigGetResult {
                    project: self.ctx.project.clone(),
                    // A network client is not told where the server keeps its store.
                    database: if self.acting.user.is_some() { "remote".into() } else { self.ctx.db.to_string() },
                    provider: config.plugins.provider,
                    model: config.chat.model,
                    auto_compact: config.chat.auto_compact.unwrap_or(true),
                    compact_summary_model: config.chat.summary_model,
                    embedder: config.plugins.embedder,
                    providers,
                })
            }
            R::SessionExport(p) => {
                let store = self.store()?;
                let id = store.resolve(&p.session).map_err(RpcError::from_store)?;
                let mut out = Vec::new();
                store.export(&id, &mut out).map_err(RpcError::from_store)?;
                let jsonl = String::from_utf8(out)
                    .map_err(|e| RpcError::seshat("internal_error", format!("an export that is not UTF-8: {e}")))?;
                rpc::answer::<m::SessionExport>(&m::SessionExportResult { session: id, jsonl })
            }
            R::SessionAppend(p) => {
                let session = self.store()?.resolve(&p.session).map_err(RpcError::from_store)?;
                if self.turns.busy(&session) {
                    return Err(RpcError::busy(&session));
                }
                let seqs = self.store()?.append(&session, &p.messages).map_err(RpcError::from_store)?;
                rpc::answer::<m::SessionAppend>(&m::SessionAppendResult { session, seqs })
            }
            R::SessionPins(p) => {
                let store = self.store()?;
                let session = store.resolve(&p.session).map_err(RpcError::from_store)?;
                let pins = store.pins(&session).map_err(RpcError::from_store)?;
                rpc::answer::<m::SessionPins>(&m::SessionPinsResult { session, pins })
            }
            R::SessionPin(p) => {
                let store = self.store()?;
                let session = store.resolve(&p.session).map_err(RpcError::from_store)?;
                // Pins may take a share of the session's window (the assumed one when unknown).
                let info = store.session(&session).map_err(RpcError::from_store)?;
                let window = info.context_window.unwrap_or(seshat::window::ASSUMED_WINDOW);
                let pinned = seshat::compaction::pin(store, &session, p.seq, window)
                    .map_err(|e| RpcError::seshat(e.code(), e.to_string()))?;
                let pins = store.pins(&session).map_err(RpcError::from_store)?;
                rpc::answer::<m::SessionPin>(&m::SessionPinResult { session, pinned, pins })
            }
            R::SessionUnpin(p) => {
                let store = self.store()?;
                let session = store.resolve(&p.session).map_err(RpcError::from_store)?;
                let unpinned = store.unpin(&session, p.seq).map_err(RpcError::from_store)?;
                rpc::answer::<m::SessionUnpin>(&m::SessionUnpinResult { session, unpinned })
            }
            R::SessionImport(p) => {
                let config = self.ctx.config().map_err(|e| RpcError::seshat("invalid_config", format!("{e:#}")))?;
                let options = seshat::store::ImportOptions {
                    new_id: p.new_id,
                    repair: p.repair,
                    max_record_bytes: crate::record_limit(&config),
                };
                let imported = self.store()?.import(&mut p.jsonl.as_bytes(), options).map_err(RpcError::from_store)?;
                rpc::answer::<m::SessionImport>(&imported)
            }
            R::SessionBringIn(p) => {
                if p.project.len() > MAX_PROJECT_KEY {
                    return Err(RpcError::invalid_params(format!(
                        "`project` is longer than {MAX_PROJECT_KEY} bytes: send the project's key, not its files"
                    )));
                }
                let (converted, project) =
                    seshat::foreign::Converted::from_params(p).map_err(RpcError::invalid_params)?;
                let report = seshat::foreign::bring_in(self.store()?, &converted, |_| project.clone())
                    .map_err(|e| RpcError::seshat(e.code(), e.to_string()))?;
                rpc::answer::<m::SessionBringIn>(&report.into())
            }
            R::HistorySearch(p) => {
                if p.query.trim().is_empty() {
                    return Err(RpcError::invalid_params("`query` is empty: give the words to look for"));
                }
                let limit = p.limit.unwrap_or(20).clamp(1, 200) as usize;
                let project = self.ctx.project.clone();
                let scope = if p.all {
                    seshat::store::HistoryScope::All
                } else {
                    seshat::store::HistoryScope::Project(&project)
                };
                self.store()?;
                let Server { db: Some(store), env, recall, .. } = self else { unreachable!("opened above") };
                // Hybrid when the server embeds history (acting for the caller), lexical otherwise.
                let recall = recall.get_or_insert_with(|| env.as_ref().and_then(seshat::client::Environment::recall));
                let hits = match recall.as_mut().filter(|r| r.history()) {
                    Some(r) => r
                        .search_history(scope, &p.query, limit)
                        .map(|(hits, _)| hits)
                        .map_err(|e| RpcError::seshat(e.code(), e.to_string()))?,
                    None => store.search_history(scope, &p.query, limit).map_err(RpcError::from_store)?,
                };
                let hits = hits.into_iter().map(Into::into).collect();
                rpc::answer::<m::HistorySearch>(&m::HistorySearchResult { hits })
            }
            R::KnowledgeSearch(p) => {
                let project = self.ctx.project.clone();
                let k = self.knowledge()?;
                let filter = seshat::store::KnowledgeFilter { project: &project, scope: None };
                let limit = p.limit.unwrap_or(10).clamp(1, 100) as usize;
                let found = k.search(filter, &p.query, limit).map_err(|e| RpcError::seshat(e.code(), e.to_string()))?;
                rpc::answer::<m::KnowledgeSearch>(&found)
            }
            R::KnowledgeRead(p) => {
                let project = self.ctx.project.clone();
                let k = self.knowledge()?;
                let args = json!({"id": p.id, "offset": p.offset});
                let output = seshat::retrieval::tools::call(k, &project, seshat::retrieval::tools::READ, &args);
                if output.is_error {
                    let message = output.structured["error"].as_str().unwrap_or("no such chunk").to_string();
                    return Err(RpcError::seshat("chunk_not_found", message));
                }
                let chunk: m::KnowledgeChunk = serde_json::from_value(output.structured).map_err(|e| {
                    RpcError::seshat("internal_error", format!("a chunk that does not fit the protocol: {e}"))
                })?;
                rpc::answer::<m::KnowledgeRead>(&chunk)
            }
            R::NotesSet(p) => {
                let key = p.key.trim();
                if key.is_empty() {
                    return Err(RpcError::invalid_params("`key` is empty: name the note (e.g. \"style\")"));
                }
                // Setting and listing default to the user's notes; a search covers every scope.
                let scope = p.scope.unwrap_or(seshat::memory::Scope::User);
                let note = self.memory()?.set_note(scope, key, &p.value).map_err(RpcError::from_memory)?;
                rpc::answer::<m::NotesSet>(&m::NoteResult { note })
            }
            R::NotesList(p) => {
                let scope = p.scope.unwrap_or(seshat::memory::Scope::User);
                let notes = self.memory()?.notes(&scope).map_err(RpcError::from_memory)?;
                rpc::answer::<m::NotesList>(&m::NotesResult { notes })
            }
            R::NotesSearch(p) => {
                let notes = self.memory()?.search_notes(&p.query, p.scope.as_ref()).map_err(RpcError::from_memory)?;
                rpc::answer::<m::NotesSearch>(&m::NotesResult { notes })
            }
            R::MemoryContextGet(p) => {
                // The configuration is read only for the default budget.
                let budget = match p.budget {
                    Some(budget) => budget as usize,
                    None => {
                        let config =
                            self.ctx.config().map_err(|e| RpcError::seshat("invalid_config", format!("{e:#}")))?;
                        config.memory_context_tokens().unwrap_or(seshat::memory::DEFAULT_CONTEXT_TOKENS)
                    }
                };
                let repository = self.ctx.repository.clone();
                let context = self
                    .store()?
                    .memory(repository.as_deref())
                    .context(budget)
                    .map_err(|e| RpcError::seshat(e.code(), e.to_string()))?;
                rpc::answer::<m::MemoryContextGet>(&context)
            }
            R::MemoryDeletions(m::Empty {}) => {
                let deletions = self.memory()?.deletions().map_err(RpcError::from_memory)?;
                rpc::answer::<m::MemoryDeletions>(&m::MemoryDeletionsResult { deletions })
            }
            R::MemoryRestore(p) => {
                rpc::answer::<m::MemoryRestore>(&self.memory()?.restore(p.id).map_err(RpcError::from_memory)?)
            }
            R::MemoryClear(p) => {
                // The backup stays on the server's machine; the client is not told where.
                let backups = self.ctx.dirs.data.join("backups");
                let (_, records) = self.memory()?.clear(&p.scope, &backups).map_err(RpcError::from_memory)?;
                rpc::answer::<m::MemoryClear>(&m::MemoryClearResult { scope: p.scope, records: records as u64 })
            }
            R::MemoryCreateEntities(p) => {
                self.memory_tool::<m::MemoryCreateEntities>(|m, _| tools::create_entities(m, &p))
            }
            R::MemoryCreateRelations(p) => {
                self.memory_tool::<m::MemoryCreateRelations>(|m, _| tools::create_relations(m, &p))
            }
            R::MemoryAddObservations(p) => {
                self.memory_tool::<m::MemoryAddObservations>(|m, _| tools::add_observations(m, &p))
            }
            R::MemoryDeleteEntities(p) => {
                self.memory_tool::<m::MemoryDeleteEntities>(|m, _| tools::delete_entities(m, &p))
            }
            R::MemoryDeleteObservations(p) => {
                self.memory_tool::<m::MemoryDeleteObservations>(|m, _| tools::delete_observations(m, &p))
            }
            R::MemoryDeleteRelations(p) => {
                self.memory_tool::<m::MemoryDeleteRelations>(|m, _| tools::delete_relations(m, &p))
            }
            R::MemoryReadGraph(p) => self.memory_tool::<m::MemoryReadGraph>(|m, _| tools::read_graph(m, &p)),
            R::MemorySearchNodes(p) => self.memory_tool::<m::MemorySearchNodes>(|m, s| tools::search_nodes(m, &p, s)),
            R::MemoryOpenNodes(p) => self.memory_tool::<m::MemoryOpenNodes>(|m, _| tools::open_nodes(m, &p)),
            r @ (R::UsersList(_)
            | R::UsersAdd(_)
            | R::UsersSet(_)
            | R::UsersRename(_)
            | R::UsersRemove(_)
            | R::TokensList(_)
            | R::TokensCreate(_)
            | R::TokensRotate(_)
            | R::TokensRevoke(_)
            | R::ScopesList(_)
            | R::ScopesCreate(_)
            | R::ScopesGrant(_)
            | R::ScopesRevoke(_)) => principals::call(self.store()?, r),
        }
    }

    /// Runs a memory tool on the connection's memory; `search_nodes` is given the hybrid search
    /// when memory is embedded.
    fn memory_tool<M: seshat_protocol::methods::Method>(
        &mut self,
        run: impl FnOnce(
            &mut seshat::memory::Memory<'_>,
            Option<tools::Searcher<'_>>,
        ) -> Result<M::Result, seshat::memory::Error>,
    ) -> Result<Option<Value>, RpcError> {
        self.store()?;
        let Server { db: Some(store), env, recall, background, ctx, .. } = self else { unreachable!("opened above") };
        let recall = recall.get_or_insert_with(|| env.as_ref().and_then(seshat::client::Environment::recall));
        let mut memory = store.memory(ctx.repository.as_deref());
        let answer = match recall.as_mut().filter(|r| r.memory()) {
            Some(r) => {
                let mut search = |m: &mut seshat::memory::Memory<'_>,
                                  q: &str,
                                  s: Option<&seshat::memory::Scope>,
                                  n: usize| r.search_memory(m, q, s, n);
                run(&mut memory, Some(&mut search))
            }
            None => run(&mut memory, None),
        };
        if let Some(b) = background {
            b.poke();
        }
        rpc::answer::<M>(&answer.map_err(RpcError::from_memory)?)
    }

    /// Rewinds `session` to before message `to`, refused when the view it restores would not fit
    /// the session's window (as `seshat sessions rewind` does without a provider).
    fn rewind(&mut self, session: &str, to: u64) -> Result<seshat::store::Rewound, RpcError> {
        let window = self.store()?.session(session).map_err(RpcError::from_store)?.context_window;
        let mut client = self
            .ctx
            .environment(seshat::client::Overrides::default())
            .and_then(|e| Ok(e.client()?))
            .map_err(|e| RpcError::seshat("invalid_config", format!("{e:#}")))?;
        let settings = client.settings("unknown-model", window, 0);
        seshat::compaction::rewind(client.store(), session, to, &seshat::compaction::Frame::default(), &settings)
            .map_err(|e| RpcError::seshat(e.code(), e.to_string()))
    }

    /// The caller's memory in the connection's project.
    fn memory(&mut self) -> Result<seshat::memory::Memory<'_>, RpcError> {
        let repository = self.ctx.repository.clone();
        Ok(self.store()?.memory(repository.as_deref()))
    }

    /// The document corpus, made on first use and kept.
    fn knowledge(&mut self) -> Result<&mut seshat::retrieval::Knowledge, RpcError> {
        if self.knowledge.is_none() {
            let k = super::knowledge::knowledge(&self.ctx)
                .map_err(|e| RpcError::seshat("knowledge_failed", format!("{e:#}")))?;
            self.knowledge = Some(k);
        }
        Ok(self.knowledge.as_mut().expect("just made"))
    }

    /// The connection's database, opened on first use and kept (opening checks and migrates).
    fn store(&mut self) -> Result<&mut seshat::store::Store, RpcError> {
        if self.db.is_none() {
            let mut store = seshat::store::Store::connect(&self.ctx.db).map_err(RpcError::from_store)?;
            if let Some(user) = &self.acting.user {
                store = store.acting_for(user);
            }
            self.db = Some(store);
        }
        Ok(self.db.as_mut().expect("just opened"))
    }
}
