//! Sending one provider request: timeouts (connect, first byte, idle), retries with backoff
//! before the first streamed byte only, a response size cap, no redirects across hosts, and
//! cancellation (Ctrl-C) at any point.
//!
//! Every request runs on the library's one I/O runtime ([`io`]): a runtime of its own, driven by a
//! thread of its own for the life of the process. A caller — a plain thread, or a worker of the
//! caller's own async runtime — hands the request over and waits on a channel for the answer's
//! pieces, so the library never blocks on a runtime from inside one, and never drops one there.

use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

use super::credentials::Credentials;
use super::destination::Destination;

/// Timeouts, retries and caps of a provider's requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    /// Waiting for a connection.
    pub connect: Duration,
    /// Waiting for the answer's first byte (headers and first chunk).
    pub first_byte: Duration,
    /// Silence allowed between two chunks of a stream.
    pub idle: Duration,
    /// Retries on 429, 5xx and connection errors (before the first byte of the answer).
    pub max_retries: u32,
    /// The first backoff; doubled each retry unless the server says `retry-after`.
    pub backoff: Duration,
    /// Largest `retry-after` honoured; a longer one ends the attempts.
    pub max_retry_after: Duration,
    /// Largest response in bytes.
    pub max_response: u64,
    /// Send through the proxy `HTTP_PROXY`/`HTTPS_PROXY`/`ALL_PROXY` name (honouring `NO_PROXY`);
    /// off, connect directly whatever the environment says.
    pub env_proxy: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            connect: Duration::from_secs(10),
            first_byte: Duration::from_secs(300),
            idle: Duration::from_secs(120),
            max_retries: 3,
            backoff: Duration::from_millis(500),
            max_retry_after: Duration::from_secs(60),
            max_response: 32 << 20,
            env_proxy: true,
        }
    }
}

pub use crate::cancel::Cancel;

/// How a request ended without a usable answer. Texts never contain the credential.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Failure {
    /// The server answered with an error status (after retries); the body for the plugin to map.
    Status {
        /// HTTP status.
        status: u16,
        /// The body (capped).
        body: Vec<u8>,
    },
    /// A timeout.
    Timeout {
        /// `connect`, `first_byte` or `idle`.
        phase: &'static str,
        /// The limit.
        after: Duration,
    },
    /// The connection failed or broke.
    Connection(String),
    /// The server redirected to another host, which is not followed.
    Redirect(String),
    /// The server kept redirecting within its own origin past `MAX_REDIRECTS` (a loop); where
    /// the last redirect pointed.
    RedirectLoop(String),
    /// The response passed the size cap.
    TooLarge(u64),
    /// Cancelled by the user.
    Cancelled,
}

impl Failure {
    /// A stable code.
    pub fn code(&self) -> &'static str {
        match self {
            Failure::Status { .. } => "http_error",
            Failure::Timeout { .. } => "timeout",
            Failure::Connection(_) => "connection_failed",
            Failure::Redirect(_) => "redirect_refused",
            Failure::RedirectLoop(_) => "redirect_loop",
            Failure::TooLarge(_) => "response_too_large",
            Failure::Cancelled => "interrupted",
        }
    }

    /// What happened, for people.
    pub fn describe(&self) -> String {
        match self {
            Failure::Status { status, .. } => format!("HTTP {status}"),
            Failure::Timeout { phase, after } => {
                let what = match *phase {
                    "connect" => "connecting",
                    "first_byte" => "waiting for the answer to start",
                    _ => "waiting for the stream to go on",
                };
                format!("timed out after {}s {what} (raise {phase}_timeout_secs in config.toml)", after.as_secs())
            }
            Failure::Connection(m) => format!("connection failed: {m}"),
            Failure::Redirect(to) => format!("the server redirected to {to}, another host; not followed"),
            Failure::RedirectLoop(to) => format!(
                "the server redirected {MAX_REDIRECTS} times within its own host (a redirect loop; the last to {to}): \
                 check the provider's base_url"
            ),
            Failure::TooLarge(cap) => format!("the answer passed the {} MiB cap (max_response_mib)", cap >> 20),
            Failure::Cancelled => "interrupted".into(),
        }
    }
}

/// What a sent request produced.
#[derive(Debug)]
pub struct Outcome {
    /// How many attempts were made.
    pub attempts: u32,
    /// Whether any body bytes reached the sink.
    pub received: bool,
    /// `None` when the body ended normally.
    pub failure: Option<Failure>,
}

/// One request to send: built by the plugin, checked, with the host's credential.
#[derive(Debug, Clone, Copy)]
pub struct Outgoing<'a> {
    /// The checked destination.
    pub to: &'a Destination,
    /// The method.
    pub method: &'a str,
    /// The plugin's headers (never credentials).
    pub headers: &'a [(String, String)],
    /// The body.
    pub body: &'a [u8],
    /// The credential, added for this destination only.
    pub credentials: &'a Credentials,
}

/// Redirects followed within the request's own origin before giving up on a loop.
const MAX_REDIRECTS: usize = 5;

/// One piece of an answer, from the I/O runtime to the waiting caller.
enum Piece {
    /// Body bytes, in order.
    Chunk(bytes::Bytes),
    /// The end, and how it went.
    Done(Outcome),
}

/// A request as the I/O runtime's task owns it.
struct Owned {
    url: reqwest::Url,
    method: reqwest::Method,
    headers: HeaderMap,
    body: bytes::Bytes,
    credentials: Credentials,
}

/// An HTTP client whose requests run on the library's I/O runtime, used synchronously by the
/// chat loop (from any thread, inside an async runtime or not).
#[derive(Debug, Clone)]
pub struct Transport {
    /// The library's I/O runtime, where the requests run.
    io: tokio::runtime::Handle,
    client: reqwest::Client,
    settings: Settings,
}

impl Transport {
    /// A transport with `settings`.
    pub fn new(settings: Settings) -> Result<Self, String> {
        // Whoever installs first wins; ring is the one built in.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let io = crate::io::handle()?;
        let policy = reqwest::redirect::Policy::custom(|attempt| {
            let first = attempt.previous().first().map(super::destination::origin);
            if attempt.previous().len() > MAX_REDIRECTS
                || first.as_deref() != Some(&super::destination::origin(attempt.url()))
            {
                attempt.stop()
            } else {
                attempt.follow()
            }
        });
        let mut builder = reqwest::Client::builder()
            .connect_timeout(settings.connect)
            .redirect(policy)
            .user_agent(concat!("seshat/", env!("CARGO_PKG_VERSION")));
        if !settings.env_proxy {
            builder = builder.no_proxy();
        }
        let client = builder.build().map_err(|e| format!("cannot build the HTTP client: {e}"))?;
        Ok(Transport { io, client, settings })
    }

    /// The settings in force.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// Sends and reads the whole answer: its status and body (an error status's body too), or
    /// how it failed; and the attempts made.
    pub(crate) fn fetch(&self, out: Outgoing<'_>, cancel: &Cancel) -> (u32, Result<(u16, Vec<u8>), Failure>) {
        let mut body = Vec::new();
        let outcome = self.send(out, cancel, &mut |b| body.extend_from_slice(b));
        let answer = match outcome.failure {
            None => Ok((200, body)),
            Some(Failure::Status { status, body }) => Ok((status, body)),
            Some(f) => Err(f),
        };
        (outcome.attempts, answer)
    }

    /// Sends `body` to `to` and feeds the answer's body to `sink` as it arrives (on a success
    /// status). Retries happen only while nothing has reached the sink.
    pub fn send(&self, out: Outgoing<'_>, cancel: &Cancel, sink: &mut dyn FnMut(&[u8])) -> Outcome {
        let Outgoing { to, method, headers, body, credentials } = out;
        let mut map = HeaderMap::new();
        for (k, v) in headers {
            if let (Ok(k), Ok(v)) = (HeaderName::from_bytes(k.as_bytes()), HeaderValue::from_str(v)) {
                map.insert(k, v);
            }
        }
        if let Some((k, v)) = credentials.header() {
            map.insert(k, v);
        }
        let request = Owned {
            url: to.url.clone(),
            method: reqwest::Method::from_bytes(method.as_bytes()).unwrap_or(reqwest::Method::POST),
            headers: map,
            body: bytes::Bytes::copy_from_slice(body),
            credentials: credentials.clone(),
        };
        let (tx, rx) = std::sync::mpsc::channel();
        let (client, settings, cancel_task) = (self.client.clone(), self.settings, cancel.clone());
        self.io.spawn(async move {
            let chunks = tx.clone();
            let mut forward = move |b: bytes::Bytes| {
                let _ = chunks.send(Piece::Chunk(b));
            };
            let outcome = send_async(&client, &settings, request, &cancel_task, &mut forward).await;
            let _ = tx.send(Piece::Done(outcome));
        });
        loop {
            match rx.recv() {
                Ok(Piece::Chunk(b)) => sink(&b),
                Ok(Piece::Done(outcome)) => return outcome,
                Err(_) => {
                    let failure = Failure::Connection("the request's task ended without an answer".into());
                    return Outcome { attempts: 0, received: false, failure: Some(failure) };
                }
            }
        }
    }
}

/// Sends `request` (retrying as `s` says) and feeds a successful answer's body to `sink`.
async fn send_async(
    client: &reqwest::Client,
    s: &Settings,
    request: Owned,
    cancel: &Cancel,
    sink: &mut (dyn FnMut(bytes::Bytes) + Send),
) -> Outcome {
    let Owned { url, method, headers: map, body, credentials } = request;
    let mut attempts = 0;
    loop {
        attempts += 1;
        let fail = |failure| Outcome { attempts, received: false, failure: Some(failure) };
        let request = client.request(method.clone(), url.clone()).headers(map.clone()).body(body.clone());
        tracing::debug!(url = %url, attempt = attempts, "sending a provider request");
        let sent = tokio::select! {
            r = tokio::time::timeout(s.first_byte, request.send()) => r,
            () = cancel.cancelled() => return fail(Failure::Cancelled),
        };
        let retry_in = match sent {
            Err(_) => return fail(Failure::Timeout { phase: "first_byte", after: s.first_byte }),
            Ok(Err(e)) => {
                let message = credentials.redact(&connection_message(&e));
                if e.is_timeout() && e.is_connect() {
                    return fail(Failure::Timeout { phase: "connect", after: s.connect });
                }
                if attempts > s.max_retries {
                    return fail(Failure::Connection(message));
                }
                tracing::debug!(error = %message, "retrying after a connection error");
                backoff(s.backoff, attempts)
            }
            Ok(Ok(response)) => {
                let status = response.status();
                tracing::trace!(status = status.as_u16(), "the answer's headers arrived");
                if status.is_redirection() {
                    let location = response.headers().get("location").and_then(|l| l.to_str().ok()).unwrap_or("?");
                    let next = response.url().join(location).ok();
                    let same = next.as_ref().map(super::destination::origin) == Some(super::destination::origin(&url));
                    let shown = credentials.redact(next.as_ref().map_or(location, |u| u.as_str()));
                    return fail(if same { Failure::RedirectLoop(shown) } else { Failure::Redirect(shown) });
                }
                let retryable = status.as_u16() == 429 || status.is_server_error();
                if !(status.is_success() || retryable && attempts <= s.max_retries) {
                    let body = read_capped(response, s, cancel).await;
                    return match body {
                        Ok(body) => fail(Failure::Status { status: status.as_u16(), body }),
                        Err(f) => fail(f),
                    };
                }
                if status.is_success() {
                    return stream_body(response, s, cancel, sink, attempts).await;
                }
                let after = retry_after(response.headers());
                if let Some(after) = after.filter(|a| *a > s.max_retry_after) {
                    let body = read_capped(response, s, cancel).await.unwrap_or_default();
                    tracing::debug!(?after, "retry-after is longer than the cap; giving up");
                    return fail(Failure::Status { status: status.as_u16(), body });
                }
                tracing::debug!(status = status.as_u16(), ?after, "retrying");
                after.unwrap_or_else(|| backoff(s.backoff, attempts))
            }
        };
        tokio::select! {
            () = tokio::time::sleep(retry_in) => {}
            () = cancel.cancelled() => return fail(Failure::Cancelled),
        }
    }
}

/// Feeds a successful answer's body to `sink`, within the size cap and the idle timeout.
async fn stream_body(
    mut response: reqwest::Response,
    s: &Settings,
    cancel: &Cancel,
    sink: &mut (dyn FnMut(bytes::Bytes) + Send),
    attempts: u32,
) -> Outcome {
    let mut total = 0u64;
    let mut received = false;
    loop {
        let wait = if received { s.idle } else { s.first_byte };
        let phase = if received { "idle" } else { "first_byte" };
        let chunk = tokio::select! {
            c = tokio::time::timeout(wait, response.chunk()) => c,
            () = cancel.cancelled() => return Outcome { attempts, received, failure: Some(Failure::Cancelled) },
        };
        let failure = match chunk {
            Err(_) => Failure::Timeout { phase, after: wait },
            Ok(Err(e)) => Failure::Connection(connection_message(&e)),
            Ok(Ok(None)) => return Outcome { attempts, received, failure: None },
            Ok(Ok(Some(bytes))) => {
                total += bytes.len() as u64;
                if total > s.max_response {
                    Failure::TooLarge(s.max_response)
                } else {
                    received = true;
                    sink(bytes);
                    continue;
                }
            }
        };
        return Outcome { attempts, received, failure: Some(failure) };
    }
}

/// The error and its causes, without the URL's query (never holds credentials: they travel in
/// headers, which reqwest does not print).
fn connection_message(e: &reqwest::Error) -> String {
    let mut message = e.to_string();
    if let Some(url) = e.url() {
        message = message.replace(&format!(" for url ({url})"), "");
    }
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        message.push_str(": ");
        message.push_str(&s.to_string());
        source = s.source();
    }
    message
}

async fn read_capped(mut response: reqwest::Response, s: &Settings, cancel: &Cancel) -> Result<Vec<u8>, Failure> {
    let mut body = Vec::new();
    loop {
        let chunk = tokio::select! {
            c = tokio::time::timeout(s.idle, response.chunk()) => c,
            () = cancel.cancelled() => return Err(Failure::Cancelled),
        };
        match chunk {
            Ok(Ok(Some(bytes))) => {
                let room = (64usize << 10).saturating_sub(body.len());
                body.extend_from_slice(&bytes[..bytes.len().min(room)]);
            }
            Ok(Ok(None)) | Ok(Err(_)) | Err(_) => return Ok(body),
        }
    }
}

fn backoff(base: Duration, attempt: u32) -> Duration {
    base.saturating_mul(1 << attempt.saturating_sub(1).min(6))
}

/// `retry-after` as seconds or an HTTP date.
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let v = headers.get("retry-after")?.to_str().ok()?.trim();
    if let Ok(secs) = v.parse::<f64>() {
        return (secs >= 0.0 && secs.is_finite()).then(|| Duration::from_secs_f64(secs));
    }
    let when = jiff::fmt::rfc2822::parse(v).ok()?.timestamp();
    let now = jiff::Timestamp::now();
    Some(Duration::try_from(when - now).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_takes_seconds_and_dates() {
        let mut h = HeaderMap::new();
        h.insert("retry-after", HeaderValue::from_static("2"));
        assert_eq!(retry_after(&h), Some(Duration::from_secs(2)));
        h.insert("retry-after", HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"));
        assert_eq!(retry_after(&h), Some(Duration::ZERO), "a date in the past means now");
        h.insert("retry-after", HeaderValue::from_static("soon"));
        assert_eq!(retry_after(&h), None);
        assert_eq!(backoff(Duration::from_millis(100), 3), Duration::from_millis(400));
    }
}
