//! `--remote wss://…` (or `SESHAT_REMOTE`, with `SESHAT_TOKEN`): commands that work against a
//! team's `seshat serve --listen` instead of a local store. A blocking JSON-RPC client over one
//! WebSocket (tungstenite, rustls with the system's roots and an optional private CA), acting in
//! the project of the directory it runs in (its key and `AGENTS.md` are this machine's).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;

use anyhow::Context as _;
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::{self, Message, client::IntoClientRequest as _};

/// Where a remote service is and how to prove who is calling.
#[derive(Debug, Clone)]
pub struct Target {
    /// `wss://HOST:PORT` (or `ws://` on loopback).
    pub url: String,
    /// The bearer token (`SESHAT_TOKEN`).
    pub token: String,
    /// A PEM file of the CA that signed the service's certificate, when it is a private one.
    pub ca: Option<std::path::PathBuf>,
}

impl Target {
    /// The target `--remote` and `SESHAT_TOKEN` name, or `None` without `--remote`.
    /// A plain `ws://` address is taken for this machine only (the token would travel in the
    /// clear) unless `insecure`.
    pub fn from_cli(url: Option<&str>, ca: Option<&std::path::Path>, insecure: bool) -> anyhow::Result<Option<Target>> {
        let Some(url) = url.filter(|u| !u.is_empty()) else { return Ok(None) };
        anyhow::ensure!(
            url.starts_with("wss://") || url.starts_with("ws://"),
            "--remote `{url}` is not a WebSocket address: give wss://HOST:PORT"
        );
        if url.starts_with("ws://") && !insecure {
            let host = url
                .parse::<tungstenite::http::Uri>()
                .ok()
                .and_then(|u| u.host().map(|h| h.trim_matches(['[', ']']).to_string()))
                .unwrap_or_default();
            let loopback = host.eq_ignore_ascii_case("localhost")
                || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback());
            anyhow::ensure!(
                loopback,
                "--remote `{url}` would send your token unencrypted to {host}: use wss://, or --insecure-remote \
                 (SESHAT_REMOTE_INSECURE=1) through a tunnel that encrypts"
            );
        }
        let token = std::env::var("SESHAT_TOKEN").unwrap_or_default();
        anyhow::ensure!(
            !token.trim().is_empty(),
            "--remote needs your token in SESHAT_TOKEN (ask whoever runs the service for one: `seshat tokens create`)"
        );
        Ok(Some(Target { url: url.to_string(), token: token.trim().to_string(), ca: ca.map(Into::into) }))
    }
}

/// What a remote server refused: its stable code and message.
#[derive(Debug, thiserror::Error)]
#[error("{message} [{code}]")]
pub struct Refused {
    /// The stable code (`session_not_found`, `read_only_token`, …).
    pub code: String,
    /// What went wrong, in the server's words.
    pub message: String,
}

/// A stream a WebSocket runs on.
enum Stream {
    Plain(TcpStream),
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>),
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Stream::Plain(s) => s.read(buf),
            Stream::Tls(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Stream::Plain(s) => s.write(buf),
            Stream::Tls(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Stream::Plain(s) => s.flush(),
            Stream::Tls(s) => s.flush(),
        }
    }
}

/// A connection to a remote service, initialised for this machine's project. A connection the
/// service closed meanwhile (an idle one) is opened again for the next call.
pub struct Remote {
    target: Target,
    /// What `initialize` sends: the project key and the instruction files read here.
    setup: Value,
    ws: Option<tungstenite::WebSocket<Stream>>,
    next: u64,
    /// Notifications read while waiting for an answer, for [`Remote::notifications`].
    backlog: std::collections::VecDeque<Value>,
}

impl Remote {
    /// Connects to `target` and initialises in `project` with its `instructions` and the other
    /// `initialize` params in `extra` (`provider`, `model`, …).
    pub fn connect(
        target: &Target,
        project: &str,
        instructions: &[(String, String)],
        extra: serde_json::Map<String, Value>,
    ) -> anyhow::Result<Remote> {
        let files: Vec<Value> = instructions.iter().map(|(name, text)| json!({"name": name, "text": text})).collect();
        let mut setup = json!({
            "protocol_version": seshat_protocol::PROTOCOL_VERSION,
            "client_info": {"name": "seshat-cli", "version": env!("CARGO_PKG_VERSION")},
            "project": project,
            "instructions": files,
        });
        setup.as_object_mut().expect("an object").extend(extra);
        let mut remote = Remote { target: target.clone(), setup, ws: None, next: 0, backlog: Default::default() };
        remote.open()?;
        Ok(remote)
    }

    /// Opens the connection and initialises it.
    fn open(&mut self) -> anyhow::Result<()> {
        let url = &self.target.url;
        let mut request = url.as_str().into_client_request().with_context(|| format!("--remote `{url}`"))?;
        let bearer =
            format!("Bearer {}", self.target.token).parse().context("SESHAT_TOKEN holds characters a header cannot")?;
        request.headers_mut().insert("Authorization", bearer);
        let host = request.uri().host().unwrap_or_default().trim_matches(['[', ']']).to_string();
        let port = request.uri().port_u16().unwrap_or(if url.starts_with("wss://") { 443 } else { 80 });
        let tcp = TcpStream::connect((host.as_str(), port)).with_context(|| format!("cannot connect to {url}"))?;
        let _ = tcp.set_nodelay(true);
        let stream = if url.starts_with("wss://") {
            let name = rustls::pki_types::ServerName::try_from(host.clone())
                .with_context(|| format!("`{host}` is not a name a certificate can hold"))?;
            let tls = rustls::ClientConnection::new(self.tls_config()?, name).context("TLS")?;
            Stream::Tls(Box::new(rustls::StreamOwned::new(tls, tcp)))
        } else {
            Stream::Plain(tcp)
        };
        let ws = match tungstenite::client::client(request, stream) {
            Ok((ws, _)) => ws,
            Err(tungstenite::HandshakeError::Failure(tungstenite::Error::Http(response))) => {
                let body: Value =
                    serde_json::from_slice(response.body().as_deref().unwrap_or_default()).unwrap_or_default();
                let code = body["code"].as_str().unwrap_or("refused").to_string();
                let message = body["message"].as_str().unwrap_or("the upgrade was refused").to_string();
                anyhow::bail!("{url} refused the connection (HTTP {}): {message} [{code}]", response.status().as_u16());
            }
            Err(tungstenite::HandshakeError::Failure(e)) => return Err(self.connect_error(&e)),
            Err(e) => anyhow::bail!("cannot open a WebSocket to {url}: {e}"),
        };
        self.ws = Some(ws);
        let setup = self.setup.clone();
        let answer = self.exchange("initialize", &setup)?.map_err(anyhow::Error::from)?;
        let theirs = answer["protocol_version"].as_str().unwrap_or("(none)");
        seshat_protocol::check_version(theirs, seshat_protocol::Peer::Server)
            .map_err(|e| anyhow::anyhow!("{}: {e} [protocol_mismatch]", self.target.url))?;
        Ok(())
    }

    /// What went wrong opening the connection, in the words of what to do: a certificate this
    /// machine does not trust names `--remote-ca`, one for another name says so.
    fn connect_error(&self, e: &tungstenite::Error) -> anyhow::Error {
        let url = &self.target.url;
        // TLS runs under the WebSocket here (rustls' stream): its failure is an I/O error's.
        let tls = match e {
            tungstenite::Error::Io(io) => io.get_ref().and_then(|inner| inner.downcast_ref::<rustls::Error>()).cloned(),
            _ => None,
        };
        use rustls::{CertificateError as C, Error as R};
        match tls {
            Some(R::InvalidCertificate(C::UnknownIssuer | C::BadSignature)) => anyhow::anyhow!(
                "{url}'s certificate is signed by a CA this machine does not trust: give that CA's certificate with \
                 --remote-ca FILE (or SESHAT_REMOTE_CA){}",
                if self.target.ca.is_some() { " — the one given did not sign it" } else { "" }
            ),
            Some(R::InvalidCertificate(C::NotValidForName | C::NotValidForNameContext { .. })) => anyhow::anyhow!(
                "{url}'s certificate is not for that host name: connect by a name the certificate holds"
            ),
            Some(R::InvalidCertificate(C::Expired | C::ExpiredContext { .. })) => {
                anyhow::anyhow!("{url}'s certificate has expired: its operator must renew it")
            }
            Some(other) => anyhow::anyhow!("the TLS handshake with {url} failed: {other}"),
            None => anyhow::anyhow!("cannot open a WebSocket to {url}: {e}"),
        }
    }

    /// The system's roots, and the private CA when one is named.
    fn tls_config(&self) -> anyhow::Result<Arc<rustls::ClientConfig>> {
        use rustls::pki_types::CertificateDer;
        use rustls::pki_types::pem::PemObject as _;
        let mut roots = rustls::RootCertStore::empty();
        for cert in rustls_native_certs::load_native_certs().certs {
            let _ = roots.add(cert);
        }
        if let Some(ca) = &self.target.ca {
            for cert in CertificateDer::pem_file_iter(ca).with_context(|| format!("cannot read {}", ca.display()))? {
                roots.add(
                    cert.with_context(|| format!("{} holds a PEM certificate that cannot be read", ca.display()))?,
                )?;
            }
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_root_certificates(roots)
            .with_no_client_auth();
        Ok(Arc::new(config))
    }

    /// Opens the connection again (the last one ended): what was read of the old one and not
    /// handed on is dropped.
    pub fn reconnect(&mut self) -> anyhow::Result<()> {
        self.ws = None;
        self.backlog.clear();
        self.open()
    }

    /// The service's address.
    pub fn url(&self) -> &str {
        &self.target.url
    }

    /// Calls `method`: its result, or what the server refused. A connection the server had
    /// closed (it read nothing of this call) is opened again and the call sent once more.
    pub fn call(&mut self, method: &str, params: &Value) -> anyhow::Result<Result<Value, Refused>> {
        match self.exchange(method, params) {
            Err(e) if e.downcast_ref::<tungstenite::Error>().is_some_and(closed) => {
                self.ws = None;
                self.open()?;
                self.exchange(method, params)
            }
            other => other,
        }
    }

    /// Calls method `M` with its typed params: its typed result, or what the server refused (as
    /// the error).
    pub fn request<M: seshat_protocol::methods::Method>(&mut self, params: &M::Params) -> anyhow::Result<M::Result> {
        Ok(self.try_request::<M>(params)??)
    }

    /// Calls method `M` with its typed params: its typed result, or what the server refused.
    pub fn try_request<M: seshat_protocol::methods::Method>(
        &mut self,
        params: &M::Params,
    ) -> anyhow::Result<Result<M::Result, Refused>> {
        match self.call(M::NAME, &serde_json::to_value(params)?)? {
            Ok(answer) => Ok(Ok(serde_json::from_value(answer)
                .map_err(|e| anyhow::anyhow!("the service's answer to {} cannot be read: {e}", M::NAME))?)),
            Err(refused) => Ok(Err(refused)),
        }
    }

    /// Sends one request and reads until its answer (notifications meanwhile are not this
    /// client's business).
    fn exchange(&mut self, method: &str, params: &Value) -> anyhow::Result<Result<Value, Refused>> {
        self.next += 1;
        let id = self.next;
        let ws = self.ws.as_mut().context("not connected")?;
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        ws.send(Message::text(request.to_string()))?;
        loop {
            let Message::Text(text) = ws.read()? else { continue };
            let answer: Value = serde_json::from_str(&text).context("the server sent a message that is not JSON")?;
            if answer.get("method").is_some() && answer.get("id").is_none() {
                self.backlog.push_back(answer);
                continue;
            }
            if answer["id"] != id || answer.get("method").is_some() {
                continue;
            }
            return Ok(match answer.get("error") {
                Some(e) => Err(Refused {
                    code: e["data"]["code"].as_str().unwrap_or("error").to_string(),
                    message: e["message"].as_str().unwrap_or_default().to_string(),
                }),
                None => Ok(answer["result"].clone()),
            });
        }
    }
}

/// How often [`Remote::notifications`] looks up from the socket to ask whether to send something.
const POLL: std::time::Duration = std::time::Duration::from_millis(100);

impl Remote {
    /// Hands each notification (those read meanwhile first) to `f` until it returns false. While
    /// nothing arrives, `idle` is asked every [`POLL`] for a request to send meanwhile (a
    /// `turn/interrupt`); its answer is not waited for.
    pub fn notifications(
        &mut self,
        mut f: impl FnMut(&Value) -> bool,
        mut idle: impl FnMut() -> Option<(&'static str, Value)>,
    ) -> anyhow::Result<()> {
        while let Some(notice) = self.backlog.pop_front() {
            if !f(&notice) {
                return Ok(());
            }
        }
        self.poll_every(Some(POLL))?;
        let ended = loop {
            let ws = self.ws.as_mut().context("not connected")?;
            let text = match ws.read() {
                Ok(Message::Text(text)) => text,
                Ok(_) => continue,
                Err(tungstenite::Error::Io(e))
                    if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) =>
                {
                    if let Some((method, params)) = idle() {
                        self.next += 1;
                        let request = json!({"jsonrpc": "2.0", "id": self.next, "method": method, "params": params});
                        let ws = self.ws.as_mut().context("not connected")?;
                        ws.send(Message::text(request.to_string())).context("the connection to the service ended")?;
                    }
                    continue;
                }
                Err(e) => break Err(anyhow::Error::new(e).context("the connection to the service ended")),
            };
            let notice: Value = serde_json::from_str(&text).context("the server sent a message that is not JSON")?;
            if notice.get("method").is_some() && notice.get("id").is_none() && !f(&notice) {
                break Ok(());
            }
        };
        self.poll_every(None)?;
        ended
    }

    /// Makes reads give up after `every` (or wait as long as it takes).
    fn poll_every(&mut self, every: Option<std::time::Duration>) -> anyhow::Result<()> {
        let ws = self.ws.as_mut().context("not connected")?;
        let tcp = match ws.get_mut() {
            Stream::Plain(tcp) => tcp,
            Stream::Tls(tls) => &mut tls.sock,
        };
        tcp.set_read_timeout(every).context("cannot set the socket's read timeout")
    }
}

/// Whether `e` says the server had closed the connection.
fn closed(e: &tungstenite::Error) -> bool {
    use tungstenite::Error as E;
    match e {
        E::ConnectionClosed | E::AlreadyClosed => true,
        E::Io(io) => matches!(
            io.kind(),
            std::io::ErrorKind::BrokenPipe | std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::UnexpectedEof
        ),
        E::Protocol(tungstenite::error::ProtocolError::ResetWithoutClosingHandshake) => true,
        _ => false,
    }
}
