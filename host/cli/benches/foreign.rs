//! Bringing a Claude Code session in (`sessions import --from claude-code`) against the
//! ordinary import of the same session as a Seshat export, in the same run.
//!
//! The file is generated: `--exchanges N` (default 5,000) of a request, an assistant message
//! written over two lines (text, then a tool call; one `message.id`, usage on both) and a tool
//! result of ~2 KB. Measured, each the median of three runs into a fresh database:
//! * **foreign**: `foreign::read` + `foreign::bring_in` of the file;
//! * **baseline**: `Store::import` of the export of the session that made (the same messages,
//!   already in Seshat's format);
//! * **again**: importing the unchanged file a second time (recognised: nothing written).
//!
//! Run: `cargo bench -p seshat-cli --bench foreign` (`-- --exchanges N`).

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use seshat::foreign::{Tool, bring_in, read};
use seshat::input::DEFAULT_MAX_RECORD_BYTES;
use seshat::store::{ImportOptions, Store};

fn write_claude_code(path: &Path, exchanges: usize) -> usize {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let mut parent: Option<String> = None;
    let mut lines = 0;
    let mut line = |out: &mut std::io::BufWriter<std::fs::File>, v: serde_json::Value| {
        writeln!(out, "{v}").unwrap();
        lines += 1;
    };
    let output = "test case ... ok\n".repeat(120);
    for i in 0..exchanges {
        let base = |uuid: String, parent: &Option<String>, kind: &str| {
            serde_json::json!({"parentUuid": parent, "isSidechain": false, "cwd": "/bench/project",
                "sessionId": "bench-session", "version": "2.0.14", "type": kind, "uuid": uuid,
                "timestamp": format!("2025-11-20T09:{:02}:{:02}.000Z", (i / 60) % 60, i % 60)})
        };
        let mut u = base(format!("u{i}"), &parent, "user");
        u["message"] = serde_json::json!({"role": "user", "content": format!("request {i}: run the tests")});
        line(&mut out, u);
        let usage = serde_json::json!({"input_tokens": 10, "cache_read_input_tokens": 5000, "output_tokens": 40});
        let mut a1 = base(format!("a{i}"), &Some(format!("u{i}")), "assistant");
        a1["message"] = serde_json::json!({"id": format!("msg_{i}"), "role": "assistant", "model": "claude-sonnet-4-5",
            "content": [{"type": "text", "text": "Running them."}], "usage": usage});
        line(&mut out, a1);
        let mut a2 = base(format!("b{i}"), &Some(format!("a{i}")), "assistant");
        a2["message"] = serde_json::json!({"id": format!("msg_{i}"), "role": "assistant", "model": "claude-sonnet-4-5",
            "content": [{"type": "tool_use", "id": format!("toolu_{i}"), "name": "Bash", "input": {"command": "cargo test"}}],
            "usage": usage});
        line(&mut out, a2);
        let mut r = base(format!("r{i}"), &Some(format!("b{i}")), "user");
        r["message"] = serde_json::json!({"role": "user", "content": [{"type": "tool_result",
            "tool_use_id": format!("toolu_{i}"), "content": output}]});
        line(&mut out, r);
        parent = Some(format!("r{i}"));
    }
    out.flush().unwrap();
    lines
}

fn median(mut runs: Vec<Duration>) -> Duration {
    runs.sort();
    runs[runs.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let exchanges = args
        .iter()
        .position(|a| a == "--exchanges")
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(5_000);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("session.jsonl");
    let lines = write_claude_code(&file, exchanges);
    let size = std::fs::metadata(&file).unwrap().len();
    let project = |d: &str| d.to_string();

    let mut foreign = Vec::new();
    let mut again = Vec::new();
    let mut export = Vec::new();
    let mut messages = 0;
    for run in 0..3 {
        let mut store = Store::open(&dir.path().join(format!("foreign-{run}.db"))).unwrap();
        let start = Instant::now();
        let converted = read(Tool::ClaudeCode, &file, DEFAULT_MAX_RECORD_BYTES).unwrap().sessions;
        let report = bring_in(&mut store, &converted[0], project).unwrap();
        foreign.push(start.elapsed());
        messages = report.messages;
        let start = Instant::now();
        let converted = read(Tool::ClaudeCode, &file, DEFAULT_MAX_RECORD_BYTES).unwrap().sessions;
        let second = bring_in(&mut store, &converted[0], project).unwrap();
        again.push(start.elapsed());
        assert_eq!(second.outcome, "unchanged");
        if run == 0 {
            store.export(&report.session, &mut export).unwrap();
        }
    }
    assert_eq!(messages, exchanges * 3, "a request, one assistant message, one result per exchange");
    let mut baseline = Vec::new();
    for run in 0..3 {
        let mut store = Store::open(&dir.path().join(format!("native-{run}.db"))).unwrap();
        let start = Instant::now();
        let imported = store
            .import(&mut export.as_slice(), ImportOptions { new_id: true, repair: true, ..ImportOptions::default() })
            .unwrap();
        baseline.push(start.elapsed());
        assert_eq!(imported.messages, messages as u64);
    }
    let (f, b, a) = (median(foreign), median(baseline), median(again));
    println!(
        "claude-code file: {exchanges} exchanges, {lines} lines, {:.1} MB → {messages} messages",
        size as f64 / 1e6
    );
    println!("foreign import (read + bring_in):        {:>8.1} ms", ms(f));
    println!("baseline (import of the same as export): {:>8.1} ms", ms(b));
    println!("ratio foreign / baseline:                {:>8.2}×", ms(f) / ms(b));
    println!("re-import of the unchanged file:         {:>8.1} ms ({:.2}× the first import)", ms(a), ms(a) / ms(f));
}
