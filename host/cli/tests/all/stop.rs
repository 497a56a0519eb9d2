//! Real stop signals — SIGTERM (`systemctl stop`, `docker stop`), SIGINT, SIGHUP — at `seshat
//! serve`, `seshat chat` and `seshat mcp`: what is in flight is stored, as at the end of the input,
//! then the process exits.

use std::io::Read;
use std::process::Command;
use std::time::Duration;

use serde_json::json;
use seshat::conversation::{MessageStatus, Role};

use crate::chat::{home_for, r, rows};
use crate::chat_signals::{signal, spawn_chat, stalled_tool_call};
use crate::memory_cli::McpClient;
use crate::serve::ServeClient;
use crate::support::Home;
use crate::support::server::{Reply, Server, openai};

fn kill(pid: u32, sig: &str) {
    let ok = Command::new("kill").args([sig, &pid.to_string()]).status().unwrap().success();
    assert!(ok, "kill {sig} {pid} failed");
}

#[test]
fn sigterm_sigint_and_sighup_stop_serve_after_every_turn_in_flight_is_stored() {
    for sig in ["-TERM", "-INT", "-HUP"] {
        let mut pieces = openai::text_answer(&["Partial ", "answer"], false);
        pieces.truncate(2);
        let stall = || Reply::Stall { pieces: pieces.clone(), pause: Duration::from_secs(60) };
        let server = Server::start(vec![stall(), stall()]);
        let home = home_for("openai", &server, "");
        let mut c = ServeClient::start(&home);
        c.initialize(json!({"model": "gpt-4o"}));
        let mut sessions = Vec::new();
        for _ in 0..2 {
            let id = c.ok("session/new", json!({}))["session"]["id"].as_str().unwrap().to_string();
            let turn = c.ok("turn/start", json!({"session": id, "text": "go"}))["turn"].as_u64().unwrap();
            sessions.push((id, turn));
        }
        for (_, turn) in &sessions {
            c.wait("the turn's last delta", |v| {
                v["method"] == "turn/event" && v["params"]["turn"] == *turn && v["params"]["event"]["text"] == "answer"
            });
        }
        kill(c.pid(), sig);
        let status = c.wait_exit();
        assert_eq!(status.code(), Some(0), "{sig}: {status}");
        for (id, _) in &sessions {
            assert_eq!(
                rows(&home, Some(id)),
                vec![
                    r(Role::User, MessageStatus::Complete, &["text:go"]),
                    r(Role::Assistant, MessageStatus::Interrupted, &["text:Partial answer"]),
                ],
                "{sig}: each turn in flight stored what arrived"
            );
        }
    }
}

/// Reads `child`'s stdout until it has shown `text` (blocking reads: no polling).
fn read_until(stdout: &mut impl Read, text: &str) -> String {
    let (mut seen, mut buf) = (String::new(), [0u8; 256]);
    while !seen.contains(text) {
        let n = stdout.read(&mut buf).unwrap();
        assert!(n > 0, "stdout ended before `{text}` showed: {seen}");
        seen.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    seen
}

#[test]
fn sigterm_and_sighup_stop_a_chat_after_the_answer_in_flight_is_stored() {
    for (sig, code) in [("-TERM", 143), ("-HUP", 129)] {
        let server = Server::start(vec![stalled_tool_call()]);
        let home = home_for("anthropic", &server, "");
        let mut child = spawn_chat(&home, &["-p", "find Ada"]);
        let mut stdout = child.stdout.take().unwrap();
        read_until(&mut stdout, "Looking it up");
        signal(&child, sig);
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(code), "{sig}");
        assert_eq!(
            rows(&home, None),
            vec![
                r(Role::User, MessageStatus::Complete, &["text:find Ada"]),
                r(
                    Role::Assistant,
                    MessageStatus::Interrupted,
                    &["text:Looking it up", "call:toolu_9:memory_search_nodes:{\"query"]
                ),
                r(Role::Tool, MessageStatus::Synthetic, &["result:toolu_9:error"]),
            ],
            "{sig}"
        );
    }
}

#[test]
fn sigterm_stops_mcp_cleanly_and_what_it_answered_is_kept() {
    let home = Home::new();
    let project = home.path().join("proj");
    std::fs::create_dir_all(project.join(".git")).unwrap();
    let mut mcp = McpClient::start(&home, &project);
    let (created, failed) = mcp.call(
        "create_entities",
        json!({"entities": [{"name": "Ada", "entityType": "person", "observations": ["prefers tabs"]}]}),
    );
    assert!(!failed, "{created}");
    kill(mcp.pid(), "-TERM");
    let status = mcp.wait_exit();
    assert_eq!(status.code(), Some(0), "{status}");
    assert_eq!(crate::support::entity_names(&home.store()), ["Ada"]);
}
