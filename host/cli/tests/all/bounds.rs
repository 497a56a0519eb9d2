//! Everything read or queued is bounded: only regular files are read (a FIFO or `/dev/zero`
//! never stalls or floods Seshat), a record longer than the limit is refused naming its line, a
//! message too large to store is refused before SQLite copies it, a bad record in another
//! agent's directory is skipped by name, and `serve` bounds its lines and what a client leaves
//! unread.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{Value, json};
use seshat::conversation::{MessageStatus, NewMessage, Part, Role};

use crate::support::{Home, Watchdog, fixture};

fn mkfifo(path: &Path) {
    let ok = Command::new("mkfifo").arg(path).status().unwrap().success();
    assert!(ok, "mkfifo {}", path.display());
}

/// Runs `cmd` to its end, killing it if it is still running after five minutes — a watchdog, so
/// code that blocks on a FIFO or reads `/dev/zero` forever fails here instead of hanging the suite.
fn bounded(mut cmd: Command) -> std::process::Output {
    let child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let watchdog = Watchdog::on(child.id(), std::time::Duration::from_secs(300));
    let out = child.wait_with_output().unwrap();
    assert!(!watchdog.fired(), "still running after five minutes: {cmd:?}");
    out
}

fn stderr_of(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn config(home: &Home, text: &str) {
    std::fs::write(home.path().join("config.toml"), text).unwrap();
}

#[test]
fn an_import_reads_only_regular_files_and_says_what_the_path_is() {
    let home = Home::new();
    let fifo = home.path().join("pipe.jsonl");
    mkfifo(&fifo);
    for (path, kind) in [(Path::new("/dev/zero"), "character device"), (fifo.as_path(), "FIFO (named pipe)")] {
        for from in [&[][..], &["--from", "claude-code"][..]] {
            let mut cmd = home.cmd();
            cmd.args(["sessions", "import"]).args(from).arg(path);
            let out = bounded(cmd);
            assert!(!out.status.success());
            let err = stderr_of(&out);
            assert!(err.contains(&format!("is a {kind}, not a regular file")), "{err}");
        }
    }
    assert_eq!(home.store().list_sessions(&Default::default()).unwrap().len(), 0, "nothing was imported");
}

#[test]
fn knowledge_add_skips_a_fifo_named_directly_and_indexes_the_rest() {
    let home = Home::new();
    let docs = home.path().join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    std::fs::write(docs.join("guide.md"), "# Guide\n\nRestart the flux capacitor.\n").unwrap();
    let fifo = docs.join("stream.md");
    mkfifo(&fifo);
    let mut cmd = home.cmd();
    cmd.args(["knowledge", "add"]).arg(&fifo).arg(docs.join("guide.md")).arg("--json");
    let out = bounded(cmd);
    assert!(out.status.success(), "{}", stderr_of(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["skipped"][0]["why"], "a FIFO (named pipe), not a regular file", "{report}");
    assert_eq!(report["chunks"], 1, "{report}");
}

#[test]
fn a_claude_code_directory_with_a_fifo_a_device_link_and_a_bad_record_imports_the_rest_naming_each() {
    let home = Home::new();
    let dir = home.path().join("claude");
    let project = dir.join("-work-demo");
    std::fs::create_dir_all(&project).unwrap();
    // The real fixture session, with one record made invalid UTF-8 and one made too long.
    let source = std::fs::read_dir(fixture("claude-code/-work-demo"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "jsonl") && !p.to_string_lossy().contains("agent-"))
        .expect("the fixture's main session");
    let text = std::fs::read_to_string(&source).unwrap();
    let mut lines: Vec<Vec<u8>> = text.lines().map(|l| l.as_bytes().to_vec()).collect();
    let n = lines.len();
    lines.insert(n / 2, b"{\"type\":\"user\",\"message\":\"caf\xe9\"}".to_vec());
    lines.insert(n / 2 + 1, format!("{{\"type\":\"user\",\"pad\":\"{}\"}}", "x".repeat(2 << 20)).into_bytes());
    let session = project.join(source.file_name().unwrap());
    std::fs::write(&session, lines.join(&b"\n"[..])).unwrap();
    std::os::unix::fs::symlink("/dev/zero", project.join("zero.jsonl")).unwrap();
    mkfifo(&project.join("pipe.jsonl"));
    config(&home, "[store]\nmax_record_mib = 1\n");

    let mut cmd = home.cmd();
    cmd.args(["sessions", "import", "--from", "claude-code"]).arg(&dir).arg("--json");
    let out = bounded(cmd);
    let stderr = stderr_of(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("zero.jsonl: a character device, not a regular file"), "{stderr}");
    assert!(stderr.contains("pipe.jsonl: a FIFO (named pipe), not a regular file"), "{stderr}");
    let reports: Value = serde_json::from_slice(&out.stdout).unwrap();
    let skipped = &reports[0]["skipped"];
    let file = session.display();
    assert_eq!(skipped[format!("record not valid UTF-8 ({file}:{})", n / 2 + 1)], 1, "{skipped}");
    assert_eq!(skipped[format!("record longer than 1 MiB ({file}:{})", n / 2 + 2)], 1, "{skipped}");
    assert_eq!(reports[0]["messages"], 9, "the rest of the session came in: {reports}");
}

#[test]
fn a_record_over_the_limit_fails_the_import_naming_its_line_and_writes_nothing() {
    let home = Home::new();
    config(&home, "[store]\nmax_record_mib = 1\n");
    let export = std::fs::read_to_string(fixture("session-export.jsonl")).unwrap();
    let mut lines: Vec<String> = export.lines().map(str::to_string).collect();
    let mut long: Value = serde_json::from_str(&lines[1]).unwrap();
    long["parts"] = json!([{"type": "text", "text": "y".repeat(2 << 20)}]);
    lines[1] = long.to_string();
    let file = home.path().join("big.jsonl");
    std::fs::write(&file, lines.join("\n")).unwrap();
    let err = home.fails(&["sessions", "import", file.to_str().unwrap()]);
    assert!(err.contains("line 2: the record is longer than 1 MiB") && err.contains("max_record_mib"), "{err}");
    assert_eq!(home.store().list_sessions(&Default::default()).unwrap().len(), 0);
    // With the limit raised it imports; a byte-order mark before the first record is no error.
    config(&home, "[store]\nmax_record_mib = 4\n");
    std::fs::write(&file, format!("\u{feff}{}", lines.join("\n"))).unwrap();
    home.ok(&["sessions", "import", file.to_str().unwrap()]);
    assert_eq!(home.store().list_sessions(&Default::default()).unwrap().len(), 1);
}

#[test]
fn a_message_too_large_to_store_is_refused_before_sqlite_copies_it() {
    let home = Home::new();
    let id = home.session("/big");
    let mut store = home.store();
    let huge = NewMessage {
        role: Role::Tool,
        parts: vec![Part::ToolResult {
            call_id: "c1".into(),
            content: "z".repeat(seshat::store::MAX_MESSAGE_BYTES + 1),
            is_error: false,
        }],
        usage: None,
        status: MessageStatus::Complete,
    };
    let small = NewMessage {
        role: Role::User,
        parts: vec![Part::Text { text: "hello".into() }],
        usage: None,
        status: MessageStatus::Complete,
    };
    let err = store.append(&id, &[small, huge]).unwrap_err();
    assert_eq!(err.code(), "message_too_large");
    assert!(err.to_string().contains("message 1 holds 256 MiB of text, more than the 256 MiB"), "{err}");
    assert_eq!(store.full_history(&id).unwrap().len(), 0, "nothing of the batch was written");
}

fn request(id: u64, method: &str, params: Value) -> String {
    format!("{}\n", json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
}

#[test]
fn serve_refuses_a_line_over_the_limit_and_an_invalid_utf8_line_and_applies_neither() {
    let home = Home::new();
    config(&home, "[store]\nmax_record_mib = 1\n");
    let mut child = home.cmd().arg("serve").stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut next = || {
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        serde_json::from_str::<Value>(&line).unwrap_or(Value::Null)
    };
    stdin.write_all(request(1, "initialize", json!({})).as_bytes()).unwrap();
    assert_eq!(next()["id"], 1);
    stdin
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"session/new\",\"params\":{\"title\":\"caf\xe9\"}}\n")
        .unwrap();
    let bad = next();
    assert_eq!((bad["id"].clone(), bad["error"]["code"].as_i64()), (Value::Null, Some(-32700)), "{bad}");
    let long = request(3, "notes/set", json!({"key": "k", "value": "v".repeat(2 << 20)}));
    // The server stops reading at the limit: write from a thread, so a full pipe cannot block the test.
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(long.as_bytes());
        stdin
    });
    let refused = next();
    assert_eq!((refused["id"].clone(), refused["error"]["code"].as_i64()), (Value::Null, Some(-32600)), "{refused}");
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(message.contains("line 3 is longer than 1 MiB") && message.contains("connection is closed"), "{message}");
    drop(writer.join().unwrap());
    let status = child.wait().unwrap();
    assert!(status.success(), "{status}");
    let store = home.store();
    assert_eq!(store.list_sessions(&Default::default()).unwrap().len(), 0, "the invalid line created nothing");
    let notes: i64 =
        store.sqlite_connection().unwrap().query_row("SELECT count(*) FROM memory_notes", [], |r| r.get(0)).unwrap();
    assert_eq!(notes, 0, "the long line set nothing");
}

#[test]
fn serve_disconnects_a_client_that_leaves_too_much_unread_and_serves_the_others() {
    let home = Home::new();
    config(&home, "[serve]\nmax_unread_mib = 1\n");
    let (mut child, socket) = crate::serve::listening(&home);
    let mut greedy = std::os::unix::net::UnixStream::connect(&socket).unwrap();
    greedy.write_all(request(1, "initialize", json!({})).as_bytes()).unwrap();
    greedy.write_all(request(2, "notes/set", json!({"key": "big", "value": "w".repeat(200_000)})).as_bytes()).unwrap();
    // It asks for the 200 KB note again and again and reads nothing, until the server cuts it off
    // (its writes then fail); the cap only keeps a server that never does from looping forever.
    let mut asked = 0;
    while asked < 100_000 && greedy.write_all(request(3 + asked, "notes/list", json!({})).as_bytes()).is_ok() {
        asked += 1;
    }
    assert!(asked < 100_000, "the server never disconnected a client that reads nothing");
    // What the socket still held, then the end: the server closed the connection (the timeout only
    // keeps a server that never closes it from hanging the test).
    greedy.set_read_timeout(Some(std::time::Duration::from_secs(60))).unwrap();
    let mut rest = Vec::new();
    let ended = greedy.read_to_end(&mut rest);
    // Closed: an end of file, or a reset when the server closed with this client's requests still
    // unread in its socket (Linux reports that as ECONNRESET); a timeout is a server that never
    // closed it.
    let closed = match &ended {
        Ok(_) => true,
        Err(e) => e.kind() == std::io::ErrorKind::ConnectionReset,
    };
    assert!(closed, "the server never closed the connection: {ended:?}");
    let answered = rest.split(|&b| b == b'\n').filter(|l| !l.is_empty()).count() as u64;
    assert!(answered < asked, "the server stopped answering it ({answered} of {asked} answered)");
    // Another client is served as before.
    let other = std::os::unix::net::UnixStream::connect(&socket).unwrap();
    let mut reader = BufReader::new(other.try_clone().unwrap());
    let mut w = other;
    w.write_all(request(1, "initialize", json!({})).as_bytes()).unwrap();
    w.write_all(request(2, "notes/list", json!({})).as_bytes()).unwrap();
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    line.clear();
    reader.read_line(&mut line).unwrap();
    let listed: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(listed["result"]["notes"][0]["key"], "big", "{line}");
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn searching_a_huge_original_builds_its_snippet_within_bounded_memory() {
    // A 62 MB tool result whose failing line is at its end. The snippet is cut from what the
    // index holds of it; building it from the whole text took eight more bytes per byte (a folded
    // copy and its byte map): 1.1 GB at the peak here, more than the data limit the search runs
    // under (800 MB; cut from the index's excerpt it needs about half).
    let home = Home::new();
    let id = home.session("/huge");
    let mut log = "step ok: compiled module\n".repeat(2_500_000);
    log.push_str("FAILED test_upload_resumes: checksum mismatch\n");
    let call = NewMessage {
        role: Role::Assistant,
        parts: vec![Part::ToolCall { id: "c1".into(), name: "run_tests".into(), arguments: "{}".into() }],
        usage: None,
        status: MessageStatus::Complete,
    };
    let result = NewMessage {
        role: Role::Tool,
        parts: vec![Part::ToolResult { call_id: "c1".into(), content: log, is_error: true }],
        usage: None,
        status: MessageStatus::Complete,
    };
    home.store().append(&id, &[call, result]).unwrap();
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(r#"ulimit -d 800000 && exec "$0" sessions search checksum --all --json"#)
        .arg(env!("CARGO_BIN_EXE_seshat"))
        .env("SESHAT_HOME", home.path())
        .current_dir(home.path());
    let out = bounded(cmd);
    assert!(out.status.success(), "{}", stderr_of(&out));
    let hits: Value = serde_json::from_slice(&out.stdout).unwrap();
    let snippet = hits[0]["snippet"].as_str().unwrap_or_default();
    assert!(snippet.contains("«checksum» mismatch"), "{hits}");
}
