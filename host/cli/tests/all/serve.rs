//! `seshat serve` as a process: JSON-RPC over real stdio against a loopback OpenAI-compatible
//! server; every line either side writes is checked against host/protocol/protocol.schema.json.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use crate::chat::{KEY, home_for};
use crate::support::Home;
use crate::support::server::{Reply, Server, openai};

/// Every line of a conversation: whether the client wrote it (`None`: invalid on purpose), and
/// the line.
type Traffic = Arc<Mutex<Vec<(Option<bool>, Value)>>>;

/// A `seshat serve` child and every line of the conversation with it.
pub struct ServeClient {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<Value>,
    /// Every line, with whether the client wrote it (`None`: a line the test made invalid on
    /// purpose, not checked).
    traffic: Traffic,
    next: u64,
    /// Lines read while waiting for something else.
    backlog: Vec<Value>,
}

impl ServeClient {
    pub fn start(home: &Home) -> Self {
        let mut child = home
            .cmd()
            .env("OPENAI_API_KEY", KEY)
            .env("SESHAT_CACHE_DIR", crate::support::shared_cache().parent().unwrap().join("chat-cache"))
            .arg("serve")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn seshat serve");
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let traffic = Arc::new(Mutex::new(Vec::new()));
        let (tx, lines) = mpsc::channel();
        let seen = traffic.clone();
        std::thread::spawn(move || {
            for line in stdout.lines() {
                let Ok(line) = line else { break };
                let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
                seen.lock().unwrap().push((Some(false), v.clone()));
                if tx.send(v).is_err() {
                    break;
                }
            }
        });
        ServeClient { child, stdin, lines, traffic, next: 0, backlog: Vec::new() }
    }

    pub fn send(&mut self, v: Value) {
        self.traffic.lock().unwrap().push((Some(true), v.clone()));
        writeln!(self.stdin.as_mut().expect("stdin is open"), "{v}").unwrap();
    }

    /// A line that breaks the protocol on purpose (not checked against the schema).
    pub fn send_invalid(&mut self, v: Value) {
        self.traffic.lock().unwrap().push((None, v.clone()));
        writeln!(self.stdin.as_mut().expect("stdin is open"), "{v}").unwrap();
    }

    /// A request that breaks the protocol on purpose (its answer is still checked).
    pub fn call_invalid(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        let v = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.traffic.lock().unwrap().push((None, v.clone()));
        writeln!(self.stdin.as_mut().expect("stdin is open"), "{v}").unwrap();
        self.wait(&format!("answer to {method}"), |v| v["id"] == id && v.get("method").is_none())
    }

    /// The next line the server writes that `pick` accepts (others are kept for later).
    pub fn wait(&mut self, what: &str, pick: impl Fn(&Value) -> bool) -> Value {
        if let Some(i) = self.backlog.iter().position(&pick) {
            return self.backlog.remove(i);
        }
        loop {
            let v = self.lines.recv_timeout(Duration::from_secs(60)).unwrap_or_else(|_| panic!("no {what} came"));
            if pick(&v) {
                return v;
            }
            self.backlog.push(v);
        }
    }

    /// Sends a request and returns its whole answer (result or error).
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.wait(&format!("answer to {method}"), |v| v["id"] == id && v.get("method").is_none())
    }

    /// A request's result, asserting it succeeded.
    pub fn ok(&mut self, method: &str, params: Value) -> Value {
        let answer = self.call(method, params);
        assert!(answer.get("error").is_none(), "{method} failed: {answer}");
        answer["result"].clone()
    }

    pub fn initialize(&mut self, params: Value) -> Value {
        self.ok("initialize", params)
    }

    /// The notifications of `turn` up to its `turn/completed`, in order.
    pub fn turn_notifications(&mut self, turn: u64) -> Vec<Value> {
        let mut out = Vec::new();
        loop {
            let n = self.wait("a notification of the turn", |v| v["params"]["turn"] == turn && v.get("id").is_none());
            let done = n["method"] == "turn/completed";
            out.push(n);
            if done {
                return out;
            }
        }
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits for the server to exit with its input still open (stopped by a signal); checks every
    /// line against the schema.
    pub fn wait_exit(mut self) -> std::process::ExitStatus {
        let status = self.child.wait().unwrap();
        check_schema(&self.traffic.lock().unwrap());
        status
    }

    /// SIGKILLs the server and reaps it; checks every line against the schema.
    pub fn kill(mut self) {
        self.child.kill().expect("SIGKILL seshat serve");
        self.child.wait().unwrap();
        check_schema(&self.traffic.lock().unwrap());
    }

    /// Closes stdin and waits for the server to exit; checks every line against the schema.
    pub fn close(mut self) -> std::process::ExitStatus {
        drop(self.stdin.take());
        let status = self.child.wait().unwrap();
        check_schema(&self.traffic.lock().unwrap());
        status
    }
}

/// Every line against host/protocol/protocol.schema.json: the client's as a `client_message`, the
/// server's as a `server_message`.
fn check_schema(traffic: &[(Option<bool>, Value)]) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../protocol/protocol.schema.json");
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let side = |def: &str| {
        let mut s = schema.clone();
        s.as_object_mut().unwrap().remove("anyOf");
        s["$ref"] = format!("#/$defs/{def}").into();
        jsonschema::validator_for(&s).expect("the protocol's schema is valid")
    };
    let (client, server) = (side("client_message"), side("server_message"));
    assert!(
        traffic.iter().filter(|(c, _)| *c == Some(true)).count() >= 2
            && traffic.iter().filter(|(c, _)| *c == Some(false)).count() >= 2
    );
    for (from_client, line) in traffic {
        let validator = match from_client {
            Some(true) => &client,
            Some(false) => &server,
            None => continue,
        };
        let errors: Vec<String> =
            validator.iter_errors(line).map(|e| format!("{e} at {}", e.instance_path())).collect();
        assert!(errors.is_empty(), "this line breaks protocol.schema.json: {line}\n{errors:#?}");
    }
}

pub(crate) fn session(c: &mut ServeClient) -> String {
    c.ok("session/new", json!({}))["session"]["id"].as_str().unwrap().to_string()
}

#[test]
fn a_turn_streams_its_events_and_completes_and_the_session_holds_it() {
    let server = Server::start(vec![Reply::Stream { pieces: openai::text_answer(&["Hel", "lo ", "there."], true) }]);
    let home = home_for("openai", &server, "");
    let mut c = ServeClient::start(&home);
    // Before initialize: refused, as JSON-RPC servers of this kind do.
    let early = c.call("session/list", json!({}));
    assert_eq!(
        (early["error"]["code"].as_i64(), early["error"]["data"]["code"].as_str()),
        (Some(-32002), Some("not_initialized"))
    );
    // The configuration may be read first; it names the providers `initialize` accepts.
    let config = c.ok("config/get", json!({}));
    let providers: Vec<&str> = config["providers"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(providers.contains(&"openai") && providers.contains(&"anthropic"), "{config}");
    // A provider the server cannot select is refused by `initialize`, naming those it can.
    let refused = c.call("initialize", json!({"provider": "nope", "model": "gpt-4o"}));
    assert_eq!(refused["error"]["data"]["code"], "provider_not_configured", "{refused}");
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(message.contains("`nope`") && message.contains("`openai`"), "{message}");
    // A client speaking another protocol version is refused, naming both and whom to upgrade.
    for (theirs, upgrade) in [("2026-12-03", "upgrade the client"), ("2099-01-01", "upgrade this server")] {
        let refused = c.call("initialize", json!({"protocol_version": theirs, "model": "gpt-4o"}));
        assert_eq!(refused["error"]["data"]["code"], "protocol_mismatch", "{refused}");
        let message = refused["error"]["message"].as_str().unwrap();
        assert!(
            message.contains(theirs)
                && message.contains(seshat_protocol::PROTOCOL_VERSION)
                && message.contains(upgrade),
            "{message}"
        );
    }
    let init = c.initialize(json!({
        "protocol_version": seshat_protocol::PROTOCOL_VERSION, "client_info": {"name": "tests"}, "model": "gpt-4o"
    }));
    assert_eq!(init["protocol_version"], seshat_protocol::PROTOCOL_VERSION);
    let id = session(&mut c);
    let started = c.ok("turn/start", json!({"session": id, "text": "Say hello"}));
    // The answer comes before the turn's first notification (the lines kept while waiting for it).
    let early: Vec<&Value> = c.backlog.iter().filter(|v| v["params"]["session"] == id).collect();
    assert_eq!(early, Vec::<&Value>::new(), "notifications before turn/start's answer");
    let turn = started["turn"].as_u64().unwrap();
    let notes = c.turn_notifications(turn);
    let text: String = notes
        .iter()
        .filter(|n| n["method"] == "turn/event" && n["params"]["event"]["type"] == "text_delta")
        .map(|n| n["params"]["event"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(text, "Hello there.", "the deltas, in order");
    let done = notes.last().unwrap();
    assert_eq!(done["params"]["outcome"]["text"], "Hello there.");
    assert_eq!(done["params"]["outcome"]["interrupted"], false);
    let got = c.ok("session/get", json!({"session": id, "full": true}));
    let history = got["history"].as_array().unwrap();
    assert_eq!(history.len(), 2, "{got}");
    assert_eq!(history[1]["parts"][0]["text"], "Hello there.");
    let req = server.requests()[0].json();
    assert_eq!(req["messages"].as_array().unwrap().last().unwrap()["content"], "Say hello");
    assert_eq!(server.requests()[0].header("authorization"), Some(format!("Bearer {KEY}").as_str()));
    let listed = c.ok("session/list", json!({}));
    assert_eq!(listed["sessions"][0]["id"], id);
    // Bad input gets its code.
    let bad = c.call_invalid("turn/start", json!({"session": id}));
    assert_eq!(bad["error"]["code"], -32602);
    let message = bad["error"]["message"].as_str().unwrap();
    assert!(message.contains("turn/start") && message.contains("missing field `text`"), "{bad}");
    // A parameter the method does not take (an older client's camelCase) is refused by name, not
    // silently ignored.
    let old = c.call_invalid("session/list", json!({"all": true, "maxCount": 3}));
    assert_eq!(old["error"]["data"]["code"], "invalid_params", "{old}");
    assert!(old["error"]["message"].as_str().unwrap().contains("unknown field `maxCount`"), "{old}");
    let none = c.call("session/get", json!({"session": "01NOSUCHSESSION00000000000"}));
    assert_eq!(none["error"]["code"], -32000, "{none}");
    let unknown = c.call_invalid("session/fly", json!({}));
    assert_eq!(unknown["error"]["code"], -32601);
    assert!(c.close().success());
    let _ = home;
}

#[test]
fn a_tool_the_client_registered_is_called_back_and_its_answer_reaches_the_model() {
    let server = Server::start(vec![
        Reply::Stream { pieces: openai::tool_answer("call_1", "lookup", r#"{"key":"answer"}"#) },
        Reply::Stream { pieces: openai::text_answer(&["It is 42."], true) },
    ]);
    let home = home_for("openai", &server, "");
    let mut c = ServeClient::start(&home);
    c.initialize(json!({"model": "gpt-4o", "tools": [{"name": "lookup", "description": "Looks a key up",
        "input_schema": {"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]}}]}));
    let id = session(&mut c);
    let turn = c.ok("turn/start", json!({"session": id, "text": "what is the answer?"}))["turn"].as_u64().unwrap();
    let call = c.wait("the tool call", |v| v["method"] == "tool/call");
    assert_eq!(call["params"]["name"], "lookup");
    assert_eq!(call["params"]["arguments"], json!({"key": "answer"}));
    assert_eq!(call["params"]["session"], id);
    c.send(json!({"jsonrpc": "2.0", "id": call["id"], "result": {"content": "42", "is_error": false}}));
    let notes = c.turn_notifications(turn);
    let result = notes.iter().find(|n| n["method"] == "turn/tool_result").expect("the result was reported");
    assert_eq!(
        (result["params"]["content"].as_str(), result["params"]["is_error"].as_bool()),
        (Some("42"), Some(false))
    );
    assert_eq!(notes.last().unwrap()["params"]["outcome"]["text"], "It is 42.");
    let first = server.requests()[0].json();
    let offered: Vec<&str> =
        first["tools"].as_array().unwrap().iter().map(|t| t["function"]["name"].as_str().unwrap()).collect();
    assert!(offered.contains(&"lookup"), "{offered:?}");
    let second = server.requests()[1].json().to_string();
    assert!(second.contains("\"42\"") && second.contains("call_1"), "the answer went to the model: {second}");
    assert!(c.close().success());
}

#[test]
fn a_second_turn_on_a_busy_session_is_refused_and_interrupt_and_eof_store_what_arrived() {
    let mut pieces = openai::text_answer(&["Partial ", "answer"], false);
    pieces.truncate(2);
    let server = Server::start(vec![
        Reply::Stall { pieces: pieces.clone(), pause: Duration::from_secs(30) },
        Reply::Stall { pieces, pause: Duration::from_secs(30) },
    ]);
    let home = home_for("openai", &server, "");
    let mut c = ServeClient::start(&home);
    c.initialize(json!({"model": "gpt-4o"}));
    let id = session(&mut c);
    let turn = c.ok("turn/start", json!({"session": id, "text": "go"}))["turn"].as_u64().unwrap();
    c.wait("the first delta", |v| v["method"] == "turn/event" && v["params"]["event"]["type"] == "text_delta");
    let busy = c.call("turn/start", json!({"session": id, "text": "again"}));
    assert_eq!(busy["error"]["data"]["code"], "session_busy", "{busy}");
    // Another session is not held up.
    let other = session(&mut c);
    assert_ne!(other, id);
    assert_eq!(c.ok("turn/interrupt", json!({"session": id}))["interrupted"], true);
    let notes = c.turn_notifications(turn);
    let outcome = &notes.last().unwrap()["params"]["outcome"];
    assert_eq!(outcome["interrupted"], true, "{outcome}");
    assert_eq!(outcome["error_code"], "interrupted");
    // The session is free again; this turn is cut short by the client going away.
    let again = c.ok("turn/start", json!({"session": id, "text": "once more"}))["turn"].as_u64().unwrap();
    assert!(again > turn);
    c.wait("the second turn's delta", |v| v["method"] == "turn/event" && v["params"]["turn"] == again);
    let status = c.close();
    assert!(status.success(), "{status}");
    let history = home.store().full_history(&id).unwrap();
    let texts: Vec<String> = history.iter().map(|m| crate::support::text_of(m).to_string()).collect();
    assert_eq!((texts.len(), texts[0].as_str(), texts[2].as_str()), (4, "go", "once more"), "{texts:?}");
    assert!(
        texts[1].starts_with("Partial") && texts[3].starts_with("Partial"),
        "both cut-short answers were stored: {texts:?}"
    );
    assert!(history[3].status == seshat::conversation::MessageStatus::Interrupted, "{:?}", history[3].status);
}

/// A client of `seshat serve --listen unix:PATH`: lines over the socket.
/// A `seshat serve --listen` on a socket in `home` (once it says it listens; what it says after
/// goes to the test's stderr), and the socket's path.
pub fn listening(home: &Home) -> (Child, std::path::PathBuf) {
    let socket = home.path().join("seshat.sock");
    let mut child = home
        .cmd()
        .env("OPENAI_API_KEY", KEY)
        .args(["serve", "--listen", &format!("unix:{}", socket.display())])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut said = String::new();
    stderr.read_line(&mut said).unwrap();
    assert!(said.starts_with("seshat serve: listening on unix:"), "{said}");
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::stderr()));
    (child, socket)
}

struct SocketClient {
    writer: std::os::unix::net::UnixStream,
    reader: BufReader<std::os::unix::net::UnixStream>,
    next: u64,
    /// Lines read while waiting for another.
    backlog: Vec<Value>,
}

impl SocketClient {
    fn connect(path: &std::path::Path) -> Self {
        let stream = std::os::unix::net::UnixStream::connect(path).expect("connect to the socket");
        SocketClient {
            reader: BufReader::new(stream.try_clone().unwrap()),
            writer: stream,
            next: 0,
            backlog: Vec::new(),
        }
    }

    /// Sends a request and returns its answer (notifications meanwhile are kept for [`Self::wait`]).
    fn call(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        writeln!(self.writer, "{}", json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).unwrap();
        self.wait(|v| v["id"] == id && v.get("method").is_none())
    }

    /// The next line `pick` accepts (others are kept).
    fn wait(&mut self, pick: impl Fn(&Value) -> bool) -> Value {
        if let Some(i) = self.backlog.iter().position(&pick) {
            return self.backlog.remove(i);
        }
        loop {
            let mut line = String::new();
            assert!(self.reader.read_line(&mut line).unwrap() > 0, "the server closed the connection");
            let v: Value = serde_json::from_str(&line).unwrap();
            if pick(&v) {
                return v;
            }
            self.backlog.push(v);
        }
    }
}

#[test]
fn on_a_unix_socket_several_clients_share_one_database_and_a_busy_session_is_busy_for_all() {
    use std::os::unix::fs::PermissionsExt;
    let mut pieces = openai::text_answer(&["Partial ", "answer"], false);
    pieces.truncate(2);
    let server = Server::start(vec![
        Reply::Stall { pieces, pause: Duration::from_secs(30) },
        Reply::Stream { pieces: openai::text_answer(&["Other."], true) },
    ]);
    let home = home_for("openai", &server, "");
    let (mut child, socket) = listening(&home);
    assert_eq!(std::fs::metadata(&socket).unwrap().permissions().mode() & 0o777, 0o600, "only this user");
    let mut a = SocketClient::connect(&socket);
    let mut b = SocketClient::connect(&socket);
    for c in [&mut a, &mut b] {
        assert!(c.call("initialize", json!({"model": "gpt-4o"})).get("error").is_none());
    }
    let id = a.call("session/new", json!({}))["result"]["session"]["id"].as_str().unwrap().to_string();
    assert!(a.call("turn/start", json!({"session": id, "text": "go"})).get("error").is_none());
    // b sees a's session (one database) and may not start a turn in it while a's runs.
    let listed = b.call("session/list", json!({}));
    assert_eq!(listed["result"]["sessions"][0]["id"], id);
    let busy = b.call("turn/start", json!({"session": id, "text": "me too"}));
    assert_eq!(busy["error"]["data"]["code"], "session_busy", "{busy}");
    let other = b.call("session/new", json!({}))["result"]["session"]["id"].as_str().unwrap().to_string();
    assert!(b.call("turn/start", json!({"session": other, "text": "hi"})).get("error").is_none());
    // a leaves: its turn is stored as interrupted; the server goes on serving b.
    drop(a);
    let texts = |s: &str| -> Vec<String> {
        home.store().full_history(s).unwrap().iter().map(|m| crate::support::text_of(m).to_string()).collect()
    };
    crate::support::wait_for("a's turn to be stored", || texts(&id).len() == 2);
    let history = home.store().full_history(&id).unwrap();
    assert!(texts(&id)[1].starts_with("Partial"), "what arrived was kept: {:?}", texts(&id));
    assert_eq!(history[1].status, seshat::conversation::MessageStatus::Interrupted);
    assert!(b.call("session/get", json!({"session": other})).get("error").is_none());
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn the_socket_is_never_open_to_others_even_under_umask_000() {
    use rustix::fs::inotify;
    use std::os::unix::fs::PermissionsExt;
    let home = Home::new();
    let socket = home.path().join("seshat.sock");
    // Watch the directory: the socket's name must arrive by a rename of a file already 0600,
    // never be created in place (where it would have the umask's mode until a chmod).
    let watch = inotify::init(inotify::CreateFlags::CLOEXEC).unwrap();
    inotify::add_watch(&watch, home.path(), inotify::WatchFlags::CREATE | inotify::WatchFlags::MOVED_TO).unwrap();
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(r#"umask 000; exec "$0" serve --listen "unix:$1""#)
        .arg(env!("CARGO_BIN_EXE_seshat"))
        .arg(&socket)
        .env_clear()
        .env("SESHAT_HOME", home.path())
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("GIT_CEILING_DIRECTORIES", home.path().parent().unwrap())
        .current_dir(home.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut buf = [std::mem::MaybeUninit::uninit(); 4096];
    let mut events = inotify::Reader::new(&watch, &mut buf);
    let arrived = loop {
        let e = events.next().expect("an inotify event");
        if e.file_name().is_some_and(|n| n.to_bytes() == b"seshat.sock") {
            break e.events();
        }
    };
    assert!(
        arrived.contains(inotify::ReadFlags::MOVED_TO) && !arrived.contains(inotify::ReadFlags::CREATE),
        "the socket was created in place: {arrived:?}"
    );
    assert_eq!(std::fs::metadata(&socket).unwrap().permissions().mode() & 0o777, 0o600);
    let mut said = String::new();
    BufReader::new(child.stderr.take().unwrap()).read_line(&mut said).unwrap();
    assert!(said.starts_with("seshat serve: listening on unix:"), "{said}");
    let leftovers: Vec<_> = std::fs::read_dir(home.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".seshat-listen-"))
        .collect();
    assert_eq!(leftovers, Vec::<String>::new(), "the private directory is removed");
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn turn_interrupt_stops_a_turn_started_on_another_connection_by_any_prefix_and_is_false_when_idle() {
    let mut pieces = openai::text_answer(&["Partial ", "answer"], false);
    pieces.truncate(2);
    let server = Server::start(vec![Reply::Stall { pieces, pause: Duration::from_secs(60) }]);
    let home = home_for("openai", &server, "");
    let (mut child, socket) = listening(&home);
    let mut a = SocketClient::connect(&socket);
    let mut b = SocketClient::connect(&socket);
    for c in [&mut a, &mut b] {
        assert!(c.call("initialize", json!({"model": "gpt-4o"})).get("error").is_none());
    }
    let id = a.call("session/new", json!({}))["result"]["session"]["id"].as_str().unwrap().to_string();
    let idle = b.call("turn/interrupt", json!({"session": id}));
    assert_eq!(idle["result"]["interrupted"], false, "nothing runs yet: {idle}");
    let turn = a.call("turn/start", json!({"session": id, "text": "go"}))["result"]["turn"].as_u64().unwrap();
    a.wait(|v| v["method"] == "turn/event" && v["params"]["turn"] == turn);
    // b never started it, and names it by a prefix, as every other method accepts.
    let prefix = &id[..12];
    let stopped = b.call("turn/interrupt", json!({"session": prefix}));
    assert_eq!(stopped["result"]["interrupted"], true, "{stopped}");
    let done = a.wait(|v| v["method"] == "turn/completed" && v["params"]["turn"] == turn);
    assert_eq!(done["params"]["outcome"]["error_code"], "interrupted", "{done}");
    let history = home.store().full_history(&id).unwrap();
    assert_eq!(history.last().unwrap().status, seshat::conversation::MessageStatus::Interrupted);
    let unknown = b.call("turn/interrupt", json!({"session": "01NOSUCHSESSION00000000000"}));
    assert_eq!(unknown["error"]["code"], -32000, "{unknown}");
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn compaction_memory_knowledge_and_config_are_served_with_their_codes() {
    let server = Server::start(vec![Reply::Stream { pieces: openai::text_answer(&["Noted."], true) }]);
    let home = home_for("openai", &server, "");
    let docs = home.path().join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    std::fs::write(docs.join("guide.md"), "# Guide\n\nRestart the flux capacitor.\n").unwrap();
    assert!(home.run(&["knowledge", "add", "docs"]).status.success());
    let mut c = ServeClient::start(&home);
    c.initialize(json!({"model": "gpt-4o", "auto_compact": false, "compact_summary_model": "gpt-4o-mini"}));
    let config = c.ok("config/get", json!({}));
    assert_eq!(config["provider"], "openai", "{config}");
    let found = c.ok("knowledge/search", json!({"query": "flux capacitor"}));
    assert_eq!((found["mode"].as_str(), found["hits"].as_array().unwrap().len()), (Some("lexical"), 1), "{found}");
    let created = c.ok(
        "memory/create_entities",
        json!({"scope": "user", "entities": [
        {"name": "Ada", "entityType": "person", "observations": ["prefers tabs"]}]}),
    );
    assert_eq!(created["entities"][0]["name"], "Ada");
    let searched = c.ok("memory/search_nodes", json!({"query": "tabs"}));
    assert_eq!(searched["entities"][0]["name"], "Ada");
    let missing =
        c.call("memory/add_observations", json!({"observations": [{"entityName": "Nobody", "contents": ["x"]}]}));
    assert_eq!(missing["error"]["data"]["code"], "memory_failed", "{missing}");
    assert!(missing["error"]["message"].as_str().unwrap().contains("Nobody"), "{missing}");
    // Notes: set (replacing), listed newest first, found ignoring case; bad input named.
    c.ok("notes/set", json!({"key": "style", "value": "long answers"}));
    let set = c.ok("notes/set", json!({"key": "style", "value": "short answers", "scope": "user"}));
    assert_eq!((set["note"]["key"].as_str(), set["note"]["scope"].as_str()), (Some("style"), Some("user")), "{set}");
    c.ok("notes/set", json!({"key": "editor", "value": "helix", "scope": "cross"}));
    let listed = c.ok("notes/list", json!({}));
    assert_eq!(listed["notes"].as_array().map(Vec::len), Some(1), "one user note, replaced: {listed}");
    assert_eq!(listed["notes"][0]["value"], "short answers", "{listed}");
    let found = c.ok("notes/search", json!({"query": "HELIX"}));
    assert_eq!(found["notes"][0]["key"], "editor", "{found}");
    let bad = c.call_invalid("notes/list", json!({"scope": "team"}));
    assert_eq!(bad["error"]["data"]["code"], "invalid_params", "{bad}");
    assert!(bad["error"]["message"].as_str().unwrap().contains("`team`"), "{bad}");
    let empty = c.call("notes/set", json!({"key": " ", "value": "x"}));
    assert_eq!(empty["error"]["data"]["code"], "invalid_params", "{empty}");
    assert_eq!(
        home.store().memory(None).notes(&seshat::memory::Scope::User).unwrap().len(),
        1,
        "nothing else was written"
    );
    let id = session(&mut c);
    let turn = c.ok("turn/start", json!({"session": id, "text": "remember this"}))["turn"].as_u64().unwrap();
    c.turn_notifications(turn);
    // Nothing to compact in two messages: the report says so, with nothing dropped.
    let compacted = c.ok("session/compact", json!({"session": id, "instructions": "keep the names"}));
    assert_eq!(compacted["report"]["dropped"], 0, "{compacted}");
    // Branches: a fork after the request, a rewind of the request (its text given back) and its
    // undo; bad points answered with their codes, nothing written.
    let forked = c.ok("session/fork", json!({"session": id, "at": 1, "title": "another way"}));
    assert_eq!((forked["at"].as_u64(), forked["session"]["parent_id"].as_str()), (Some(1), Some(id.as_str())));
    assert_eq!(forked["session"]["title"], "another way", "{forked}");
    let rewound = c.ok("session/rewind", json!({"session": id, "last": 1}));
    assert_eq!((rewound["from_seq"].as_u64(), rewound["through_seq"].as_u64()), (Some(1), Some(2)), "{rewound}");
    assert_eq!(rewound["request"], "remember this", "{rewound}");
    assert_eq!(c.ok("session/get", json!({"session": id}))["view"]["entries"].as_array().map(Vec::len), Some(0));
    let undone = c.ok("session/rewind", json!({"session": id, "undo": true}));
    assert_eq!((undone["undone"].as_bool(), undone["from_seq"].as_u64()), (Some(true), Some(1)), "{undone}");
    assert_eq!(c.ok("session/get", json!({"session": id}))["view"]["entries"].as_array().map(Vec::len), Some(2));
    let bad = c.call("session/fork", json!({"session": id, "at": 9}));
    assert_eq!(bad["error"]["data"]["code"], "seq_out_of_range", "{bad}");
    let bad = c.call("session/rewind", json!({"session": id}));
    assert_eq!(bad["error"]["data"]["code"], "invalid_params", "{bad}");
    let bad = c.call("session/rewind", json!({"session": id, "undo": true}));
    assert_eq!(bad["error"]["data"]["code"], "nothing_to_rewind", "{bad}");
    assert_eq!(home.store().list_sessions(&Default::default()).unwrap().len(), 2, "the session and its one fork");
    let deleted = c.ok("session/delete", json!({"session": id}));
    assert_eq!(deleted["deleted"], id);
    let gone = c.call("session/get", json!({"session": id}));
    assert_eq!(gone["error"]["data"]["code"], "session_not_found", "{gone}");
    assert!(c.close().success());
}

/// A reply in the OpenAI wire format, streamed when the request asks to stream.
pub(crate) fn openai_reply(r: &crate::support::server::Recorded, text: &str) -> Reply {
    if r.json()["stream"] == true {
        Reply::Stream { pieces: openai::text_answer(&[text], false) }
    } else {
        Reply::json(
            200,
            &json!({"id": "c", "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                "finish_reason": "stop"}], "usage": {"prompt_tokens": 100, "completion_tokens": 10}})
            .to_string(),
        )
    }
}

/// A server whose model tells a long story first, then answers shortly; `summ-model` summarises.
fn long_story_server() -> Server {
    Server::route(|r| {
        let body = r.json();
        let text = match body["model"].as_str() {
            Some("summ-model") => "Summary: a long story was told.".to_string(),
            _ if body["messages"].as_array().is_some_and(|m| m.len() <= 2) => "A long story goes on. ".repeat(600),
            _ => "Short.".to_string(),
        };
        openai_reply(r, &text)
    })
}

#[test]
fn an_automatic_compaction_is_announced_before_it_runs_and_reported_after() {
    let server = long_story_server();
    // Summaries on the path (the service writes them in the background by default: below).
    let home = home_for("openai", &server, "[compaction]\nbackground = false\n");
    let mut c = ServeClient::start(&home);
    c.initialize(json!({"model": "gpt-4o", "window": 4096, "compact_summary_model": "summ-model"}));
    let id = session(&mut c);
    let first = c.ok("turn/start", json!({"session": id, "text": "tell me a long story"}))["turn"].as_u64().unwrap();
    let quiet = c.turn_notifications(first);
    assert!(!quiet.iter().any(|n| n["method"].as_str().unwrap().starts_with("turn/compaction")), "{quiet:#?}");
    let second = c.ok("turn/start", json!({"session": id, "text": "and then?"}))["turn"].as_u64().unwrap();
    let notes = c.turn_notifications(second);
    let at = |m: &str| notes.iter().position(|n| n["method"] == m).unwrap_or_else(|| panic!("no {m}: {notes:#?}"));
    let (started, summarising, finished, first_text) =
        (at("turn/compaction_started"), at("turn/compaction_summarising"), at("turn/compaction"), at("turn/event"));
    assert!(
        started < summarising && summarising < finished && finished < first_text,
        "announced, what it will summarise, done, then the answer: {notes:#?}"
    );
    let (s, report) = (&notes[started]["params"], &notes[finished]["params"]["report"]);
    let what = &notes[summarising]["params"]["summarising"];
    assert_eq!(
        (what["tokens"].as_u64(), what["marks"]["window"].as_u64()),
        (s["tokens"].as_u64(), Some(4096)),
        "{what}"
    );
    assert_eq!(what["seqs"], json!([{"from": 1, "through": 2}]), "the first turn: {what}");
    assert_eq!(what["seqs"], report["summarised_seqs"], "what then left the view: {report}");
    assert_eq!((what["trigger"].as_str(), what["model"].as_str()), (Some("auto"), Some("summ-model")), "{what}");
    assert_eq!((s["trigger"].as_str(), s["window"].as_u64()), (Some("auto"), Some(4096)), "{s}");
    assert!(s["tokens"].as_u64().unwrap() > 4096 / 2, "what was in use when it started: {s}");
    assert_eq!(report["summarised"], true, "{report}");
    assert_eq!(report["summary_model"], "summ-model", "{report}");
    assert!(c.close().success());
}

/// By default the service writes a session's summary in the background: the turn that leaves the
/// session past the early mark says what will be summarised (marked `background`) and ends; the
/// next turn, whose request would not fit without it, waits for it and reports it.
#[test]
fn the_service_writes_a_summary_in_the_background_swaps_it_in_between_turns_and_fills_the_cache() {
    let server = long_story_server();
    let home = home_for("openai", &server, "");
    let mut c = ServeClient::start(&home);
    c.initialize(json!({"model": "gpt-4o", "window": 4096, "compact_summary_model": "summ-model"}));
    let id = session(&mut c);
    let first = c.ok("turn/start", json!({"session": id, "text": "tell me a long story"}))["turn"].as_u64().unwrap();
    let notes = c.turn_notifications(first);
    let methods: Vec<&str> = notes.iter().filter_map(|n| n["method"].as_str()).collect();
    let at = |notes: &[Value], m: &str| notes.iter().position(|n| n["method"] == m);
    let notice = at(&notes, "turn/compaction_summarising").unwrap_or_else(|| panic!("{methods:?}"));
    let what = &notes[notice]["params"]["summarising"];
    assert_eq!(what["background"], "early_mark", "{what}");
    assert_eq!(what["seqs"], json!([{"from": 2, "through": 2}]), "the long answer (its request kept): {what}");
    assert!(at(&notes, "turn/compaction").is_none(), "not written on the turn's path: {methods:?}");
    // Written, it is swapped in between turns (told outside any turn: turn 0), with no turn asked.
    let swapped = c.wait("the swap between turns", |v| v["method"] == "turn/compaction" && v["params"]["turn"] == 0);
    assert_eq!(swapped["params"]["session"], id.as_str());
    let report = &swapped["params"]["report"];
    assert_eq!(report["background"]["reason"], "early_mark", "{report}");
    assert_eq!(report["background"]["snapshot_seq"], 2, "{report}");
    assert_eq!(report["summarised"], true, "{report}");
    assert_eq!(report["summarised_seqs"], what["seqs"], "{report}");
    assert_eq!((report["model_calls"].as_u64(), report["summary_model"].as_str()), (Some(1), Some("summ-model")));
    // Then the server (on this machine: its cache costs nothing) is sent the compacted
    // conversation for one token, so the next turn finds it cached.
    let filling = || server.requests().into_iter().map(|r| r.json()).find(|b| b["max_tokens"] == 1);
    crate::support::wait_for("the prompt cache's filling", || filling().is_some());
    let body = filling().unwrap();
    assert_eq!(body["model"], "gpt-4o", "the session's model: {body}");
    assert!(body.to_string().contains("Summary: a long story was told."), "it begins with the summary: {body}");
    assert!(!body.to_string().contains("A long story goes on."), "without what the summary replaced: {body}");
    let second = c.ok("turn/start", json!({"session": id, "text": "and then?"}))["turn"].as_u64().unwrap();
    let notes = c.turn_notifications(second);
    assert!(at(&notes, "turn/compaction").is_none(), "nothing left to swap in: {notes:#?}");
    let asked = server.requests().into_iter().map(|r| r.json()).rfind(|b| b["stream"] == true).unwrap();
    // A prompt cache matches tokens: the turn's request begins with what filled it (its last
    // message, the user's, goes on with the new request).
    let (warm, turn) = (body["messages"].as_array().unwrap(), asked["messages"].as_array().unwrap());
    let last = warm.len() - 1;
    assert_eq!(turn[..last], warm[..last], "the turn's request begins with what filled the cache");
    let (filled, sent) = (warm[last]["content"].as_str().unwrap(), turn[last]["content"].as_str().unwrap());
    assert!(sent.starts_with(filled) && sent.ends_with("and then?"), "{filled:?} then {sent:?}");
    assert!(c.close().success());
}

/// A session of the service left without a turn past `idle_after_secs`, above the idle mark and
/// below the early mark: compacted in the background, told outside any turn, and the local
/// server's prompt cache filled.
#[test]
fn the_service_compacts_a_session_left_idle_past_the_idle_mark() {
    let mut story = String::from("STORY:");
    while seshat::window::estimate_text(&story) < 25_000 {
        story.push_str(" lorem ipsum dolor sit amet");
    }
    let server = Server::route(move |r| {
        let body = r.json();
        let text = match body["model"].as_str() {
            Some("summ-model") => "Summary: a story of some length was told.",
            _ if body["messages"].as_array().is_some_and(|m| m.len() <= 2) => story.as_str(),
            _ => "Short.",
        };
        openai_reply(r, text)
    });
    let home = home_for("openai", &server, "[compaction]\nidle_after_secs = 1\n");
    let mut c = ServeClient::start(&home);
    // A 50,000-token window: the idle mark 26,401, the early mark 29,750.
    c.initialize(json!({"model": "gpt-4o", "window": 50000, "compact_summary_model": "summ-model"}));
    let id = session(&mut c);
    let first = c.ok("turn/start", json!({"session": id, "text": "tell me a story"}))["turn"].as_u64().unwrap();
    let notes = c.turn_notifications(first);
    assert!(!notes.iter().any(|n| n["method"].as_str().unwrap().starts_with("turn/compaction")), "{notes:#?}");
    let outcome = &notes.last().unwrap()["params"]["outcome"];
    let used = outcome["context"]["used"].as_u64().unwrap_or_default();
    assert!((26_401..29_750).contains(&used), "between the idle and the early mark: {}", outcome["context"]);
    let idle = |v: &Value| v["params"]["turn"] == 0 && v["params"]["session"] == id.as_str();
    let told = c.wait("the idle compaction's notice", |v| v["method"] == "turn/compaction_summarising" && idle(v));
    assert_eq!(told["params"]["summarising"]["background"], "idle", "{told}");
    let done = c.wait("the idle compaction's report", |v| v["method"] == "turn/compaction" && idle(v));
    let report = &done["params"]["report"];
    assert_eq!((report["background"]["reason"].as_str(), report["summarised"].as_bool()), (Some("idle"), Some(true)));
    assert!(report["tokens_after"].as_u64().unwrap() < used, "{report}");
    let filling = || server.requests().into_iter().map(|r| r.json()).find(|b| b["max_tokens"] == 1);
    crate::support::wait_for("the prompt cache's filling", || filling().is_some());
    assert!(filling().unwrap().to_string().contains("a story of some length"), "{}", filling().unwrap());
    assert!(c.close().success());
}

/// The user's text of a request's first user message (`session A`, …) and how many tool results
/// it carries.
fn which_session(req: &crate::support::server::Recorded) -> (String, usize) {
    let body = req.json();
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let user = messages.iter().find(|m| m["role"] == "user").map(|m| m["content"].as_str().unwrap_or("").to_string());
    (user.unwrap_or_default(), messages.iter().filter(|m| m["role"] == "tool").count())
}

#[test]
fn concurrent_tool_calls_of_several_sessions_each_get_their_own_answer_whatever_the_order() {
    // Every session's model asks `lookup` once; session A's asks a second time. Then it repeats
    // the last tool answer it was given.
    let server = Server::route(|req| {
        let body = req.json();
        let (user, results) = which_session(req);
        let last_result = body["messages"]
            .as_array()
            .and_then(|m| m.iter().rev().find(|m| m["role"] == "tool"))
            .map(|m| m["content"].as_str().unwrap_or("").to_string());
        let calls_wanted = if user == "session A" { 2 } else { 1 };
        if results < calls_wanted {
            let id = format!("call_{}_{results}", user.replace(' ', "_"));
            Reply::Stream { pieces: openai::tool_answer(&id, "lookup", r#"{"key":"k"}"#) }
        } else {
            let text = format!("{user} got {}", last_result.unwrap_or_default());
            Reply::Stream { pieces: openai::text_answer(&[text.as_str()], true) }
        }
    });
    let home = home_for("openai", &server, "");
    let mut c = ServeClient::start(&home);
    c.initialize(json!({"model": "gpt-4o", "tools": [{"name": "lookup", "description": "Looks a key up",
        "input_schema": {"type": "object", "properties": {"key": {"type": "string"}}}}]}));
    let mut turns = std::collections::BTreeMap::new();
    for name in ["A", "B", "C"] {
        let id = session(&mut c);
        let turn =
            c.ok("turn/start", json!({"session": id, "text": format!("session {name}")}))["turn"].as_u64().unwrap();
        turns.insert(name, (id, turn));
    }
    fn session_of(call: &Value, turns: &std::collections::BTreeMap<&'static str, (String, u64)>) -> &'static str {
        let s = call["params"]["session"].as_str().unwrap().to_string();
        turns.iter().find(|(_, (id, _))| *id == s).expect("a call names its session").0
    }
    let mut calls = std::collections::BTreeMap::new();
    for _ in 0..3 {
        let call = c.wait("a tool call", |v| v["method"] == "tool/call");
        calls.insert(session_of(&call, &turns), call);
    }
    let answer = |c: &mut ServeClient, call: &Value, text: &str| {
        c.send(json!({"jsonrpc": "2.0", "id": call["id"], "result": {"content": text, "is_error": false}}));
    };
    // B, then A; C stays pending while A's second call is made.
    answer(&mut c, &calls["B"], "answer for B");
    answer(&mut c, &calls["A"], "first answer for A");
    let second = c.wait("A's second tool call", |v| v["method"] == "tool/call");
    assert_eq!(session_of(&second, &turns), "A");
    assert_ne!(second["id"], calls["C"]["id"], "an id still waiting for its answer is never given again");
    answer(&mut c, &calls["C"], "answer for C");
    answer(&mut c, &second, "second answer for A");
    let (mut finals, mut stored) = (Vec::new(), Vec::new());
    for (name, (id, turn)) in &turns {
        let done = c.turn_notifications(*turn).pop().unwrap();
        finals.push((name.to_string(), done["params"]["outcome"]["text"].as_str().unwrap_or("").to_string()));
        let results: Vec<String> = home
            .store()
            .full_history(id)
            .unwrap()
            .iter()
            .flat_map(|m| m.parts.iter())
            .filter_map(|p| match p {
                seshat::conversation::Part::ToolResult { content, .. } => Some(content.clone()),
                _ => None,
            })
            .collect();
        stored.push((name.to_string(), results));
    }
    assert_eq!(
        stored,
        [
            ("A".to_string(), vec!["first answer for A".to_string(), "second answer for A".to_string()]),
            ("B".to_string(), vec!["answer for B".to_string()]),
            ("C".to_string(), vec!["answer for C".to_string()]),
        ],
        "each session stores the answers given to its own calls"
    );
    assert_eq!(
        finals,
        [
            ("A".to_string(), "session A got second answer for A".to_string()),
            ("B".to_string(), "session B got answer for B".to_string()),
            ("C".to_string(), "session C got answer for C".to_string()),
        ]
    );
    assert!(c.close().success());
}

#[test]
fn a_429_or_5xx_after_the_retries_ends_the_turn_with_its_code_and_the_next_turn_works() {
    let limited =
        r#"{"error":{"message":"Rate limit reached for gpt-4o","type":"requests","code":"rate_limit_exceeded"}}"#;
    let down = r#"{"error":{"message":"The server is overloaded","type":"server_error"}}"#;
    let server = Server::start(vec![
        Reply::Stream { pieces: openai::text_answer(&["First."], true) },
        Reply::json(429, limited),
        Reply::json(429, limited),
        Reply::json(429, limited),
        Reply::json(503, down),
        Reply::json(503, down),
        Reply::json(503, down),
        Reply::Stream { pieces: openai::text_answer(&["Back."], true) },
    ]);
    let home = home_for("openai", &server, "");
    let mut c = ServeClient::start(&home);
    c.initialize(json!({"model": "gpt-4o"}));
    let id = session(&mut c);
    let mut outcomes = Vec::new();
    for text in ["one", "two", "three", "four"] {
        let turn = c.ok("turn/start", json!({"session": id, "text": text}))["turn"].as_u64().unwrap();
        let done = c.turn_notifications(turn).pop().unwrap();
        let o = &done["params"]["outcome"];
        outcomes.push((
            o["error_code"].as_str().map(str::to_string),
            o["text"].as_str().map(str::to_string),
            o["error"].clone(),
        ));
    }
    assert_eq!((outcomes[0].0.as_deref(), outcomes[0].1.as_deref()), (None, Some("First.")), "{outcomes:?}");
    assert_eq!(outcomes[1].0.as_deref(), Some("rate_limited"), "{outcomes:?}");
    assert!(outcomes[1].2.as_str().unwrap().contains("Rate limit reached"), "{outcomes:?}");
    assert_eq!(outcomes[2].0.as_deref(), Some("server_error"), "{outcomes:?}");
    assert!(outcomes[2].2.as_str().unwrap().contains("overloaded"), "{outcomes:?}");
    assert_eq!((outcomes[3].0.as_deref(), outcomes[3].1.as_deref()), (None, Some("Back.")), "{outcomes:?}");
    assert!(c.close().success());
}

/// A server's 500 to a streamed request, retried for longer than the provider plugin's time per
/// call: the turn ends with the server's own code, and the plugin works for the next turn — on
/// `serve`'s connection and in `seshat chat` (the decoder the failed answer left is freed with a
/// fresh time budget; before, its instance was left unfit to enter and the next call trapped).
#[test]
fn a_server_error_after_slow_retries_is_the_servers_code_and_the_plugin_works_next_turn() {
    let broken = r#"{"error":{"message":"model broken","type":"server_error"}}"#;
    let mut replies = Vec::new();
    for answer in ["Back.", "Again."] {
        replies.extend(std::iter::repeat_with(|| Reply::json(500, broken)).take(3));
        replies.push(Reply::Stream { pieces: openai::text_answer(&[answer], true) });
    }
    let server = Server::start(replies);
    let home = home_for("openai", &server, "[plugins.limits.provider]\ntime_ms = 500\n");
    let mut c = ServeClient::start(&home);
    c.initialize(json!({"model": "gpt-4o"}));
    let id = session(&mut c);
    let mut outcomes = Vec::new();
    for text in ["one", "two"] {
        let turn = c.ok("turn/start", json!({"session": id, "text": text}))["turn"].as_u64().unwrap();
        let done = c.turn_notifications(turn).pop().unwrap();
        let o = &done["params"]["outcome"];
        outcomes.push((o["error_code"].as_str().map(str::to_string), o["text"].as_str().map(str::to_string)));
    }
    assert_eq!(outcomes[0].0.as_deref(), Some("server_error"), "{outcomes:?}");
    assert_eq!(outcomes[1], (None, Some("Back.".to_string())), "{outcomes:?}");
    assert!(c.close().success());
    let failed = crate::chat::chat(&home, &["--model", "gpt-4o", "-p", "three", "--json"], &[]);
    let outcome: Value = serde_json::from_slice(&failed.stdout).unwrap();
    assert_eq!(outcome["error_code"], "server_error", "{outcome}");
    assert!(outcome["error"].as_str().unwrap().contains("model broken"), "{outcome}");
    let session = outcome["session"].as_str().unwrap();
    let out = crate::chat::chat(&home, &["--resume", session, "--model", "gpt-4o", "-p", "four"], &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "Again.");
}

#[test]
fn protocol_details_bad_memory_params_non_scalar_ids_and_unknown_sessions_get_their_codes() {
    let server = Server::start(vec![]);
    let home = home_for("openai", &server, "");
    let mut c = ServeClient::start(&home);
    c.initialize(json!({"model": "gpt-4o"}));
    let bad = c.call_invalid("memory/create_entities", json!({"entities": "Ada"}));
    assert_eq!(
        (bad["error"]["code"].as_i64(), bad["error"]["data"]["code"].as_str()),
        (Some(-32602), Some("invalid_params")),
        "{bad}"
    );
    let missing =
        c.call("memory/add_observations", json!({"observations": [{"entityName": "Nobody", "contents": ["x"]}]}));
    assert_eq!(
        (missing["error"]["code"].as_i64(), missing["error"]["data"]["code"].as_str()),
        (Some(-32000), Some("memory_failed"))
    );
    let unknown = c.call_invalid("memory/fly", json!({}));
    assert_eq!(unknown["error"]["code"], -32601, "{unknown}");
    for id in [json!({"n": 1}), json!([1]), json!(true)] {
        let line = json!({"jsonrpc": "2.0", "id": id, "method": "session/list", "params": {}});
        c.send_invalid(line);
        let answer = c.wait("the answer to a non-scalar id", |v| v.get("error").is_some() && v["id"].is_null());
        assert_eq!(answer["error"]["code"], -32600, "{answer}");
    }
    let none = c.call("session/get", json!({"session": "01NOSUCHSESSION00000000000"}));
    assert_eq!(none["error"]["data"]["code"], "session_not_found", "{none}");
    let sessions = c.ok("session/list", json!({}));
    assert_eq!(sessions["sessions"].as_array().map(Vec::len), Some(0), "nothing was created by the bad lines");
    assert!(c.close().success());
}

#[test]
fn session_compact_hands_its_instructions_to_the_summary_model() {
    let server = Server::route(|r| openai_reply(r, "Summary: Ada and Grace planned the release."));
    let home = home_for("openai", &server, "");
    let id = home.session(home.path().to_str().unwrap());
    let mut store = home.store();
    for i in 0..24 {
        let role = if i % 2 == 0 { seshat::conversation::Role::User } else { seshat::conversation::Role::Assistant };
        let text =
            format!("Note {i}: Ada and Grace discussed the release plan. {}", "More detail follows. ".repeat(60));
        store.append(&id, &[seshat::conversation::NewMessage::text(role, &text)]).unwrap();
    }
    drop(store);
    let mut c = ServeClient::start(&home);
    c.initialize(json!({"model": "gpt-4o", "window": 8192}));
    let compacted = c.ok("session/compact", json!({"session": id, "instructions": "keep every person's name"}));
    assert!(compacted["report"]["dropped"].as_u64().unwrap_or(0) > 0, "{compacted}");
    let summary_requests: Vec<String> =
        server.requests().iter().filter(|r| r.path.ends_with("/chat/completions")).map(|r| r.body.clone()).collect();
    assert!(!summary_requests.is_empty(), "the summary model was called");
    for body in &summary_requests {
        assert!(body.contains("keep every person's name"), "the instructions reached each summary call: {body}");
    }
    assert!(c.close().success());
}

crate::on_both_backends! {
/// Two `seshat serve` processes on one store: a turn running through one makes the session busy
/// for the other; once it ends (or its process is killed), the other may run one.
fn a_turn_in_one_serve_makes_the_session_busy_in_another_until_it_ends_or_dies(home) {
    let mut pieces = openai::text_answer(&["Partial ", "answer"], false);
    pieces.truncate(2);
    let server = Server::start(vec![
        Reply::Stall { pieces: pieces.clone(), pause: Duration::from_secs(30) },
        Reply::Stream { pieces: openai::text_answer(&["Done."], true) },
        Reply::Stream { pieces: openai::text_answer(&["Again."], true) },
    ]);
    let config = std::fs::read_to_string(home_for("openai", &server, "").path().join("config.toml")).unwrap();
    // The stalled answer waits for the kill, not for the client's patience.
    let config = config.replace("idle_timeout_secs = 1\n", "idle_timeout_secs = 60\n");
    std::fs::write(home.path().join("config.toml"), config).unwrap();
    let mut a = ServeClient::start(&home);
    let mut b = ServeClient::start(&home);
    a.initialize(json!({"model": "gpt-4o"}));
    b.initialize(json!({"model": "gpt-4o"}));
    let id = session(&mut a);
    a.ok("turn/start", json!({"session": id, "text": "go"}));
    a.wait("the first delta", |v| v["method"] == "turn/event" && v["params"]["event"]["type"] == "text_delta");
    let busy = b.call("turn/start", json!({"session": id, "text": "meanwhile"}));
    assert_eq!(busy["error"]["data"]["code"], "session_busy", "{busy}");
    // So it is for `seshat chat` on the same store, which stores nothing.
    let refused = crate::chat::chat(&home, &["--resume", &id, "--model", "gpt-4o", "-p", "me too"], &[]);
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success() && said.contains("session_busy"), "{said}");
    assert_eq!(home.store().session(&id).unwrap().message_count, 1, "only the turn's own message");
    // The holder dies mid-turn: its claim goes with it, and what its answer had streamed is
    // stored as interrupted before the next turn.
    let draft = format!("SELECT count(*) FROM drafts WHERE session_id = '{id}'");
    crate::support::wait_for("the answer's draft", || home.sql_value(&draft, &draft) == 1);
    a.kill();
    let turn = b.ok("turn/start", json!({"session": id, "text": "now"}))["turn"].as_u64().unwrap();
    let notes = b.turn_notifications(turn);
    assert_eq!(notes.last().unwrap()["params"]["outcome"]["error"], Value::Null, "{notes:?}");
    let history = home.store().full_history(&id).unwrap();
    let texts: Vec<&str> = history.iter().map(crate::support::text_of).collect();
    assert_eq!(texts, ["go", "Partial answer", "now", "Done."]);
    assert_eq!(history[1].status, seshat::conversation::MessageStatus::Interrupted);
    // And `seshat chat` goes on in it once it is free.
    let out = crate::chat::chat(&home, &["--resume", &id, "--model", "gpt-4o", "-p", "and me"], &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(home.store().full_history(&id).unwrap().len(), 6);
}
}

/// One connection going through more sessions than it keeps agents for (64) holds no more
/// server connections than those agents do: the least recently used idle agent is closed, and
/// opened again when its session has its next turn, which continues the session.
#[test]
fn a_connection_keeps_a_bounded_number_of_agents_and_opens_a_closed_one_again() {
    let sessions = 100;
    let replies = (0..=sessions)
        .map(|i| Reply::Stream { pieces: openai::text_answer(&[&format!("Answer {i}.")], true) })
        .collect();
    let server = Server::start(replies);
    let home = Home::postgres();
    let config = std::fs::read_to_string(home_for("openai", &server, "").path().join("config.toml")).unwrap();
    std::fs::write(home.path().join("config.toml"), config).unwrap();
    let url = home.url().expect("a PostgreSQL home").to_string();
    let connections = || -> usize {
        let sql = "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() \
                   AND backend_type = 'client backend' AND pid <> pg_backend_pid()";
        let out = crate::support::postgres::psql_url(&url, sql).unwrap();
        out.trim().parse().unwrap_or_else(|_| panic!("not a count: {out}"))
    };
    let mut c = ServeClient::start(&home);
    c.initialize(json!({"model": "gpt-4o"}));
    let ids: Vec<String> = (0..sessions).map(|_| session(&mut c)).collect();
    for (i, id) in ids.iter().enumerate() {
        let turn =
            c.ok("turn/start", json!({"session": id, "text": format!("question {i}")}))["turn"].as_u64().unwrap();
        let notes = c.turn_notifications(turn);
        assert_eq!(notes.last().unwrap()["params"]["outcome"]["error"], Value::Null, "{notes:?}");
    }
    // Fewer than one per session the connection went through (each kept agent holds one).
    let held = connections();
    assert!(held < sessions, "{held} server connections for {sessions} sessions on one connection");
    // The first session's agent was closed; its next turn opens it again and goes on from it.
    let turn = c.ok("turn/start", json!({"session": ids[0], "text": "and again"}))["turn"].as_u64().unwrap();
    let notes = c.turn_notifications(turn);
    assert_eq!(notes.last().unwrap()["params"]["outcome"]["text"], format!("Answer {sessions}."), "{notes:?}");
    let history = home.store().full_history(&ids[0]).unwrap();
    let texts: Vec<&str> = history.iter().map(crate::support::text_of).collect();
    assert_eq!(texts, ["question 0", "Answer 0.", "and again", &format!("Answer {sessions}.")]);
    assert!(c.close().success());
}

/// A turn waiting for the client to answer a tool it registered stops when interrupted: the
/// worker it held is free, and the session takes its next turn.
#[test]
fn an_interrupt_ends_a_turn_waiting_for_the_clients_tool() {
    let server = Server::start(vec![
        Reply::Stream { pieces: openai::tool_answer("call_1", "lookup", r#"{"key":"answer"}"#) },
        Reply::Stream { pieces: openai::text_answer(&["Stopped."], true) },
        Reply::Stream { pieces: openai::text_answer(&["Next."], true) },
    ]);
    let home = home_for("openai", &server, "");
    let mut c = ServeClient::start(&home);
    c.initialize(json!({"model": "gpt-4o", "tools": [{"name": "lookup", "description": "Looks a key up"}]}));
    let id = session(&mut c);
    let turn = c.ok("turn/start", json!({"session": id, "text": "what is the answer?"}))["turn"].as_u64().unwrap();
    c.wait("the tool call", |v| v["method"] == "tool/call");
    // The client never answers the call; it interrupts the turn instead.
    assert_eq!(c.ok("turn/interrupt", json!({"session": id}))["interrupted"], true);
    let notes = c.turn_notifications(turn);
    let result = notes.iter().find(|n| n["method"] == "turn/tool_result").expect("the call's result was reported");
    assert_eq!(result["params"]["is_error"], true, "{result}");
    assert!(result["params"]["content"].as_str().unwrap().contains("interrupted"), "{result}");
    let next = c.ok("turn/start", json!({"session": id, "text": "again"}))["turn"].as_u64().unwrap();
    let done = c.turn_notifications(next);
    assert_eq!(done.last().unwrap()["params"]["outcome"]["error"], Value::Null, "{done:?}");
    assert!(c.close().success());
}
