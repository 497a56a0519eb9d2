//! Foreign SQLite clients (Python's `sqlite3` and the `sqlite3` shell, processes Seshat knows nothing of) reading the
//! database while `seshat serve` and `seshat mcp` run and write: the servers keep their file locks
//! through every operation of their own, so the foreign client never believes it is the last
//! user of the database and never deletes the WAL under them; every acknowledged write survives a
//! SIGKILL and the file passes `integrity_check`.

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use crate::chat::home_for;
use crate::memory_cli::McpClient;
use crate::serve::ServeClient;
use crate::support::Home;
use crate::support::server::{Reply, Server, openai};

/// Run by `python3 - <db> <probe|client>`: which process holds SQLite's shared lock on the
/// database file (F_GETLK on its shared range) and on the `-shm` file (its DMS byte), asked before
/// this process touches the database; with `client`, then a whole SQLite connection: integrity
/// check, a count, close — and whether the `-wal` file is still there after that close.
const FOREIGN: &str = r#"
import fcntl, json, os, sqlite3, struct, sys
db, mode = sys.argv[1], sys.argv[2]
FLOCK = "hhqqi4x"
def holder(path, start, length):
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return "missing"
    try:
        asked = struct.pack(FLOCK, fcntl.F_WRLCK, os.SEEK_SET, start, length, 0)
        kind, _, _, _, pid = struct.unpack(FLOCK, fcntl.fcntl(fd, fcntl.F_GETLK, asked))
        return None if kind == fcntl.F_UNLCK else pid
    finally:
        os.close(fd)
out = {"db": holder(db, 0x40000002, 510), "shm": holder(db + "-shm", 128, 1)}
if mode == "client":
    con = sqlite3.connect(db, timeout=10)
    out["integrity"] = con.execute("PRAGMA integrity_check").fetchone()[0]
    out["entities"] = con.execute("SELECT count(*) FROM memory_entities").fetchone()[0]
    con.close()
    out["wal_after_close"] = os.path.exists(db + "-wal")
print(json.dumps(out))
"#;

fn foreign(home: &Home, mode: &str) -> Value {
    let out = Command::new("python3")
        .arg("-c")
        .arg(FOREIGN)
        .arg(home.db())
        .arg(mode)
        .output()
        .expect("python3 runs (it is on every machine this project builds on)");
    assert!(out.status.success(), "the foreign client failed: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("the foreign client prints JSON")
}

/// The `sqlite3` shell (another foreign client, the one users reach for): an integrity check and
/// a count through a whole connection, closed when the shell exits; then whether the `-wal` file
/// is still there.
fn shell(home: &Home) -> (String, bool) {
    let out = Command::new("sqlite3")
        .arg(home.db())
        .arg("PRAGMA integrity_check; SELECT count(*) FROM memory_entities;")
        .output()
        .expect("the sqlite3 shell runs (.ci/setup installs it)");
    assert!(out.status.success(), "the sqlite3 shell failed: {}", String::from_utf8_lossy(&out.stderr));
    let mut wal = home.db().into_os_string();
    wal.push("-wal");
    (String::from_utf8_lossy(&out.stdout).split_whitespace().collect::<Vec<_>>().join(" "), Path::new(&wal).exists())
}

/// After `what`, the server `pid` still holds its shared lock on the database and on `-shm`.
fn assert_locks_held(home: &Home, pid: u32, what: &str) {
    let seen = foreign(home, "probe");
    assert_eq!(
        (seen["db"].as_u64(), seen["shm"].as_u64()),
        (Some(pid.into()), Some(pid.into())),
        "after {what}: {seen}"
    );
}

fn entity(name: &str) -> Value {
    json!({"entities": [{"name": name, "entityType": "fact", "observations": [format!("{name} was acknowledged")]}]})
}

#[test]
fn a_foreign_sqlite_client_never_deletes_the_wal_under_serve_or_mcp_and_nothing_acknowledged_is_lost() {
    let server = Server::route(|_| Reply::Stream { pieces: openai::text_answer(&["Noted."], true) });
    let home = home_for("openai", &server, "");
    let project = home.path().join("proj");
    std::fs::create_dir_all(project.join(".git")).unwrap();

    // serve alone: after each of its operations (each may open another connection), its locks hold.
    let mut serve = ServeClient::start(&home);
    let pid = serve.pid();
    serve.initialize(json!({"model": "gpt-4o"}));
    serve.ok("memory/create_entities", entity("s0"));
    assert_locks_held(&home, pid, "serve's first write");
    let mut sessions = Vec::new();
    for i in 0..2 {
        let id = serve.ok("session/new", json!({}))["session"]["id"].as_str().unwrap().to_string();
        assert_locks_held(&home, pid, "session/new");
        let turn =
            serve.ok("turn/start", json!({"session": id, "text": format!("turn {i}")}))["turn"].as_u64().unwrap();
        let done = serve.turn_notifications(turn).pop().unwrap();
        assert_eq!(done["params"]["outcome"]["text"], "Noted.", "{done}");
        assert_locks_held(&home, pid, "a turn (its session's own agent and connection)");
        sessions.push(id);
    }
    serve.ok("session/list", json!({}));
    serve.ok("notes/set", json!({"key": "style", "value": "terse"}));
    assert_locks_held(&home, pid, "session/list and notes/set");

    // mcp alone beside it: the same after each of its calls.
    let mut mcp = McpClient::start(&home, &project);
    let mcp_pid = mcp.pid();
    let (_, failed) = mcp.call("create_entities", entity("m0"));
    assert!(!failed);
    let shm = foreign(&home, "probe");
    assert!(
        [Some(u64::from(pid)), Some(u64::from(mcp_pid))].contains(&shm["db"].as_u64()),
        "after mcp's first write: {shm}"
    );

    // Both run and write; between writes the foreign client opens, checks and closes.
    let mut acknowledged = vec!["s0".to_string(), "m0".to_string()];
    for round in 1..=4 {
        let check = foreign(&home, "client");
        assert_eq!(check["integrity"], "ok", "round {round}: {check}");
        assert_eq!(check["wal_after_close"], true, "round {round}: the foreign client deleted the live WAL: {check}");
        assert_eq!(check["entities"].as_u64(), Some(acknowledged.len() as u64), "round {round}: {check}");
        let (seen, wal_after) = shell(&home);
        assert_eq!(seen, format!("ok {}", acknowledged.len()), "round {round}: the sqlite3 shell's view");
        assert!(wal_after, "round {round}: the sqlite3 shell's exit deleted the live WAL");
        let (s, m) = (format!("s{round}"), format!("m{round}"));
        serve.ok("memory/create_entities", entity(&s));
        assert!(!mcp.call("create_entities", entity(&m)).1);
        let turn =
            serve.ok("turn/start", json!({"session": sessions[round % 2], "text": format!("round {round}")}))["turn"]
                .as_u64()
                .unwrap();
        serve.turn_notifications(turn);
        acknowledged.extend([s, m]);
    }
    serve.kill();
    mcp.kill();

    let store = home.store();
    let integrity: String =
        store.sqlite_connection().unwrap().query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
    assert_eq!(integrity, "ok");
    let names = crate::support::entity_names(&store);
    acknowledged.sort();
    assert_eq!(names, acknowledged, "every acknowledged entity survives the kill");
    let turns: Vec<usize> = sessions.iter().map(|id| store.full_history(id).unwrap().len()).collect();
    assert_eq!(turns, vec![6, 6], "each session: its first turn and two rounds, question and answer each");
}
