//! SIGKILL in the middle of a write that is not an append: a compaction (its trims and its
//! summary), an import (Seshat's own and a foreign session growing), a schema migration and a
//! memory write. The kill lands inside the write's transaction through a crash point
//! (`SESHAT_CRASH_AT`, compiled into debug builds only: see host/core/src/crash_point.rs), so each
//! test knows it interrupted the write it names. After each kill the database passes an
//! integrity check, holds everything acknowledged before and nothing half-written, and running
//! the same command again finishes the work once.

use std::os::unix::process::ExitStatusExt;
use std::process::Output;

use serde_json::{Value, json};

use crate::on_both_backends;
use crate::support::{Home, Rollout, fixture, mcp_session};

/// Runs `seshat args…` with a crash point armed and checks the process died by SIGKILL there.
fn killed_at(home: &Home, point: &str, args: &[&str]) -> Output {
    let out = home.cmd().env("SESHAT_CRASH_AT", point).args(args).output().expect("run seshat");
    assert_eq!(
        out.status.signal(),
        Some(9),
        "seshat {args:?} was to die at crash point {point}: {:?}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// A session of `turns` tool rounds, each with a long tool output, as an export file.
fn tool_session(home: &Home, id: &str, turns: usize) -> std::path::PathBuf {
    let mut lines = vec![json!({"record": "session", "id": id, "title": "tools", "project": "/p",
        "provider": null, "model": "m", "context_window": 8192, "created_at": 1, "updated_at": 1,
        "message_count": turns * 4,
        "totals": {"input_tokens": 0, "output_tokens": 0, "cache_read_tokens": 0, "cache_creation_tokens": 0},
        "context_tokens": null, "compaction_failures": 0, "auto_compact_disabled": false, "metadata": {}})];
    let mut seq = 0;
    let mut message = |role: &str, parts: Value| {
        seq += 1;
        json!({"record": "message", "seq": seq, "role": role, "parts": parts, "status": "complete", "created_at": seq})
    };
    for t in 0..turns {
        let call = format!("call_{t}");
        lines.push(message("user", json!([{"type": "text", "text": format!("request {t}: run the tests")}])));
        lines.push(message(
            "assistant",
            json!([{"type": "tool_call", "id": call, "name": "shell", "arguments": format!("{{\"cmd\":\"cargo test {t}\"}}")}]),
        ));
        let output =
            format!("running 40 tests\n{}test result: ok. 40 passed\n", format!("test case_{t} ... ok\n").repeat(300));
        lines.push(message(
            "tool",
            json!([{"type": "tool_result", "call_id": call, "content": output, "is_error": false}]),
        ));
        lines.push(message(
            "assistant",
            json!([{"type": "text", "text": format!("Round {t} passed. {}", "note ".repeat(80))}]),
        ));
    }
    let file = home.path().join(format!("{id}.jsonl"));
    std::fs::write(&file, lines.iter().map(|l| format!("{l}\n")).collect::<String>()).unwrap();
    file
}

fn export(home: &Home, id: &str) -> String {
    home.ok(&["sessions", "export", id])
}

on_both_backends! {
fn a_kill_while_a_compaction_writes_its_trims_or_its_summary_leaves_the_history_whole_and_the_next_run_compacts(home) {
    std::fs::write(home.path().join("config.toml"), "[plugins]\nsummariser = \"summariser-extractive\"\n").unwrap();
    let id = "01JFK1KK000000000000000001";
    let file = tool_session(&home, id, 12);
    home.ok(&["sessions", "import", file.to_str().unwrap()]);
    let before = export(&home, id);

    // Killed while the trims are written: none of them is there.
    killed_at(&home, "trims", &["compact", id, "--window", "8192"]);
    home.assert_intact("after the kill");
    let store = home.store();
    assert_eq!(store.trims(id).unwrap(), vec![], "a trim of the killed transaction is there");
    assert_eq!(store.compactions(id).unwrap(), vec![]);
    drop(store);
    assert_eq!(export(&home, id), before, "the session changed under a killed compaction");

    // Killed while the summary is written: the trims committed before it stay, the summary is
    // not there, and the history is whole.
    killed_at(&home, "compaction", &["compact", id, "--window", "8192"]);
    home.assert_intact("after the kill");
    let store = home.store();
    let trims = store.trims(id).unwrap();
    assert!(!trims.is_empty(), "the trims committed before the kill are gone");
    assert_eq!(store.compactions(id).unwrap(), vec![], "a compaction of the killed transaction is there");
    assert!(store.live_view(id).unwrap().compaction.is_none());
    let full = store.full_history(id).unwrap();
    assert_eq!(full.len(), 48, "the full history lost messages");
    drop(store);

    // The next run compacts, once.
    let report: Value = serde_json::from_str(&home.ok(&["compact", id, "--window", "8192", "--json"])).unwrap();
    assert_eq!((report["summarised"].as_bool(), report["trimmed"].as_u64()), (Some(true), Some(0)), "{report}");
    let store = home.store();
    let compactions = store.compactions(id).unwrap();
    assert_eq!(compactions.len(), 1, "{compactions:?}");
    assert!(store.live_view(id).unwrap().compaction.is_some());
    assert_eq!(store.full_history(id).unwrap(), full, "compaction changed the full history");
}
}

on_both_backends! {
fn a_kill_during_an_import_writes_nothing_and_the_next_import_brings_the_session_whole(home) {
    let file = tool_session(&home, "01JFK1KK000000000000000002", 5);
    let reference = home.sibling();
    reference.ok(&["sessions", "import", file.to_str().unwrap()]);

    killed_at(&home, "import", &["sessions", "import", file.to_str().unwrap()]);
    home.assert_intact("after the kill");
    assert_eq!(home.store().list_sessions(&Default::default()).unwrap(), vec![], "a half import is there");
    home.ok(&["sessions", "import", file.to_str().unwrap()]);
    assert_eq!(export(&home, "01JFK1KK000000000000000002"), export(&reference, "01JFK1KK000000000000000002"));
}
}

on_both_backends! {
fn a_kill_while_a_grown_foreign_session_is_appended_leaves_it_as_it_was_and_the_next_import_appends_once(home) {
    let rollout = Rollout::new(&home);
    let file = &rollout.file;
    let import = |home: &Home| -> Value {
        let out = home.ok(&["sessions", "import", "--from", "codex", file.to_str().unwrap(), "--json"]);
        serde_json::from_str::<Value>(&out).unwrap()[0].clone()
    };
    rollout.first(16);
    let id = import(&home)["session"].as_str().unwrap().to_string();
    let first = home.store().full_history(&id).unwrap();
    assert_eq!(first.len(), 8);

    // The file grows; the import that appends its new records is killed before it commits.
    rollout.whole();
    killed_at(&home, "import", &["sessions", "import", "--from", "codex", file.to_str().unwrap()]);
    home.assert_intact("after the kill");
    let store = home.store();
    assert_eq!(store.full_history(&id).unwrap(), first, "the killed append left part of its messages");
    assert_eq!(store.compactions(&id).unwrap(), vec![]);
    drop(store);

    // Imported again: the new records appear once, as an import that was never killed has them.
    let report = import(&home);
    assert_eq!((report["outcome"].as_str(), report["messages"].as_u64()), (Some("appended"), Some(2)), "{report}");
    let reference = home.sibling();
    rollout.first(16);
    let direct = import(&reference)["session"].as_str().unwrap().to_string();
    rollout.whole();
    assert_eq!(import(&reference)["outcome"], "appended");
    let texts = |home: &Home, id: &str| -> Vec<(seshat::conversation::Role, Vec<seshat::conversation::Part>)> {
        home.store().full_history(id).unwrap().into_iter().map(|m| (m.role, m.parts)).collect()
    };
    assert_eq!(texts(&home, &id), texts(&reference, &direct), "appended twice, or lost");
    assert_eq!(home.store().full_history(&id).unwrap().len(), 10);
    assert_eq!(home.store().compactions(&id).unwrap().len(), 1);
    let again = import(&home);
    assert_eq!(again["outcome"], "unchanged", "{again}");
}
}

#[test]
fn a_kill_during_a_migration_leaves_the_last_finished_version_and_the_next_open_finishes() {
    let home = Home::new();
    std::fs::copy(fixture("store-v1.sqlite"), home.db()).unwrap();
    let reference = Home::new();
    std::fs::copy(fixture("store-v1.sqlite"), reference.db()).unwrap();
    let listing = |home: &Home| home.ok(&["sessions", "list", "--all", "--json"]);
    let expected = listing(&reference);

    // Version 1 to 2 commits; the kill lands inside the second migration (version 2 to 3).
    killed_at(&home, "migration:2", &["sessions", "list", "--all"]);
    let conn = rusqlite::Connection::open(home.db()).unwrap();
    let version: u32 = conn.query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
    assert_eq!(version, 2, "the first migration committed, the killed one did not");
    let check: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
    assert_eq!(check, "ok");
    drop(conn);

    assert_eq!(listing(&home), expected, "the database upgraded after a kill differs from one upgraded at once");
    let store = home.store();
    let version: u32 = store.sqlite_connection().unwrap().query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
    assert_eq!(version, seshat::store::SCHEMA_VERSION);
    assert_eq!(store.full_history("01JFV1AAAA0000000000000001").unwrap().len(), 4);
}

on_both_backends! {
fn a_kill_during_a_memory_write_keeps_what_was_acknowledged_and_writes_nothing_of_the_rest(home) {
    home.ok(&["memory", "--action", "set", "--key", "style", "--value", "short answers"]);
    killed_at(&home, "memory", &["memory", "--action", "set", "--key", "editor", "--value", "helix"]);
    home.assert_intact("after the kill");
    let shown = home.ok(&["memory"]);
    assert!(shown.contains("style: short answers"), "the acknowledged note is gone: {shown}");
    assert!(!shown.contains("helix"), "the killed write is there: {shown}");

    // The graph, through `seshat mcp`: the entity of the killed call is not there; the same call
    // again creates it once.
    let create = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "create_entities",
        "arguments": {"entities": [{"name": "Ada", "entityType": "person", "observations": ["writes the parser"]}]}}});
    let read =
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "read_graph", "arguments": {}}});
    let mcp = |crash: Option<&str>, calls: &[Value]| -> (Option<i32>, Vec<Value>) {
        let mut cmd = home.cmd();
        if let Some(point) = crash {
            cmd.env("SESHAT_CRASH_AT", point);
        }
        let (status, _, answers) = mcp_session(cmd, calls);
        (status.signal(), answers)
    };
    let (signal, answers) = mcp(Some("memory"), std::slice::from_ref(&create));
    assert_eq!(signal, Some(9), "the create was to be killed: {answers:?}");
    assert!(!answers.iter().any(|a| a["id"] == 2), "the killed call was answered: {answers:?}");
    let (_, answers) = mcp(None, std::slice::from_ref(&read));
    let graph = answers.iter().find(|a| a["id"] == 3).expect("read_graph answered").to_string();
    assert!(!graph.contains("Ada"), "the killed entity is there: {graph}");
    // (One session each: a server may answer two calls of one session in either order.)
    let (_, answers) = mcp(None, &[create]);
    assert!(answers.iter().any(|a| a["id"] == 2 && a.get("error").is_none()), "{answers:?}");
    let (_, answers) = mcp(None, &[read]);
    let graph = &answers.iter().find(|a| a["id"] == 3).expect("read_graph answered")["result"]["structuredContent"];
    let entities = graph["entities"].as_array().unwrap_or_else(|| panic!("no entities in {graph}"));
    assert_eq!(entities.len(), 1, "{graph}");
    assert_eq!(entities[0]["name"], "Ada");
}
}
