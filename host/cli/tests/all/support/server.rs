//! A loopback HTTP/1.1 server for provider tests: it answers from a script (statuses, SSE streams
//! sent in chunks, connections dropped mid-stream, stalls) and records every request it receives.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A gate a [`Reply::Gated`] stream waits at until the test opens it.
#[derive(Debug, Clone, Default)]
pub struct Gate(Arc<(Mutex<bool>, std::sync::Condvar)>);

impl Gate {
    /// Lets every stream waiting at the gate go on.
    pub fn open(&self) {
        *self.0.0.lock().unwrap() = true;
        self.0.1.notify_all();
    }

    /// Waits until the gate is open (a minute at most).
    fn pass(&self) {
        let open = self.0.0.lock().unwrap();
        let _ = self.0.1.wait_timeout_while(open, Duration::from_secs(60), |open| !*open).unwrap();
    }
}

/// One scripted answer.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A whole response with `content-length`.
    Full { status: u16, headers: Vec<(String, String)>, body: Vec<u8> },
    /// A chunked SSE stream: each piece is written (and flushed) separately.
    Stream { pieces: Vec<String> },
    /// A stream that stops after `pieces` and closes the connection without ending the body.
    Drop { pieces: Vec<String> },
    /// A stream that goes silent after `pieces` for `pause`, then closes.
    Stall { pieces: Vec<String>, pause: Duration },
    /// A stream that sends `pieces`, then waits for the client to close the connection (a minute
    /// at most) before it would send `rest`; `closed` records how many pieces had gone when the
    /// client closed (`None`: it never did, and `rest` was sent).
    UntilClosed { pieces: Vec<String>, rest: Vec<String>, closed: Arc<Mutex<Option<usize>>> },
    /// A stream that sends `pieces`, then waits until the test opens `gate` (a minute at most)
    /// before it sends `rest` and ends.
    Gated { pieces: Vec<String>, rest: Vec<String>, gate: Gate },
    /// No answer at all for `pause` (not even headers), then the connection closes.
    Silent { pause: Duration },
    /// The connection closes at once, without an answer.
    Hangup,
    /// The request was not what the test expected (why): recorded on the server, answered with a
    /// 400, and failing the test when its server handle is dropped.
    Unexpected(String),
}

/// `Ok` when `r` is `method path`, else why not (for a handler to answer [`Reply::Unexpected`]).
pub fn expect_route(r: &Recorded, method: &str, path: &str) -> Result<(), String> {
    if (r.method.as_str(), r.path.as_str()) == (method, path) {
        Ok(())
    } else {
        Err(format!("expected {method} {path}, got {} {}", r.method, r.path))
    }
}

/// `Ok` when header `name` of `r` is `value` (`None`: absent), else why not.
pub fn expect_header(r: &Recorded, name: &str, value: Option<&str>) -> Result<(), String> {
    match r.header(name) {
        got if got == value => Ok(()),
        got => Err(format!("header {name}: expected {value:?}, got {got:?}")),
    }
}

impl Reply {
    pub fn json(status: u16, body: &str) -> Self {
        Reply::Full {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.as_bytes().to_vec(),
        }
    }

    pub fn with_header(mut self, name: &str, value: &str) -> Self {
        if let Reply::Full { headers, .. } = &mut self {
            headers.push((name.into(), value.into()));
        }
        self
    }
}

/// A request as received.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("request body is not JSON ({e}): {}", self.body))
    }
}

/// Answers a request (a server that routes by path instead of following a script).
pub type Handler = Arc<dyn Fn(&Recorded) -> Reply + Send + Sync>;

/// The server. It runs until the test process ends.
///
/// Every request it receives is checked where the test cannot forget to: one that is wrong for the
/// API its path names (scripted servers), a body declared JSON that does not parse, or a handler
/// that panics is recorded as unexpected, and the test's own handle on the server fails the test
/// when it is dropped with any recorded (unless the test took them with [`Server::unexpected`]).
pub struct Server {
    pub port: u16,
    script: Arc<Mutex<VecDeque<Reply>>>,
    requests: Arc<Mutex<Vec<Recorded>>>,
    handler: Option<Handler>,
    /// What was wrong with the requests received (collected here, asserted in the test).
    problems: Arc<Mutex<Vec<String>>>,
    /// Requests to a token-counting endpoint a scripted server does not have (kept apart from
    /// `requests`: a scripted server emulates a server without a counter).
    counts: Arc<Mutex<Vec<Recorded>>>,
    /// Whether this is the test's handle (the one that checks on drop).
    owner: bool,
}

impl Clone for Server {
    fn clone(&self) -> Self {
        Server {
            port: self.port,
            script: self.script.clone(),
            requests: self.requests.clone(),
            handler: self.handler.clone(),
            problems: self.problems.clone(),
            counts: self.counts.clone(),
            owner: false,
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if !self.owner || std::thread::panicking() {
            return;
        }
        let problems = self.problems.lock().map(|p| p.clone()).unwrap_or_default();
        assert!(
            problems.is_empty(),
            "the loopback server on port {} received unexpected requests:\n{}",
            self.port,
            problems.join("\n")
        );
    }
}

impl Server {
    pub fn start(script: Vec<Reply>) -> Self {
        Self::listen(script, None)
    }

    /// A server answering each request with `handler` (which sees every request as received).
    pub fn route(handler: impl Fn(&Recorded) -> Reply + Send + Sync + 'static) -> Self {
        Self::listen(Vec::new(), Some(Arc::new(handler)))
    }

    fn listen(script: Vec<Reply>, handler: Option<Handler>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        let port = listener.local_addr().unwrap().port();
        let server = Server {
            port,
            script: Arc::new(Mutex::new(script.into())),
            requests: Arc::new(Mutex::new(Vec::new())),
            handler,
            problems: Arc::new(Mutex::new(Vec::new())),
            counts: Arc::new(Mutex::new(Vec::new())),
            owner: true,
        };
        let s = server.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let s = s.clone();
                std::thread::spawn(move || s.serve(stream));
            }
        });
        server
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }

    pub fn count(&self) -> usize {
        self.requests.lock().unwrap().len()
    }

    /// The token-count requests a scripted server answered 404 (it has no counter).
    pub fn count_requests(&self) -> Vec<Recorded> {
        self.counts.lock().unwrap().clone()
    }

    /// Takes what was wrong with the requests so far (a test that sends bad requests on purpose
    /// asserts on them itself; the check on drop then passes).
    pub fn unexpected(&self) -> Vec<String> {
        std::mem::take(&mut *self.problems.lock().unwrap())
    }

    fn problem(&self, r: &Recorded, why: &str) {
        self.problems.lock().unwrap().push(format!("{} {}: {why}", r.method, r.path));
    }

    fn serve(&self, stream: TcpStream) {
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let mut parts = line.split_whitespace();
        let method = parts.next().unwrap_or_default().to_string();
        let path = parts.next().unwrap_or_default().to_string();
        let mut headers = Vec::new();
        loop {
            let mut h = String::new();
            if reader.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
                break;
            }
            if let Some((n, v)) = h.trim_end().split_once(':') {
                headers.push((n.trim().to_ascii_lowercase(), v.trim().to_string()));
            }
        }
        let len = headers.iter().find(|(n, _)| n == "content-length").and_then(|(_, v)| v.parse().ok()).unwrap_or(0);
        let mut body = vec![0; len];
        reader.read_exact(&mut body).unwrap();
        let recorded = Recorded { method, path, headers, body: String::from_utf8_lossy(&body).into_owned() };
        if self.handler.is_none() && COUNT_PATHS.iter().any(|p| recorded.path.ends_with(p)) {
            // A scripted server has no token counter: the answer a server without one gives.
            self.counts.lock().unwrap().push(recorded);
            let mut out = stream;
            let _ = respond(&mut out, Reply::json(404, r#"{"error":{"message":"not found"}}"#));
            return;
        }
        self.requests.lock().unwrap().push(recorded.clone());
        let declared_json = recorded.header("content-type").is_some_and(|t| t.starts_with("application/json"));
        if declared_json && serde_json::from_str::<serde_json::Value>(&recorded.body).is_err() {
            self.problem(&recorded, "the body is declared JSON but does not parse");
        }
        let reply = match (&self.handler, wrong_for_its_api(&recorded)) {
            (Some(handler), _) => match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| handler(&recorded))) {
                Ok(Reply::Unexpected(why)) => {
                    self.problem(&recorded, &why);
                    Reply::json(400, &serde_json::json!({"error": {"message": why}}).to_string())
                }
                Ok(reply) => reply,
                Err(e) => {
                    let why =
                        e.downcast_ref::<String>().cloned().or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()));
                    self.problem(&recorded, &format!("the handler panicked: {}", why.unwrap_or_default()));
                    Reply::json(500, "{\"error\":{\"message\":\"the test's handler panicked\"}}")
                }
            },
            // A scripted server answers only what its API accepts; anything else gets the error
            // a real server would give, is recorded as unexpected, and does not use up the script.
            (None, Some(why)) => {
                self.problem(&recorded, &why);
                Reply::json(400, &serde_json::json!({"error": {"message": why}}).to_string())
            }
            (None, None) => self
                .script
                .lock()
                .unwrap()
                .pop_front()
                .unwrap_or_else(|| Reply::json(500, "{\"error\":\"script ended\"}")),
        };
        let mut out = stream;
        let _ = respond(&mut out, reply);
    }
}

/// The token-counting endpoints Seshat's providers know (llama.cpp and vLLM, llama-cpp-python,
/// Anthropic).
const COUNT_PATHS: [&str; 3] = ["/tokenize", "/extras/tokenize/count", "/v1/messages/count_tokens"];

/// Why a request is wrong for the API its path names (Anthropic's Messages or OpenAI's Chat
/// Completions): the method, the JSON content type, Anthropic's version and key headers, a JSON
/// body. Any other path is not an endpoint of either. (A proxied request names the whole URL.)
fn wrong_for_its_api(r: &Recorded) -> Option<String> {
    let path = match r.path.split_once("://") {
        Some((_, rest)) => rest.find('/').map_or("/", |i| &rest[i..]),
        None => r.path.as_str(),
    };
    let anthropic = path == "/v1/messages";
    if !anthropic && !path.ends_with("/chat/completions") {
        return Some(format!("no endpoint {path}"));
    }
    if r.method != "POST" {
        return Some(format!("{} is not allowed on {path}", r.method));
    }
    if r.header("content-type") != Some("application/json") {
        return Some("the body must be sent as application/json".into());
    }
    if anthropic && (r.header("anthropic-version").is_none() || r.header("x-api-key").is_none_or(str::is_empty)) {
        return Some("Anthropic requires the anthropic-version and x-api-key headers".into());
    }
    if serde_json::from_str::<serde_json::Value>(&r.body).is_err() {
        return Some("the body is not JSON".into());
    }
    None
}

fn respond(out: &mut TcpStream, reply: Reply) -> std::io::Result<()> {
    let reason = |s: u16| match s {
        200 => "OK",
        307 => "Temporary Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        _ => "Status",
    };
    let stream_head =
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n";
    let chunk = |out: &mut TcpStream, piece: &str| -> std::io::Result<()> {
        write!(out, "{:x}\r\n{piece}\r\n", piece.len())?;
        out.flush()?;
        std::thread::sleep(Duration::from_millis(5));
        Ok(())
    };
    match reply {
        Reply::Full { status, headers, body } => {
            write!(
                out,
                "HTTP/1.1 {status} {}\r\ncontent-length: {}\r\nconnection: close\r\n",
                reason(status),
                body.len()
            )?;
            for (n, v) in headers {
                write!(out, "{n}: {v}\r\n")?;
            }
            out.write_all(b"\r\n")?;
            out.write_all(&body)?;
            out.flush()
        }
        Reply::Stream { pieces } => {
            out.write_all(stream_head.as_bytes())?;
            for p in &pieces {
                chunk(out, p)?;
            }
            out.write_all(b"0\r\n\r\n")?;
            out.flush()
        }
        Reply::Drop { pieces } => {
            out.write_all(stream_head.as_bytes())?;
            for p in &pieces {
                chunk(out, p)?;
            }
            out.shutdown(std::net::Shutdown::Both)
        }
        Reply::Silent { pause } => {
            std::thread::sleep(pause);
            out.shutdown(std::net::Shutdown::Both)
        }
        Reply::UntilClosed { pieces, rest, closed } => {
            out.write_all(stream_head.as_bytes())?;
            for p in &pieces {
                chunk(out, p)?;
            }
            // The client closing its end is an end of file here (its request was read whole).
            out.set_read_timeout(Some(Duration::from_secs(60)))?;
            let mut byte = [0u8; 1];
            if matches!(out.read(&mut byte), Ok(0)) {
                *closed.lock().unwrap() = Some(pieces.len());
                return Ok(());
            }
            for p in &rest {
                chunk(out, p)?;
            }
            out.write_all(b"0\r\n\r\n")?;
            out.flush()
        }
        Reply::Gated { pieces, rest, gate } => {
            out.write_all(stream_head.as_bytes())?;
            for p in &pieces {
                chunk(out, p)?;
            }
            gate.pass();
            for p in &rest {
                chunk(out, p)?;
            }
            out.write_all(b"0\r\n\r\n")?;
            out.flush()
        }
        Reply::Hangup | Reply::Unexpected(_) => out.shutdown(std::net::Shutdown::Both),
        Reply::Stall { pieces, pause } => {
            out.write_all(stream_head.as_bytes())?;
            for p in &pieces {
                chunk(out, p)?;
            }
            std::thread::sleep(pause);
            out.shutdown(std::net::Shutdown::Both)
        }
    }
}

/// Anthropic's streaming wire format.
pub mod anthropic {
    use serde_json::json;

    pub fn event(name: &str, data: &serde_json::Value) -> String {
        format!("event: {name}\ndata: {data}\n\n")
    }

    pub fn start(input_tokens: u64) -> String {
        event(
            "message_start",
            &json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
                "content": [], "model": "claude-sonnet-4-5", "stop_reason": null,
                "usage": {"input_tokens": input_tokens, "cache_read_input_tokens": 7, "cache_creation_input_tokens": 3, "output_tokens": 1}}}),
        )
    }

    pub fn text_block(index: u64, pieces: &[&str]) -> Vec<String> {
        let mut out = vec![event(
            "content_block_start",
            &json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}),
        )];
        for p in pieces {
            out.push(event(
                "content_block_delta",
                &json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": p}}),
            ));
        }
        out.push(event("content_block_stop", &json!({"type": "content_block_stop", "index": index})));
        out
    }

    pub fn tool_block(index: u64, id: &str, name: &str, args: &str) -> Vec<String> {
        let (a, b) = args.split_at(args.len() / 2);
        vec![
            event(
                "content_block_start",
                &json!({"type": "content_block_start", "index": index,
                    "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}),
            ),
            event(
                "content_block_delta",
                &json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": a}}),
            ),
            event(
                "content_block_delta",
                &json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": b}}),
            ),
            event("content_block_stop", &json!({"type": "content_block_stop", "index": index})),
        ]
    }

    pub fn stop(reason: &str, output_tokens: u64) -> Vec<String> {
        vec![
            event(
                "message_delta",
                &json!({"type": "message_delta", "delta": {"stop_reason": reason}, "usage": {"output_tokens": output_tokens}}),
            ),
            event("message_stop", &json!({"type": "message_stop"})),
        ]
    }

    /// A whole streamed text answer.
    pub fn text_answer(pieces: &[&str]) -> Vec<String> {
        let mut v = vec![start(100)];
        v.extend(text_block(0, pieces));
        v.extend(stop("end_turn", 9));
        v
    }

    /// A streamed answer calling one tool after a line of text.
    pub fn tool_answer(id: &str, name: &str, args: &str) -> Vec<String> {
        let mut v = vec![start(120)];
        v.extend(text_block(0, &["Let me note that."]));
        v.extend(tool_block(1, id, name, args));
        v.extend(stop("tool_use", 30));
        v
    }
}

/// OpenAI's streaming wire format.
pub mod openai {
    use serde_json::json;

    pub fn chunk(v: &serde_json::Value) -> String {
        format!("data: {v}\n\n")
    }

    pub fn text_answer(pieces: &[&str], usage: bool) -> Vec<String> {
        let mut v: Vec<String> = pieces
            .iter()
            .map(|p| chunk(&json!({"id": "c1", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": p}, "finish_reason": null}]})))
            .collect();
        v.push(chunk(&json!({"id": "c1", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})));
        if usage {
            v.push(chunk(&json!({"id": "c1", "choices": [], "usage": {"prompt_tokens": 150, "completion_tokens": 12,
                "prompt_tokens_details": {"cached_tokens": 100}}})));
        }
        v.push("data: [DONE]\n\n".into());
        v
    }

    pub fn tool_answer(id: &str, name: &str, args: &str) -> Vec<String> {
        let (a, b) = args.split_at(args.len() / 2);
        vec![
            chunk(&json!({"id": "c2", "choices": [{"index": 0, "delta": {"role": "assistant", "content": null,
                "tool_calls": [{"index": 0, "id": id, "type": "function", "function": {"name": name, "arguments": ""}}]}}]})),
            chunk(
                &json!({"id": "c2", "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": a}}]}}]}),
            ),
            chunk(
                &json!({"id": "c2", "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": b}}]}}]}),
            ),
            chunk(&json!({"id": "c2", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})),
            "data: [DONE]\n\n".into(),
        ]
    }
}
