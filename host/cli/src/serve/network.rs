//! `seshat serve --listen ws://HOST:PORT` or `wss://HOST:PORT`: the same JSON-RPC protocol for
//! clients on other machines, one message per WebSocket text frame (a transport proxies and load
//! balancers carry, with clients in every language).
//!
//! A client proves who it is with a bearer token in its upgrade request (`Authorization: Bearer
//! …`, from `seshat tokens create`); a missing, wrong, expired or revoked one is refused with
//! HTTP 401 before any JSON-RPC. Each connection is then served as stdio is, acting for the
//! token's user. The limits (`[serve]` in config.toml): the largest message, connections at
//! once, turns per user, the handshake's time, silence (the server pings; a client that answers
//! nothing is dropped).
//!
//! Each connection is a task on one runtime; its requests are served, one at a time, by the same
//! code as stdio's on a thread the runtime lends it for the request (a connection that is busy
//! stops reading its socket, and an idle one holds no thread). Its answers go from the outbox straight to the socket's task, counted as unread until
//! sent (so a client that stops reading fills its unread limit and is closed).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use futures_util::{SinkExt as _, StreamExt as _};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::http::{self, StatusCode};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, WebSocketConfig};

use crate::Context;
use seshat_server::in_flight::InFlight;
use seshat_server::{Home, Service};

/// Where and how `--listen` serves over the network.
#[derive(Debug)]
pub(super) struct Network {
    /// The address to bind.
    pub address: SocketAddr,
    /// TLS (`wss://`), or none (`ws://`).
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// What the operator should know, said once the service listens.
    pub warnings: Vec<String>,
}

/// `--listen ws://HOST:PORT` or `wss://HOST:PORT` with its TLS files, or `None` when `listen` is
/// not a WebSocket address. Plain `ws://` is refused off loopback unless `insecure`.
pub(super) fn parse(
    listen: &str,
    cert: Option<&std::path::Path>,
    key: Option<&std::path::Path>,
    insecure: bool,
) -> anyhow::Result<Option<Network>> {
    let (secure, rest) = match listen.split_once("://") {
        Some(("ws", rest)) => (false, rest),
        Some(("wss", rest)) => (true, rest),
        _ => return Ok(None),
    };
    let rest = rest.trim_end_matches('/');
    let address: SocketAddr = match rest.parse() {
        Ok(a) => a,
        Err(_) => std::net::ToSocketAddrs::to_socket_addrs(rest)
            .ok()
            .and_then(|mut a| a.next())
            .with_context(|| format!("`--listen {listen}`: give HOST:PORT, as in ws://127.0.0.1:7420"))?,
    };
    if !secure && !address.ip().is_loopback() && !insecure {
        anyhow::bail!(
            "`--listen {listen}` would send tokens and conversations unencrypted beyond this machine: use wss:// with \
             --tls-cert and --tls-key, or add --insecure-listen (behind a proxy that encrypts)"
        );
    }
    let mut warnings = Vec::new();
    if insecure && !address.ip().is_loopback() {
        warnings.push(format!(
            "--insecure-listen sends tokens and conversations unencrypted to {address}: only behind a proxy that \
             encrypts"
        ));
    }
    #[cfg(unix)]
    if let Some(key) = key
        && let Ok(meta) = std::fs::metadata(key)
        && std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o077 != 0
    {
        warnings
            .push(format!("the TLS key {} can be read by other users of this machine: chmod 600 it", key.display()));
    }
    let tls = match (secure, cert, key) {
        (false, None, None) => None,
        (false, _, _) => anyhow::bail!("--tls-cert and --tls-key are for wss:// addresses, not `{listen}`"),
        (true, Some(cert), Some(key)) => Some(Arc::new(tls_config(cert, key)?)),
        (true, _, _) => anyhow::bail!(
            "`--listen {listen}` needs --tls-cert FILE and --tls-key FILE (PEM), or `tls_cert` and `tls_key` under \
             [serve] in the service's file"
        ),
    };
    Ok(Some(Network { address, tls, warnings }))
}

/// A rustls server configuration from PEM files: the certificate chain and its private key.
fn tls_config(cert: &std::path::Path, key: &std::path::Path) -> anyhow::Result<rustls::ServerConfig> {
    use rustls::pki_types::pem::PemObject as _;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .and_then(|certs| certs.collect::<Result<_, _>>())
        .map_err(|e| anyhow::anyhow!("cannot read the certificate chain in {}: {e}", cert.display()))?;
    anyhow::ensure!(!chain.is_empty(), "{} holds no PEM certificate", cert.display());
    let key = PrivateKeyDer::from_pem_file(key)
        .map_err(|e| anyhow::anyhow!("cannot read a PEM private key in {}: {e}", key.display()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .context("TLS versions")?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .context("the certificate and the key do not make a TLS identity (do they match?)")
}

/// What every connection shares.
struct Shared {
    busy: Service,
    /// Where the connections work.
    home: Arc<Home>,
    /// Checks tokens (on its own thread and connection to the store).
    tokens: super::token_check::TokenCheck,
    /// Watches the open connections' access.
    access: Arc<super::access::Access>,
    /// The configuration and where it comes from (reloaded on SIGHUP).
    live: super::reload::Live,
    /// TLS, connection slots and handshakes at once (the oldest dropped past the bound), as the
    /// last reload left them.
    edge: super::reload::Edge,
    /// Connections still in their handshake, per address.
    handshaking: seshat_server::counts::Counts<std::net::IpAddr>,
    /// Connections open, per user.
    per_user: seshat_server::counts::Counts<String>,
    /// Set when the service is stopping and its connections close.
    closing: tokio::sync::watch::Receiver<bool>,
    open: InFlight,
}

impl Shared {
    /// `[serve]` as configured now.
    fn config(&self) -> seshat::config::ServeConfig {
        self.live.settings.config().serve.clone()
    }
}

/// How a stop signal's thread ends the service: first no new client (the turns in flight go on),
/// then every connection is closed once what was queued for it is sent.
#[derive(Debug)]
pub(super) struct Stop {
    accepting: tokio::sync::watch::Sender<bool>,
    closing: tokio::sync::watch::Sender<bool>,
    open: InFlight,
}

impl Stop {
    /// A service that is running.
    pub(super) fn new() -> Stop {
        Stop {
            accepting: tokio::sync::watch::Sender::new(true),
            closing: tokio::sync::watch::Sender::new(false),
            open: InFlight::default(),
        }
    }

    /// No new client is accepted; the connections stay open.
    pub(super) fn stop_accepting(&self) {
        self.accepting.send_replace(false);
    }

    /// Every connection reads no more and is closed once its answers are sent; waits up to
    /// `wait` for that, returning how many were still open.
    pub(super) fn close_all(&self, wait: Duration) -> usize {
        self.closing.send_replace(true);
        self.open.wait_none_for(wait)
    }
}

/// Serves `network` until the process exits; `stop` ends it in two steps (see [`Stop`]); each
/// message on `reloads` reloads the configuration (see [`super::reload`]).
#[allow(clippy::too_many_arguments, reason = "the parts `run` assembled, each used once here")]
pub(super) fn serve(
    ctx: &Context,
    home: Arc<Home>,
    network: Network,
    busy: Service,
    stop: &Stop,
    log_format: super::LogFormat,
    live: super::reload::Live,
    mut reloads: tokio::sync::mpsc::UnboundedReceiver<()>,
) -> anyhow::Result<()> {
    let config = live.settings.config().serve.clone();
    let fitted = super::files::fit(&config);
    busy.fit_workers(fitted.max_workers);
    let tokens = super::token_check::TokenCheck::start(ctx.store()?);
    let access = super::access::Access::start(ctx.store()?);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(REQUEST_THREADS)
        .enable_all()
        .build()
        .context("tokio runtime")?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(network.address)
            .await
            .with_context(|| format!("cannot listen on {}", network.address))?;
        let local = listener.local_addr()?;
        let scheme = if network.tls.is_some() { "wss" } else { "ws" };
        let version = env!("CARGO_PKG_VERSION");
        // (A JSON log is JSON from its first line: the address is in the `listening` event.)
        match log_format {
            super::LogFormat::Text => eprintln!("seshat serve: listening on {scheme}://{local}"),
            super::LogFormat::Json => {
                tracing::info!(target: "seshat::service", address = %format!("{scheme}://{local}"), version, "listening");
            }
        }
        // What [retention] sets is purged from now on (after the address is said).
        super::retention::start(&ctx.db, live.settings.clone());
        for warning in network.warnings.iter().chain(&fitted.warning) {
            if log_format == super::LogFormat::Text {
                eprintln!("seshat serve: warning: {warning}");
            } else {
                tracing::warn!(target: "seshat::service", "{warning}");
            }
        }
        let shared = Arc::new(Shared {
            edge: super::reload::Edge::new(network.tls, &fitted),
            handshaking: Default::default(),
            per_user: Default::default(),
            home,
            busy,
            tokens,
            access,
            live,
            closing: stop.closing.subscribe(),
            open: stop.open.clone(),
        });
        super::memory::start(shared.busy.clone());
        tokio::spawn({
            let shared = shared.clone();
            async move {
                while reloads.recv().await.is_some() {
                    reloaded(&shared);
                }
            }
        });
        if let Some(address) = &shared.live.metrics_listen {
            let metrics = metrics_listener(address).await?;
            let at = metrics.local_addr()?;
            match log_format {
                super::LogFormat::Text => eprintln!("seshat serve: metrics on http://{at}/metrics"),
                super::LogFormat::Json => tracing::info!(target: "seshat::service", address = %format!("http://{at}"), "metrics"),
            }
            tokio::spawn(serve_metrics(metrics, shared.clone()));
        }
        let mut accepting = stop.accepting.subscribe();
        loop {
            tokio::select! {
                accepted = listener.accept() => {
                    let (tcp, peer) = match accepted {
                        Ok(accepted) => accepted,
                        Err(e) => {
                            // Out of file descriptors (or another passing failure): wait a moment
                            // for some to close instead of spinning on the same error.
                            tracing::warn!("cannot accept a connection: {e}");
                            tokio::time::sleep(ACCEPT_BACKOFF).await;
                            continue;
                        }
                    };
                    // An address with as many sockets in their handshake as it may have gets no
                    // more: they are closed at once.
                    let config = shared.config();
                    let Some(handshaking) =
                        shared.handshaking.try_take(&peer.ip(), config.max_handshakes_per_address())
                    else {
                        tracing::debug!(%peer, "too many handshakes from this address: closed");
                        continue;
                    };
                    let _ = tcp.set_nodelay(true);
                    let shared = shared.clone();
                    // TLS as the last reload left it: a renewed certificate from the next
                    // handshake on.
                    let acceptor = shared.edge.acceptor();
                    // Past the bound on handshakes at once, the oldest one still going is dropped.
                    let (ticket, dropped) = shared.edge.handshakes.enter();
                    let handshaking = (handshaking, ticket);
                    tokio::spawn(async move {
                        // One deadline for the whole handshake: TLS, the upgrade and its token check.
                        let deadline = tokio::time::Instant::now() + config.handshake_timeout();
                        let served = async move {
                            match acceptor {
                                Some(acceptor) => match tokio::time::timeout_at(deadline, acceptor.accept(tcp)).await {
                                    Ok(Ok(tls)) => client(shared, tls, peer, deadline, handshaking).await,
                                    Ok(Err(e)) => tracing::debug!(%peer, "TLS handshake failed: {e}"),
                                    Err(_) => tracing::debug!(%peer, "TLS handshake timed out"),
                                },
                                None => client(shared, tcp, peer, deadline, handshaking).await,
                            }
                        };
                        // (Once the handshake is done its ticket is gone: `dropped` can no longer
                        // fire, and the connection is served to its end.)
                        tokio::select! {
                            Ok(()) = dropped => tracing::debug!(%peer, "dropped in its handshake to make room"),
                            () = served => {}
                        }
                    });
                }
                _ = accepting.wait_for(|a| !a) => break,
            }
        }
        // Stopping: no new client; the connections stay open while their turns finish (the
        // signal's thread waits for them, then exits the process).
        drop(listener);
        std::future::pending::<()>().await;
        Ok::<_, anyhow::Error>(())
    })?;
    Ok(())
}

/// Reloads the configuration (SIGHUP) and logs what happened.
fn reloaded(shared: &Shared) {
    let file = shared.live.source.file().map(|f| f.display().to_string()).unwrap_or_else(|| "config.toml".into());
    tracing::info!(target: "seshat::service", %file, "reloading the configuration");
    match super::reload::reload(&shared.live, &shared.edge, &shared.busy) {
        Ok(done) => {
            for warning in &done.warnings {
                tracing::warn!(target: "seshat::service", "{warning}");
            }
            for setting in &done.at_restart {
                tracing::warn!(
                    target: "seshat::service",
                    setting,
                    "`{setting}` changed: it takes effect when the service restarts"
                );
            }
            tracing::info!(target: "seshat::service", %file, generation = done.generation, "reloaded");
        }
        Err(e) => {
            // One line, as a log pipeline takes it (a TOML error points at its line over several).
            let why =
                format!("{e:#}").split('\n').map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join(" ");
            tracing::error!(
                target: "seshat::service",
                %file,
                "reload refused, the running configuration is kept: {why} (fix the file and send SIGHUP again)"
            );
        }
    }
}

/// Binds `[serve] metrics_listen`.
async fn metrics_listener(address: &str) -> anyhow::Result<tokio::net::TcpListener> {
    let parsed: SocketAddr = address.parse().map_err(|e| {
        anyhow::anyhow!(
            "`metrics_listen` under [serve] must be HOST:PORT with an IP address (127.0.0.1:9464), not `{address}`: {e}"
        )
    })?;
    tokio::net::TcpListener::bind(parsed)
        .await
        .with_context(|| format!("cannot listen on {parsed} (`metrics_listen` under [serve])"))
}

/// Answers the probes on `[serve] metrics_listen` (plain HTTP, one request a connection, each
/// within the handshake timeout), until the process exits.
async fn serve_metrics(listener: tokio::net::TcpListener, shared: Arc<Shared>) {
    loop {
        let Ok((tcp, _)) = listener.accept().await else {
            tokio::time::sleep(ACCEPT_BACKOFF).await;
            continue;
        };
        let shared = shared.clone();
        tokio::spawn(async move {
            let routed = super::probes::route(tcp, &shared.busy, &shared.home, super::probes::Listener::Metrics);
            let _ = tokio::time::timeout(shared.config().handshake_timeout(), routed).await;
        });
    }
}

/// A refusal at the upgrade: `status` with a JSON body naming the code and what to do.
fn refuse(status: StatusCode, code: &str, message: &str) -> ErrorResponse {
    let body = serde_json::json!({ "code": code, "message": message }).to_string();
    let mut response = http::Response::new(Some(body));
    *response.status_mut() = status;
    response.headers_mut().insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("application/json"));
    if status == StatusCode::UNAUTHORIZED {
        response.headers_mut().insert(http::header::WWW_AUTHENTICATE, http::HeaderValue::from_static("Bearer"));
    }
    response
}

/// The caller a request's `Authorization: Bearer` token names, or the refusal to answer with.
#[allow(clippy::result_large_err, reason = "tungstenite's upgrade callback returns its ErrorResponse by value")]
fn authenticate(
    shared: &Shared,
    request: &Request,
    peer: SocketAddr,
    deadline: Instant,
) -> Result<seshat::store::Caller, ErrorResponse> {
    if request.headers().get_all(http::header::AUTHORIZATION).iter().count() > 1 {
        return Err(refuse(
            StatusCode::BAD_REQUEST,
            "token_invalid",
            "send one `Authorization: Bearer TOKEN` header, not several",
        ));
    }
    let Some(header) = request.headers().get(http::header::AUTHORIZATION) else {
        return Err(refuse(
            StatusCode::UNAUTHORIZED,
            "token_missing",
            "send `Authorization: Bearer TOKEN` (a token from `seshat tokens create`)",
        ));
    };
    // The scheme is case-insensitive (RFC 9110): `Bearer`, `bearer`, `BEARER`.
    let token = header
        .to_str()
        .ok()
        .and_then(|h| h.trim_start().split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, token)| token.trim())
        .unwrap_or_default();
    use super::token_check::Checked;
    match tokio::task::block_in_place(|| shared.tokens.check(token, peer, deadline)) {
        Checked::Caller(caller) => Ok(caller),
        Checked::Refused(refusal) => Err(refuse(StatusCode::UNAUTHORIZED, refusal.code(), &refusal.to_string())),
        Checked::Failed(code) => {
            Err(refuse(StatusCode::SERVICE_UNAVAILABLE, code, "the server cannot reach its store: try again"))
        }
        Checked::Late => Err(refuse(
            StatusCode::SERVICE_UNAVAILABLE,
            "database_timeout",
            "the server's store did not check the token within the handshake's time: try again in a moment",
        )),
    }
}

/// One client: the upgrade (its token checked, a connection slot taken), then its frames bridged
/// to a connection served as stdio is, until either side ends.
async fn client<S>(
    shared: Arc<Shared>,
    stream: S,
    peer: SocketAddr,
    deadline: tokio::time::Instant,
    handshaking: (seshat_server::counts::Held<std::net::IpAddr>, super::handshakes::Ticket),
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    // A probe (`/healthz`, `/readyz`, `/metrics`) is answered here; an upgrade goes on.
    let config = shared.config();
    // (Where /metrics is answered is where the service started answering it, until it restarts.)
    let on = if shared.live.metrics_listen.is_some() {
        super::probes::Listener::ClientsOnly
    } else {
        super::probes::Listener::Clients
    };
    let routed = tokio::time::timeout_at(deadline, super::probes::route(stream, &shared.busy, &shared.home, on));
    let Ok(Some(stream)) = routed.await else { return };
    // What the upgrade's callback takes once the token is checked: the caller, a connection
    // slot and one of the user's connections (a socket that never proves itself takes none).
    type Admitted = (seshat::store::Caller, tokio::sync::OwnedSemaphorePermit, seshat_server::counts::Held<String>);
    let admitted: Arc<Mutex<Option<Admitted>>> = Arc::default();
    #[allow(clippy::result_large_err, reason = "tungstenite's upgrade callback returns its ErrorResponse by value")]
    let callback = {
        let (shared, admitted) = (shared.clone(), admitted.clone());
        move |request: &Request, response: Response| {
            let who = authenticate(&shared, request, peer, deadline.into_std())?;
            let Ok(slot) = shared.edge.connections.clone().try_acquire_owned() else {
                return Err(refuse(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "too_many_connections",
                    "the server has as many clients as it takes (`max_connections` under [serve]): try again later",
                ));
            };
            let max = shared.config().max_connections_per_user();
            let Some(theirs) = shared.per_user.try_take(&who.user, max) else {
                return Err(refuse(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "too_many_connections",
                    &format!(
                        "{} already holds {max} connections, as many as one user may \
                         (`max_connections_per_user` under [serve]): close one",
                        who.user
                    ),
                ));
            };
            if let Ok(mut a) = admitted.lock() {
                *a = Some((who, slot, theirs));
            }
            Ok(response)
        }
    };
    let max_message = config.max_message_bytes();
    let config = WebSocketConfig::default()
        .max_message_size(Some(max_message))
        .max_frame_size(Some(max_message))
        // The library fills its whole read buffer before each read (128 KiB by default): an
        // idle connection would keep that much resident. A request larger than this is read
        // in several reads.
        .read_buffer_size(READ_BUFFER)
        .write_buffer_size(64 << 10);
    let upgrade = tokio_tungstenite::accept_hdr_async_with_config(stream, callback, Some(config));
    let ws = match tokio::time::timeout_at(deadline, upgrade).await {
        Ok(Ok(ws)) => ws,
        Ok(Err(e)) => return tracing::debug!(%peer, "refused: {e}"),
        Err(_) => return tracing::debug!(%peer, "the WebSocket handshake timed out"),
    };
    drop(handshaking);
    let Some((caller, slot, theirs)) = admitted.lock().ok().and_then(|mut a| a.take()) else { return };
    tracing::info!(target: "seshat::audit", user = %caller.user, token = %caller.token, %peer, "connected");
    let open = shared.open.enter();
    let counted = shared.busy.metrics().connected();
    bridge(shared, ws, caller, peer, max_message).await;
    drop((open, counted));
    drop((slot, theirs));
}

/// What a connection reads from its socket at once, in bytes.
const READ_BUFFER: usize = 8 << 10;

/// Lines sent to a client together at most (one flush).
const BATCH: usize = 64;

/// Requests a connection reads ahead while one is being served.
const QUEUED: usize = 16;

/// Threads the runtime lends connections for their requests, at most (an idle connection holds
/// none).
pub(super) const REQUEST_THREADS: usize = 64;

/// How long the accept loop waits after a failed accept (out of file descriptors, say).
const ACCEPT_BACKOFF: Duration = Duration::from_millis(200);

/// Frames in, frames out: each request is served on a thread the runtime's pool lends the
/// connection for that request, one request at a time and in order; while one is served the
/// connection reads at most [`QUEUED`] more frames, then stops reading (the client waits).
async fn bridge<S>(
    shared: Arc<Shared>,
    ws: tokio_tungstenite::WebSocketStream<S>,
    caller: seshat::store::Caller,
    peer: SocketAddr,
    max_message: usize,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (mut sink, mut frames) = ws.split();
    let (to_task, mut outbound) = seshat_server::outbox::Outbox::task();
    let closed = Arc::new(tokio::sync::Notify::new());
    let opened = {
        let (home, busy, closed) = (shared.home.clone(), shared.busy.clone(), closed.clone());
        let caller = caller.clone();
        tokio::task::spawn_blocking(move || {
            let disconnect = Arc::new(move || closed.notify_one());
            Box::new(super::Connection::open(
                &home,
                super::Output::Task(to_task),
                &busy,
                disconnect,
                Some(&caller),
                Some(peer),
            ))
        })
    };
    let Ok(connection) = opened.await else { return };
    let mut connection = Some(connection);
    let mut serving: Option<tokio::task::JoinHandle<(Box<seshat_server::Connection>, bool)>> = None;
    let mut queued: std::collections::VecDeque<Vec<u8>> = std::collections::VecDeque::new();
    let config = shared.config();
    let idle = config.idle_timeout();
    let mut ping = tokio::time::interval(config.keepalive());
    ping.tick().await;
    let mut heard = Instant::now();
    let mut reading = true;
    let mut closing = shared.closing.clone();
    let (_watched, mut access_ended) = shared.access.register(&caller);
    let close =
        |code: CloseCode, reason: &'static str| Message::Close(Some(CloseFrame { code, reason: reason.into() }));
    let mut closed_by_us: Option<tokio::sync::oneshot::Receiver<()>> = None;
    loop {
        // No more requests (a stop, a line too long): once the one being served is done, the
        // connection is closed — its turns interrupted, what they had stored — on a thread of its
        // own; when it is, its outbox ends, what was queued is sent, then the close frame.
        if !reading
            && serving.is_none()
            && let Some(conn) = connection.take()
        {
            closed_by_us = Some(close_apart(conn));
        }
        // The next request goes to a thread as soon as the last one is done.
        if serving.is_none()
            && let Some(line) = queued.pop_front()
            && let Some(mut conn) = connection.take()
        {
            serving = Some(tokio::task::spawn_blocking(move || {
                let keep = conn.feed(&line);
                (conn, keep)
            }));
        }
        tokio::select! {
            done = async { serving.as_mut()?.await.ok() }, if serving.is_some() => {
                serving = None;
                // (A request that panicked took the connection with it.)
                let Some((conn, keep)) = done else { break };
                connection = Some(conn);
                if !keep {
                    reading = false;
                    queued.clear();
                }
            }
            // The token was revoked or expired, or its user disabled or removed: the client is
            // told why, then closed; the reader's end interrupts its turns.
            Ok(ended) = &mut access_ended => {
                let note = seshat_server::outbox::notice_line::<seshat_protocol::notifications::AccessRevoked>(
                    &seshat_protocol::notifications::AccessRevokedParams {
                        code: ended.code.to_string(),
                        message: ended.message,
                    },
                );
                if let Some(note) = note {
                    let _ = send(&mut sink, Message::text(note), idle).await;
                }
                let _ = send(&mut sink, close(CloseCode::Policy, ended.code), idle).await;
                break;
            }
            frame = frames.next(), if reading && queued.len() < QUEUED => {
                heard = Instant::now();
                match frame {
                    Some(Ok(Message::Text(text))) => {
                        // One message is one request: the line reader must see it whole, and a
                        // line break outside a JSON string is only whitespace.
                        let line: Vec<u8> =
                            text.as_bytes().iter().map(|&b| if b == b'\n' || b == b'\r' { b' ' } else { b }).collect();
                        queued.push_back(line);
                    }
                    Some(Ok(Message::Binary(_))) => {
                        let error = seshat_server::RpcError::parse("a binary frame is not JSON-RPC: send each request as a text frame".into());
                        if !send(&mut sink, Message::text(error.line()), idle).await {
                            break;
                        }
                    }
                    Some(Ok(Message::Close(_))) | None => break,
                    Some(Ok(_)) => {} // pings are answered by the library; pongs only show life
                    Some(Err(tokio_tungstenite::tungstenite::Error::Capacity(e))) => {
                        // Nothing of it was read or applied; the client is told why, then closed.
                        let error = seshat_server::RpcError::too_large(format!(
                            "{e}: the largest message the server reads is {} (`max_message_mib` under [serve])",
                            seshat::input::describe_limit(max_message)
                        ));
                        let _ = send(&mut sink, Message::text(error.line()), idle).await;
                        let _ = send(&mut sink, close(CloseCode::Size, "message too large"), idle).await;
                        break;
                    }
                    Some(Err(e)) => {
                        // A frame that breaks the protocol, or text that is not UTF-8, is closed
                        // with its code (1002, 1007) and why.
                        use tokio_tungstenite::tungstenite::Error as E;
                        let code = match &e {
                            E::Utf8(_) => Some((CloseCode::Invalid, "a text frame that is not UTF-8")),
                            E::Protocol(_) => Some((CloseCode::Protocol, "a frame that breaks the WebSocket protocol")),
                            _ => None,
                        };
                        if let Some((code, reason)) = code {
                            let _ = send(&mut sink, close(code, reason), idle).await;
                        }
                        tracing::debug!(user = %caller.user, "connection ended: {e}");
                        break;
                    }
                }
            }
            line = outbound.lines.recv() => match line {
                Some(line) => {
                    // What else is queued goes with it: the frames written together, flushed
                    // (and encrypted) once.
                    let mut lines = vec![line];
                    while lines.len() < BATCH
                        && let Ok(more) = outbound.lines.try_recv()
                    {
                        lines.push(more);
                    }
                    let lens: Vec<usize> = lines.iter().map(String::len).collect();
                    if !send_all(&mut sink, lines, idle).await {
                        break;
                    }
                    for len in lens {
                        outbound.sent(len);
                    }
                }
                None => {
                    let _ = send(&mut sink, close(CloseCode::Normal, ""), idle).await;
                    break;
                }
            },
            _ = ping.tick() => {
                if heard.elapsed() >= idle {
                    let _ = send(&mut sink, close(CloseCode::Away, "silent too long"), idle).await;
                    break;
                }
                if !send(&mut sink, Message::Ping(Default::default()), idle).await {
                    break;
                }
            }
            // The service is stopping: no more requests; what is queued is sent, then the close.
            Ok(()) = closing.changed(), if reading => {
                if *closing.borrow_and_update() {
                    reading = false;
                }
            }
            _ = closed.notified() => {
                let _ = send(&mut sink, close(CloseCode::Policy, "the client did not read its answers"), idle).await;
                break;
            }
        }
    }
    // The connection ends: the turns in flight are interrupted and store what arrived.
    drop(outbound);
    let connection = match serving {
        Some(serving) => serving.await.ok().map(|(conn, _)| conn),
        None => connection,
    };
    if let Some(connection) = connection {
        closed_by_us = Some(close_apart(connection));
    }
    if let Some(done) = closed_by_us {
        let _ = done.await;
    }
    tracing::info!(target: "seshat::audit", user = %caller.user, "disconnected");
}

/// Closes `connection` on a thread of its own (it waits for its turns to store what they have,
/// which may take a while: never on a thread other connections' requests need); the receiver
/// hears when it is done.
fn close_apart(connection: Box<seshat_server::Connection>) -> tokio::sync::oneshot::Receiver<()> {
    let (done, closed) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        connection.close();
        let _ = done.send(());
    });
    closed
}

/// Sends `lines` as text frames, flushed once; false when they could not be sent within
/// `within` (the client stopped reading).
async fn send_all<S>(
    sink: &mut futures_util::stream::SplitSink<tokio_tungstenite::WebSocketStream<S>, Message>,
    lines: Vec<String>,
    within: Duration,
) -> bool
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let all = async {
        for line in lines {
            sink.feed(Message::text(line)).await?;
        }
        sink.flush().await
    };
    matches!(tokio::time::timeout(within, all).await, Ok(Ok(())))
}

/// Sends `message`; false when it could not be sent within `within` (the client stopped reading).
async fn send<S>(
    sink: &mut futures_util::stream::SplitSink<tokio_tungstenite::WebSocketStream<S>, Message>,
    message: Message,
    within: Duration,
) -> bool
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    matches!(tokio::time::timeout(within, sink.send(message)).await, Ok(Ok(())))
}
