//! Session-store benchmarks, each beside a raw-rusqlite baseline measured in the same run.
//!
//! Run: `cargo bench -p seshat --bench store` (add `-- --quick` for a smaller, faster pass).
//! Both sides use the same schema (created by `Store::open`), the same PRAGMAs (WAL,
//! `synchronous=NORMAL`, foreign keys on, 10 s busy timeout), the same transaction shape and the
//! same rows; the ratio is Seshat's time over the baseline's.

mod common;
use common::*;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use rusqlite::{Connection, TransactionBehavior, params};
use seshat::conversation::{MessageStatus, NewMessage, Part, Role, Usage};
use seshat::store::{ListFilter, NewSession, Store};

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let scale = if quick { 10 } else { 1 };
    println!("| benchmark | seshat | baseline | ratio | target |");
    println!("|---|---|---|---|---|");
    append(100_000 / scale);
    live_view(10_000 / scale);
    list(10_000 / scale);
    list_process(10_000 / scale);
}

/// A message like a chat writes: text, or a tool call, or a tool result, with usage on replies.
fn message(i: usize) -> NewMessage {
    let (role, parts) = match i % 4 {
        0 => (Role::User, vec![Part::Text { text: format!("request {i}: please look at the build output") }]),
        1 => (
            Role::Assistant,
            vec![Part::ToolCall {
                id: format!("call_{i}"),
                name: "run".into(),
                arguments: r#"{"cmd":"cargo build"}"#.into(),
            }],
        ),
        2 => (
            Role::Tool,
            vec![Part::ToolResult { call_id: format!("call_{}", i - 1), content: "ok\n".repeat(100), is_error: false }],
        ),
        _ => (Role::Assistant, vec![Part::Text { text: format!("answer {i}: the build passes") }]),
    };
    let usage = (role == Role::Assistant).then_some(Usage {
        input_tokens: 100,
        output_tokens: 20,
        context_tokens: Some(1000 + i as u64),
        ..Default::default()
    });
    NewMessage { role, parts, usage, status: MessageStatus::Complete }
}

/// A connection with exactly the PRAGMAs the store uses.
fn raw(path: &Path) -> Connection {
    let conn = Connection::open(path).unwrap();
    conn.busy_timeout(Duration::from_secs(10)).unwrap();
    conn.pragma_update(None, "foreign_keys", true).unwrap();
    conn.pragma_update(None, "journal_mode", "wal").unwrap();
    conn.pragma_update(None, "synchronous", "NORMAL").unwrap();
    conn
}

fn new_store(dir: &Path, name: &str) -> (Store, String) {
    let mut store = Store::open(&dir.join(name)).unwrap();
    let id = store.create_session(NewSession { project: "/bench".into(), ..Default::default() }).unwrap().id;
    (store, id)
}

fn append(n: usize) {
    let dir = tempfile::tempdir().unwrap();
    let msgs: Vec<NewMessage> = (0..n).map(message).collect();
    let mut ours = Duration::MAX;
    let mut base = Duration::MAX;
    for round in 0..3 {
        let (mut store, id) = new_store(dir.path(), &format!("ours{round}.db"));
        let t = Instant::now();
        for m in &msgs {
            store.append(&id, std::slice::from_ref(m)).unwrap();
        }
        ours = ours.min(t.elapsed());

        // Baseline: the same schema and rows, the same BEGIN IMMEDIATE / read count / insert /
        // update session / COMMIT per message, written by hand.
        let (store, id) = new_store(dir.path(), &format!("base{round}.db"));
        let path = store.path().to_path_buf();
        drop(store);
        let mut conn = raw(&path);
        let t = Instant::now();
        for m in &msgs {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).unwrap();
            let count: u64 = tx
                .prepare_cached("SELECT message_count FROM sessions WHERE id = ?1")
                .unwrap()
                .query_row([&id], |r| r.get(0))
                .unwrap();
            let parts = serde_json::to_string(&m.parts).unwrap();
            let usage = m.usage.map(|u| serde_json::to_string(&u).unwrap());
            tx.prepare_cached(
                "INSERT INTO messages (session_id, seq, role, parts, usage, status, created_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5, 'complete', 0)",
            )
            .unwrap()
            .execute(params![id, count + 1, m.role.as_str(), parts, usage])
            .unwrap();
            tx.prepare_cached("UPDATE sessions SET message_count = ?2, updated_at = 0 WHERE id = ?1")
                .unwrap()
                .execute(params![id, count + 1])
                .unwrap();
            tx.commit().unwrap();
        }
        base = base.min(t.elapsed());
    }
    report(&format!("append {n} messages, one transaction each (best of 3)"), ours, base, "≤ 1.5×");
}

fn live_view(n: usize) {
    let dir = tempfile::tempdir().unwrap();
    let (mut store, id) = new_store(dir.path(), "view.db");
    let msgs: Vec<NewMessage> = (0..n).map(message).collect();
    store.append(&id, &msgs).unwrap();
    let ours = median_of(21, || assert_eq!(store.live_view(&id).unwrap().entries.len(), n));
    let conn = raw(store.path());
    // Baseline: read the same rows and decode their JSON columns by hand.
    let base = median_of(21, || {
        let mut stmt = conn
            .prepare_cached(
                "SELECT seq, role, parts, usage, status, created_at FROM messages WHERE session_id = ?1 ORDER BY seq",
            )
            .unwrap();
        let rows: Vec<(u64, String, serde_json::Value, Option<serde_json::Value>, String, i64)> = stmt
            .query_map([&id], |r| {
                let parts: String = r.get(2)?;
                let usage: Option<String> = r.get(3)?;
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    serde_json::from_str(&parts).unwrap(),
                    usage.map(|u| serde_json::from_str(&u).unwrap()),
                    r.get(4)?,
                    r.get(5)?,
                ))
            })
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        assert_eq!(rows.len(), n);
    });
    report(&format!("live view of a {n}-message session (median of 21)"), ours, base, "≤ 2×");
}

fn sessions_db(dir: &Path, n: usize) -> std::path::PathBuf {
    let mut store = Store::open(&dir.join("list.db")).unwrap();
    for i in 0..n {
        let id = store.create_session(NewSession { project: "/bench".into(), ..Default::default() }).unwrap().id;
        if i % 10 == 0 {
            store.append(&id, &[message(0), message(3)]).unwrap();
        }
    }
    store.path().to_path_buf()
}

fn list(n: usize) {
    let dir = tempfile::tempdir().unwrap();
    let path = sessions_db(dir.path(), n);
    let store = Store::open(&path).unwrap();
    let filter = ListFilter { project: Some("/bench".into()), limit: None };
    let ours = median_of(21, || {
        let sessions = store.list_sessions(&filter).unwrap();
        let ids: Vec<&str> = sessions.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(store.short_ids(&ids).unwrap().len(), n);
    });
    let conn = raw(&path);
    let base = median_of(21, || {
        let mut stmt = conn
            .prepare_cached(
                "SELECT id, title, project, provider, model, context_window, created_at, updated_at, \
                 message_count, input_tokens, output_tokens, cache_read_tokens, cache_creation_tokens, \
                 context_tokens, compaction_failures, auto_compact_disabled, metadata FROM sessions \
                 WHERE project = ?1 ORDER BY updated_at DESC, id DESC",
            )
            .unwrap();
        let rows: Vec<(String, Option<String>, String, i64, u64, String)> = stmt
            .query_map(["/bench"], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(7)?, r.get(8)?, r.get(16)?)))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        assert_eq!(rows.len(), n);
    });
    report(&format!("list {n} sessions with short ids (median of 21)"), ours, base, "≤ 2×");
}

fn list_process(n: usize) {
    let dir = tempfile::tempdir().unwrap();
    let path = sessions_db(dir.path(), n);
    let bin = env!("CARGO_BIN_EXE_seshat");
    let run = |cmd: &mut Command| {
        let out = cmd.output().expect("run");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert!(out.stdout.len() > n * 20);
    };
    let ours =
        median_of(11, || run(Command::new(bin).args(["--db", path.to_str().unwrap(), "sessions", "list", "--all"])));
    let Ok(_) = Command::new("sqlite3").arg("-version").output() else {
        println!("| `seshat sessions list` process, {n} sessions | {} | sqlite3 not installed | - | - |", fmt(ours));
        return;
    };
    let sql = "SELECT id, updated_at, message_count, context_tokens, context_window, title FROM sessions \
               ORDER BY updated_at DESC, id DESC;";
    let base = median_of(11, || run(Command::new("sqlite3").args([path.to_str().unwrap(), sql])));
    report(
        &format!("`seshat sessions list --all` process vs `sqlite3` shell, {n} sessions (median of 11)"),
        ours,
        base,
        "-",
    );
}
