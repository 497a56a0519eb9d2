//! The network service under load: 50 clients at once, each running 20 turns over `wss://`
//! against two `seshat serve` instances sharing one PostgreSQL database, beside the same turns
//! over stdio to one instance on the same database in the same run. The provider is a loopback
//! server streaming Anthropic's format (a short answer at once), so the figures are Seshat's own:
//! the time from sending `turn/start` to the first `turn/event` with text, the throughput, the
//! errors, and the memory an idle authenticated connection holds in an instance. Each session
//! has one turn before the measured ones (its agent opened): both sides are measured warm. The
//! same clients then run paced at half the throughput the slower side reached (the latency with
//! room to spare), and one client runs alone.
//!
//! Run: `cargo bench -p seshat-cli --bench service` (`-- --quick`: 10 clients × 5 turns).

mod common;
use common::*;

#[allow(dead_code)]
#[path = "../tests/all/support/postgres.rs"]
mod cluster;
#[allow(dead_code)]
#[path = "../tests/all/support/tls.rs"]
mod tls;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::{self, Message, client::IntoClientRequest as _};

/// Idle connections opened to measure what one holds.
const IDLE: usize = 200;

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let (clients, turns) = if quick { (10, 5) } else { (50, 20) };
    let home = tempfile::tempdir().unwrap();
    let (url, _) = provider::anthropic();
    std::fs::write(
        home.path().join("config.toml"),
        format!(
            "[plugins]\nprovider = \"anthropic\"\n[providers.anthropic]\nbase_url = \"{url}\"\n\
             [serve]\nmax_turns_per_user = {clients}\nmax_connections = 1024\n"
        ),
    )
    .unwrap();
    let (_, database) = cluster::database();
    let authority = tls::Authority::new();
    let (cert, key) = (home.path().join("cert.pem"), home.path().join("key.pem"));
    std::fs::write(&cert, &authority.cert).unwrap();
    std::fs::write(&key, &authority.key).unwrap();
    let seshat = |args: &[&str]| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_seshat"));
        cmd.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("SESHAT_HOME", home.path())
            .env("SESHAT_DATABASE_URL", &database)
            .env("ANTHROPIC_API_KEY", "sk-bench")
            .env("RUST_LOG", "warn")
            .current_dir(home.path())
            .args(args);
        cmd
    };
    let out = seshat(&["users", "add", "bench"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = seshat(&["tokens", "create", "--user", "bench"]).output().unwrap();
    let token = String::from_utf8(out.stdout).unwrap().trim().to_string();
    let files = [cert.to_str().unwrap(), key.to_str().unwrap()];
    let instances: Vec<Listening> = (0..2)
        .map(|_| {
            listen(seshat(&["serve", "--listen", "wss://127.0.0.1:0", "--tls-cert", files[0], "--tls-key", files[1]]))
        })
        .collect();
    let ports: Vec<u16> = instances.iter().map(|i| i.port).collect();
    let config = authority.client_config();

    // What an idle, authenticated, initialised connection holds in an instance (before any load
    // has grown its heap).
    let pid = instances[0].child.id();
    let warm = Wss::connect(ports[0], &token, config.clone());
    let before = rss_kib(pid);
    let idle: Vec<Wss> = (0..IDLE).map(|_| Wss::connect(ports[0], &token, config.clone())).collect();
    let after = rss_kib(pid);
    drop((idle, warm));

    // Over stdio: one instance, the clients' turns multiplexed on its one connection.
    let stdio = Stdio1::start(seshat(&["serve"]));
    let base = run(clients, turns, None, |_| -> Box<dyn Client> { Box::new(stdio.client()) });
    // Over wss://: each client its own connection, alternating between the two instances.
    let wss = |i: usize| -> Box<dyn Client> { Box::new(Wss::connect(ports[i % 2], &token, config.clone())) };
    let ours = run(clients, turns, None, wss);
    // The same clients paced at half what the slower side delivered saturated: the latency a
    // turn sees when the machine has room, so what the network path adds is not queueing.
    let total = clients * turns;
    let rate = 0.5 * (total as f64 / ours.elapsed.as_secs_f64()).min(total as f64 / base.elapsed.as_secs_f64());
    let paced_base = run(clients, turns, Some(rate), |_| -> Box<dyn Client> { Box::new(stdio.client()) });
    let paced = run(clients, turns, Some(rate), wss);
    // One client alone, the machine otherwise idle: what the network path adds to each turn.
    let alone_base = run(1, turns * 5, None, |_| -> Box<dyn Client> { Box::new(stdio.client()) });
    let alone = run(1, turns * 5, None, wss);

    let row = |name: &str, a: Duration, b: Duration, target: &str| report(name, a, b, target);
    println!("| benchmark | seshat | baseline | ratio | target |");
    println!("|---|---|---|---|---|");
    let name = format!("{clients} clients × {turns} turns, wss:// to 2 instances on PostgreSQL vs stdio to 1");
    row(&format!("{name}: first event p50"), ours.percentile(50), base.percentile(50), "-");
    row(&format!("{name}: first event p99"), ours.percentile(99), base.percentile(99), "p99 added ≤ 5 ms");
    row(
        &format!(
            "{name}: all turns ({:.0} vs {:.0} turns/s)",
            total as f64 / ours.elapsed.as_secs_f64(),
            total as f64 / base.elapsed.as_secs_f64()
        ),
        ours.elapsed,
        base.elapsed,
        "-",
    );
    println!("| {name}: errors | {} | {} | - | 0 |", ours.errors, base.errors);
    let steady = format!("{clients} clients × {turns} turns paced at {rate:.0} turns/s, wss:// vs stdio");
    row(&format!("{steady}: first event p50"), paced.percentile(50), paced_base.percentile(50), "-");
    row(&format!("{steady}: first event p99"), paced.percentile(99), paced_base.percentile(99), "p99 added ≤ 5 ms");
    println!("| {steady}: errors | {} | {} | - | 0 |", paced.errors, paced_base.errors);
    let one = format!("1 client × {} turns, wss:// vs stdio", turns * 5);
    row(&format!("{one}: first event p50"), alone.percentile(50), alone_base.percentile(50), "-");
    row(&format!("{one}: first event p99"), alone.percentile(99), alone_base.percentile(99), "p99 added ≤ 5 ms");
    println!(
        "| memory per idle wss:// connection ({IDLE} connections, instance RSS) | {:.0} KiB | - | - | - |",
        (after.saturating_sub(before)) as f64 / IDLE as f64
    );
    let added = |a: &Measured, b: &Measured, p: usize| fmt(a.percentile(p).saturating_sub(b.percentile(p)));
    println!(
        "\nadded to the first event: {clients} clients p50 {}, p99 {}; paced p50 {}, p99 {}; 1 client p50 {}, p99 {}",
        added(&ours, &base, 50),
        added(&ours, &base, 99),
        added(&paced, &paced_base, 50),
        added(&paced, &paced_base, 99),
        added(&alone, &alone_base, 50),
        added(&alone, &alone_base, 99)
    );
    drop(instances);
}

/// A `serve --listen` instance, stopped when dropped (a run that panics leaves none behind).
struct Listening {
    child: Child,
    port: u16,
}

impl Drop for Listening {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `cmd` (a `serve --listen wss://…`) and reads the port it says it listens on.
fn listen(mut cmd: Command) -> Listening {
    let mut child = cmd.stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut said = String::new();
    stderr.read_line(&mut said).unwrap();
    let port = said.trim().rsplit(':').next().and_then(|p| p.parse().ok()).unwrap_or_else(|| panic!("{said}"));
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    Listening { child, port }
}

/// The resident memory of process `pid`, in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// What one client's run measured.
struct Measured {
    /// Each turn's time from `turn/start` sent to its first text event.
    first: Vec<Duration>,
    errors: usize,
    elapsed: Duration,
}

impl Measured {
    fn percentile(&self, p: usize) -> Duration {
        let mut v = self.first.clone();
        v.sort();
        v[(v.len() * p / 100).min(v.len() - 1)]
    }
}

/// A client of the protocol: it makes a session and runs turns in it.
trait Client: Send {
    /// Makes a session (after initialising), returning its id.
    fn session(&mut self) -> String;
    /// Runs a turn: the time to its first text event, or the error.
    fn turn(&mut self, session: &str, text: &str) -> Result<Duration, String>;
}

/// Runs `clients` clients at once, each `turns` turns in a session of its own: each client starts
/// its next turn as soon as the last ends, or, with `pace` (turns a second, all clients
/// together), at its turn's place in a steady schedule (client `i`'s turn `t` at
/// `(t × clients + i) / pace` seconds; at once when it is already late).
fn run(clients: usize, turns: usize, pace: Option<f64>, make: impl Fn(usize) -> Box<dyn Client>) -> Measured {
    // Each client's session is made and has one turn first (its agent opened, the instance's
    // plugins compiled and cached): the measured turns are the steady state of both sides.
    let mut made: Vec<(Box<dyn Client>, String)> = (0..clients)
        .map(|i| {
            let mut c = make(i);
            let s = c.session();
            c.turn(&s, "warm up").unwrap_or_else(|e| panic!("the warm-up turn failed: {e}"));
            (c, s)
        })
        .collect();
    let start = Instant::now();
    let results: Vec<Result<Duration, String>> = std::thread::scope(|scope| {
        let handles: Vec<_> = made
            .iter_mut()
            .enumerate()
            .map(|(i, (c, s))| {
                scope.spawn(move || {
                    (0..turns)
                        .map(|t| {
                            if let Some(rate) = pace {
                                let due = start + Duration::from_secs_f64((t * clients + i) as f64 / rate);
                                std::thread::sleep(due.saturating_duration_since(Instant::now()));
                            }
                            c.turn(s, &format!("question {t}"))
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    let elapsed = start.elapsed();
    let errors = results.iter().filter(|r| r.is_err()).count();
    if let Some(Err(e)) = results.iter().find(|r| r.is_err()) {
        eprintln!("first error: {e}");
    }
    Measured { first: results.into_iter().flatten().collect(), errors, elapsed }
}

/// Follows a turn's notification `v`: notes the first text event's time since `sent`; at
/// `turn/completed`, the turn's result.
fn follow(v: &Value, sent: Instant, first: &mut Option<Duration>) -> Option<Result<Duration, String>> {
    if v["method"] == "turn/event" && v["params"]["event"]["type"] == "text_delta" && first.is_none() {
        *first = Some(sent.elapsed());
    }
    (v["method"] == "turn/completed").then(|| match &v["params"]["outcome"]["error_code"] {
        Value::Null => first.ok_or_else(|| "no text".to_string()),
        code => Err(code.to_string()),
    })
}

/// A stream a WebSocket runs on.
type Tls = rustls::StreamOwned<rustls::ClientConnection, TcpStream>;

/// A client over `wss://`.
struct Wss {
    ws: tungstenite::WebSocket<Tls>,
    next: u64,
}

impl Wss {
    fn connect(port: u16, token: &str, config: Arc<rustls::ClientConfig>) -> Wss {
        let mut request = format!("wss://127.0.0.1:{port}/").into_client_request().unwrap();
        request.headers_mut().insert("Authorization", format!("Bearer {token}").parse().unwrap());
        let tcp = TcpStream::connect(("127.0.0.1", port)).unwrap();
        tcp.set_nodelay(true).unwrap();
        let server = rustls::pki_types::ServerName::try_from("localhost").unwrap();
        let stream = rustls::StreamOwned::new(rustls::ClientConnection::new(config, server).unwrap(), tcp);
        let (ws, _) = tungstenite::client::client(request, stream).unwrap_or_else(|e| panic!("upgrade: {e}"));
        let mut c = Wss { ws, next: 0 };
        c.call("initialize", &json!({"model": "claude-sonnet-4-5"})).unwrap();
        c
    }

    fn send(&mut self, method: &str, params: &Value) -> u64 {
        self.next += 1;
        let line = json!({"jsonrpc": "2.0", "id": self.next, "method": method, "params": params});
        self.ws.send(Message::text(line.to_string())).unwrap();
        self.next
    }

    fn read(&mut self) -> Value {
        loop {
            if let Message::Text(text) = self.ws.read().unwrap() {
                return serde_json::from_str(&text).unwrap();
            }
        }
    }

    fn call(&mut self, method: &str, params: &Value) -> Result<Value, String> {
        let id = self.send(method, params);
        loop {
            let v = self.read();
            if v["id"] == id && v.get("method").is_none() {
                return match v.get("error") {
                    Some(e) => Err(e.to_string()),
                    None => Ok(v["result"].clone()),
                };
            }
        }
    }
}

impl Client for Wss {
    fn session(&mut self) -> String {
        self.call("session/new", &json!({})).unwrap()["session"]["id"].as_str().unwrap().to_string()
    }

    fn turn(&mut self, session: &str, text: &str) -> Result<Duration, String> {
        let sent = Instant::now();
        let id = self.send("turn/start", &json!({"session": session, "text": text}));
        let mut first = None;
        loop {
            let v = self.read();
            if v["id"] == id && v.get("error").is_some() {
                return Err(v["error"].to_string());
            }
            if let Some(done) = follow(&v, sent, &mut first) {
                return done;
            }
        }
    }
}

/// One `seshat serve` on stdio shared by every client: one writer, one reader dispatching each
/// line to the client it is for (by request id or session).
struct Stdio1 {
    stdin: Arc<Mutex<ChildStdin>>,
    routes: Arc<Mutex<HashMap<String, mpsc::Sender<Value>>>>,
    next: Arc<Mutex<u64>>,
    _child: Child,
}

impl Stdio1 {
    fn start(mut cmd: Command) -> Stdio1 {
        let mut child = cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::inherit()).spawn().unwrap();
        let stdin = Arc::new(Mutex::new(child.stdin.take().unwrap()));
        let routes: Arc<Mutex<HashMap<String, mpsc::Sender<Value>>>> = Arc::default();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let table = routes.clone();
        std::thread::spawn(move || {
            for line in stdout.lines() {
                let Ok(line) = line else { break };
                let v: Value = serde_json::from_str(&line).unwrap();
                let key = match v["params"]["session"].as_str() {
                    Some(s) if v.get("method").is_some() => s.to_string(),
                    _ => format!("id:{}", v["id"]),
                };
                if let Some(tx) = table.lock().unwrap().get(&key) {
                    let _ = tx.send(v);
                }
            }
        });
        let s = Stdio1 { stdin, routes, next: Arc::default(), _child: child };
        let (tx, rx) = mpsc::channel();
        s.routes.lock().unwrap().insert("id:0".into(), tx);
        s.write(0, "initialize", &json!({"model": "claude-sonnet-4-5"}));
        rx.recv().unwrap();
        s
    }

    fn write(&self, id: u64, method: &str, params: &Value) {
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(self.stdin.lock().unwrap(), "{line}").unwrap();
    }

    fn client(&self) -> StdioClient {
        StdioClient { stdin: self.stdin.clone(), routes: self.routes.clone(), next: self.next.clone(), inbox: None }
    }
}

/// One client's view of the shared stdio connection.
struct StdioClient {
    stdin: Arc<Mutex<ChildStdin>>,
    routes: Arc<Mutex<HashMap<String, mpsc::Sender<Value>>>>,
    next: Arc<Mutex<u64>>,
    /// The lines for this client's session.
    inbox: Option<mpsc::Receiver<Value>>,
}

impl StdioClient {
    /// Sends a request whose answer comes to `key`'s channel.
    fn send(&self, method: &str, params: &Value) -> (u64, mpsc::Receiver<Value>) {
        let id = {
            let mut n = self.next.lock().unwrap();
            *n += 1;
            *n
        };
        let (tx, rx) = mpsc::channel();
        self.routes.lock().unwrap().insert(format!("id:{id}"), tx);
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(self.stdin.lock().unwrap(), "{line}").unwrap();
        (id, rx)
    }
}

impl Client for StdioClient {
    fn session(&mut self) -> String {
        let (_, rx) = self.send("session/new", &json!({}));
        let id = rx.recv().unwrap()["result"]["session"]["id"].as_str().unwrap().to_string();
        let (tx, inbox) = mpsc::channel();
        self.routes.lock().unwrap().insert(id.clone(), tx);
        self.inbox = Some(inbox);
        id
    }

    fn turn(&mut self, session: &str, text: &str) -> Result<Duration, String> {
        let sent = Instant::now();
        let (_, answer) = self.send("turn/start", &json!({"session": session, "text": text}));
        if let Some(e) = answer.recv().unwrap().get("error") {
            return Err(e.to_string());
        }
        let inbox = self.inbox.as_ref().unwrap();
        let mut first = None;
        loop {
            if let Some(done) = follow(&inbox.recv().unwrap(), sent, &mut first) {
                return done;
            }
        }
    }
}
