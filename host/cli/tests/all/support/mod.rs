//! Shared helpers: temporary homes, running the real binary, the repository's fixtures.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use seshat::store::{Location, NewSession, Store};

pub mod postgres;
#[path = "../../prompt_cache/mod.rs"]
pub mod prompt_cache;
pub mod server;
pub mod tls;

/// A temporary `SESHAT_HOME` and its store: the SQLite file in it, or a fresh database on the
/// tests' PostgreSQL cluster ([`Home::postgres`]), which every command run from the home uses
/// (through `SESHAT_DATABASE_URL`).
pub struct Home {
    pub dir: tempfile::TempDir,
    /// The PostgreSQL database's URL, when the home's store is one.
    url: Option<String>,
}

/// Runs a test once per backend, as `<name>::sqlite` and `<name>::postgres`: the body gets a
/// [`Home`] whose store is a SQLite file, then one whose store is a PostgreSQL database.
#[macro_export]
macro_rules! on_both_backends {
    ($(#[doc = $doc:literal])* fn $name:ident($home:ident) $body:block) => {
        $(#[doc = $doc])*
        mod $name {
            #[allow(unused_imports)]
            use super::*;

            fn on_backend($home: $crate::support::Home) $body

            #[test]
            fn sqlite() {
                on_backend($crate::support::Home::new())
            }

            #[test]
            fn postgres() {
                on_backend($crate::support::Home::postgres())
            }
        }
    };
}

impl Home {
    pub fn new() -> Self {
        Self { dir: tempfile::tempdir().expect("temp dir"), url: None }
    }

    /// A home whose store is a new database on the tests' PostgreSQL cluster.
    pub fn postgres() -> Self {
        let (_, url) = postgres::database();
        Self::at(url)
    }

    /// A home whose store is the PostgreSQL database at `url`.
    pub fn at(url: String) -> Self {
        Self { dir: tempfile::tempdir().expect("temp dir"), url: Some(url) }
    }

    /// Another home on the same backend (a second machine's, say).
    pub fn sibling(&self) -> Self {
        if self.is_postgres() { Self::postgres() } else { Self::new() }
    }

    /// A home made inside `parent` (to prove what sits above a home changes nothing).
    pub fn inside(parent: &Path) -> Self {
        Self { dir: tempfile::tempdir_in(parent).expect("temp dir"), url: None }
    }

    /// The PostgreSQL URL of the home's store (`None` for a SQLite file).
    pub fn url(&self) -> Option<&str> {
        self.url.as_deref()
    }

    /// Where the home's store is.
    pub fn location(&self) -> Location {
        match &self.url {
            Some(url) => Location::parse(url, Path::new("/")).expect("the cluster's URL"),
            None => Location::File(self.db()),
        }
    }

    /// Whether the home's store is on PostgreSQL.
    pub fn is_postgres(&self) -> bool {
        self.url.is_some()
    }

    /// Runs a statement straight on the home's database (around the store: what another program
    /// could do), in SQLite's words or PostgreSQL's: the engine's message when it fails.
    pub fn sql(&self, sqlite: &str, postgres: &str) -> Result<(), String> {
        match &self.url {
            Some(url) => postgres::psql_url(url, postgres).map(drop),
            None => {
                let conn = rusqlite::Connection::open(self.db()).map_err(|e| e.to_string())?;
                conn.execute_batch(sqlite).map_err(|e| e.to_string())
            }
        }
    }

    /// Checks the home's database is whole: SQLite's integrity check on a file; on PostgreSQL
    /// (whose server keeps its own files whole) that every message is in the history index and
    /// every index row is a message's.
    pub fn assert_intact(&self, what: &str) {
        if self.is_postgres() {
            let unindexed = self.sql_value(
                "",
                "SELECT count(*) FROM messages m WHERE NOT EXISTS \
                 (SELECT 1 FROM message_search s WHERE s.message_id = m.id)",
            );
            assert_eq!(unindexed, 0, "{what}: messages missing from the history index");
            let orphans = self.sql_value(
                "",
                "SELECT count(*) FROM message_search s WHERE NOT EXISTS (SELECT 1 FROM messages m WHERE m.id = s.message_id)",
            );
            assert_eq!(orphans, 0, "{what}: index rows without their message");
        } else {
            let conn = rusqlite::Connection::open(self.db()).expect("open the database");
            let check: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0)).expect("integrity_check");
            assert_eq!(check, "ok", "{what}");
        }
    }

    /// The integer a query returns, asked straight of the home's database (in SQLite's words or
    /// PostgreSQL's).
    pub fn sql_value(&self, sqlite: &str, postgres: &str) -> i64 {
        match &self.url {
            Some(url) => {
                let out = postgres::psql_url(url, postgres).unwrap_or_else(|e| panic!("{postgres}: {e}"));
                out.parse().unwrap_or_else(|_| panic!("{postgres} returned {out:?}"))
            }
            None => {
                let conn = rusqlite::Connection::open(self.db()).expect("open the database");
                conn.query_row(sqlite, [], |r| r.get(0)).unwrap_or_else(|e| panic!("{sqlite}: {e}"))
            }
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn db(&self) -> PathBuf {
        self.dir.path().join("seshat.db")
    }

    pub fn store(&self) -> Store {
        Store::connect(&self.location()).expect("open store")
    }

    /// `seshat` with this home, a fixed time zone and width, run in `cwd` (default: the home).
    pub fn cmd(&self) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_seshat"));
        cmd.env_clear()
            .env("SESHAT_HOME", self.path())
            .env("TZ", "UTC")
            .env("COLUMNS", "100")
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            // Whatever sits above the temporary directory (a git work tree, a `.seshat/`) is not
            // the test's project: the search for a repository stops at the home.
            .env("GIT_CEILING_DIRECTORIES", self.path().parent().unwrap_or(self.path()))
            .current_dir(self.path())
            .stdin(Stdio::null());
        if let Some(url) = &self.url {
            cmd.env("SESHAT_DATABASE_URL", url);
        }
        cmd
    }

    /// Runs `seshat args…` and returns its output.
    pub fn run(&self, args: &[&str]) -> Output {
        self.cmd().args(args).output().expect("run seshat")
    }

    /// Runs `seshat args…`, asserting success and an empty stderr; returns stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(out.status.success(), "seshat {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
        assert!(out.stderr.is_empty(), "seshat {args:?} wrote to stderr: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).expect("utf-8 stdout")
    }

    /// Runs `seshat args…`, asserting a non-zero exit and nothing on stdout; returns stderr.
    pub fn fails(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(!out.status.success(), "seshat {args:?} unexpectedly succeeded");
        assert!(out.stdout.is_empty(), "seshat {args:?} wrote to stdout: {}", String::from_utf8_lossy(&out.stdout));
        let err = String::from_utf8(out.stderr).expect("utf-8 stderr");
        assert!(!err.contains("thread '") && !err.contains("RUST_BACKTRACE"), "the host panicked: {err}");
        err
    }

    /// Creates a session in the given project.
    pub fn session(&self, project: &str) -> String {
        self.store().create_session(NewSession { project: project.into(), ..Default::default() }).expect("create").id
    }
}

/// Runs `cmd` (a `seshat` command; `mcp` is added) as one MCP session: it initializes, sends
/// `calls` (JSON-RPC requests), then ends its input. Returns how the process ended, its stderr
/// and every line it answered.
pub fn mcp_session(
    cmd: Command,
    calls: &[serde_json::Value],
) -> (std::process::ExitStatus, String, Vec<serde_json::Value>) {
    let mut lines = vec![
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}),
        serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    ];
    lines.extend_from_slice(calls);
    let input: String = lines.iter().map(|l| format!("{l}\n")).collect();
    mcp_input(cmd, &input)
}

/// Feeds `input` (raw bytes, exactly as given) to `cmd` (`mcp` is added) and ends it; returns
/// how the process ended, its stderr and every line it wrote, each one JSON-RPC message.
pub fn mcp_input(mut cmd: Command, input: &str) -> (std::process::ExitStatus, String, Vec<serde_json::Value>) {
    use std::io::Write as _;
    let mut child = cmd
        .arg("mcp")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn seshat mcp");
    child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    let answers = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not one JSON-RPC message a line ({e}): {l}")))
        .collect();
    (out.status, String::from_utf8_lossy(&out.stderr).into_owned(), answers)
}

/// The Codex rollout fixture, under `tests/fixtures`.
pub const CODEX_ROLLOUT: &str =
    "codex/2025/11/20/rollout-2025-11-20T10-00-00-0199aaaa-bbbb-7ccc-8ddd-eeeeffff0000.jsonl";

/// A copy of the Codex rollout fixture under a home, grown by the test: some of the fixture's
/// lines written, imported, more written, imported again.
pub struct Rollout {
    /// The file written, alone in its directory.
    pub file: PathBuf,
    /// The fixture's lines.
    pub lines: Vec<String>,
}

impl Rollout {
    pub fn new(home: &Home) -> Self {
        let dir = home.path().join("codex-sessions");
        std::fs::create_dir_all(&dir).unwrap();
        let text = std::fs::read_to_string(fixture(CODEX_ROLLOUT)).unwrap();
        Self { file: dir.join("rollout.jsonl"), lines: text.lines().map(str::to_string).collect() }
    }

    /// The file holds the fixture's first `n` lines.
    pub fn first(&self, n: usize) {
        self.write(&self.lines[..n]);
    }

    /// The file holds the whole fixture.
    pub fn whole(&self) {
        self.write(&self.lines);
    }

    /// The file holds exactly `lines`.
    pub fn write<'a>(&self, lines: impl IntoIterator<Item = &'a String>) {
        std::fs::write(&self.file, lines.into_iter().map(|l| format!("{l}\n")).collect::<String>()).unwrap();
    }
}

/// A file under the repository's `tests/fixtures`.
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures").join(name)
}

/// The first text part of a message.
pub fn text_of(msg: &seshat::store::Message) -> &str {
    text_of_parts(&msg.parts)
}

/// The first text part of `parts` ("" when none).
pub fn text_of_parts(parts: &[seshat::conversation::Part]) -> &str {
    parts
        .iter()
        .find_map(|p| match p {
            seshat::conversation::Part::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .unwrap_or("")
}

/// Runs `cmd` with `input` on its stdin, its stdout and stderr kept; returns its output.
pub fn output_with_stdin(cmd: &mut Command, input: &str) -> Output {
    use std::io::Write;
    let mut child = cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawn");
    child.stdin.take().expect("stdin").write_all(input.as_bytes()).expect("write stdin");
    child.wait_with_output().expect("wait")
}

/// A JSONL line for `sessions append`.
pub fn append_line(session: Option<&str>, text: &str) -> String {
    let mut v = serde_json::json!({"role": "user", "parts": [{"type": "text", "text": text}]});
    if let Some(s) = session {
        v["session"] = s.into();
    }
    v.to_string()
}

/// The names of every entity in the memory graph, sorted.
pub fn entity_names(store: &Store) -> Vec<String> {
    let mut names: Vec<String> = store
        .sqlite_connection()
        .unwrap()
        .prepare("SELECT name FROM memory_entities")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    names.sort();
    names
}

/// A watchdog on a child process: SIGKILLs it if it is still running after `limit`, so a process
/// that does not stop when it should fails its test instead of hanging the suite. Nothing is
/// timed: [`Watchdog::fired`] only says whether it had to kill.
pub struct Watchdog {
    done: std::sync::mpsc::Sender<()>,
    thread: std::thread::JoinHandle<bool>,
}

impl Watchdog {
    /// Watches process `pid` for `limit`.
    pub fn on(pid: u32, limit: Duration) -> Self {
        let (done, watch) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            let late = watch.recv_timeout(limit).is_err();
            if late {
                let _ = Command::new("kill").args(["-KILL", &pid.to_string()]).status();
            }
            late
        });
        Watchdog { done, thread }
    }

    /// Call once the process has exited: whether the watchdog had to kill it.
    pub fn fired(self) -> bool {
        let _ = self.done.send(());
        self.thread.join().unwrap()
    }
}

/// A compiled-plugin cache shared by the tests of this binary.
pub fn shared_cache() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("plugin-cache")
}

/// Polls `f` until it holds; fails the test after 20 seconds (`what` says what was awaited).
pub fn wait_for(what: &str, mut f: impl FnMut() -> bool) {
    let t = Instant::now();
    while !f() {
        assert!(t.elapsed() < Duration::from_secs(20), "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A proptest configuration of `cases` cases whose failing inputs are kept in `file` (relative to
/// host/cli) and run first the next time.
pub fn proptest_config(cases: u32, file: &'static str) -> proptest::test_runner::Config {
    proptest::test_runner::Config {
        cases,
        failure_persistence: Some(Box::new(proptest::test_runner::FileFailurePersistence::Direct(file))),
        ..proptest::test_runner::Config::default()
    }
}

/// Waits for `child` to exit, at most `deadline`: `None` (and the child SIGKILLed) when it did not,
/// so a hang fails its test instead of stalling the suite.
pub fn wait_with_deadline(child: &mut std::process::Child, deadline: Duration) -> Option<std::process::ExitStatus> {
    let pid = child.id();
    let (done, exited) = std::sync::mpsc::channel();
    let watcher = std::thread::spawn(move || {
        if exited.recv_timeout(deadline).is_err() {
            let _ = Command::new("kill").args(["-KILL", &pid.to_string()]).status();
            return false;
        }
        true
    });
    let status = child.wait().expect("wait for the child");
    let _ = done.send(());
    watcher.join().unwrap_or(false).then_some(status)
}
