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

/// Ctrl-C while a compaction's summary is being written stops it at once, and the session is as
/// it was: no compaction, no failure counted, nothing trimmed.
#[test]
fn ctrl_c_stops_a_compaction_waiting_on_its_summary_and_leaves_the_session_as_it_was() {
    use crate::chat_signals::{signal, spawn_chat, wait_exit};
    use crate::support::server::anthropic;
    // Chat requests stream an answer; the summary request (not streamed) is never answered.
    let server = Server::route(|r: &Recorded| {
        if r.json()["stream"] == true {
            Reply::Stream { pieces: anthropic::text_answer(&["Fine."]) }
        } else {
            Reply::Silent { pause: std::time::Duration::from_secs(120) }
        }
    });
    let home = home_for("anthropic", &server, "");
    // Only the interrupt can end the wait: the server is given longer than the test waits.
    let config = std::fs::read_to_string(home.path().join("config.toml")).unwrap();
    let config = config.replace("first_byte_timeout_secs = 5\n", "first_byte_timeout_secs = 300\n");
    std::fs::write(home.path().join("config.toml"), config.replace("max_retries = 2\n", "max_retries = 0\n")).unwrap();
    let id = home.session("elsewhere");
    let mut store = home.store();
    for i in 0..30 {
        let role = if i % 2 == 0 { seshat::conversation::Role::User } else { seshat::conversation::Role::Assistant };
        let text = format!("Note {i}: {}", "the release plan moves on, step by careful step. ".repeat(20));
        store.append(&id, &[seshat::conversation::NewMessage::text(role, &text)]).unwrap();
    }
    let mut child =
        spawn_chat(&home, &["--resume", &id, "--model", "claude-sonnet-4-5", "--window", "8192", "-p", "go on"]);
    crate::support::wait_for("the summary request", || server.requests().iter().any(|r| r.json()["stream"] != true));
    signal(&child, "-INT");
    let status = wait_exit(&mut child, "the chat stopped mid-compaction");
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert_eq!(status.code(), Some(130), "{stderr}");
    let store = home.store();
    assert!(store.compactions(&id).unwrap().is_empty(), "no compaction recorded");
    assert_eq!(store.session(&id).unwrap().compaction_failures, 0, "an interruption is no failure");
    assert!(server.requests().iter().all(|r| r.json()["stream"] != true), "no chat request went out");
}

/// A server that answers nothing when streaming (as some local servers do when tools are offered)
/// and, once `whole` is set, answers whole requests.
fn empty_when_streaming(whole: std::sync::Arc<std::sync::atomic::AtomicBool>) -> Server {
    use crate::support::server::anthropic;
    Server::route(move |r: &Recorded| {
        if r.json()["stream"] == true {
            let mut pieces = vec![anthropic::start(10)];
            pieces.extend(anthropic::stop("end_turn", 0));
            return Reply::Stream { pieces };
        }
        let content = if whole.load(std::sync::atomic::Ordering::SeqCst) {
            serde_json::json!([{"type": "text", "text": "Whole."}])
        } else {
            serde_json::json!([])
        };
        let answer = serde_json::json!({"id": "m", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
            "content": content, "stop_reason": "end_turn", "usage": {"input_tokens": 5, "output_tokens": 1}});
        Reply::json(200, &answer.to_string())
    })
}

/// An empty streamed answer is asked for once more, whole, and that answer is the turn's.
#[test]
fn an_empty_streamed_answer_is_asked_for_again_whole() {
    let whole = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let server = empty_when_streaming(whole);
    let home = home_for("anthropic", &server, "");
    let out = chat(&home, &["-p", "hi", "--json"], &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let outcome: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(outcome["text"], "Whole.", "{outcome}");
    let streamed: Vec<bool> = server.requests().iter().map(|r| r.json()["stream"] == true).collect();
    assert_eq!(streamed, [true, false]);
}

/// No answer at all, streamed or whole: the REPL says so with what to do, stores no blank
/// answer, and `/retry` asks again for the same message once the server answers.
#[test]
fn an_empty_answer_is_said_in_the_repl_and_retried_with_nothing_half_stored() {
    use crate::chat_signals::repl;
    use crate::support::wait_for;
    let whole = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let server = empty_when_streaming(whole.clone());
    let home = home_for("anthropic", &server, "");
    let (mut pty, mut child) = repl(&home);
    pty.send("hi\r");
    wait_for("the notice", || pty.text().contains("no answer: the model answered nothing"));
    assert!(pty.text().contains("hint: /retry asks again"), "{}", pty.text());
    let stored = |home: &crate::support::Home| {
        let store = home.store();
        let session = store.list_sessions(&Default::default()).unwrap().remove(0);
        store.full_history(&session.id).unwrap()
    };
    assert_eq!(stored(&home).len(), 1, "the message alone, no blank answer");
    whole.store(true, std::sync::atomic::Ordering::SeqCst);
    pty.send("/retry\r");
    crate::chat_signals::wait_prompt(&pty, "Whole.");
    pty.send("/exit\r");
    crate::chat_signals::wait_exit(&mut child, "the REPL");
    let history = stored(&home);
    assert_eq!(history.len(), 2, "one message, one answer: {history:?}");
    assert_eq!(crate::support::text_of(&history[1]), "Whole.");
}

/// A session resumed only to look at it (the REPL left without a word) stays where it was in the
/// order: `--continue` still opens the one last worked in.
#[test]
fn resuming_only_to_look_does_not_change_what_continue_opens() {
    use crate::chat_signals::{Pty, wait_exit};
    use crate::support::server::anthropic;
    use crate::support::wait_for;
    let server = Server::route(|_: &Recorded| Reply::Stream { pieces: anthropic::text_answer(&["Fine."]) });
    let home = home_for("anthropic", &server, "");
    let older = chat(&home, &["--model", "claude-sonnet-4-5", "-p", "first", "--json"], &[]);
    let older: Value = serde_json::from_slice(&older.stdout).unwrap();
    let newer = chat(&home, &["--model", "claude-sonnet-4-5", "-p", "second", "--json"], &[]);
    let newer: Value = serde_json::from_slice(&newer.stdout).unwrap();
    let mut cmd = home.cmd();
    cmd.env("ANTHROPIC_API_KEY", crate::chat::KEY).env("TERM", "xterm").args([
        "chat",
        "--resume",
        older["session"].as_str().unwrap(),
    ]);
    let (mut pty, mut child) = Pty::spawn(cmd);
    wait_for("the banner", || pty.text().contains("/help for commands"));
    pty.send("/exit\r");
    assert!(wait_exit(&mut child, "the REPL").success(), "{}", pty.text());
    let out = chat(&home, &["--continue", "-p", "third", "--json"], &[]);
    let outcome: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(outcome["session"], newer["session"], "{outcome}");
}

/// Lines pasted while an answer streams are held — not echoed into the answer, not sent line by
/// line — and offered at the next prompt as one message, which Enter sends whole.
#[test]
fn text_pasted_while_an_answer_streams_is_offered_as_one_message() {
    use crate::chat_signals::{repl, wait_exit};
    use crate::support::server::{Gate, anthropic};
    use crate::support::wait_for;
    let gate = Gate::default();
    let mut pieces = vec![anthropic::start(10)];
    pieces.extend(anthropic::text_block(0, &["Thinking ", "it over."]));
    let rest = anthropic::stop("end_turn", 4);
    let server = Server::start(vec![
        Reply::Gated { pieces, rest, gate: gate.clone() },
        Reply::Stream { pieces: anthropic::text_answer(&["Got all three."]) },
    ]);
    let home = home_for("anthropic", &server, "");
    let (mut pty, mut child) = repl(&home);
    pty.send("hello\r");
    wait_for("the streamed text", || pty.text().contains("Thinking it over."));
    // A paste of three lines while the answer is still coming.
    pty.send("\x1b[200~line one\rline two\rline three\x1b[201~");
    gate.open();
    wait_for("the offer", || pty.text().contains("is at the prompt, as one message"));
    assert_eq!(server.count(), 1, "nothing typed meanwhile was sent");
    pty.send("\r");
    // The prompt again after the answer (a line typed before it would be held and offered too).
    crate::chat_signals::wait_prompt(&pty, "Got all three.");
    pty.send("/exit\r");
    assert!(wait_exit(&mut child, "the REPL").success(), "{}", pty.text());
    assert_eq!(server.count(), 2, "one request for the pasted lines");
    let sent = server.requests()[1].json();
    let last = sent["messages"].as_array().unwrap().last().unwrap().to_string();
    assert!(last.contains("line one") && last.contains("line three"), "{last}");
}
