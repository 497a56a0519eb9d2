//! `seshat mcp` at scale, on both backends, driven by the official MCP Python SDK: every memory
//! tool with 1, 20, 100 and 1,000 entities or names in one call answers (a call that does not
//! answer within its deadline fails the test, naming the tool), and a stop signal during a large
//! call ends the process with the call's transaction whole or absent, leaving the store free for
//! other writers.

use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};

use crate::on_both_backends;
use crate::support::Home;

/// How long one call may take before the test calls it hung (a hang is forever; 1,000 entities
/// take well under a second here).
const DEADLINE_SECS: u64 = 120;

/// The MCP SDK's run of every tool with `n` entities; the answers, in order.
fn drive(home: &Home, n: usize) -> Vec<Value> {
    let mut env = json!({
        "SESHAT_HOME": home.path(),
        "PATH": std::env::var("PATH").unwrap_or_default(),
        "TZ": "UTC",
    });
    if let Some(url) = home.url() {
        env["SESHAT_DATABASE_URL"] = json!(url);
    }
    let out = Command::new("python3")
        .arg(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/all/mcp_scale.py"))
        .arg(env!("CARGO_BIN_EXE_seshat"))
        .arg(env.to_string())
        .arg(home.path())
        .arg(n.to_string())
        .arg(DEADLINE_SECS.to_string())
        .output()
        .expect("python3 runs");
    assert!(out.status.success(), "the MCP SDK client failed ({n}): {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice::<Value>(&out.stdout).unwrap().as_array().unwrap().clone()
}

fn count(answer: &Value, field: &str) -> usize {
    answer["structured"][field].as_array().map_or(usize::MAX, Vec::len)
}

on_both_backends! {
    fn every_mcp_tool_answers_with_1_20_100_and_1000_entities(home) {
        for n in [1, 20, 100, 1000] {
            let home = home.sibling();
            let answers = drive(&home, n);

            let names: Vec<&str> = answers.iter().map(|a| a["name"].as_str().unwrap()).collect();
            for a in &answers {
                assert_eq!(a["timed_out"], false, "{} with {n} did not answer within {DEADLINE_SECS} s: {a}", a["name"]);
                assert_eq!(a["is_error"], false, "{} with {n}: {a}", a["name"]);
            }
            assert_eq!(names.len(), 10, "every call answered ({n}): {names:?}");
            assert_eq!(count(&answers[0], "entities"), n, "create_entities created {n}");
            assert_eq!(count(&answers[1], "relations"), n, "create_relations created {n}");
            assert_eq!(count(&answers[3], "entities"), n, "open_nodes found all {n}");
            assert!(count(&answers[3], "relations") == n, "open_nodes' relations among them ({n})");
            assert!(count(&answers[4], "entities") >= 1, "search_nodes found some ({n})");
            assert_eq!(count(&answers[9], "entities"), 0, "after delete_entities, open_nodes finds none ({n})");
            assert!(home.store().memory(None).read_graph(None, 0, 10).unwrap().0.entities.is_empty());
        }
    }
}

on_both_backends! {
    fn a_stop_signal_during_a_large_call_ends_mcp_with_the_call_whole_or_absent(home) {
        let mut mcp = crate::memory_cli::McpClient::start(&home, home.path());
        let entities: Vec<Value> = (0..3000)
            .map(|i| json!({"name": format!("E{i}"), "entityType": "t", "observations": ["a", "b", "c"]}))
            .collect();
        mcp.send("tools/call", json!({"name": "create_entities", "arguments": {"entities": entities}}));
        // The signal comes while the call is read or run, or just after: whichever, the process ends.
        let ok = Command::new("kill").args(["-TERM", &mcp.pid().to_string()]).status().unwrap().success();
        assert!(ok);
        let status = mcp
            .wait_exit_within(Duration::from_secs(DEADLINE_SECS))
            .unwrap_or_else(|| panic!("seshat mcp did not exit within {DEADLINE_SECS} s of SIGTERM"));
        assert_eq!(status.code(), Some(0), "{status}");
        let stored = home.store().memory(None).read_graph(None, 0, 5000).unwrap().0.entities.len();
        assert!(stored == 0 || stored == 3000, "the call's one transaction, whole or absent: {stored}");
        // The store's write lock is free: another process writes at once.
        home.ok(&["memory", "--action", "set", "--key", "after", "--value", "free"]);
    }
}
