//! The network service's core, one instance against one, on the embedded store (SQLite) with a
//! loopback provider streaming Anthropic's format (a short answer at once), so the figures are
//! Seshat's own.
//!
//! * **Idle connections**: one `serve --listen wss://` instance holds 10,000 authenticated,
//!   initialised connections; its resident memory and threads are read at its start (after one
//!   client came and left, so what the first connection initialises once is counted there), at
//!   1,000 and at 10,000 connections, and after the clients leave.
//! * **Live turns**: 1,000 sessions spread over 100 `wss://` connections to one instance, beside
//!   the same 1,000 sessions over stdio to one instance (its one connection), in the same run;
//!   the `wss://` instance's memory is read at its start (after one client ran a turn and left),
//!   loaded, and after the clients leave.
//!   Both sides are driven the same way: one reader per connection routes each line to the
//!   session (or request) it is for, and each session runs its turns in a thread of the bench.
//!   Each session has one turn first (its agent opened); then every session runs its turns back
//!   to back (throughput, errors), then paced at half what the slower side reached (the time to
//!   the first text event with room to spare). Differences are printed signed.
//!
//! Run: `cargo bench -p seshat-cli --bench service` (`-- --quick`: 1,000 idle connections, 100
//! sessions over 10 connections; `-- --idle-only`: the idle connections alone).

mod common;
use common::*;

#[allow(dead_code)]
#[path = "../tests/all/support/tls.rs"]
mod tls;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use futures_util::{SinkExt as _, StreamExt as _};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::{Message, client::IntoClientRequest as _};

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let (idle, connections, per_connection, turns) = if quick { (1_000, 10, 10, 3) } else { (10_000, 100, 10, 5) };
    let sessions = connections * per_connection;
    // Each connection is a file on both sides: this process and the instances it starts may
    // need to open that many (an instance's idle connection holds only its socket).
    let files = idle as u64 + 4_096;
    let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile);
    if limit.maximum.is_some_and(|m| m < files) {
        eprintln!("this benchmark needs {files} open files (ulimit -Hn)");
        std::process::exit(2);
    }
    let raised = rustix::process::Rlimit { current: limit.maximum, maximum: limit.maximum };
    let _ = rustix::process::setrlimit(rustix::process::Resource::Nofile, raised);
    let home = tempfile::tempdir().unwrap();
    let (url, _) = provider::anthropic();
    let room = idle + 1_000;
    std::fs::write(
        home.path().join("config.toml"),
        format!(
            "[plugins]\nprovider = \"anthropic\"\n[providers.anthropic]\nbase_url = \"{url}\"\n\
             [serve]\nmax_connections = {room}\nmax_connections_per_user = {room}\nmax_handshakes_per_address = 64\n\
             max_turns_per_user = {sessions}\nmax_sessions_per_user = {sessions}\nmax_workers = {sessions}\n\
             keepalive_secs = 3600\nidle_timeout_secs = 7200\n"
        ),
    )
    .unwrap();
    let authority = tls::Authority::new();
    let (cert, key) = (home.path().join("cert.pem"), home.path().join("key.pem"));
    std::fs::write(&cert, &authority.cert).unwrap();
    std::fs::write(&key, &authority.key).unwrap();
    let seshat = |args: &[&str]| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_seshat"));
        cmd.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("SESHAT_HOME", home.path())
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
    let wss_command =
        || seshat(&["serve", "--listen", "wss://127.0.0.1:0", "--tls-cert", files[0], "--tls-key", files[1]]);
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let net = Net { runtime: &runtime, token, config: authority.client_config() };

    // Idle connections.
    let instance = listen(wss_command());
    let pid = instance.child.id();
    // Its start: after one client came and left (what the first connection initialises once —
    // TLS, the configuration's readers — is the instance's, not a connection's).
    drop(net.idle(instance.port, 1));
    let start = settle(pid);
    let mut held = Vec::new();
    let mut marks = Vec::new();
    for batch in [1_000.min(idle), idle - 1_000.min(idle)] {
        held.extend(net.idle(instance.port, batch));
        // Read once the instance settles (the threads lent to the connections' handshakes and
        // `initialize` end when idle): what the connections themselves hold.
        marks.push((held.len(), settle(pid)));
    }
    drop(held);
    let left = settle(pid);
    drop(instance);
    if std::env::args().any(|a| a == "--idle-only") {
        for (n, p) in &marks {
            println!(
                "{n} idle: {:.1} MiB, {} threads (start {:.1} MiB, {} threads)",
                p.rss_mib(),
                p.threads,
                start.rss_mib(),
                start.threads
            );
        }
        println!("after: {:.1} MiB, {} threads", left.rss_mib(), left.threads);
        return;
    }

    // Live turns: one instance each side.
    let stdio = Mux::stdio(seshat(&["serve"]));
    let instance = listen(wss_command());
    let pid = instance.child.id();
    {
        // Its start: after one client ran a turn and left (what the first turn loads once — the
        // provider plugin compiled, the store's pooled connections — is the instance's).
        let first = net.mux(instance.port);
        drop(open(std::slice::from_ref(&first), 1));
        first.close();
    }
    let wss_start = settle(pid);
    let wss: Vec<Arc<Mux>> = (0..connections).map(|_| net.mux(instance.port)).collect();
    let base_sessions = open(std::slice::from_ref(&stdio), sessions);
    let our_sessions = open(&wss, sessions);
    let base = run(&base_sessions, turns, None);
    let ours = run(&our_sessions, turns, None);
    let total = sessions * turns;
    let rate = 0.5 * (total as f64 / ours.elapsed.as_secs_f64()).min(total as f64 / base.elapsed.as_secs_f64());
    let paced_base = run(&base_sessions, turns, Some(rate));
    let paced = run(&our_sessions, turns, Some(rate));
    let loaded = Process::read(pid);
    drop(our_sessions);
    for mux in wss {
        mux.close();
    }
    let wss_left = settle(pid);
    drop(instance);

    println!("| benchmark | seshat | baseline | ratio | target |");
    println!("|---|---|---|---|---|");
    for (n, p) in &marks {
        println!(
            "| {n} idle wss:// connections on one instance: resident memory, threads | {:.1} MiB, {} threads | {:.1} MiB, {} threads (no connection) | {:.2}× | ≤ 1 GiB at 10,000; threads not growing |",
            p.rss_mib(),
            p.threads,
            start.rss_mib(),
            start.threads,
            p.rss_kib as f64 / start.rss_kib as f64
        );
    }
    println!(
        "| after the {idle} idle clients left | {:.1} MiB, {} threads | {:.1} MiB (no connection) | {:.2}× | within 10% |",
        left.rss_mib(),
        left.threads,
        start.rss_mib(),
        left.rss_kib as f64 / start.rss_kib as f64
    );
    let name = format!("{sessions} sessions over {connections} wss:// connections vs stdio, one instance each");
    row(&format!("{name}, back to back: first event p50"), ours.percentile(50), base.percentile(50), "-");
    row(&format!("{name}, back to back: first event p99"), ours.percentile(99), base.percentile(99), "-");
    let (ours_rate, base_rate) = (total as f64 / ours.elapsed.as_secs_f64(), total as f64 / base.elapsed.as_secs_f64());
    println!(
        "| {name}, back to back: throughput | {ours_rate:.0} turns/s | {base_rate:.0} turns/s | {:.2}× | ≥ stdio's |",
        ours_rate / base_rate
    );
    println!(
        "| {name}: turns completed (errors) | {} of {total} ({}) | {} of {total} ({}) | - | every turn |",
        ours.completed(),
        ours.errors,
        base.completed(),
        base.errors
    );
    let steady = format!("{name}, paced at {rate:.0} turns/s");
    row(&format!("{steady}: first event p50"), paced.percentile(50), paced_base.percentile(50), "-");
    row(&format!("{steady}: first event p99"), paced.percentile(99), paced_base.percentile(99), "p99 added ≤ 5 ms");
    println!(
        "| {steady}: turns completed (errors) | {} of {total} ({}) | {} of {total} ({}) | - | every turn |",
        paced.completed(),
        paced.errors,
        paced_base.completed(),
        paced_base.errors
    );
    println!(
        "| the wss:// instance: loaded, then after its {connections} clients left | {:.1} MiB, {} threads loaded; {:.1} MiB, {} threads after | {:.1} MiB, {} threads at its start | {:.2}× | within 10% |",
        loaded.rss_mib(),
        loaded.threads,
        wss_left.rss_mib(),
        wss_left.threads,
        wss_start.rss_mib(),
        wss_start.threads,
        wss_left.rss_kib as f64 / wss_start.rss_kib as f64
    );
    let added = |a: &Measured, b: &Measured, p: usize| signed(a.percentile(p), b.percentile(p));
    println!(
        "\nadded to the first event (wss:// − stdio): back to back p50 {}, p99 {}; paced p50 {}, p99 {}",
        added(&ours, &base, 50),
        added(&ours, &base, 99),
        added(&paced, &paced_base, 50),
        added(&paced, &paced_base, 99),
    );
    for (what, m) in [("stdio", &base), ("wss", &ours), ("stdio paced", &paced_base), ("wss paced", &paced)] {
        if let Some(e) = &m.first_error {
            println!("{what}: first error: {e}");
        }
    }
}

fn row(name: &str, ours: Duration, base: Duration, target: &str) {
    report(name, ours, base, target);
}

/// `a − b`, signed.
fn signed(a: Duration, b: Duration) -> String {
    if a >= b { format!("+{}", fmt(a - b)) } else { format!("−{}", fmt(b - a)) }
}

/// A process's resident memory and threads.
#[derive(Debug, Clone, Copy)]
struct Process {
    rss_kib: u64,
    threads: u64,
}

impl Process {
    fn read(pid: u32) -> Process {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        let field = |name: &str| -> u64 {
            let line = status.lines().find(|l| l.starts_with(name)).unwrap();
            line.split_whitespace().nth(1).unwrap().parse().unwrap()
        };
        Process { rss_kib: field("VmRSS:"), threads: field("Threads:") }
    }

    fn rss_mib(&self) -> f64 {
        self.rss_kib as f64 / 1024.0
    }
}

/// The process once it settles (its clients gone, or idle): read every 250 ms until its memory and threads stop
/// falling for 12 s (its idle workers end after 10 s), at most a minute.
fn settle(pid: u32) -> Process {
    let until = Instant::now() + Duration::from_secs(60);
    let mut last = Process::read(pid);
    let mut steady_since = Instant::now();
    while Instant::now() < until && steady_since.elapsed() < Duration::from_secs(12) {
        std::thread::sleep(Duration::from_millis(250));
        let now = Process::read(pid);
        if now.rss_kib < last.rss_kib || now.threads < last.threads {
            steady_since = Instant::now();
        }
        last = now;
    }
    last
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

/// What the bench needs to open `wss://` connections.
struct Net<'r> {
    runtime: &'r tokio::runtime::Runtime,
    token: String,
    config: Arc<rustls::ClientConfig>,
}

type Ws = tokio_tungstenite::WebSocketStream<tokio_rustls::client::TlsStream<tokio::net::TcpStream>>;

impl Net<'_> {
    async fn connect(port: u16, token: String, config: Arc<rustls::ClientConfig>) -> Ws {
        let mut request = format!("wss://127.0.0.1:{port}/").into_client_request().unwrap();
        request.headers_mut().insert("Authorization", format!("Bearer {token}").parse().unwrap());
        let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        tcp.set_nodelay(true).unwrap();
        let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
        let tls = tokio_rustls::TlsConnector::from(config).connect(name, tcp).await.unwrap();
        let (ws, _) = tokio_tungstenite::client_async(request, tls).await.unwrap_or_else(|e| panic!("upgrade: {e}"));
        ws
    }

    /// `n` authenticated, initialised connections doing nothing more (each answers the server's
    /// pings), opened 32 at a time; held until the returned handles are dropped.
    fn idle(&self, port: u16, n: usize) -> Vec<Abort> {
        let mut held = Vec::with_capacity(n);
        self.runtime.block_on(async {
            let gate = Arc::new(tokio::sync::Semaphore::new(32));
            let mut opening = Vec::with_capacity(n);
            for _ in 0..n {
                let (token, config, gate) = (self.token.clone(), self.config.clone(), gate.clone());
                opening.push(tokio::spawn(async move {
                    let permit = gate.acquire_owned().await.unwrap();
                    let mut ws = Net::connect(port, token, config).await;
                    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"model": "claude-sonnet-4-5"}});
                    ws.send(Message::text(init.to_string())).await.unwrap();
                    loop {
                        match ws.next().await {
                            Some(Ok(Message::Text(t))) if t.contains("\"result\"") => break,
                            Some(Ok(Message::Text(t))) => panic!("initialize: {t}"),
                            Some(Ok(_)) => {}
                            other => panic!("initialize: {other:?}"),
                        }
                    }
                    drop(permit);
                    ws
                }));
            }
            for opened in opening {
                let mut ws = opened.await.unwrap();
                held.push(Abort(tokio::spawn(async move { while let Some(Ok(_)) = ws.next().await {} })));
            }
        });
        held
    }

    /// A multiplexed connection.
    fn mux(&self, port: u16) -> Arc<Mux> {
        let ws = self.runtime.block_on(Net::connect(port, self.token.clone(), self.config.clone()));
        let (mut sink, mut stream) = ws.split();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
        let routes: Routes = Arc::default();
        let table = routes.clone();
        self.runtime.spawn(async move {
            while let Some(line) = rx.recv().await {
                if sink.send(Message::text(line)).await.is_err() {
                    break;
                }
            }
            let _ = sink.close().await;
        });
        self.runtime.spawn(async move {
            while let Some(Ok(frame)) = stream.next().await {
                if let Message::Text(text) = frame {
                    route(&table, &text);
                }
            }
        });
        let send: Sender = Box::new(move |line| {
            let _ = tx.send(line);
        });
        let mux = Arc::new(Mux { send: Mutex::new(Some(send)), routes, next: AtomicU64::new(0), _child: None });
        mux.call("initialize", &json!({"model": "claude-sonnet-4-5"})).unwrap();
        mux
    }
}

/// A task aborted when dropped (its connection closed with it).
struct Abort(tokio::task::JoinHandle<()>);

impl Drop for Abort {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Lines routed by the request id (`id:N`) or the session they are about.
type Routes = Arc<Mutex<HashMap<String, mpsc::Sender<Value>>>>;

/// Routes one line to its channel.
fn route(table: &Routes, line: &str) {
    let v: Value = serde_json::from_str(line).unwrap();
    let key = match v["params"]["session"].as_str() {
        Some(s) if v.get("method").is_some() => s.to_string(),
        _ => format!("id:{}", v["id"]),
    };
    if let Some(tx) = table.lock().unwrap().get(&key) {
        let _ = tx.send(v);
    }
}

/// Writes one line to a connection.
type Sender = Box<dyn Fn(String) + Send + Sync>;

/// One connection shared by many sessions: one writer, one reader routing each line.
struct Mux {
    send: Mutex<Option<Sender>>,
    routes: Routes,
    next: AtomicU64,
    _child: Option<Child>,
}

impl Mux {
    /// A `seshat serve` on stdio.
    fn stdio(mut cmd: Command) -> Arc<Mux> {
        let mut child = cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::inherit()).spawn().unwrap();
        let stdin = Mutex::new(child.stdin.take().unwrap());
        let routes: Routes = Arc::default();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let table = routes.clone();
        std::thread::spawn(move || {
            for line in stdout.lines() {
                let Ok(line) = line else { break };
                route(&table, &line);
            }
        });
        let send: Sender = Box::new(move |line| {
            let _ = writeln!(stdin.lock().unwrap(), "{line}");
        });
        let mux = Arc::new(Mux { send: Mutex::new(Some(send)), routes, next: AtomicU64::new(0), _child: Some(child) });
        mux.call("initialize", &json!({"model": "claude-sonnet-4-5"})).unwrap();
        mux
    }

    /// Sends a request; its answer comes on the returned channel.
    fn send(&self, method: &str, params: &Value) -> mpsc::Receiver<Value> {
        let id = self.next.fetch_add(1, Ordering::SeqCst) + 1;
        let (tx, rx) = mpsc::channel();
        self.routes.lock().unwrap().insert(format!("id:{id}"), tx);
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        if let Some(send) = &*self.send.lock().unwrap() {
            send(line.to_string());
        }
        rx
    }

    fn call(&self, method: &str, params: &Value) -> Result<Value, String> {
        let v = self.send(method, params).recv().map_err(|e| e.to_string())?;
        match v.get("error") {
            Some(e) => Err(e.to_string()),
            None => Ok(v["result"].clone()),
        }
    }

    /// Closes the connection (the writer ends, and with it the socket).
    fn close(&self) {
        self.send.lock().unwrap().take();
    }
}

/// One session on a shared connection.
struct Session {
    mux: Arc<Mux>,
    id: String,
    inbox: Mutex<mpsc::Receiver<Value>>,
}

impl Session {
    /// Runs a turn: the time to its first text event, or the error.
    fn turn(&self, text: &str) -> Result<Duration, String> {
        let sent = Instant::now();
        let answer = self.mux.send("turn/start", &json!({"session": self.id, "text": text}));
        if let Some(e) = answer.recv().map_err(|e| e.to_string())?.get("error") {
            return Err(e.to_string());
        }
        let mut first = None;
        let inbox = self.inbox.lock().unwrap();
        loop {
            let v = inbox.recv().map_err(|e| e.to_string())?;
            if v["method"] == "turn/event" && v["params"]["event"]["type"] == "text_delta" && first.is_none() {
                first = Some(sent.elapsed());
            }
            if v["method"] == "turn/completed" {
                return match &v["params"]["outcome"]["error_code"] {
                    Value::Null => first.ok_or_else(|| "no text".to_string()),
                    code => Err(code.to_string()),
                };
            }
        }
    }
}

/// `n` sessions spread over `muxes` in turn, each with one turn run (its agent opened, the
/// instance's plugins compiled and cached): the measured turns are both sides' steady state.
fn open(muxes: &[Arc<Mux>], n: usize) -> Vec<Session> {
    let sessions: Vec<Session> = (0..n)
        .map(|i| {
            let mux = muxes[i % muxes.len()].clone();
            let id = mux.call("session/new", &json!({})).unwrap()["session"]["id"].as_str().unwrap().to_string();
            let (tx, inbox) = mpsc::channel();
            mux.routes.lock().unwrap().insert(id.clone(), tx);
            Session { mux, id, inbox: Mutex::new(inbox) }
        })
        .collect();
    std::thread::scope(|scope| {
        for chunk in sessions.chunks(sessions.len().div_ceil(32)) {
            scope.spawn(move || {
                for s in chunk {
                    s.turn("warm up").unwrap_or_else(|e| panic!("the warm-up turn failed: {e}"));
                }
            });
        }
    });
    sessions
}

/// What a run measured.
struct Measured {
    /// Each turn's time from `turn/start` sent to its first text event.
    first: Vec<Duration>,
    errors: usize,
    first_error: Option<String>,
    elapsed: Duration,
}

impl Measured {
    fn percentile(&self, p: usize) -> Duration {
        let mut v = self.first.clone();
        v.sort();
        v[(v.len() * p / 100).min(v.len() - 1)]
    }

    fn completed(&self) -> usize {
        self.first.len()
    }
}

/// Every session runs `turns` turns at once with the others: each its next as soon as its last
/// ends, or, with `pace` (turns a second, all sessions together), at its place in a steady
/// schedule (session `i`'s turn `t` at `(t × sessions + i) / pace` seconds; at once when late).
fn run(sessions: &[Session], turns: usize, pace: Option<f64>) -> Measured {
    let n = sessions.len();
    let start = Instant::now();
    let results: Vec<Result<Duration, String>> = std::thread::scope(|scope| {
        let handles: Vec<_> = sessions
            .iter()
            .enumerate()
            .map(|(i, s)| {
                scope.spawn(move || {
                    (0..turns)
                        .map(|t| {
                            if let Some(rate) = pace {
                                let due = start + Duration::from_secs_f64((t * n + i) as f64 / rate);
                                std::thread::sleep(due.saturating_duration_since(Instant::now()));
                            }
                            s.turn(&format!("question {t}"))
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    let elapsed = start.elapsed();
    let errors = results.iter().filter(|r| r.is_err()).count();
    let first_error = results.iter().find_map(|r| r.as_ref().err().cloned());
    Measured { first: results.into_iter().flatten().collect(), errors, first_error, elapsed }
}
