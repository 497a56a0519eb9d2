//! `seshat serve --listen ws://…` / `wss://…` as a process, driven by a real WebSocket client
//! (tungstenite) over loopback, with real TLS from a CA made in the test: tokens, isolation
//! between users, read-only tokens, the limits, and the stop signal's drain.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::{self, Message, client::IntoClientRequest as _};

use crate::chat::{KEY, home_for};
use crate::support::server::{Gate, Reply, Server, openai};
use crate::support::tls::Authority;
use crate::support::{Home, Watchdog, wait_for};

/// A running `seshat serve --listen ws(s)://127.0.0.1:0`, and what it logged after it listened.
pub(crate) struct Service {
    child: Child,
    /// The address it listens on (`ws://127.0.0.1:PORT`).
    pub(crate) url: String,
    pub(crate) port: u16,
    log: Arc<Mutex<Vec<String>>>,
}

impl Service {
    /// Starts the service in `home` with `extra` arguments (`--tls-cert …`).
    pub(crate) fn start(home: &Home, scheme: &str, extra: &[&str]) -> Service {
        Service::start_in(home.cmd(), scheme, extra)
    }

    /// [`Service::start`] in a shell that set `ulimit -n files` first: the process may open no
    /// more files than that.
    pub(crate) fn start_with_files(home: &Home, files: u32, extra: &[&str]) -> Service {
        let seshat = home.cmd();
        let mut cmd = Command::new("sh");
        cmd.arg("-c").arg("ulimit -n \"$0\" && exec \"$@\"").arg(files.to_string());
        cmd.arg(seshat.get_program()).args(seshat.get_args());
        for (key, value) in seshat.get_envs() {
            match value {
                Some(value) => cmd.env(key, value),
                None => cmd.env_remove(key),
            };
        }
        if let Some(dir) = seshat.get_current_dir() {
            cmd.current_dir(dir);
        }
        Service::start_in(cmd, "ws", extra)
    }

    fn start_in(cmd: Command, scheme: &str, extra: &[&str]) -> Service {
        let listen = format!("{scheme}://127.0.0.1:0");
        Service::spawn(cmd, scheme, &[&["serve", "--listen", &listen][..], extra].concat())
    }

    /// Starts `seshat args…` in `home` (`serve --config FILE`, say), listening by `scheme`.
    pub(crate) fn start_args(home: &Home, scheme: &str, args: &[&str]) -> Service {
        Service::spawn(home.cmd(), scheme, args)
    }

    fn spawn(mut cmd: Command, scheme: &str, args: &[&str]) -> Service {
        let mut child = cmd
            .env("OPENAI_API_KEY", KEY)
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn seshat serve");
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut said = String::new();
        stderr.read_line(&mut said).unwrap();
        let prefix = format!("seshat serve: listening on {scheme}://");
        // (With `--log-format json` the address is in the first line's `listening` event.)
        let event: Option<Value> = serde_json::from_str(said.trim()).ok();
        let address = match &event {
            Some(event) => event["fields"]["address"].as_str().unwrap_or_else(|| panic!("not listening: {said}")),
            None => said.trim().strip_prefix(&prefix).unwrap_or_else(|| panic!("not listening: {said}")),
        };
        let port = address.rsplit(':').next().unwrap().parse().unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let kept = log.clone();
        std::thread::spawn(move || {
            for line in stderr.lines() {
                let Ok(line) = line else { break };
                eprintln!("serve: {line}");
                kept.lock().unwrap().push(line);
            }
        });
        Service { child, url: format!("{scheme}://127.0.0.1:{port}"), port, log }
    }

    /// Connects with `token` (and trusting `tls`' CA for wss://).
    pub(crate) fn connect(&self, token: Option<&str>, tls: Option<&Authority>) -> Result<Client, tungstenite::Error> {
        connect(&self.url, self.port, token, tls)
    }

    /// Connects with `token`, which must be accepted.
    pub(crate) fn client(&self, token: &str) -> Client {
        let mut c = self.connect(Some(token), None).expect("the token is accepted");
        let init = c.call("initialize", json!({"model": "gpt-4o"}));
        assert!(init.get("error").is_none(), "{init}");
        c
    }

    /// The process's id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Every line logged after the first.
    pub(crate) fn log_lines(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }

    /// Whether a logged line holds every one of `words`.
    pub(crate) fn logged(&self, words: &[&str]) -> bool {
        self.log.lock().unwrap().iter().any(|l| words.iter().all(|w| l.contains(w)))
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A stream a WebSocket runs on: TCP, or TLS over TCP.
pub(crate) trait Io: Read + Write + Send {}
impl<T: Read + Write + Send> Io for T {}

/// A WebSocket client speaking the service's JSON-RPC, one message per text frame.
pub(crate) struct Client {
    pub(crate) ws: tungstenite::WebSocket<Box<dyn Io>>,
    next: u64,
    /// Messages read while waiting for another.
    backlog: Vec<Value>,
}

fn connect(url: &str, port: u16, token: Option<&str>, tls: Option<&Authority>) -> Result<Client, tungstenite::Error> {
    let mut request = url.into_client_request().unwrap();
    if let Some(token) = token {
        request.headers_mut().insert("Authorization", format!("Bearer {token}").parse().unwrap());
    }
    let tcp = TcpStream::connect(("127.0.0.1", port))?;
    tcp.set_read_timeout(Some(Duration::from_secs(60)))?;
    let stream: Box<dyn Io> = match tls {
        Some(authority) => {
            let server = rustls::pki_types::ServerName::try_from("localhost").unwrap();
            let tls = rustls::ClientConnection::new(authority.client_config(), server).unwrap();
            Box::new(rustls::StreamOwned::new(tls, tcp))
        }
        None => Box::new(tcp),
    };
    match tungstenite::client::client(request, stream) {
        Ok((ws, _)) => Ok(Client { ws, next: 0, backlog: Vec::new() }),
        Err(tungstenite::HandshakeError::Failure(e)) => Err(e),
        Err(tungstenite::HandshakeError::Interrupted(_)) => unreachable!("a blocking stream"),
    }
}

impl Client {
    pub(crate) fn send(&mut self, message: Value) {
        self.ws.send(Message::text(message.to_string())).expect("send a frame");
    }

    /// Sends a request and returns its answer (notifications meanwhile are kept).
    pub(crate) fn call(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.wait(|v| v["id"] == id && v.get("method").is_none())
    }

    /// The answer's result; fails the test on an error.
    pub(crate) fn ok(&mut self, method: &str, params: Value) -> Value {
        let answer = self.call(method, params);
        assert!(answer.get("error").is_none(), "{method}: {answer}");
        answer["result"].clone()
    }

    /// The stable code of the answer's error; fails the test on a result.
    pub(crate) fn refused(&mut self, method: &str, params: Value) -> String {
        let answer = self.call(method, params);
        answer["error"]["data"]["code"].as_str().unwrap_or_else(|| panic!("{method} was not refused: {answer}")).into()
    }

    /// The next message `pick` accepts (others are kept).
    pub(crate) fn wait(&mut self, pick: impl Fn(&Value) -> bool) -> Value {
        if let Some(i) = self.backlog.iter().position(&pick) {
            return self.backlog.remove(i);
        }
        loop {
            match self.ws.read().expect("the server closed the connection") {
                Message::Text(text) => {
                    let v: Value = serde_json::from_str(&text).unwrap();
                    if pick(&v) {
                        return v;
                    }
                    self.backlog.push(v);
                }
                Message::Close(frame) => panic!("the server closed the connection: {frame:?}"),
                _ => {}
            }
        }
    }

    /// Every message up to the server's close, and the close's code and reason (none when the
    /// connection ended without one).
    /// Gives up after a minute (the server's pings would keep the read going for ever).
    pub(crate) fn until_closed(&mut self) -> (Vec<Value>, Option<(u16, String)>) {
        let mut seen = std::mem::take(&mut self.backlog);
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while std::time::Instant::now() < deadline {
            match self.ws.read() {
                Ok(Message::Text(text)) => seen.push(serde_json::from_str(&text).unwrap()),
                Ok(Message::Close(frame)) => {
                    return (seen, frame.map(|f| (u16::from(f.code), f.reason.to_string())));
                }
                Ok(_) => {}
                Err(_) => return (seen, None),
            }
        }
        (seen, None)
    }

    /// The session a new `session/new` made.
    pub(crate) fn new_session(&mut self) -> String {
        self.ok("session/new", json!({}))["session"]["id"].as_str().unwrap().to_string()
    }
}

/// `seshat chat -p "tell me" --model gpt-4o --json` on a machine with no store (`laptop`), against
/// the service at `url` with `token`, started with its output piped.
pub(crate) fn spawn_remote_chat(laptop: &Home, url: &str, token: &str) -> Child {
    laptop
        .cmd()
        .env("SESHAT_REMOTE", url)
        .env("SESHAT_TOKEN", token)
        .args(["chat", "-p", "tell me", "--model", "gpt-4o", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Adds `user` and makes a token for them (`extra`: `--read-only`, `--expires …`).
pub(crate) fn token(home: &Home, user: &str, extra: &[&str]) -> String {
    let _ = home.run(&["users", "add", user]);
    let out = home.run(&[&["tokens", "create", "--user", user][..], extra].concat());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// The HTTP status and the body's `code` of a refused upgrade.
pub(crate) fn refusal(result: Result<Client, tungstenite::Error>) -> (u16, String, Option<String>) {
    match result {
        Err(tungstenite::Error::Http(response)) => {
            let body: Value = serde_json::from_slice(response.body().as_deref().unwrap_or_default()).unwrap();
            let challenge = response.headers().get("www-authenticate").map(|h| h.to_str().unwrap().to_string());
            (response.status().as_u16(), body["code"].as_str().unwrap().to_string(), challenge)
        }
        Err(e) => panic!("not an HTTP refusal: {e}"),
        Ok(_) => panic!("the upgrade was accepted"),
    }
}

crate::on_both_backends! {
    /// A missing, wrong, expired or revoked token is refused with 401 and its code before any
    /// JSON-RPC; a good one is served.
    fn a_missing_wrong_expired_or_revoked_token_is_refused_with_401_before_any_json_rpc(home) {
        let good = token(&home, "alice", &[]);
        let revoked = token(&home, "alice", &["--expires", "30d"]);
        // A token that has run out (no wait: its time is set in the past).
        let expired = token(&home, "alice", &["--expires", "1h"]);
        let past = format!("UPDATE tokens SET expires_at = 1 WHERE id = '{}'", expired.split('_').nth(1).unwrap());
        home.sql(&past, &past).unwrap();
        let service = Service::start(&home, "ws", &[]);
        let listed: Value = serde_json::from_str(&home.ok(&["tokens", "list", "--user", "alice", "--json"])).unwrap();
        let ids: Vec<&str> = listed.as_array().unwrap().iter().map(|t| t["id"].as_str().unwrap()).collect();
        assert_eq!(ids.len(), 3, "{listed}");
        assert!(!listed.to_string().contains(&good), "a listing never shows a token: {listed}");
        let id = revoked.split('_').nth(1).unwrap();
        assert!(ids.contains(&id), "the token's id is its second part: {ids:?}");
        home.ok(&["tokens", "revoke", id]);

        let bearer = |t: &str| service.connect(Some(t), None);
        assert_eq!(refusal(service.connect(None, None)), (401, "token_missing".into(), Some("Bearer".into())));
        let mut wrong = good.clone();
        let last = if wrong.ends_with('0') { "1" } else { "0" };
        wrong.replace_range(wrong.len() - 1.., last);
        assert_eq!(refusal(bearer(&wrong)).1, "token_invalid");
        assert_eq!(refusal(bearer("not-a-token")).1, "token_invalid");
        assert_eq!(refusal(bearer(&expired)).1, "token_expired");
        assert_eq!(refusal(bearer(&revoked)).1, "token_revoked");
        let mut c = service.client(&good);
        assert_eq!(c.ok("session/list", json!({"all": true}))["sessions"], json!([]));
    }
}

crate::on_both_backends! {
    /// Each user lists, reads and changes only their own sessions, memory and notes; another
    /// user's ids are refused as unknown and change nothing; every write is audited.
    fn each_user_reaches_only_their_own_sessions_memory_and_notes(home) {
        let (alice, bob) = (token(&home, "alice", &[]), token(&home, "bob", &[]));
        let service = Service::start(&home, "ws", &[]);
        let mut a = service.client(&alice);
        let mut b = service.client(&bob);
        let session = a.new_session();
        let entity = json!({"entities": [{"name": "alice-secret", "entityType": "note", "observations": ["x"]}]});
        a.ok("memory/create_entities", entity);
        a.ok("notes/set", json!({"key": "style", "value": "tabs"}));

        assert_eq!(b.ok("session/list", json!({"all": true}))["sessions"], json!([]));
        let s = json!({"session": session});
        for (method, params) in [
            ("session/get", s.clone()),
            ("session/delete", s.clone()),
            ("session/fork", s.clone()),
            ("session/rewind", json!({"session": session, "to": 1})),
            ("session/compact", s.clone()),
            ("turn/start", json!({"session": session, "text": "mine now"})),
            ("turn/interrupt", s.clone()),
            ("session/export", s.clone()),
            ("session/append", json!({"session": session, "messages": []})),
            ("session/pins", s.clone()),
            ("session/pin", json!({"session": session, "seq": 1})),
            ("session/unpin", json!({"session": session, "seq": 1})),
        ] {
            assert_eq!(b.refused(method, params), "session_not_found", "{method}");
        }
        // What alice said is found by her searches only, even across every project.
        let said = seshat::conversation::NewMessage::text(seshat::conversation::Role::User, "the kestrel launch code");
        home.store().acting_for("alice").append(&session, &[said]).unwrap();
        let search = json!({"query": "kestrel", "all": true});
        assert_eq!(b.ok("history/search", search.clone())["hits"], json!([]));
        assert_eq!(a.ok("history/search", search)["hits"][0]["session"], session);
        let graph = b.ok("memory/read_graph", json!({}));
        assert!(!graph.to_string().contains("alice-secret"), "{graph}");
        let opened = b.ok("memory/open_nodes", json!({"names": ["alice-secret"]}));
        assert!(!opened.to_string().contains("alice-secret"), "{opened}");
        b.call("memory/delete_entities", json!({"entityNames": ["alice-secret"]}));
        assert_eq!(b.ok("notes/list", json!({}))["notes"], json!([]));
        b.ok("notes/set", json!({"key": "style", "value": "spaces"}));

        // Alice's things are as she left them.
        assert_eq!(a.ok("session/list", json!({"all": true}))["sessions"][0]["id"], session);
        assert!(a.ok("memory/read_graph", json!({})).to_string().contains("alice-secret"));
        assert_eq!(a.ok("notes/list", json!({}))["notes"][0]["value"], "tabs");
        assert!(a.ok("session/get", s)["session"]["id"] == session);
        wait_for("the audit line of alice's session/new", || {
            service.logged(&["seshat::audit", "user=alice", "session/new"])
        });
        assert!(service.logged(&["seshat::audit", "user=bob", "notes/set"]));
        assert!(!service.logged(&["user=bob", "session/list"]), "reads are not audited");
        assert!(!service.log.lock().unwrap().iter().any(|l| l.contains(&alice) || l.contains(&bob)), "no token logged");
    }
}

/// A read-only token reads; every write is refused with `read_only_token` and writes nothing.
#[test]
fn a_read_only_token_reads_and_every_write_is_refused_and_writes_nothing() {
    let home = Home::new();
    let writer = token(&home, "alice", &[]);
    let reader = token(&home, "alice", &["--read-only"]);
    let service = Service::start(&home, "ws", &[]);
    let mut w = service.client(&writer);
    let session = w.new_session();
    w.ok("memory/create_entities", json!({"entities": [{"name": "kept", "entityType": "t", "observations": []}]}));
    let mut r = service.client(&reader);
    assert_eq!(r.ok("session/list", json!({"all": true}))["sessions"][0]["id"], session);
    assert!(r.ok("session/get", json!({"session": session}))["session"]["id"] == session);
    let before = r.ok("memory/read_graph", json!({}));
    assert!(before.to_string().contains("kept"), "{before}");
    for (method, params) in [
        ("session/new", json!({})),
        ("session/delete", json!({"session": session})),
        ("turn/start", json!({"session": session, "text": "hi"})),
        ("notes/set", json!({"key": "k", "value": "v"})),
        ("memory/create_entities", json!({"entities": [{"name": "new", "entityType": "t", "observations": []}]})),
        ("memory/delete_entities", json!({"entityNames": ["kept"]})),
        ("memory/clear", json!({"scope": "user"})),
        ("session/import", json!({"jsonl": "{}"})),
        ("session/append", json!({"session": session, "messages": []})),
        ("session/pin", json!({"session": session, "seq": 1})),
        ("session/unpin", json!({"session": session, "seq": 1})),
        ("memory/restore", json!({"id": 1})),
    ] {
        assert_eq!(r.refused(method, params), "read_only_token", "{method}");
    }
    assert_eq!(r.ok("memory/read_graph", json!({})), before);
    assert!(r.ok("memory/context", json!({}))["text"].as_str().is_some(), "a read-only token reads the context");
    assert_eq!(r.ok("session/pins", json!({"session": session}))["pins"], json!([]), "and the pins");
    assert_eq!(home.store().acting_for("alice").list_sessions(&seshat::store::ListFilter::default()).unwrap().len(), 1);
    assert_eq!(r.ok("notes/list", json!({}))["notes"], json!([]));
}

/// A message over the largest one is answered with `message_too_large` and a 1009 close, and
/// nothing of it is applied; a binary frame or bad JSON gets the protocol's parse error.
#[test]
fn an_oversized_message_is_refused_whole_and_malformed_frames_get_parse_errors() {
    let home = Home::new();
    std::fs::write(home.path().join("config.toml"), "[serve]\nmax_message_mib = 1\n").unwrap();
    let alice = token(&home, "alice", &[]);
    let service = Service::start(&home, "ws", &[]);
    let mut c = service.client(&alice);
    c.ws.send(Message::binary(b"{}".to_vec())).unwrap();
    assert_eq!(c.wait(|v| v["id"].is_null())["error"]["data"]["code"], "parse_error");
    c.ws.send(Message::text("{not json")).unwrap();
    assert_eq!(c.wait(|v| v["id"].is_null())["error"]["data"]["code"], "parse_error");
    let big = "x".repeat(3 << 19);
    c.send(json!({"jsonrpc": "2.0", "id": 9, "method": "notes/set", "params": {"key": "big", "value": big}}));
    let mut seen = Vec::new();
    let close = loop {
        match c.ws.read() {
            Ok(Message::Text(text)) => seen.push(serde_json::from_str::<Value>(&text).unwrap()),
            Ok(Message::Close(frame)) => break frame.map(|f| u16::from(f.code)),
            Ok(_) => {}
            Err(e) => panic!("no close frame: {e}"),
        }
    };
    assert_eq!(close, Some(1009), "{seen:?}");
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0]["error"]["data"]["code"], "message_too_large", "{seen:?}");
    assert!(seen[0]["error"]["message"].as_str().unwrap().contains("max_message_mib"), "{seen:?}");
    let mut again = service.client(&alice);
    assert_eq!(again.ok("notes/list", json!({}))["notes"], json!([]), "nothing of it was applied");
}

/// Past `max_connections` a client is refused with 503 `too_many_connections`; a slot is free
/// again once a client leaves.
#[test]
fn past_max_connections_a_client_gets_503_until_one_leaves() {
    let home = Home::new();
    std::fs::write(home.path().join("config.toml"), "[serve]\nmax_connections = 1\n").unwrap();
    let alice = token(&home, "alice", &[]);
    let service = Service::start(&home, "ws", &[]);
    let mut first = service.client(&alice);
    assert_eq!(refusal(service.connect(Some(&alice), None)).0, 503);
    assert_eq!(refusal(service.connect(Some(&alice), None)).1, "too_many_connections");
    first.ws.close(None).unwrap();
    while first.ws.read().is_ok() {}
    wait_for("a free slot", || service.connect(Some(&alice), None).is_ok());
}

/// A client that never finishes its upgrade, and one that stops answering pings, are dropped.
#[test]
fn a_slow_upgrade_and_a_silent_client_are_dropped() {
    let home = Home::new();
    std::fs::write(
        home.path().join("config.toml"),
        "[serve]\nhandshake_timeout_secs = 1\nidle_timeout_secs = 1\nkeepalive_secs = 1\n",
    )
    .unwrap();
    let alice = token(&home, "alice", &[]);
    let service = Service::start(&home, "ws", &[]);
    // Slow loris: half an upgrade request, then nothing. The server hangs up without an answer.
    let mut slow = TcpStream::connect(("127.0.0.1", service.port)).unwrap();
    slow.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    slow.write_all(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n").unwrap();
    let mut answer = Vec::new();
    slow.read_to_end(&mut answer).unwrap();
    assert!(answer.is_empty(), "{}", String::from_utf8_lossy(&answer));
    // A client that upgraded and then reads nothing (so answers no ping) is closed with 1001.
    let c = service.client(&alice);
    let mut c = c;
    let raw = c.ws.get_mut();
    let mut bytes = Vec::new();
    let _ = raw.read_to_end(&mut bytes);
    let close = bytes.windows(4).any(|w| w[0] == 0x88 && w[1] as usize >= 2 && w[2..4] == 1001u16.to_be_bytes());
    assert!(close, "a close frame with 1001 (going away): {bytes:?}");
}

#[test]
fn plain_ws_beyond_loopback_and_wss_without_its_files_are_refused() {
    let home = Home::new();
    let err = home.fails(&["serve", "--listen", "ws://0.0.0.0:0"]);
    assert!(err.contains("--insecure-listen") && err.contains("wss://"), "{err}");
    let err = home.fails(&["serve", "--listen", "wss://127.0.0.1:0"]);
    assert!(err.contains("--tls-cert"), "{err}");
    let err = home.fails(&["serve", "--listen", "tcp://127.0.0.1:1"]);
    assert!(err.contains("ws://") && err.contains("unix:"), "{err}");
    let missing = home.path().join("missing.pem");
    let m = missing.to_str().unwrap();
    let err = home.fails(&["serve", "--listen", "wss://127.0.0.1:0", "--tls-cert", m, "--tls-key", m]);
    assert!(err.contains("missing.pem"), "{err}");
}

/// Over real TLS a client trusting the test's CA runs a whole turn; one trusting another CA
/// never gets past the TLS handshake.
#[test]
fn over_wss_a_client_trusting_the_ca_runs_a_turn_and_another_is_refused() {
    let server = Server::start(vec![Reply::Stream { pieces: openai::text_answer(&["Hello ", "over TLS."], true) }]);
    let home = home_for("openai", &server, "");
    let alice = token(&home, "alice", &[]);
    let authority = Authority::new();
    let (cert, key) = (home.path().join("cert.pem"), home.path().join("key.pem"));
    std::fs::write(&cert, &authority.cert).unwrap();
    std::fs::write(&key, &authority.key).unwrap();
    let files = [cert.to_str().unwrap(), key.to_str().unwrap()];
    let service = Service::start(&home, "wss", &["--tls-cert", files[0], "--tls-key", files[1]]);
    let stranger = Authority::new();
    assert!(service.connect(Some(&alice), Some(&stranger)).is_err(), "a server this CA did not sign is refused");
    let mut c = service.connect(Some(&alice), Some(&authority)).expect("TLS with the test CA");
    c.ok("initialize", json!({"model": "gpt-4o"}));
    assert_eq!(c.ok("config/get", json!({}))["database"], "remote", "where the store lives is not the client's");
    let session = c.new_session();
    let turn = c.ok("turn/start", json!({"session": session, "text": "hi"}))["turn"].clone();
    let done = c.wait(|v| v["method"] == "turn/completed" && v["params"]["turn"] == turn);
    assert_eq!(done["params"]["outcome"]["text"], "Hello over TLS.", "{done}");
    let history = home.store().acting_for("alice").full_history(&session).unwrap();
    assert_eq!(crate::support::text_of(&history[1]), "Hello over TLS.");
    assert_eq!(server.unexpected(), Vec::<String>::new());
}

/// On SIGTERM the service accepts no new client and starts no new turn, lets the running turn
/// finish, answers it, and exits.
#[test]
fn sigterm_stops_accepting_lets_the_running_turn_finish_then_exits() {
    let gate = Gate::default();
    let mut pieces = openai::text_answer(&["Finished ", "in time."], true);
    let rest = pieces.split_off(2);
    let server = Server::start(vec![Reply::Gated { pieces, rest, gate: gate.clone() }]);
    let home = home_for("openai", &server, "[serve]\ngrace_secs = 60\n");
    let alice = token(&home, "alice", &[]);
    let mut service = Service::start(&home, "ws", &[]);
    let mut c = service.client(&alice);
    let (session, other) = (c.new_session(), c.new_session());
    let turn = c.ok("turn/start", json!({"session": session, "text": "go"}))["turn"].clone();
    c.wait(|v| v["method"] == "turn/event" && v["params"]["event"]["type"] == "text_delta");
    nix_kill(service.child.id(), "TERM");
    wait_for("the listener to close", || TcpStream::connect(("127.0.0.1", service.port)).is_err());
    assert_eq!(c.refused("turn/start", json!({"session": other, "text": "more"})), "server_stopping");
    gate.open();
    let done = c.wait(|v| v["method"] == "turn/completed" && v["params"]["turn"] == turn);
    assert_eq!(done["params"]["outcome"]["text"], "Finished in time.", "{done}");
    assert_eq!(done["params"]["outcome"]["interrupted"], false, "{done}");
    let watchdog = Watchdog::on(service.child.id(), Duration::from_secs(60));
    let status = service.child.wait().unwrap();
    assert!(!watchdog.fired() && status.success(), "{status}");
}

/// A turn still running when the grace period ends is interrupted and stored as such.
#[test]
fn sigterm_interrupts_a_turn_still_running_after_the_grace_period_and_stores_it() {
    let gate = Gate::default();
    let mut pieces = openai::text_answer(&["Cut ", "short."], true);
    let rest = pieces.split_off(2);
    let server = Server::start(vec![Reply::Gated { pieces, rest, gate: gate.clone() }]);
    let home = home_for("openai", &server, "[serve]\ngrace_secs = 1\n");
    let alice = token(&home, "alice", &[]);
    let mut service = Service::start(&home, "ws", &[]);
    let mut c = service.client(&alice);
    let session = c.new_session();
    c.ok("turn/start", json!({"session": session, "text": "go"}));
    c.wait(|v| v["method"] == "turn/event" && v["params"]["event"]["type"] == "text_delta");
    nix_kill(service.child.id(), "TERM");
    let watchdog = Watchdog::on(service.child.id(), Duration::from_secs(60));
    let status = service.child.wait().unwrap();
    assert!(!watchdog.fired() && status.success(), "{status}");
    gate.open();
    let history = home.store().acting_for("alice").full_history(&session).unwrap();
    assert_eq!(history.len(), 2, "{history:?}");
    assert_eq!(history[1].status, seshat::conversation::MessageStatus::Interrupted);
    assert!(crate::support::text_of(&history[1]).starts_with("Cut"), "{history:?}");
}

/// Sends `signal` to `pid` with kill(1).
pub(crate) fn nix_kill(pid: u32, signal: &str) {
    let status = Command::new("kill").args([&format!("-{signal}"), &pid.to_string()]).status().unwrap();
    assert!(status.success());
}

crate::on_both_backends! {
    /// A team scope is shared as granted: a read-write member writes it, a read-only one reads it
    /// and is refused a write with `scope_denied`, a stranger neither reads nor writes it; every
    /// refused write writes nothing.
    fn team_scopes_are_shared_as_granted_and_other_writes_are_refused(home) {
        let (alice, bob, carol) = (token(&home, "alice", &[]), token(&home, "bob", &[]), token(&home, "carol", &[]));
        home.ok(&["scopes", "create", "platform"]);
        home.ok(&["scopes", "grant", "platform", "alice"]);
        home.ok(&["scopes", "grant", "platform", "bob", "--read-only"]);
        let grants: Value = serde_json::from_str(&home.ok(&["scopes", "list", "--json"])).unwrap();
        let bob_grant = json!({"scope": "team:platform", "user": "bob", "access": "read"});
        assert!(grants.as_array().unwrap().contains(&bob_grant), "{grants}");
        let service = Service::start(&home, "ws", &[]);
        let (mut a, mut b, mut c) = (service.client(&alice), service.client(&bob), service.client(&carol));
        let team = json!("team:platform");
        a.ok("notes/set", json!({"scope": team, "key": "deploy", "value": "never on Fridays"}));
        let entity = |name: &str| json!({"scope": team, "entities": [{"name": name, "entityType": "rule", "observations": []}]});
        a.ok("memory/create_entities", entity("freeze"));

        assert_eq!(b.ok("notes/list", json!({"scope": team}))["notes"][0]["value"], "never on Fridays");
        assert!(b.ok("memory/read_graph", json!({})).to_string().contains("freeze"));
        assert_eq!(b.refused("notes/set", json!({"scope": team, "key": "deploy", "value": "any day"})), "scope_denied");
        assert_eq!(b.refused("memory/create_entities", entity("bob-was-here")), "scope_denied");
        assert_eq!(c.refused("notes/list", json!({"scope": team})), "scope_denied");
        assert!(!c.ok("memory/read_graph", json!({})).to_string().contains("freeze"));
        assert_eq!(c.refused("notes/set", json!({"scope": team, "key": "deploy", "value": "carol's"})), "scope_denied");

        let graph = a.ok("memory/read_graph", json!({})).to_string();
        assert!(graph.contains("freeze") && !graph.contains("bob-was-here"), "{graph}");
        assert_eq!(a.ok("notes/list", json!({"scope": team}))["notes"][0]["value"], "never on Fridays");
        wait_for("the audit line of alice's team write", || {
            service.logged(&["seshat::audit", "user=alice", "notes/set", "team:platform"])
        });

        // Revoked, bob reads the team's notes no more; the listing says so.
        home.ok(&["scopes", "revoke", "platform", "bob"]);
        let grants: Value = serde_json::from_str(&home.ok(&["scopes", "list", "--json"])).unwrap();
        assert!(!grants.to_string().contains("\"bob\""), "{grants}");
        assert_eq!(b.refused("notes/list", json!({"scope": team})), "scope_denied");
        let users: Value = serde_json::from_str(&home.ok(&["users", "list", "--json"])).unwrap();
        let names: Vec<&str> = users.as_array().unwrap().iter().filter_map(|u| u["name"].as_str()).collect();
        assert_eq!(names, ["alice", "bob", "carol", "local"], "{users}");
    }
}

/// A network client's project is its own: the key it names files its sessions and project memory,
/// and the instructions it read on its machine reach the model — never the server's own files.
#[test]
fn a_network_clients_project_key_and_instructions_are_its_own_not_the_servers() {
    let server = Server::start(vec![Reply::Stream { pieces: openai::text_answer(&["Oui."], true) }]);
    let home = home_for("openai", &server, "");
    std::fs::write(home.path().join("AGENTS.md"), "The server's own rules.\n").unwrap();
    let alice = token(&home, "alice", &[]);
    let service = Service::start(&home, "ws", &[]);
    let project = "github.com/acme/app";
    let mut c = service.connect(Some(&alice), None).unwrap();
    let agents = json!([{"name": "AGENTS.md", "text": "Always answer in French."}]);
    c.ok("initialize", json!({"model": "gpt-4o", "project": project, "instructions": agents}));
    assert_eq!(c.ok("config/get", json!({}))["project"], project);
    let session = c.new_session();
    let listed = c.ok("session/list", json!({}));
    assert_eq!(listed["sessions"][0]["project"], project, "{listed}");
    let entity = json!({"scope": "project", "entities": [{"name": "app-fact", "entityType": "t", "observations": []}]});
    c.ok("memory/create_entities", entity);
    let turn = c.ok("turn/start", json!({"session": session, "text": "hi"}))["turn"].clone();
    c.wait(|v| v["method"] == "turn/completed" && v["params"]["turn"] == turn);
    let sent = server.requests().iter().find(|r| r.path.ends_with("/chat/completions")).map(|r| r.json().to_string());
    let sent = sent.expect("a model request");
    assert!(sent.contains("Always answer in French."), "{sent}");
    assert!(!sent.contains("The server's own rules."), "{sent}");

    // Another project of the same user sees neither the session in its listing nor the memory.
    let mut other = service.connect(Some(&alice), None).unwrap();
    other.ok("initialize", json!({"model": "gpt-4o", "project": "github.com/acme/other"}));
    assert_eq!(other.ok("session/list", json!({}))["sessions"], json!([]));
    assert!(!other.ok("memory/read_graph", json!({})).to_string().contains("app-fact"));
    let long = "k".repeat(2000);
    let answer = other.call("initialize", json!({"model": "gpt-4o", "project": long}));
    assert_eq!(answer["error"]["data"]["code"], "invalid_params", "{answer}");
}

/// Past `max_turns_per_user` a user's next turn is `too_many_turns` and starts nothing; another
/// user is not held back, and the user may start again once a turn completes.
#[test]
fn past_max_turns_per_user_a_turn_is_refused_and_others_go_on() {
    let gate = Gate::default();
    let mut pieces = openai::text_answer(&["Held ", "turn."], true);
    let rest = pieces.split_off(2);
    let server = Server::start(vec![
        Reply::Gated { pieces, rest, gate: gate.clone() },
        Reply::Stream { pieces: openai::text_answer(&["Bob's."], true) },
        Reply::Stream { pieces: openai::text_answer(&["Again."], true) },
    ]);
    let home = home_for("openai", &server, "[serve]\nmax_turns_per_user = 1\n");
    let (alice, bob) = (token(&home, "alice", &[]), token(&home, "bob", &[]));
    let service = Service::start(&home, "ws", &[]);
    let mut a = service.client(&alice);
    let mut a2 = service.client(&alice);
    let (first, second) = (a.new_session(), a.new_session());
    let held = a.ok("turn/start", json!({"session": first, "text": "hold"}))["turn"].clone();
    a.wait(|v| v["method"] == "turn/event" && v["params"]["event"]["type"] == "text_delta");
    assert_eq!(a2.refused("turn/start", json!({"session": second, "text": "more"})), "too_many_turns");
    assert_eq!(a2.refused("session/compact", json!({"session": second})), "too_many_turns");
    let mut b = service.client(&bob);
    let bobs = b.new_session();
    let turn = b.ok("turn/start", json!({"session": bobs, "text": "hi"}))["turn"].clone();
    let done = b.wait(|v| v["method"] == "turn/completed" && v["params"]["turn"] == turn);
    assert_eq!(done["params"]["outcome"]["text"], "Bob's.", "{done}");
    gate.open();
    a.wait(|v| v["method"] == "turn/completed" && v["params"]["turn"] == held);
    let history = |s: &str| home.store().acting_for("alice").full_history(s).unwrap().len();
    assert_eq!(history(&second), 0, "the refused turn stored nothing");
    let again = a2.ok("turn/start", json!({"session": second, "text": "now"}))["turn"].clone();
    let done = a2.wait(|v| v["method"] == "turn/completed" && v["params"]["turn"] == again);
    assert_eq!(done["params"]["outcome"]["text"], "Again.", "{done}");
}

/// Two instances on one PostgreSQL database serve the same users: a turn running through one is
/// busy through the other; a client that goes away leaves its turn stored as interrupted, and
/// when an instance is SIGKILLed mid-turn the session is free again through the other.
#[test]
fn two_instances_on_one_postgresql_share_sessions_busy_claims_and_what_a_dead_one_left() {
    let hold = |words: &[&str]| {
        let mut pieces = openai::text_answer(words, true);
        pieces.truncate(2);
        Reply::Gated { pieces, rest: Vec::new(), gate: Gate::default() }
    };
    let server = Server::start(vec![
        hold(&["Cut ", "by a hangup."]),
        hold(&["Cut ", "by a kill."]),
        Reply::Stream { pieces: openai::text_answer(&["Through B."], true) },
    ]);
    let home = Home::postgres();
    crate::chat::configure(&home, "openai", &server, "");
    let alice = token(&home, "alice", &[]);
    let mut a = Service::start(&home, "ws", &[]);
    let b = Service::start(&home, "ws", &[]);
    let history = |s: &str| home.store().acting_for("alice").full_history(s).unwrap();

    // A client of A starts a turn and goes away: A stores it as interrupted; B sees it.
    let mut on_a = a.client(&alice);
    let left = on_a.new_session();
    on_a.ok("turn/start", json!({"session": left, "text": "then I hang up"}));
    on_a.wait(|v| v["method"] == "turn/event" && v["params"]["event"]["type"] == "text_delta");
    drop(on_a);
    wait_for("the hung-up turn to be stored", || history(&left).len() == 2);
    assert_eq!(history(&left)[1].status, seshat::conversation::MessageStatus::Interrupted);
    let mut on_b = b.client(&alice);
    assert_eq!(on_b.ok("session/get", json!({"session": left, "full": true}))["history"][1]["status"], "interrupted");

    // A turn running through A is busy through B, until A is killed; what its answer had
    // streamed is stored, marked interrupted, when B claims the session.
    let mut on_a = a.client(&alice);
    let session = on_a.new_session();
    on_a.ok("turn/start", json!({"session": session, "text": "then A dies"}));
    on_a.wait(|v| v["method"] == "turn/event" && v["params"]["event"]["type"] == "text_delta");
    let draft = format!("SELECT count(*) FROM drafts WHERE session_id = '{session}'");
    wait_for("A to keep the answer's draft", || home.sql_value(&draft, &draft) == 1);
    assert_eq!(on_b.refused("turn/start", json!({"session": session, "text": "me too"})), "session_busy");
    a.child.kill().unwrap();
    a.child.wait().unwrap();
    let mut turn = Value::Null;
    wait_for("the dead instance's claim to go", || {
        let answer = on_b.call("turn/start", json!({"session": session, "text": "go on"}));
        turn = answer["result"]["turn"].clone();
        !turn.is_null()
    });
    let done = on_b.wait(|v| v["method"] == "turn/completed" && v["params"]["turn"] == turn);
    assert_eq!(done["params"]["outcome"]["text"], "Through B.", "{done}");
    let stored = history(&session);
    let texts: Vec<&str> = stored.iter().map(crate::support::text_of).collect();
    assert_eq!(texts, ["then A dies", "Cut by a kill.", "go on", "Through B."]);
    assert_eq!(stored[1].status, seshat::conversation::MessageStatus::Interrupted);
    assert_eq!(home.sql_value(&draft, &draft), 0, "the draft is gone once stored");
}

/// `--remote` (SESHAT_REMOTE with SESHAT_TOKEN) makes `mcp`, `sessions list` and `knowledge
/// search` work against the service from a machine with no store of its own; a command that
/// cannot yet is refused, touching nothing local.
#[test]
fn remote_mcp_sessions_and_knowledge_search_work_from_a_machine_with_no_store() {
    let home = Home::new();
    let alice = token(&home, "alice", &[]);
    home.ok(&["scopes", "create", "platform"]);
    home.ok(&["scopes", "grant", "platform", "alice"]);
    let doc = home.path().join("runbook.md");
    std::fs::write(&doc, "# Deploys\n\nThe kestrel cluster deploys on Tuesdays only.\n").unwrap();
    home.ok(&["knowledge", "add", "--scope", "team:platform", doc.to_str().unwrap()]);
    let service = Service::start(&home, "ws", &[]);
    let mut c = service.connect(Some(&alice), None).unwrap();
    c.ok("initialize", json!({"project": "github.com/acme/app"}));
    let session = c.new_session();

    let laptop = Home::new();
    let remote = |cmd: &mut Command| {
        cmd.env("SESHAT_REMOTE", &service.url).env("SESHAT_TOKEN", &alice);
    };
    // The write in one MCP session, the reads in the next: an MCP server may answer requests a
    // client sent together in any order.
    let writes = [
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "create_entities",
            "arguments": {"scope": "user", "entities": [{"name": "kestrel", "entityType": "cluster", "observations": ["deploys Tuesdays"]}]}}}),
    ];
    let reads = [
        json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "search_nodes", "arguments": {"query": "kestrel"}}}),
        json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "knowledge_search", "arguments": {"query": "kestrel deploys"}}}),
    ];
    let mut answers = Vec::new();
    for calls in [&writes[..], &reads[..]] {
        let mut cmd = laptop.cmd();
        remote(&mut cmd);
        let (status, stderr, answered) = crate::support::mcp_session(cmd, calls);
        assert!(status.success(), "{stderr}");
        answers.extend(answered);
    }
    let answer =
        |id: u64| answers.iter().find(|a| a["id"] == id).unwrap_or_else(|| panic!("no answer {id}: {answers:?}"));
    let names: Vec<&str> =
        answer(2)["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"search_nodes") && names.contains(&"knowledge_search"), "{names:?}");
    assert!(names.contains(&"knowledge_read"), "{names:?}");
    assert_eq!(answer(3)["result"]["isError"], false, "{}", answer(3));
    assert!(answer(4)["result"].to_string().contains("deploys Tuesdays"), "{}", answer(4));
    let hits = &answer(5)["result"]["structuredContent"]["results"];
    assert!(hits.to_string().contains("runbook.md"), "{}", answer(5));
    // The chunk is read whole through the service; a user outside the team cannot read it.
    let chunk = hits[0]["id"].clone();
    let read = json!({"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"name": "knowledge_read", "arguments": {"id": chunk}}});
    let mut cmd = laptop.cmd();
    remote(&mut cmd);
    let (status, stderr, answers) = crate::support::mcp_session(cmd, &[read]);
    assert!(status.success(), "{stderr}");
    let text = answers.iter().find(|a| a["id"] == 6).map(|a| a["result"]["structuredContent"]["text"].clone());
    assert!(text.is_some_and(|t| t.as_str().is_some_and(|t| t.contains("deploys on Tuesdays only"))), "{answers:?}");
    let bob = token(&home, "bob", &[]);
    let mut b = service.client(&bob);
    assert_eq!(b.refused("knowledge/read", json!({"id": chunk})), "chunk_not_found");
    assert_eq!(b.ok("knowledge/search", json!({"query": "kestrel"}))["hits"], json!([]));
    // The entity is alice's (her user scope) on the service; the laptop has no store at all.
    assert!(c.ok("memory/search_nodes", json!({"query": "kestrel"})).to_string().contains("deploys Tuesdays"));
    assert!(!laptop.db().exists(), "nothing was written on the laptop");

    let mut cmd = laptop.cmd();
    remote(&mut cmd);
    let out = cmd.args(["sessions", "list", "--all", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(listed[0]["id"], session, "{listed}");
    let mut cmd = laptop.cmd();
    remote(&mut cmd);
    let out = cmd.args(["sessions", "list", "--json"]).output().unwrap();
    assert_eq!(serde_json::from_slice::<Value>(&out.stdout).unwrap(), json!([]), "the laptop's project is its own");
    let mut cmd = laptop.cmd();
    remote(&mut cmd);
    let out = cmd.args(["knowledge", "search", "kestrel", "--json"]).output().unwrap();
    let found: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(found["hits"].to_string().contains("runbook.md"), "{found}");

    let mut cmd = laptop.cmd();
    remote(&mut cmd);
    let out = cmd.args(["knowledge", "list"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("remote") && err.contains("SESHAT_REMOTE"), "{err}");
    let mut cmd = laptop.cmd();
    cmd.env("SESHAT_REMOTE", &service.url).env("SESHAT_TOKEN", "seshat_0000000000000000_00");
    let out = cmd.args(["sessions", "list"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("401") && err.contains("token_invalid"), "{err}");
    assert!(!laptop.db().exists(), "nothing was written on the laptop");
    assert_eq!(c.ok("session/list", json!({"all": true}))["sessions"][0]["id"], session, "the session is still there");
    let mut cmd = laptop.cmd();
    remote(&mut cmd);
    let out = cmd.args(["sessions", "delete", &session[..10], "--yes"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(c.ok("session/list", json!({"all": true}))["sessions"], json!([]), "deleted on the service");
}

/// `memory --remote` shows, sets and searches the caller's memory on the service — their own user
/// memory and the team scopes granted to them — from a machine with no store; a write to a team
/// scope granted read-only is refused and writes nothing; actions the service does not offer are
/// refused naming what works.
#[test]
fn remote_memory_shows_sets_and_searches_the_callers_memory_on_the_service() {
    let home = Home::new();
    let alice = token(&home, "alice", &[]);
    let bob = token(&home, "bob", &[]);
    home.ok(&["scopes", "create", "platform"]);
    home.ok(&["scopes", "grant", "platform", "alice"]);
    home.ok(&["scopes", "grant", "platform", "bob", "--read-only"]);
    let service = Service::start(&home, "ws", &[]);
    let laptop = Home::new();
    let memory = |token: &str, args: &[&str]| {
        let mut cmd = laptop.cmd();
        cmd.env("SESHAT_REMOTE", &service.url).env("SESHAT_TOKEN", token).arg("memory").args(args);
        cmd.output().unwrap()
    };
    let ok = |out: std::process::Output| -> Value {
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let set = ok(memory(&alice, &["--action", "set", "--key", "deploys", "--value", "Tuesdays only", "--json"]));
    assert_eq!((set["key"].as_str(), set["scope"].as_str()), (Some("deploys"), Some("user")), "{set}");
    let team = ["--scope", "team:platform"];
    let set = ok(memory(
        &alice,
        &[&["--action", "set", "--key", "oncall", "--value", "kestrel rota", "--json"][..], &team].concat(),
    ));
    assert_eq!(set["scope"], "team:platform", "{set}");
    let mut c = service.client(&alice);
    c.ok("memory/create_entities", json!({"scope": "team:platform", "entities": [{"name": "kestrel", "entityType": "cluster", "observations": ["runs the rota"]}]}));

    let shown = ok(memory(&alice, &["--json"]));
    assert_eq!(shown["notes"][0]["value"], "Tuesdays only", "{shown}");
    let shown = ok(memory(&bob, &[&["--json"][..], &team].concat()));
    assert_eq!(shown["notes"][0]["value"], "kestrel rota", "bob reads the team's notes: {shown}");
    assert_eq!(shown["entities"][0]["name"], "kestrel", "{shown}");
    let mine = ok(memory(&bob, &["--json"]));
    assert_eq!(mine["notes"], json!([]), "alice's user memory is hers: {mine}");
    let found = ok(memory(&bob, &["--action", "search", "--query", "kestrel", "--json"]));
    assert_eq!(found["notes"][0]["key"], "oncall", "{found}");
    assert_eq!(found["entities"][0]["name"], "kestrel", "{found}");
    let text = memory(&bob, &["--action", "search", "--query", "kestrel"]);
    assert!(String::from_utf8_lossy(&text.stdout).contains("oncall: kestrel rota [team:platform]"));

    let refused =
        memory(&bob, &[&["--action", "set", "--key", "oncall", "--value", "bob", "--json"][..], &team].concat());
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success() && err.contains("scope_denied"), "{err}");
    let notes = c.ok("notes/list", json!({"scope": "team:platform"}));
    assert_eq!(notes["notes"][0]["value"], "kestrel rota", "nothing written: {notes}");

    // The context a session would be given is the caller's.
    let context = ok(memory(&alice, &["--action", "context", "--json"]));
    assert!(context["text"].as_str().is_some_and(|t| t.contains("Tuesdays only")), "{context}");
    let theirs = ok(memory(&bob, &["--action", "context", "--json"]));
    assert!(!theirs.to_string().contains("Tuesdays only"), "alice's memory is not in bob's context: {theirs}");

    // A deletion is listed and restored by whoever made it, only.
    c.ok("memory/delete_entities", json!({"scope": "team:platform", "entityNames": ["kestrel"]}));
    let deleted = ok(memory(&alice, &["--action", "deleted", "--json"]));
    assert!(deleted[0]["summary"].as_str().is_some_and(|s| s.contains("kestrel")), "{deleted}");
    let id = deleted[0]["id"].as_i64().unwrap().to_string();
    assert_eq!(ok(memory(&bob, &["--action", "deleted", "--json"])), json!([]), "alice's deletions are hers");
    let refused = memory(&bob, &["--action", "restore", "--id", &id]);
    assert!(!refused.status.success(), "bob cannot restore alice's deletion");
    assert!(!c.ok("memory/read_graph", json!({"scope": "team:platform"})).to_string().contains("kestrel"));
    let restored = ok(memory(&alice, &["--action", "restore", "--id", &id, "--json"]));
    assert_eq!(restored["id"].as_i64().map(|i| i.to_string()), Some(id), "{restored}");
    assert!(c.ok("memory/read_graph", json!({"scope": "team:platform"})).to_string().contains("kestrel"));

    // A clear needs write access to its scope; the backup stays on the service.
    let refused = memory(&bob, &[&["--action", "clear", "--yes"][..], &team].concat());
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success() && err.contains("scope_denied"), "{err}");
    assert_eq!(c.ok("notes/list", json!({"scope": "team:platform"}))["notes"][0]["value"], "kestrel rota");
    let cleared = memory(&alice, &["--action", "clear", "--yes"]);
    assert!(cleared.status.success(), "{}", String::from_utf8_lossy(&cleared.stderr));
    let said = String::from_utf8_lossy(&cleared.stdout);
    assert!(said.contains("Cleared user memory (1 records). Backup: kept on the service"), "{said}");
    assert_eq!(c.ok("notes/list", json!({}))["notes"], json!([]), "alice's user memory is cleared");
    assert_eq!(c.ok("notes/list", json!({"scope": "team:platform"}))["notes"][0]["value"], "kestrel rota");
    let backups = std::fs::read_dir(home.path().join("backups")).map(|d| d.count()).unwrap_or(0);
    assert_eq!(backups, 1, "the backup is on the service's machine");
    assert!(!laptop.db().exists(), "nothing was written on the laptop");
}

/// `mcp --remote` outlives the service's idle timeout: a connection the service closed while the
/// MCP client was quiet is opened again for the next call, which is answered.
#[test]
fn remote_mcp_reconnects_after_the_service_drops_it_for_idleness() {
    let home = Home::new();
    std::fs::write(home.path().join("config.toml"), "[serve]\nidle_timeout_secs = 1\nkeepalive_secs = 1\n").unwrap();
    let alice = token(&home, "alice", &[]);
    let service = Service::start(&home, "ws", &[]);
    let laptop = Home::new();
    let mut child = laptop
        .cmd()
        .env("SESHAT_REMOTE", &service.url)
        .env("SESHAT_TOKEN", &alice)
        .arg("mcp")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut answer = |line: Value| -> Value {
        writeln!(stdin, "{line}").unwrap();
        let mut text = String::new();
        stdout.read_line(&mut text).unwrap();
        serde_json::from_str(&text).unwrap()
    };
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}});
    assert!(answer(init)["result"].is_object());
    let create = |id: u64, name: &str| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "create_entities",
            "arguments": {"scope": "user", "entities": [{"name": name, "entityType": "t", "observations": []}]}}})
    };
    assert_eq!(answer(create(2, "before"))["result"]["isError"], false);
    // MCP's notifications/initialized needs no answer; the service drops the quiet connection.
    wait_for("the service to drop the quiet connection", || service.logged(&["seshat::audit", "disconnected"]));
    let after = answer(create(3, "after"));
    assert_eq!(after["result"]["isError"], false, "{after}");
    drop(stdin);
    assert!(child.wait().unwrap().success());
    let mut c = service.client(&alice);
    let graph = c.ok("memory/read_graph", json!({})).to_string();
    assert!(graph.contains("before") && graph.contains("after"), "{graph}");
}

/// `chat -p … --remote` runs the turn on the service: the answer streams to stdout, `--json`
/// prints the outcome, `--continue` goes on in the machine's latest session there, and the
/// client machine's AGENTS.md reaches the model; nothing is stored on the client machine.
#[test]
fn remote_chat_runs_turns_on_the_service_and_continues_there() {
    let server = Server::start(vec![
        Reply::Stream { pieces: openai::text_answer(&["Hello ", "from afar."], true) },
        Reply::Stream { pieces: openai::text_answer(&["Still here."], true) },
    ]);
    let home = home_for("openai", &server, "");
    let alice = token(&home, "alice", &[]);
    let service = Service::start(&home, "ws", &[]);
    let laptop = Home::new();
    std::fs::write(laptop.path().join("AGENTS.md"), "Laptop rules: be brief.\n").unwrap();
    let chat = |args: &[&str]| {
        let mut cmd = laptop.cmd();
        cmd.env("SESHAT_REMOTE", &service.url).env("SESHAT_TOKEN", &alice).arg("chat").args(args);
        cmd.output().unwrap()
    };
    let out = chat(&["-p", "hi", "--model", "gpt-4o"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "Hello from afar.");
    let out = chat(&["-p", "and now?", "--continue", "--json", "--model", "gpt-4o"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let outcome: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(outcome["text"], "Still here.", "{outcome}");
    let session = outcome["session"].as_str().unwrap();
    let history = home.store().acting_for("alice").full_history(session).unwrap();
    let texts: Vec<&str> = history.iter().map(crate::support::text_of).collect();
    assert_eq!(texts, ["hi", "Hello from afar.", "and now?", "Still here."]);
    // `sessions show --remote` reads it back from the service: the live view, and every message.
    let show = |args: &[&str]| {
        let mut cmd = laptop.cmd();
        cmd.env("SESHAT_REMOTE", &service.url).env("SESHAT_TOKEN", &alice).args(["sessions", "show"]).args(args);
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let view: Value = serde_json::from_str(&show(&[&session[..12], "--json"])).unwrap();
    let shown: Vec<&str> =
        view["entries"].as_array().unwrap().iter().map(|e| e["parts"][0]["text"].as_str().unwrap()).collect();
    assert_eq!(
        (view["session"]["id"].as_str(), shown),
        (Some(session), vec!["hi", "Hello from afar.", "and now?", "Still here."])
    );
    let text = show(&[session]);
    assert!(text.contains(&format!("Session {session}")) && text.contains("── assistant #4 ──\nStill here."), "{text}");
    let mut cmd = laptop.cmd();
    let out = cmd
        .env("SESHAT_REMOTE", &service.url)
        .env("SESHAT_TOKEN", token(&home, "bob", &[]))
        .args(["sessions", "show", session])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("session_not_found"), "another user cannot read it: {err}");
    // `sessions fork` and `sessions rewind` with `--remote` change it on the service.
    let sessions = |args: &[&str]| -> Value {
        let mut cmd = laptop.cmd();
        cmd.env("SESHAT_REMOTE", &service.url).env("SESHAT_TOKEN", &alice).arg("sessions").args(args).arg("--json");
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let forked = sessions(&["fork", session, "--at", "2"]);
    let fork = forked["session"]["id"].as_str().unwrap();
    assert_eq!((forked["parent"].as_str(), forked["at"].as_u64()), (Some(session), Some(2)), "{forked}");
    let fork_view = home.store().acting_for("alice").live_view(fork).unwrap();
    let kept: Vec<&str> = fork_view.entries.iter().map(|e| crate::support::text_of_parts(&e.parts)).collect();
    assert_eq!(kept, ["hi", "Hello from afar."], "the fork is on the service");
    let rewound = sessions(&["rewind", session, "--to", "3"]);
    assert_eq!(
        (rewound["rewound"]["from_seq"].as_u64(), rewound["rewound"]["through_seq"].as_u64()),
        (Some(3), Some(4))
    );
    assert_eq!(home.store().acting_for("alice").live_view(session).unwrap().entries.len(), 2, "rewound on the service");
    // `sessions show --full --remote` shows the whole record as a local show does: every message,
    // the rewind in force, the fork.
    let full: Value = serde_json::from_str(&show(&[session, "--full", "--json"])).unwrap();
    assert_eq!(full["messages"][2]["parts"][0]["text"], "and now?", "{full}");
    assert_eq!(full["messages"].as_array().map(Vec::len), Some(4), "{full}");
    let rewind = &full["rewinds"][0];
    assert_eq!((rewind["from_seq"].as_u64(), rewind["through_seq"].as_u64()), (Some(3), Some(4)), "{full}");
    assert_eq!(full["forks"], json!([[fork, 2]]), "{full}");
    let text = show(&[session, "--full"]);
    assert!(text.contains("messages 3 to 4 are a branch out of the live view"), "{text}");
    assert!(text.contains(&format!("fork {fork} continues after message 2")), "{text}");
    sessions(&["rewind", session, "--undo"]);
    assert_eq!(home.store().acting_for("alice").live_view(session).unwrap().entries.len(), 4, "undone on the service");
    let bodies: Vec<String> =
        server.requests().iter().filter(|r| r.path.ends_with("/chat/completions")).map(|r| r.body.clone()).collect();
    let ruled = bodies.iter().filter(|b| b.contains("Laptop rules: be brief.")).count();
    assert_eq!((bodies.len(), ruled), (2, 2), "both model requests carry the laptop's AGENTS.md");
    // `sessions search` and `sessions export` with `--remote` read the caller's sessions there.
    let found = sessions(&["search", "afar"]);
    let first = &found[0];
    assert_eq!((first["session_id"].as_str(), first["seq"].as_u64()), (Some(session), Some(2)), "{found}");
    assert!(first["snippet"].as_str().is_some_and(|s| s.contains("«afar»")), "{found}");
    let mut cmd = laptop.cmd();
    cmd.env("SESHAT_REMOTE", &service.url).env("SESHAT_TOKEN", token(&home, "bob", &[]));
    let out = cmd.args(["sessions", "search", "afar", "--all"]).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("Nothing matches `afar` in any session."), "{out:?}");
    let mut cmd = laptop.cmd();
    cmd.env("SESHAT_REMOTE", &service.url).env("SESHAT_TOKEN", &alice);
    let out = cmd.args(["sessions", "export", session]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut local = Vec::new();
    home.store().acting_for("alice").export(session, &mut local).unwrap();
    assert!(out.stdout == local, "the remote export is the service's, byte for byte");
    assert!(!laptop.db().exists(), "nothing was written on the laptop");
    // What it exported is imported on the laptop as it is.
    let file = laptop.path().join("session.jsonl");
    std::fs::write(&file, &out.stdout).unwrap();
    laptop.ok(&["sessions", "import", file.to_str().unwrap()]);
    let imported = laptop.store().full_history(session).unwrap();
    assert_eq!(imported.iter().map(crate::support::text_of).collect::<Vec<_>>(), texts);
    // `sessions import --remote` brings a session file to the service as the caller's own;
    // `sessions new --remote` makes one there, under the laptop's project key.
    let remote_as = |token: &str, args: &[&str]| {
        let mut cmd = laptop.cmd();
        cmd.env("SESHAT_REMOTE", &service.url).env("SESHAT_TOKEN", token).arg("sessions").args(args);
        cmd.output().unwrap()
    };
    let out = remote_as(&alice, &["import", file.to_str().unwrap(), "--new-id", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let copy = report["id"].as_str().unwrap();
    assert!(copy != session && report["messages"] == 4, "{report}");
    let copied = home.store().acting_for("alice").full_history(copy).unwrap();
    assert_eq!(copied.iter().map(crate::support::text_of).collect::<Vec<_>>(), texts);
    let bob = token(&home, "bob", &[]);
    // Another user's import of the same file says nothing of alice's session: it is bob's own,
    // under an id of its own.
    let out = remote_as(&bob, &["import", file.to_str().unwrap(), "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let bobs = report["id"].as_str().unwrap();
    assert!(bobs != session && bobs != copy, "{report}");
    let listed = home.store().acting_for("bob").list_sessions(&seshat::store::ListFilter::default()).unwrap();
    assert_eq!(listed.iter().map(|s| s.id.as_str()).collect::<Vec<_>>(), [bobs]);
    assert_eq!(home.store().acting_for("alice").full_history(session).unwrap().len(), texts.len());
    let out = remote_as(&alice, &["new", "--title", "Planning", "--model", "gpt-4o", "--window", "8192", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let made: Value = serde_json::from_slice(&out.stdout).unwrap();
    let info = home.store().acting_for("alice").session(made["id"].as_str().unwrap()).unwrap();
    let laptops = home.store().acting_for("alice").session(session).unwrap().project;
    assert_eq!(
        (info.title.as_deref(), info.model.as_deref(), info.context_window, info.project),
        (Some("Planning"), Some("gpt-4o"), Some(8192), laptops)
    );
    let out = remote_as(&alice, &["new", "--window", "100"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("4096"), "{err}");
    let out = chat(&[]);
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("-p"));
}

/// The interactive `chat --remote` on a terminal: answers stream from the service, a typed Ctrl-C
/// stops the turn there (stored as interrupted, the provider's connection closed), the next turn
/// goes on, and the slash commands the service offers work.
#[test]
fn the_remote_repl_streams_and_a_typed_ctrl_c_stops_the_turn_on_the_service() {
    let closed = Arc::new(Mutex::new(None));
    let mut pieces = openai::text_answer(&["Partial ", "reply", " and the rest."], true);
    let rest = pieces.split_off(2);
    let server = Server::start(vec![
        Reply::UntilClosed { pieces, rest, closed: closed.clone() },
        Reply::Stream { pieces: openai::text_answer(&["Second ", "answer."], true) },
    ]);
    let home = Home::new();
    let base = format!("{}/v1", server.url());
    let config = format!(
        "[plugins]\nprovider = \"openai\"\n[chat]\nmax_output_tokens = 1000\n[providers.openai]\nbase_url = \
         \"{base}\"\nfirst_byte_timeout_secs = 30\nidle_timeout_secs = 60\nmax_retries = 0\n"
    );
    std::fs::write(home.path().join("config.toml"), config).unwrap();
    let alice = token(&home, "alice", &[]);
    let service = Service::start(&home, "ws", &[]);
    let laptop = Home::new();
    let mut cmd = laptop.cmd();
    cmd.env("SESHAT_REMOTE", &service.url).env("SESHAT_TOKEN", &alice).env("TERM", "xterm");
    cmd.args(["chat", "--model", "gpt-4o"]);
    let (mut pty, mut child) = crate::chat_signals::Pty::spawn(cmd);
    wait_for("the banner", || pty.text().contains("/help for commands"));
    pty.send("hello\r");
    wait_for("streamed text", || pty.text().contains("Partial reply"));
    pty.send("\x03");
    wait_for("the interruption notice", || pty.text().contains("interrupted"));
    wait_for("the provider's connection to close", || closed.lock().unwrap().is_some());
    pty.send("again\r");
    wait_for("the second answer", || pty.text().contains("Second answer."));
    pty.send("/sessions\r");
    wait_for("the session list", || pty.text().contains("4 messages"));
    pty.send("/pin\r");
    wait_for("a command not offered remotely", || pty.text().contains("does not work against a remote service"));
    pty.send("/exit\r");
    let status = crate::chat_signals::wait_exit(&mut child, "the remote REPL after /exit");
    assert!(status.success(), "{}", pty.text());
    let sessions = home.store().acting_for("alice").list_sessions(&Default::default()).unwrap();
    let history = home.store().acting_for("alice").full_history(&sessions[0].id).unwrap();
    let texts: Vec<&str> = history.iter().map(crate::support::text_of).collect();
    assert_eq!(texts, ["hello", "Partial reply", "again", "Second answer."]);
    assert_eq!(history[1].status, seshat::conversation::MessageStatus::Interrupted);
    assert!(!laptop.db().exists(), "nothing was stored on the laptop");
}

/// `compact --remote` compacts the caller's session on the service, through the service's
/// provider: a dry run changes nothing, the instructions reach the summary model, another user's
/// session is not found, and `--undo` is refused with what to do instead.
#[test]
fn remote_compact_compacts_the_callers_session_on_the_service() {
    use seshat::conversation::{NewMessage, Role};
    // A server on loopback is asked for its models (a local server's window); this one has no list.
    let server = Server::route(|r| match r.path.as_str() {
        "/v1/models" => Reply::json(404, r#"{"error":"not found"}"#),
        _ => crate::serve::openai_reply(r, "Summary: Ada and Grace planned the release."),
    });
    let home = home_for("openai", &server, "");
    let (alice, bob) = (token(&home, "alice", &[]), token(&home, "bob", &[]));
    let mut store = home.store().acting_for("alice");
    let new = seshat::store::NewSession {
        project: "github.com/acme/app".into(),
        model: Some("gpt-4o".into()),
        context_window: Some(8192),
        ..Default::default()
    };
    let id = store.create_session(new).unwrap().id;
    for i in 0..24 {
        let role = if i % 2 == 0 { Role::User } else { Role::Assistant };
        let text =
            format!("Note {i}: Ada and Grace discussed the release plan. {}", "More detail follows. ".repeat(60));
        store.append(&id, &[NewMessage::text(role, &text)]).unwrap();
    }
    let service = Service::start(&home, "ws", &[]);
    let laptop = Home::new();
    let compact = |token: &str, args: &[&str]| {
        let mut cmd = laptop.cmd();
        cmd.env("SESHAT_REMOTE", &service.url).env("SESHAT_TOKEN", token).arg("compact").args(args);
        cmd.output().unwrap()
    };
    let report = |out: std::process::Output| -> Value {
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    // The window goes to the service when connecting (so it need not ask the provider's).
    let dry = report(compact(&alice, &[&id, "--window", "8192", "--dry-run", "--json"]));
    assert_eq!(dry["dry_run"], true, "{dry}");
    assert!(store.compactions(&id).unwrap().is_empty(), "a dry run changes nothing");
    let out = compact(&bob, &[&id, "--window", "8192"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("session_not_found"), "{err}");
    let done =
        report(compact(&alice, &[&id, "--window", "8192", "--instructions", "keep every person's name", "--json"]));
    assert!(done["dropped"].as_u64().unwrap_or(0) > 0, "{done}");
    assert_eq!(store.compactions(&id).unwrap().len(), 1, "compacted on the service");
    let bodies: Vec<String> =
        server.requests().iter().filter(|r| r.path.ends_with("/chat/completions")).map(|r| r.body.clone()).collect();
    assert!(!bodies.is_empty(), "the service's provider wrote the summary");
    for body in &bodies {
        assert!(body.contains("keep every person's name"), "the instructions reached each summary call: {body}");
    }
    let out = compact(&alice, &[&id, "--undo"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("sessions rewind --remote"), "{err}");
    assert_eq!(store.compactions(&id).unwrap().len(), 1, "nothing undone");
    assert!(!laptop.db().exists(), "nothing was written on the laptop");
}

/// `seshat sessions args…` on `laptop` against `service` with `token`, `input` on its stdin.
fn remote_sessions(laptop: &Home, service: &Service, token: &str, args: &[&str], input: &str) -> std::process::Output {
    let mut cmd = laptop.cmd();
    cmd.env("SESHAT_REMOTE", &service.url).env("SESHAT_TOKEN", token).arg("sessions").args(args);
    crate::support::output_with_stdin(&mut cmd, input)
}

/// `sessions append`, `pin` and `unpin` with `--remote` change the caller's session on the
/// service; another user's session is not found and nothing of it changes.
#[test]
fn remote_append_pin_and_unpin_change_the_callers_session_on_the_service() {
    let home = Home::new();
    let (alice, bob) = (token(&home, "alice", &[]), token(&home, "bob", &[]));
    let service = Service::start(&home, "ws", &[]);
    let mut c = service.client(&alice);
    let session = c.new_session();
    let laptop = Home::new();
    let sessions = |token: &str, args: &[&str], input: &str| remote_sessions(&laptop, &service, token, args, input);
    let store = home.store().acting_for("alice");
    let lines = "{\"role\":\"user\",\"parts\":[{\"type\":\"text\",\"text\":\"remember the kestrel rota\"}]}\n\
                 {\"role\":\"assistant\",\"parts\":[{\"type\":\"text\",\"text\":\"Noted.\"}]}\n";
    let out = sessions(&alice, &["append", &session[..10]], lines);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), format!("{session} 1\n{session} 2\n"));
    let texts = || -> Vec<String> {
        store.full_history(&session).unwrap().iter().map(|m| crate::support::text_of(m).to_string()).collect()
    };
    assert_eq!(texts(), ["remember the kestrel rota", "Noted."]);

    let out = sessions(&bob, &["append", &session], lines);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("line 1") && err.contains("session_not_found"), "{err}");
    let out = sessions(&bob, &["pin", &session, "1"], "");
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("session_not_found"));
    assert_eq!(texts().len(), 2, "bob changed nothing");
    assert!(store.pins(&session).unwrap().is_empty());

    let out = sessions(&alice, &["pin", &session, "1", "--json"], "");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let pinned: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((&pinned["pinned"], &pinned["pins"]), (&json!([1]), &json!([1])), "{pinned}");
    assert_eq!(store.pins(&session).unwrap(), [1], "pinned on the service");
    let listed: Value = serde_json::from_slice(&sessions(&alice, &["pin", &session, "--json"], "").stdout).unwrap();
    assert_eq!(listed, json!({"session": session, "pins": [1]}));
    let out = sessions(&alice, &["unpin", &session, "1"], "");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "Unpinned message 1.", "{out:?}");
    assert!(store.pins(&session).unwrap().is_empty(), "unpinned on the service");
    assert!(!laptop.db().exists(), "nothing was written on the laptop");
}

/// `sessions import --from claude-code --remote` reads the agent's files on the client's machine
/// and brings each session in on the service as the caller's: the same reports and histories as
/// a local import of the same files; a second run changes nothing; another user sees none of
/// them, a read-only token writes none, and nothing is written on the client.
#[test]
fn remote_import_from_another_agent_brings_its_sessions_in_on_the_service_as_a_local_import_does() {
    let home = Home::new();
    let (alice, bob) = (token(&home, "alice", &[]), token(&home, "bob", &[]));
    let reader = token(&home, "alice", &["--read-only"]);
    let service = Service::start(&home, "ws", &[]);
    let laptop = Home::new();
    let files = crate::support::fixture("claude-code");
    let import = |token: &str| {
        let mut cmd = laptop.cmd();
        cmd.env("SESHAT_REMOTE", &service.url).env("SESHAT_TOKEN", token);
        cmd.args(["sessions", "import", "--from", "claude-code"]).arg(&files).arg("--json").output().unwrap()
    };
    let reports = |out: &std::process::Output| -> Vec<Value> {
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice::<Value>(&out.stdout).unwrap().as_array().unwrap().clone()
    };
    let remote = reports(&import(&alice));
    let local_home = Home::new();
    let local = reports(
        &local_home
            .cmd()
            .args(["sessions", "import", "--from", "claude-code"])
            .arg(&files)
            .arg("--json")
            .output()
            .unwrap(),
    );
    assert_eq!(remote.len(), 2, "{remote:?}");
    let without_ids = |r: &[Value]| -> Vec<Value> {
        r.iter()
            .map(|r| {
                let mut r = r.clone();
                r["session"] = Value::Null;
                r
            })
            .collect()
    };
    assert_eq!(without_ids(&remote), without_ids(&local), "the same reports as a local import");
    let (service_store, local_store) = (home.store().acting_for("alice"), local_home.store());
    for (r, l) in remote.iter().zip(&local) {
        let history = |store: &seshat::store::Store, id: &Value| -> Vec<(String, seshat::conversation::Role)> {
            let id = id.as_str().unwrap();
            store.full_history(id).unwrap().iter().map(|m| (crate::support::text_of(m).to_string(), m.role)).collect()
        };
        assert_eq!(history(&service_store, &r["session"]), history(&local_store, &l["session"]));
        assert!(!history(&service_store, &r["session"]).is_empty());
    }
    let again = reports(&import(&alice));
    let outcomes: Vec<&str> = again.iter().map(|r| r["outcome"].as_str().unwrap()).collect();
    assert_eq!(outcomes, ["unchanged", "unchanged"], "{again:?}");
    let refused = import(&reader);
    assert!(!refused.status.success() && String::from_utf8_lossy(&refused.stderr).contains("read_only_token"));
    // Bob's import finds none of alice's: the same files become his own sessions.
    let bobs = reports(&import(&bob));
    let outcomes: Vec<&str> = bobs.iter().map(|r| r["outcome"].as_str().unwrap()).collect();
    assert_eq!(outcomes, ["imported", "imported"], "{bobs:?}");
    assert!(bobs.iter().all(|b| remote.iter().all(|a| a["session"] != b["session"])), "{bobs:?}");
    let listed = |store: seshat::store::Store| store.list_sessions(&Default::default()).unwrap().len();
    assert_eq!(listed(home.store().acting_for("alice")), 2, "no more sessions than the first run made");
    assert_eq!(listed(home.store().acting_for("bob")), 2);
    assert!(!laptop.db().exists(), "nothing was written on the laptop");
}

/// `sessions list --tree --remote` shows the caller's forks under their parents and the rewound
/// branches in force, as the local listing does.
#[test]
fn remote_list_tree_shows_forks_and_rewound_branches_of_the_callers_sessions() {
    let home = Home::new();
    let (alice, bob) = (token(&home, "alice", &[]), token(&home, "bob", &[]));
    let service = Service::start(&home, "ws", &[]);
    let session = service.client(&alice).new_session();
    let laptop = Home::new();
    let sessions = |token: &str, args: &[&str], input: &str| {
        let out = remote_sessions(&laptop, &service, token, args, input);
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let line = |role: &str, text: &str| {
        format!("{{\"role\":\"{role}\",\"parts\":[{{\"type\":\"text\",\"text\":\"{text}\"}}]}}\n")
    };
    let talk: String =
        (1..=3).map(|i| line("user", &format!("ask {i}")) + &line("assistant", &format!("answer {i}"))).collect();
    sessions(&alice, &["append", &session], &talk);
    let fork: Value = serde_json::from_str(&sessions(&alice, &["fork", &session, "--at", "4", "--json"], "")).unwrap();
    let fork = fork["session"]["id"].as_str().unwrap().to_string();
    sessions(&alice, &["rewind", &session, "--to", "3"], "");

    let rows: Value = serde_json::from_str(&sessions(&alice, &["list", "--all", "--tree", "--json"], "")).unwrap();
    let shape: Vec<(&str, u64, usize)> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["id"].as_str().unwrap(), r["depth"].as_u64().unwrap(), r["rewinds"].as_array().unwrap().len()))
        .collect();
    assert_eq!(shape, [(session.as_str(), 0, 1), (fork.as_str(), 1, 0)], "{rows}");
    assert_eq!((&rows[0]["rewinds"][0]["from_seq"], &rows[0]["rewinds"][0]["through_seq"]), (&json!(3), &json!(6)));
    let text = sessions(&alice, &["list", "--all", "--tree"], "");
    assert!(text.contains(&format!("(fork of {} after 4)", &session[..8])), "{text}");
    assert!(text.contains("┄ rewound 3–6 (a branch: `seshat sessions fork"), "{text}");
    let theirs = sessions(&bob, &["list", "--all", "--tree"], "");
    assert_eq!(theirs.trim(), "No sessions yet on the service.", "bob sees none of alice's");
}

/// `knowledge add --remote`: files read on the member's laptop are indexed on the service in the
/// team's scope by a read-write member (again: unchanged), refused with `scope_denied` for a
/// read-only one and found by every member's search; nothing is written on the laptop.
#[test]
fn a_team_member_adds_documents_remotely_and_a_read_only_one_is_refused() {
    let home = Home::new();
    let (alice, bob) = (token(&home, "alice", &[]), token(&home, "bob", &[]));
    home.ok(&["scopes", "create", "platform"]);
    home.ok(&["scopes", "grant", "platform", "alice"]);
    home.ok(&["scopes", "grant", "platform", "bob", "--read-only"]);
    let service = Service::start(&home, "ws", &[]);
    let laptop = Home::new();
    let docs = laptop.path().join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    std::fs::write(docs.join("runbook.md"), "# Runbook\n\nRestart the kestrel queue before noon.\n").unwrap();
    std::fs::write(docs.join("logo.png"), [0x89, b'P', b'N', b'G']).unwrap();
    let knowledge = |token: &str, args: &[&str]| {
        let mut cmd = laptop.cmd();
        cmd.env("SESHAT_REMOTE", &service.url).env("SESHAT_TOKEN", token).arg("knowledge").args(args);
        cmd.output().unwrap()
    };
    let dir = docs.to_str().unwrap();
    let out = knowledge(&alice, &["add", dir, "--scope", "team:platform", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let added: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((added["indexed"].as_u64(), added["files"].as_u64()), (Some(1), Some(2)), "{added}");
    assert!(added["skipped"][0]["path"].as_str().unwrap().ends_with("logo.png"), "{added}");
    let again: Value =
        serde_json::from_slice(&knowledge(&alice, &["add", dir, "--scope", "team:platform", "--json"]).stdout).unwrap();
    assert_eq!((again["indexed"].as_u64(), again["unchanged"].as_u64()), (Some(0), Some(1)), "{again}");

    let refused = knowledge(&bob, &["add", dir, "--scope", "team:platform"]);
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success() && err.contains("scope_denied"), "{err}");
    let found = knowledge(&bob, &["search", "kestrel queue", "--json"]);
    assert!(found.status.success(), "{}", String::from_utf8_lossy(&found.stderr));
    let found: Value = serde_json::from_slice(&found.stdout).unwrap();
    assert!(
        found["hits"][0]["path"].as_str().is_some_and(|p| p.ends_with("runbook.md")),
        "bob reads the team's: {found}"
    );
    let docs = home
        .store()
        .acting_for("alice")
        .knowledge_documents(seshat::store::KnowledgeFilter { project: "", scope: None });
    assert_eq!(docs.unwrap().len(), 1, "stored once, in the team's scope");
    assert!(!laptop.db().exists(), "nothing was written on the laptop");
}

/// The operator's own hooks (in the configuration `seshat serve --listen` runs with) are told
/// nothing of a service user's sessions: a user's turn runs no command.
#[test]
fn a_service_runs_none_of_its_operators_hooks_on_its_users_sessions() {
    let server = Server::start(vec![Reply::Stream { pieces: openai::text_answer(&["Hello."], true) }]);
    let hook = "[[hooks.user_prompt]]\ncommand = 'cat >> told-the-operator.jsonl'\n";
    let home = home_for("openai", &server, hook);
    let alice = token(&home, "alice", &[]);
    let service = Service::start(&home, "ws", &[]);
    let laptop = Home::new();
    let mut cmd = laptop.cmd();
    cmd.env("SESHAT_REMOTE", &service.url).env("SESHAT_TOKEN", &alice).args([
        "chat",
        "-p",
        "my private words",
        "--model",
        "gpt-4o",
    ]);
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "Hello.");
    assert!(!home.path().join("told-the-operator.jsonl").exists(), "the operator's hook ran on alice's turn");
    // The same hook runs for the operator's own chat on this machine.
    let local = crate::chat::chat(&home, &["-p", "mine", "--model", "gpt-4o"], &[]);
    let told = std::fs::read_to_string(home.path().join("told-the-operator.jsonl")).unwrap_or_default();
    assert!(told.contains("\"prompt\":\"mine\""), "{told}{}", String::from_utf8_lossy(&local.stderr));
}
