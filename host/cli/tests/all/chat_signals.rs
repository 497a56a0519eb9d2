//! Real signals at a real `seshat chat`: SIGINT mid-stream (one-shot and the REPL on a
//! pseudo-terminal) saves the partial answer and answers unrun tool calls; SIGKILL mid-answer
//! loses nothing acknowledged and `--continue` goes on cleanly.

use std::io::{Read, Write};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use seshat::conversation::{MessageStatus, Role};

use crate::chat::{KEY, chat, home_for, json_of, r, rows};
use crate::support::server::{Reply, Server, anthropic};
use crate::support::{Home, wait_for};

/// Waits for `child` to exit; a watchdog SIGKILLs it after a minute and fails the test, so a
/// process that does not stop when it should fails here instead of hanging the suite. Nothing is
/// timed: an exit for the wrong reason is told by its status and what was stored.
pub fn wait_exit(child: &mut Child, what: &str) -> std::process::ExitStatus {
    let watchdog = crate::support::Watchdog::on(child.id(), Duration::from_secs(60));
    let status = child.wait().unwrap();
    assert!(!watchdog.fired(), "{what}: still running after a minute");
    status
}

/// Waits for the REPL's prompt after the last `after` in `pty`'s output: what is typed before it
/// (while an answer is still coming) is held and offered, not sent.
pub fn wait_prompt(pty: &Pty, after: &str) {
    wait_for(after, || {
        let t = pty.text();
        t.rfind(after).is_some_and(|i| t[i..].contains("› "))
    });
}

pub fn signal(child: &Child, sig: &str) {
    let ok = Command::new("kill").args([sig, &child.id().to_string()]).status().unwrap().success();
    assert!(ok, "kill {sig} failed");
}

pub fn spawn_chat(home: &Home, args: &[&str]) -> Child {
    home.cmd()
        .env("ANTHROPIC_API_KEY", KEY)
        .env("SESHAT_CACHE_DIR", crate::support::shared_cache().parent().unwrap().join("chat-cache"))
        .arg("chat")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// A stream that sends text and half a tool call, then goes silent. It is one chunk, so once the
/// text shows on stdout the half tool call has been decoded too (the signal is only noticed
/// between reads).
pub fn stalled_tool_call() -> Reply {
    let mut pieces = vec![anthropic::start(10)];
    pieces.extend(anthropic::text_block(0, &["Looking it up"]));
    pieces.extend(anthropic::tool_block(1, "toolu_9", "memory_search_nodes", r#"{"query":"Ada"}"#).into_iter().take(2));
    Reply::Stall { pieces: vec![pieces.concat()], pause: Duration::from_secs(30) }
}

/// Collects a child's output as it is written.
fn collect(mut from: impl Read + Send + 'static) -> Arc<Mutex<String>> {
    let out = Arc::new(Mutex::new(String::new()));
    let sink = out.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 256];
        while let Ok(n) = from.read(&mut buf) {
            if n == 0 {
                break;
            }
            sink.lock().unwrap().push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    });
    out
}

#[test]
fn sigint_mid_stream_saves_the_partial_answer_and_the_next_turn_continues() {
    let server =
        Server::start(vec![stalled_tool_call(), Reply::Stream { pieces: anthropic::text_answer(&["Going on."]) }]);
    let home = home_for("anthropic", &server, "");
    let mut child = spawn_chat(&home, &["-p", "find Ada"]);
    let stdout = collect(child.stdout.take().unwrap());
    wait_for("the streamed text", || stdout.lock().unwrap().contains("Looking it up"));
    signal(&child, "-INT");
    // The stream stalls for 30 s: only the interrupt ends it with 130 and an interrupted answer.
    let status = wait_exit(&mut child, "the interrupted chat");
    assert_eq!(status.code(), Some(130));
    let mut stderr = String::new();
    child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
    assert!(stderr.contains("interrupted (") && stderr.contains("what arrived is saved in session"), "{stderr}");
    let expected = vec![
        r(Role::User, MessageStatus::Complete, &["text:find Ada"]),
        r(
            Role::Assistant,
            MessageStatus::Interrupted,
            &["text:Looking it up", "call:toolu_9:memory_search_nodes:{\"query"],
        ),
        r(Role::Tool, MessageStatus::Synthetic, &["result:toolu_9:error"]),
    ];
    assert_eq!(rows(&home, None), expected);

    let out = chat(&home, &["--continue", "-p", "go on", "--json"], &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(json_of(&out)["text"], "Going on.");
    let next = server.requests()[1].json();
    let msgs = next["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 4, "{next}");
    assert_eq!(msgs[1]["content"][1]["type"], "tool_use");
    assert_eq!(msgs[1]["content"][1]["input"], json!({"arguments": "{\"query"}), "partial arguments stay valid JSON");
    assert_eq!(msgs[2]["content"][0]["tool_use_id"], "toolu_9");
    assert_eq!(msgs[2]["content"][0]["is_error"], true);
    assert_eq!(msgs[3]["content"][0]["text"], "go on");
    let mut all = expected;
    all.push(r(Role::User, MessageStatus::Complete, &["text:go on"]));
    all.push(r(Role::Assistant, MessageStatus::Complete, &["text:Going on."]));
    assert_eq!(rows(&home, None), all);
}

#[test]
fn continue_after_sigkill_mid_answer_keeps_every_acknowledged_message_and_stores_the_answers_draft() {
    let server = Server::start(vec![
        Reply::Stream { pieces: anthropic::text_answer(&["First answer."]) },
        stalled_tool_call(),
        Reply::Stream { pieces: anthropic::text_answer(&["Back again."]) },
    ]);
    let home = home_for("anthropic", &server, "");
    let out = chat(&home, &["-p", "one"], &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut child = spawn_chat(&home, &["--continue", "-p", "two"]);
    let stdout = collect(child.stdout.take().unwrap());
    wait_for("the second answer's text", || stdout.lock().unwrap().contains("Looking it up"));
    let drafts = "SELECT count(*) FROM drafts";
    wait_for("the answer's draft", || home.sql_value(drafts, drafts) == 1);
    signal(&child, "-KILL");
    child.wait().unwrap();
    let before = vec![
        r(Role::User, MessageStatus::Complete, &["text:one"]),
        r(Role::Assistant, MessageStatus::Complete, &["text:First answer."]),
        r(Role::User, MessageStatus::Complete, &["text:two"]),
    ];
    assert_eq!(rows(&home, None), before, "the acknowledged messages survive; the unfinished answer is a draft");
    let out = chat(&home, &["--continue", "-p", "three"], &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let msgs = server.requests()[2].json()["messages"].as_array().unwrap().clone();
    // What the killed answer had streamed is stored first, as interrupted (its half-streamed
    // tool call is not: only the text of a draft is kept).
    let texts: Vec<Vec<&str>> = msgs
        .iter()
        .map(|m| m["content"].as_array().unwrap().iter().map(|c| c["text"].as_str().unwrap_or("")).collect())
        .collect();
    assert_eq!(texts, [vec!["one"], vec!["First answer."], vec!["two"], vec!["Looking it up"], vec!["three"]]);
    let mut after = before;
    after.push(r(Role::Assistant, MessageStatus::Interrupted, &["text:Looking it up"]));
    after.push(r(Role::User, MessageStatus::Complete, &["text:three"]));
    after.push(r(Role::Assistant, MessageStatus::Complete, &["text:Back again."]));
    assert_eq!(rows(&home, None), after);
}

/// `seshat chat`'s REPL on a pseudo-terminal, its banner and first prompt shown. The prompt is
/// written once the line editor has put the terminal in raw mode; a key typed before that is read
/// by the terminal's line discipline instead (a Ctrl-D there becomes a byte the editor ignores).
pub fn repl(home: &Home) -> (Pty, Child) {
    let mut cmd = home.cmd();
    cmd.env("ANTHROPIC_API_KEY", KEY)
        .env("TERM", "xterm")
        .env("SESHAT_CACHE_DIR", crate::support::shared_cache().parent().unwrap().join("chat-cache"))
        .arg("chat");
    let (pty, child) = Pty::spawn(cmd);
    wait_prompt(&pty, "/help for commands");
    (pty, child)
}

/// A pseudo-terminal: the child gets the slave side as stdin, stdout and stderr, in a session of
/// its own whose controlling terminal it is (`setsid --ctty`), as a shell would start it — so
/// Ctrl-C typed on it (`\x03` written to the master) reaches the child as a user's does.
pub struct Pty {
    master: std::fs::File,
    output: Arc<Mutex<Vec<u8>>>,
}

impl Pty {
    pub fn spawn(cmd: Command) -> (Pty, Child) {
        use rustix::pty::{OpenptFlags, grantpt, openpt, ptsname, unlockpt};
        let master = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY).unwrap();
        grantpt(&master).unwrap();
        unlockpt(&master).unwrap();
        let name = ptsname(&master, Vec::new()).unwrap();
        let slave = || std::fs::OpenOptions::new().read(true).write(true).open(name.to_str().unwrap()).unwrap();
        let mut wrapped = Command::new("setsid");
        wrapped.env_clear().arg("--ctty").arg(cmd.get_program()).args(cmd.get_args());
        for (k, v) in cmd.get_envs() {
            if let Some(v) = v {
                wrapped.env(k, v);
            }
        }
        if let Some(dir) = cmd.get_current_dir() {
            wrapped.current_dir(dir);
        }
        let child = wrapped.stdin(slave()).stdout(slave()).stderr(slave()).spawn().unwrap();
        let master = std::fs::File::from(master);
        let output = Arc::new(Mutex::new(Vec::new()));
        let (mut reader, sink) = (master.try_clone().unwrap(), output.clone());
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        });
        (Pty { master, output }, child)
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.output.lock().unwrap()).into_owned()
    }

    pub fn send(&mut self, s: &str) {
        self.master.write_all(s.as_bytes()).unwrap();
        self.master.flush().unwrap();
    }
}

#[test]
fn the_repl_on_a_terminal_streams_and_survives_a_typed_ctrl_c_mid_stream() {
    let mut pieces = vec![anthropic::start(10)];
    pieces.extend(anthropic::text_block(0, &["Partial ", "reply"]).into_iter().take(3));
    let mut rest: Vec<String> = anthropic::text_block(0, &["Partial ", "reply"]).into_iter().skip(3).collect();
    rest.extend(anthropic::text_block(1, &[" and the last word."]));
    rest.extend(anthropic::stop("end_turn", 12));
    let closed = Arc::new(Mutex::new(None));
    let server = Server::start(vec![
        Reply::UntilClosed { pieces, rest, closed: closed.clone() },
        Reply::Stream { pieces: anthropic::text_answer(&["Second ", "answer."]) },
        // `/compact` asked for, though the session is far under the threshold: the summary (smaller
        // than the turn it replaces).
        Reply::json(
            200,
            &json!({"id": "msg_s", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                "content": [{"type": "text", "text": "SUMMARY: the user said hello."}], "stop_reason": "end_turn",
                "usage": {"input_tokens": 90, "output_tokens": 8}})
            .to_string(),
        ),
    ]);
    let home = home_for("anthropic", &server, "");
    let (mut pty, mut child) = repl(&home);
    // Ctrl-C at the prompt clears the line and says how to leave; nothing is sent.
    pty.send("half a line\x03");
    wait_for("the prompt's Ctrl-C", || pty.text().contains("(Ctrl-D or /exit leaves)"));
    // Long enough that the summary of it is smaller (a larger one would not be applied).
    let hello = format!("hello, {}", "please read the build log and tell me what failed and why ".repeat(8).trim_end());
    pty.send(&format!("{hello}\r"));
    wait_for("streamed text", || pty.text().contains("Partial reply"));
    // Typed, as a user does: the terminal sends SIGINT to the REPL, which stops the answer.
    pty.send("\x03");
    wait_for("the interruption notice", || pty.text().contains("interrupted"));
    wait_for("the server to see the connection close", || closed.lock().unwrap().is_some());
    assert_eq!(*closed.lock().unwrap(), Some(4), "closed before the answer's last word");
    pty.send("again\r");
    wait_prompt(&pty, "Second answer.");
    assert!(pty.text().matches("[ctx ").count() >= 2, "the status line: {}", pty.text());
    pty.send("/context\r");
    wait_for("the context breakdown", || pty.text().contains("total (estimated)"));
    assert!(pty.text().contains("tool schemas (12)") && pty.text().contains("assistant text"), "{}", pty.text());
    assert!(
        pty.text().contains("window: 200k tokens (from the model table); answers get up to 1000"),
        "{}",
        pty.text()
    );
    assert!(
        pty.text().contains("tokens estimated (the server is asked to count them near the threshold)"),
        "{}",
        pty.text()
    );
    pty.send("/help\r");
    wait_for("the command list", || pty.text().contains("/sessions  this project's recent sessions"));
    pty.send("/memory\r");
    wait_for("the memory snapshot", || pty.text().contains("(no memory was given to this session)"));
    pty.send("/sessions\r");
    wait_for("the session list", || pty.text().contains("4 msgs"));
    // A compaction the user asks for runs, whatever the threshold: the turns before the latest
    // request are summarised.
    pty.send("/compact\r");
    wait_for("the compaction report", || pty.text().contains("summarised 2 messages; 1 call to"));
    // What left the view, told before and after.
    assert!(pty.text().contains("[summarising #1–#2 (2 messages, ~"), "{}", pty.text());
    wait_for("what left the view", || {
        pty.text().contains("2 messages left the view: #1–#2, replaced by a summary of ~")
    });
    pty.send("/uncompact\r");
    wait_for("the undo", || pty.text().contains("Undid compaction 1 of session"));
    pty.send("/pin 1\r");
    wait_for("the pin", || pty.text().contains("Pinned message 1: kept verbatim in every view"));
    pty.send("/pin x\r");
    wait_for("the bad pin", || pty.text().contains("/pin takes a message seq, not `x`"));
    pty.send("/nope\r");
    wait_for("an unknown command", || pty.text().contains("unknown command /nope"));
    pty.send("/exit\r");
    assert!(wait_exit(&mut child, "the REPL after /exit").success(), "{}", pty.text());
    assert_eq!(
        rows(&home, None),
        vec![
            r(Role::User, MessageStatus::Complete, &[&format!("text:{hello}")]),
            r(Role::Assistant, MessageStatus::Interrupted, &["text:Partial reply"]),
            r(Role::User, MessageStatus::Complete, &["text:again"]),
            r(Role::Assistant, MessageStatus::Complete, &["text:Second answer."]),
        ]
    );
    assert!(!pty.text().contains(KEY));
}

/// The user messages' texts of a request to the Anthropic API, in order.
fn asked(r: &crate::support::server::Recorded) -> Vec<String> {
    r.json()["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| match &m["content"] {
            serde_json::Value::String(t) => vec![t.clone()],
            serde_json::Value::Array(parts) => {
                parts.iter().filter_map(|p| p["text"].as_str().map(str::to_string)).collect()
            }
            _ => Vec::new(),
        })
        .collect()
}

#[test]
fn the_repl_rewinds_a_request_for_editing_and_forks_into_a_new_branch() {
    let server = Server::start(vec![
        Reply::Stream { pieces: anthropic::text_answer(&["First answer."]) },
        Reply::Stream { pieces: anthropic::text_answer(&["Second answer."]) },
        Reply::Stream { pieces: anthropic::text_answer(&["Edited answer."]) },
        Reply::Stream { pieces: anthropic::text_answer(&["Fork answer."]) },
    ]);
    let home = home_for("anthropic", &server, "");
    let (mut pty, mut child) = repl(&home);
    pty.send("one\r");
    wait_prompt(&pty, "First answer.");
    pty.send("two\r");
    wait_prompt(&pty, "Second answer.");
    // The latest request comes back at the prompt; typed on, it is sent edited.
    pty.send("/rewind\r");
    wait_for("the rewind", || pty.text().contains("messages 3 to 4 left the live view"));
    wait_for("the offer to edit", || pty.text().contains("your request is back at the prompt"));
    // What to do next is said with the REPL's own commands, not a command line with a long id.
    assert!(pty.text().contains("(/rewind --undo brings them back"), "{}", pty.text());
    assert!(!pty.text().contains("seshat sessions rewind"), "{}", pty.text());
    pty.send(" again\r");
    wait_prompt(&pty, "Edited answer.");
    // Once something was sent, the rewind cannot be undone: a fork brings the messages back.
    pty.send("/rewind --undo\r");
    wait_for("the refused undo", || pty.text().contains("cannot be undone: messages were added after it"));
    pty.send("/fork 2\r");
    wait_for("the fork", || pty.text().contains("(now talking in "));
    pty.send("in the fork\r");
    wait_prompt(&pty, "Fork answer.");
    pty.send("/rewind x\r");
    wait_for("the bad rewind", || pty.text().contains("/rewind takes how many of your requests to take back"));
    pty.send("/compact --until x\r");
    wait_for("the bad compact", || pty.text().contains("/compact --until takes a message seq"));
    pty.send("/exit\r");
    assert!(wait_exit(&mut child, "the REPL after /exit").success(), "{}", pty.text());
    let requests: Vec<Vec<String>> = server.requests().iter().map(asked).collect();
    assert_eq!(requests[2], ["one", "First answer.", "two again"], "the rewound exchange left out, the edit sent");
    assert_eq!(requests[3], ["one", "First answer.", "in the fork"], "the fork continues after message 2");
    // Two sessions: the original (five messages kept, two rewound) and its fork.
    let sessions = home.store().list_sessions(&Default::default()).unwrap();
    assert_eq!(sessions.len(), 2);
    let fork = sessions.iter().find(|s| s.parent_id.is_some()).unwrap();
    let parent = sessions.iter().find(|s| s.parent_id.is_none()).unwrap();
    assert_eq!((fork.parent_id.as_deref(), fork.fork_seq), (Some(parent.id.as_str()), Some(2)));
    assert_eq!(home.store().full_history(&parent.id).unwrap().len(), 6, "nothing deleted");
}

#[test]
fn a_typed_ctrl_c_stops_a_slow_summary_at_once() {
    // The turn compacts first, and the summary model never answers (for an hour): the Ctrl-C
    // typed reaches the summary call itself, and the turn ends at once.
    let server = Server::start(vec![
        crate::chat::answer_at(17_000, "Long."),
        Reply::Silent { pause: Duration::from_secs(3_600) },
    ]);
    let home = home_for("anthropic", &server, "");
    // No first-byte timeout to end that wait either.
    let config = home.path().join("config.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, text.replace("first_byte_timeout_secs = 5", "first_byte_timeout_secs = 3600")).unwrap();
    let big = |word: &str| format!("{word} {}", "alpha beta gamma delta ".repeat(2_450));
    let out = chat(&home, &["-p", &big("start"), "--window", "30000"], &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // On a terminal, the Ctrl-Cs typed as a user types them.
    let mut cmd = home.cmd();
    cmd.env("ANTHROPIC_API_KEY", KEY)
        .env("TERM", "xterm")
        .env("SESHAT_CACHE_DIR", crate::support::shared_cache().parent().unwrap().join("chat-cache"))
        .args(["chat", "--continue", "-p", &big("more"), "--window", "30000"]);
    let (mut pty, mut child) = Pty::spawn(cmd);
    wait_for("the summary request", || server.count() == 2);
    // While the summary model is asked (and never answers), the terminal already says what it
    // will replace and why.
    wait_for("the notice before the summary", || pty.text().contains("[summarising #1–#2 (2 messages, ~"));
    let shown = pty.text();
    let notice = shown.lines().find(|l| l.contains("[summarising #1–#2")).unwrap_or_default().to_string();
    assert!(
        notice.contains("of 30,000 tokens in use, over the threshold of ") && notice.ends_with("; keeping 1 message…]"),
        "{notice}"
    );
    pty.send("\x03");
    let status = wait_exit(&mut child, "the chat after one Ctrl-C");
    assert_eq!(status.code(), Some(130), "{}", pty.text());
    assert!(pty.text().contains("interrupted while compacting"), "{}", pty.text());
    // The user's message was stored before anything else; the compaction kept nothing.
    let session = home.store().list_sessions(&Default::default()).unwrap().remove(0);
    assert_eq!(session.message_count, 3, "the first turn, its answer and the new message");
    assert!(home.store().compactions(&session.id).unwrap().is_empty());
    assert_eq!(session.compaction_failures, 0);
}

#[test]
fn logs_are_coloured_only_on_a_terminal_and_never_under_no_color() {
    let answer = || Reply::Stream { pieces: anthropic::text_answer(&["Logged."]) };
    let server = Server::start(vec![answer(), answer(), answer()]);
    let home = home_for("anthropic", &server, "");
    // Piped stderr: the log lines are there, without a single escape.
    let out = home
        .cmd()
        .env("ANTHROPIC_API_KEY", KEY)
        .env("RUST_LOG", "seshat=debug")
        .args(["chat", "-p", "hi"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && err.contains("sending a provider request"), "{err}");
    assert!(!err.contains('\u{1b}'), "colour codes on a pipe: {err:?}");
    // A terminal: coloured, unless NO_COLOR is set.
    for (no_color, coloured) in [(None, true), (Some("1"), false)] {
        let mut cmd = home.cmd();
        cmd.env("ANTHROPIC_API_KEY", KEY)
            .env("RUST_LOG", "seshat=debug")
            .env("TERM", "xterm")
            .args(["chat", "-p", "hi"]);
        if let Some(v) = no_color {
            cmd.env("NO_COLOR", v);
        }
        let (pty, mut child) = Pty::spawn(cmd);
        assert!(child.wait().unwrap().success(), "{}", pty.text());
        wait_for("the answer", || pty.text().contains("Logged."));
        let shown = pty.text();
        assert!(shown.contains("sending a provider request"), "{shown}");
        assert_eq!(shown.contains("\u{1b}["), coloured, "NO_COLOR={no_color:?}: {shown:?}");
    }
}

#[test]
fn a_repl_left_without_a_word_leaves_no_session_for_continue_to_pick() {
    let server = Server::start(vec![Reply::Stream { pieces: anthropic::text_answer(&["Still here."]) }]);
    let home = home_for("anthropic", &server, "");
    let out = chat(&home, &["-p", "the real conversation"], &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let real = home.store().list_sessions(&Default::default()).unwrap()[0].id.clone();
    let (mut pty, mut child) = repl(&home);
    pty.send("\x04");
    assert!(wait_exit(&mut child, "the REPL after Ctrl-D").success(), "{}", pty.text());
    let sessions = home.store().list_sessions(&Default::default()).unwrap();
    assert_eq!(sessions.iter().map(|s| s.id.as_str()).collect::<Vec<_>>(), [real.as_str()], "the empty one is gone");
}
