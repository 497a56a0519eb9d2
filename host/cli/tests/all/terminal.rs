//! What a person at the terminal hits with a small local model: a paste too large for the window
//! is refused before anything is stored or sent, once, with its size and what to do, and the next
//! turn goes on as if it never came.

use serde_json::Value;

use crate::chat::{chat, home_for};
use crate::support::server::{Recorded, Reply, Server, openai};

#[test]
fn a_paste_too_large_for_the_window_is_refused_before_anything_is_stored_or_sent() {
    let server = Server::route(|r: &Recorded| {
        if r.path.ends_with("/chat/completions") {
            Reply::Stream { pieces: openai::text_answer(&["Fine."], true) }
        } else {
            Reply::json(404, r#"{"error":{"message":"not found"}}"#)
        }
    });
    let home = home_for("openai", &server, "");
    let first = chat(&home, &["--model", "local-8b", "--window", "8192", "-p", "hello"], &[]);
    assert!(first.status.success(), "{}", String::from_utf8_lossy(&first.stderr));
    // About 40 KB of log lines: some 10,000 tokens, more than the 8,192-token window holds.
    let paste: String =
        (0..1_100).map(|i| format!("2026-12-06 10:{:02} worker {i} retried the job\n", i % 60)).collect();
    assert!(paste.len() > 40_000);
    let out = chat(&home, &["--continue", "--window", "8192", "-p", &paste], &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert_eq!(err.matches("message_too_large").count(), 1, "the code once: {err}");
    assert!(
        err.contains("cannot fit the model's 8192-token window") && err.contains("Nothing was sent or stored"),
        "{err}"
    );
    assert!(err.contains("--window"), "the flag that gives a larger window: {err}");
    assert!(!err.contains("seshat compact"), "compacting cannot help: {err}");
    let chats = |s: &Server| s.requests().iter().filter(|r| r.path.ends_with("/chat/completions")).count();
    assert_eq!(chats(&server), 1, "nothing was sent for the paste, no summary either");
    // The next turn goes on with the session as it was.
    let out = chat(&home, &["--continue", "--window", "8192", "-p", "and now?", "--json"], &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let outcome: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(outcome["text"], "Fine.", "{outcome}");
    let last = server.requests().into_iter().rfind(|r| r.path.ends_with("/chat/completions")).unwrap();
    let sent = last.json()["messages"].to_string();
    assert!(sent.contains("and now?") && !sent.contains("retried the job"), "{sent}");
    let listed: Value = serde_json::from_str(&home.ok(&["sessions", "list", "--json"])).unwrap();
    assert_eq!(listed[0]["message_count"], 4, "two exchanges, the paste not among them: {listed}");
}
