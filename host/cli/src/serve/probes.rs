//! Plain HTTP on the service's listener, beside the WebSocket upgrade: what a load balancer and a
//! monitoring system ask, answered without a token and with no user's data.
//!
//! * `GET /healthz` — the process is up and accepting: `200 ok`.
//! * `GET /readyz` — the store answers and its schema is one this build knows: `200 ready`, or
//!   `503` with the reason's code.
//! * `GET /metrics` — what the service counts, in Prometheus' text format
//!   ([`seshat_server::metrics`]).
//!
//! A request that asks for a WebSocket upgrade goes on to the upgrade with its bytes replayed
//! ([`Prefixed`]); any other path is `404` naming the ones there are.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _, ReadBuf};

use seshat_server::{Home, Service};

/// The longest request head read before deciding (a WebSocket upgrade's is a few hundred bytes).
const MAX_HEAD: usize = 16 << 10;

/// A stream whose first bytes were read already: they are read again first.
pub(super) struct Prefixed<S> {
    head: Vec<u8>,
    at: usize,
    inner: S,
}

impl<S: AsyncRead + Unpin> AsyncRead for Prefixed<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        if self.at < self.head.len() {
            let n = buf.remaining().min(self.head.len() - self.at);
            let at = self.at;
            buf.put_slice(&self.head[at..at + n]);
            self.at += n;
            if self.at == self.head.len() {
                self.head = Vec::new();
                self.at = 0;
            }
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Prefixed<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, data)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// Reads `stream`'s request head: a WebSocket upgrade is given back to go on with; a probe is
/// answered here (`None`), as is a head that never ends or does not parse.
pub(super) async fn route<S>(mut stream: S, service: &Service, home: &Arc<Home>, on: Listener) -> Option<Prefixed<S>>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut head = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut new_line = false;
    loop {
        // The head ends where HTTP says it does (CRLF or bare LF line ends alike): looked for
        // when a read brought a line's end, so a client sending a byte at a time costs no more.
        if new_line {
            let mut looked = [httparse::EMPTY_HEADER; MAX_HEADERS];
            match httparse::Request::new(&mut looked).parse(&head) {
                Ok(httparse::Status::Complete(_)) => break,
                Ok(httparse::Status::Partial) => {}
                Err(_) => {
                    let _ = answer(&mut stream, "400 Bad Request", TEXT, "not an HTTP request\n", &[]).await;
                    return None;
                }
            }
        }
        if head.len() >= MAX_HEAD {
            let _ =
                answer(&mut stream, "431 Request Header Fields Too Large", TEXT, "request head too long\n", &[]).await;
            return None;
        }
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => {
                new_line = chunk[..n].contains(&b'\n');
                head.extend_from_slice(&chunk[..n]);
            }
        }
    }
    let mut request = httparse::Request::new(&mut headers);
    let _ = request.parse(&head);
    let upgrade = request.headers.iter().any(|h| {
        h.name.eq_ignore_ascii_case("upgrade")
            && String::from_utf8_lossy(h.value).trim().eq_ignore_ascii_case("websocket")
    });
    if upgrade && on != Listener::Metrics {
        return Some(Prefixed { head, at: 0, inner: stream });
    }
    let method = request.method.unwrap_or("").to_string();
    let path = request.path.unwrap_or("").split('?').next().unwrap_or("").to_string();
    if method != "GET" && method != "HEAD" {
        let allow = [("allow", "GET, HEAD")];
        let _ = answer(&mut stream, "405 Method Not Allowed", TEXT, "only GET and HEAD\n", &allow).await;
        return None;
    }
    // A probe that reads the store runs on one of the threads clients' requests run on: one at a
    // time, so probes (asked without a token) never hold more than one of them; another asked
    // meanwhile is told to try again.
    let reading = match path.as_str() {
        "/readyz" | "/metrics" if path == "/readyz" || on != Listener::ClientsOnly => match PROBING.try_acquire() {
            Ok(permit) => Some(permit),
            Err(_) => {
                let again = [("retry-after", "1")];
                let _ =
                    answer(&mut stream, "503 Service Unavailable", TEXT, "busy: another probe is running\n", &again)
                        .await;
                return None;
            }
        },
        _ => None,
    };
    let metrics_here = on != Listener::ClientsOnly;
    let (status, kind, body) = match path.as_str() {
        "/healthz" => ("200 OK", TEXT, "ok\n".to_string()),
        "/readyz" => {
            let (service, home) = (service.clone(), home.clone());
            match tokio::task::spawn_blocking(move || service.ready(&home)).await {
                Ok(Ok(())) => ("200 OK", TEXT, "ready\n".to_string()),
                Ok(Err(why)) => ("503 Service Unavailable", TEXT, format!("not ready: {why}\n")),
                Err(_) => ("503 Service Unavailable", TEXT, "not ready\n".to_string()),
            }
        }
        "/metrics" if metrics_here => {
            let (service, home) = (service.clone(), home.clone());
            match tokio::task::spawn_blocking(move || service.render_metrics(&home)).await {
                Ok(text) => ("200 OK", "application/openmetrics-text; version=1.0.0; charset=utf-8", text),
                Err(_) => ("500 Internal Server Error", TEXT, "metrics failed\n".to_string()),
            }
        }
        _ => (
            "404 Not Found",
            "application/json",
            serde_json::json!({
                "code": "not_found",
                "message": "this service answers GET /healthz, /readyz and /metrics, and WebSocket upgrades \
                            (JSON-RPC, with an `Authorization: Bearer` token)"
            })
            .to_string(),
        ),
    };
    drop(reading);
    // A HEAD gets the head a GET gets, its length included, and no body.
    let sent = if method == "HEAD" { "" } else { body.as_str() };
    let _ = write(&mut stream, status, kind, body.len(), sent, &[]).await;
    None
}

/// Which listener a connection came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Listener {
    /// The clients' listener, answering `/metrics` too (no `metrics_listen` set).
    Clients,
    /// The clients' listener when `/metrics` has an address of its own.
    ClientsOnly,
    /// `[serve] metrics_listen`: the probes alone, no upgrade.
    Metrics,
}

/// Plain text's content type.
const TEXT: &str = "text/plain; charset=utf-8";

/// The most header lines a request head may have (as many as tungstenite reads in an upgrade).
const MAX_HEADERS: usize = 124;

/// At most one probe reads the store at a time.
static PROBING: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(1);

/// Writes one HTTP/1.1 answer and closes.
async fn answer<S: AsyncWrite + Unpin>(
    stream: &mut S,
    status: &str,
    kind: &str,
    body: &str,
    extra: &[(&str, &str)],
) -> io::Result<()> {
    write(stream, status, kind, body.len(), body, extra).await
}

/// Writes a head saying `length` bytes follow, then `body`, and closes.
async fn write<S: AsyncWrite + Unpin>(
    stream: &mut S,
    status: &str,
    kind: &str,
    length: usize,
    body: &str,
    extra: &[(&str, &str)],
) -> io::Result<()> {
    let mut head = format!(
        "HTTP/1.1 {status}\r\ncontent-type: {kind}\r\ncontent-length: {length}\r\ncache-control: no-store\r\nconnection: close\r\n"
    );
    for (name, value) in extra {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body.as_bytes()).await?;
    stream.shutdown().await
}
