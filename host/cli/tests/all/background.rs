//! Background compaction through the real path: an agent (the Rust SDK, as chat and serve run
//! it) on a loopback Anthropic server whose summary answers the test holds back, so the order of
//! turns and summaries is the test's, not the scheduler's.

use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use seshat::client::{Agent, AgentOptions, Observer};
use seshat::compaction::{BackgroundReason, Report, Starting, Summarising};
use seshat::providers::Cancel;

use crate::chat::sdk_agent;
use crate::support::Home;
use crate::support::server::{Recorded, Reply, Server, anthropic};

/// Summary answers wait here until the test opens it (a minute at most).
#[derive(Clone, Default)]
struct Hold(Arc<(Mutex<bool>, Condvar)>);

impl Hold {
    fn open(&self) {
        *self.0.0.lock().unwrap() = true;
        self.0.1.notify_all();
    }

    fn pass(&self) {
        let open = self.0.0.lock().unwrap();
        let _ = self.0.1.wait_timeout_while(open, Duration::from_secs(60), |open| !*open).unwrap();
    }
}

/// A summary's answer, whole, in Anthropic's format.
fn summary_answer(text: &str) -> Reply {
    Reply::json(
        200,
        &json!({"id": "msg_s", "type": "message", "role": "assistant", "model": "tiny-model",
            "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
            "usage": {"input_tokens": 100, "output_tokens": 20}})
        .to_string(),
    )
}

/// A server answering chat turns at once (`Answer N.`) and summaries (requests not streamed)
/// with `SUMMARY-BG` once `hold` is open; it keeps each request.
fn server(hold: &Hold) -> Server {
    let hold = hold.clone();
    let turns = Arc::new(Mutex::new(0));
    Server::route(move |r: &Recorded| {
        if r.path.ends_with("/count_tokens") {
            return Reply::json(404, r#"{"error":{"message":"not found"}}"#);
        }
        if r.json()["stream"] == true {
            let mut n = turns.lock().unwrap();
            *n += 1;
            // The request's size as a server would report it (about what was sent).
            let mut pieces = vec![anthropic::start(seshat::window::estimate_text(&r.body))];
            pieces.extend(anthropic::text_block(0, &[&format!("Answer {n}.")]));
            pieces.extend(anthropic::stop("end_turn", 4));
            return Reply::Stream { pieces };
        }
        hold.pass();
        summary_answer("SUMMARY-BG: the early turns, summarised.")
    })
}

/// Text of about `tokens` estimated tokens (Seshat's own estimate), marked with `tag`.
fn text_of(tag: &str, tokens: u64) -> String {
    let mut text = format!("{tag}:");
    while seshat::window::estimate_text(&text) < tokens {
        text.push_str(" lorem ipsum dolor sit amet");
    }
    text
}

/// What the turns told, in order.
#[derive(Default)]
struct Told {
    summarising: Vec<Summarising>,
    reports: Vec<Report>,
    warnings: Vec<String>,
    /// Opened when a turn says a compaction starts (the turn waits for the background summary).
    on_start: Option<Hold>,
}

impl Observer for Told {
    fn compaction_started(&mut self, _starting: &Starting) {
        if let Some(hold) = &self.on_start {
            hold.open();
        }
    }
    fn compaction_summarising(&mut self, s: &Summarising) {
        self.summarising.push(s.clone());
    }
    fn compaction(&mut self, report: &Report) {
        self.reports.push(report.clone());
    }
    fn warning(&mut self, message: &str) {
        self.warnings.push(message.to_string());
    }
}

/// The agent on `server` (a 50,000-token window: threshold 35,000, target 24,000, early mark
/// 29,750) with background summaries on, and two turns that pass the early mark: the second
/// turn's model call starts the summary of the first.
fn past_the_early_mark(home: &Home, server: &Server) -> (Agent, Told) {
    let options = AgentOptions { model: Some("tiny-model".into()), ..AgentOptions::default() };
    let mut agent = sdk_agent(home, server, seshat::client::Tools::none(), options);
    assert!(agent.enable_background());
    let mut told = Told::default();
    let cancel = Cancel::default();
    let first = agent.turn(&text_of("FIRST", 21_000), &cancel, &mut told).unwrap();
    assert!(first.compactions.is_empty() && told.summarising.is_empty(), "below the early mark");
    let second = agent.turn(&text_of("SECOND", 10_000), &cancel, &mut told).unwrap();
    assert!(second.compactions.is_empty(), "the turn sent its request without a compaction");
    assert!(!second.text.is_empty());
    (agent, told)
}

/// The Messages requests the server received (no token counts), in order.
fn messages(server: &Server) -> Vec<Value> {
    server.requests().iter().filter(|r| r.path == "/v1/messages").map(Recorded::json).collect()
}

/// The request bodies the server received, streamed (chat) or not (summaries).
fn sent(server: &Server, streamed: bool) -> Vec<Value> {
    messages(server).into_iter().filter(|b| (b["stream"] == true) == streamed && b["max_tokens"] != 1).collect()
}

/// The requests that filled the server's prompt cache (one token asked, nothing streamed).
fn fillings(server: &Server) -> Vec<Value> {
    messages(server).into_iter().filter(|b| b["max_tokens"] == 1 && b["stream"] != true).collect()
}

#[test]
fn a_summary_written_in_the_background_is_swapped_in_at_a_later_call_keeping_what_came_meanwhile() {
    let hold = Hold::default();
    let server = server(&hold);
    let home = Home::new();
    let (mut agent, mut told) = past_the_early_mark(&home, &server);
    // The summary was planned at the second turn's call, and said so before it was written.
    assert_eq!(told.summarising.len(), 1, "{:?}", told.warnings);
    let notice = &told.summarising[0];
    assert_eq!(notice.background, Some(BackgroundReason::EarlyMark));
    assert_eq!(notice.seqs.iter().map(ToString::to_string).collect::<Vec<_>>(), ["#1"], "the first request");
    assert!(notice.tokens > 29_750 && notice.tokens < notice.marks.threshold, "{notice:?}");

    // A third turn, over the threshold but within the window, while the summary is still held
    // back: answered without it (a turn that waited would say a compaction starts, which lets the
    // summary through, and would carry its report).
    told.on_start = Some(hold.clone());
    let cancel = Cancel::default();
    let third = agent.turn(&text_of("THIRD", 6_000), &cancel, &mut told).unwrap();
    told.on_start = None;
    assert_eq!(third.text, "Answer 3.");
    assert!(third.compactions.is_empty() && told.reports.is_empty(), "the summary is not written yet");
    let chats = sent(&server, true);
    assert!(chats[2].to_string().contains("FIRST:"), "the third request still holds the first turn");
    let over = third.context.expect("the window's use").used;
    assert!(over > 35_000 && over < 49_300, "over the threshold, within the hard limit: {over}");

    // Written: the next model call swaps it in, with everything appended since its snapshot.
    hold.open();
    agent.background_waiter().expect("a summary is being written").wait();
    let fourth = agent.turn("FOURTH: and another", &cancel, &mut told).unwrap();
    assert_eq!(fourth.compactions.len(), 1, "{:?}", told.warnings);
    let report = &fourth.compactions[0];
    let run = report.background.expect("written in the background");
    assert_eq!((run.reason, run.snapshot_seq, run.appended), (BackgroundReason::EarlyMark, 3, 4));
    assert!(report.summarised && !report.dry_run && report.tokens_after < report.tokens_before, "{report:?}");
    assert_eq!(told.reports.len(), 1, "the observer was told the report");

    let request = sent(&server, true)[3].to_string();
    assert!(request.contains("SUMMARY-BG"), "the request starts from the summary");
    assert!(!request.contains("FIRST:"), "the first turn left the view");
    for kept in ["Answer 1.", "SECOND:", "Answer 2.", "THIRD:", "Answer 3.", "FOURTH:"] {
        assert!(request.contains(kept), "{kept} was appended after the snapshot or kept: lost");
    }
    assert_eq!(sent(&server, false).len(), 1, "one summary request");
    let store = home.store();
    let compactions = store.compactions(agent.session()).unwrap();
    assert_eq!(compactions.len(), 1);
    assert_eq!((compactions[0].through_seq, compactions[0].first_kept_seq), (7, Some(2)));
}

#[test]
fn a_background_summary_is_discarded_when_the_history_before_its_snapshot_changed() {
    let hold = Hold::default();
    let server = server(&hold);
    let home = Home::new();
    let (mut agent, mut told) = past_the_early_mark(&home, &server);
    assert_eq!(told.summarising.len(), 1);
    // The user pins the first turn's answer while the summary of it is being written.
    agent.pin(Some(2)).unwrap();
    hold.open();
    agent.background_waiter().expect("a summary is being written").wait();
    let cancel = Cancel::default();
    let third = agent.turn("THIRD: go on", &cancel, &mut told).unwrap();
    assert!(third.compactions.is_empty(), "{:?}", third.compactions);
    assert!(told.warnings.iter().any(|w| w.contains("was discarded")), "{:?}", told.warnings);
    assert!(home.store().compactions(agent.session()).unwrap().is_empty(), "nothing recorded");
    assert!(sent(&server, true)[2].to_string().contains("FIRST:"), "the view stays as it was");
}

#[test]
fn a_background_summary_that_fails_is_said_and_the_sessions_summaries_go_back_on_the_path() {
    // Every summary is refused (a 400 is not retried).
    let server = Server::route(move |r: &Recorded| {
        if r.path.ends_with("/count_tokens") {
            return Reply::json(404, r#"{"error":{"message":"not found"}}"#);
        }
        if r.json()["stream"] == true {
            let mut pieces = vec![anthropic::start(seshat::window::estimate_text(&r.body))];
            pieces.extend(anthropic::text_block(0, &["Fine."]));
            pieces.extend(anthropic::stop("end_turn", 2));
            return Reply::Stream { pieces };
        }
        Reply::json(400, r#"{"type":"error","error":{"type":"invalid_request_error","message":"no summaries"}}"#)
    });
    let home = Home::new();
    let (mut agent, mut told) = past_the_early_mark(&home, &server);
    assert_eq!(told.summarising.len(), 1);
    agent.background_waiter().expect("a summary is being written").wait();
    let cancel = Cancel::default();
    let third = agent.turn("THIRD: go on", &cancel, &mut told).unwrap();
    assert!(third.compactions.is_empty());
    assert!(told.warnings.iter().any(|w| w.contains("failed") && w.contains("no summaries")), "{:?}", told.warnings);
    // Still past the early mark: no other summary is started in the background for the session.
    let fourth = agent.turn("FOURTH: and on", &cancel, &mut told).unwrap();
    assert!(fourth.compactions.is_empty());
    assert_eq!(told.summarising.len(), 1, "no second background summary");
    assert!(agent.background_waiter().is_none());
    assert!(home.store().compactions(agent.session()).unwrap().is_empty(), "nothing recorded");
}

#[test]
fn a_request_that_would_not_fit_waits_for_the_background_summary_and_goes_with_it() {
    let hold = Hold::default();
    let server = server(&hold);
    let home = Home::new();
    let (mut agent, told) = past_the_early_mark(&home, &server);
    assert_eq!(told.summarising.len(), 1);
    // Over the hard limit (50,000 less the answer's room) without the summary: the turn waits for
    // it, and the summary is let through only once the turn says it waits.
    let mut told = Told { on_start: Some(hold), ..Told::default() };
    let cancel = Cancel::default();
    let big = agent.turn(&text_of("BIG", 20_000), &cancel, &mut told).unwrap();
    assert_eq!(big.compactions.len(), 1, "{:?}", told.warnings);
    assert_eq!(big.compactions[0].background.map(|b| b.reason), Some(BackgroundReason::EarlyMark));
    assert_eq!(big.text, "Answer 3.");
    // The background summary, no other, before the request (past the early mark again after it,
    // the next summary is started when the turn ends).
    let requests = messages(&server);
    let big_at = requests.iter().position(|r| r["stream"] == true && r.to_string().contains("BIG:")).unwrap();
    assert_eq!(requests[..big_at].iter().filter(|r| r["stream"] != true).count(), 1);
    let request = requests[big_at].to_string();
    assert!(request.contains("SUMMARY-BG") && request.contains("BIG:") && !request.contains("FIRST:"));
}

/// What happens to a session while its summary is written in the background.
#[derive(Debug, Clone)]
enum Meanwhile {
    /// An answer and the next request.
    Turn,
    /// A rewind to a message (by a fraction of the session).
    Rewind(u8),
    /// A pin of a message (by a fraction of the session).
    Pin(u8),
    /// A fork at a message (by a fraction of the session).
    Fork(u8),
}

fn meanwhile() -> impl Strategy<Value = Meanwhile> {
    prop_oneof![
        3 => Just(Meanwhile::Turn),
        1 => any::<u8>().prop_map(Meanwhile::Rewind),
        1 => any::<u8>().prop_map(Meanwhile::Pin),
        1 => any::<u8>().prop_map(Meanwhile::Fork),
    ]
}

use proptest::prelude::*;

proptest! {
    #![proptest_config(crate::support::proptest_config(24, "tests/all/background.proptest-regressions"))]

    /// Over interleavings of appends, rewinds, pins and forks with a summary being written: the
    /// swap keeps every message of the view past its snapshot, is never made over a history
    /// changed before it, and leaves every fork's view as it was.
    #[test]
    fn a_swap_loses_no_message_appended_meanwhile_and_lands_only_on_an_unchanged_history(
        turns in 5u64..9,
        ops in prop::collection::vec(meanwhile(), 0..8),
    ) {
        swapped_meanwhile(turns, &ops)?;
    }
}

/// [`a_swap_loses_no_message_appended_meanwhile_and_lands_only_on_an_unchanged_history`]'s case:
/// `turns` exchanges past the early mark of a 20,000-token window (threshold 10,800, early mark
/// 9,901: the target, 9,000, and the 5% a pass must free), the summary started, `ops` done, then
/// the next call.
fn swapped_meanwhile(turns: u64, ops: &[Meanwhile]) -> Result<(), TestCaseError> {
    use crate::compaction::{Scripted, frame, settings, text};
    use seshat::conversation::Role;
    let home = Home::new();
    let answers = [Ok("SUMMARY-P: what came before."); 4];
    let model = Scripted::answering(&answers);
    let options = seshat::ClientOptions {
        auto_compact: true,
        store: Some(home.location()),
        dirs: Some(seshat::paths::Dirs::under(home.path())),
        ..Default::default()
    };
    let mut client = seshat::Client::new(options, model.clone()).unwrap();
    client.enable_background(model, (85, 70));
    let (window, frame) = (20_000, frame());
    let settings = settings(Some(window));
    let store = client.store();
    let session =
        store.create_session(seshat::store::NewSession { project: "p".into(), ..Default::default() }).unwrap().id;
    let each = 10_300 / (2 * turns + 1);
    for n in 0..turns {
        store.append(&session, &[text(Role::User, text_of(&format!("Q{n}"), each))]).unwrap();
        store.append(&session, &[text(Role::Assistant, text_of(&format!("A{n}"), each))]).unwrap();
    }
    store.append(&session, &[text(Role::User, text_of("LAST", each))]).unwrap();
    let snapshot = store.session(&session).unwrap().message_count;
    let first = client.prepare(&session, &frame, &settings).unwrap();
    prop_assert!(first.compaction.is_none());
    prop_assert!(client.background_waiter(&session).is_some(), "past the early mark, a summary is being written");

    let mut changed_before = false;
    let mut forks = Vec::new();
    let store = client.store();
    for op in ops {
        let count = store.session(&session).unwrap().message_count;
        let at = |f: u8| 1 + u64::from(f) % count;
        match op {
            Meanwhile::Turn => {
                store.append(&session, &[text(Role::Assistant, "A short answer.")]).unwrap();
                store.append(&session, &[text(Role::User, "A short request.")]).unwrap();
            }
            Meanwhile::Rewind(f) => {
                if seshat::compaction::rewind(store, &session, at(*f), &frame, &settings).is_ok() {
                    changed_before |= at(*f) <= snapshot;
                }
            }
            Meanwhile::Pin(f) => {
                if seshat::compaction::pin(store, &session, at(*f), window).is_ok() {
                    changed_before |= at(*f) <= snapshot;
                }
            }
            Meanwhile::Fork(f) => {
                let fork = store.fork(&session, Some(at(*f)), None).unwrap();
                let view = store.live_view(&fork.session.id).unwrap().entries;
                forks.push((fork.session.id, view));
            }
        }
    }
    client.background_waiter(&session).unwrap().wait();
    let before = client.store().live_view(&session).unwrap();
    let prepared = client.prepare(&session, &frame, &settings).unwrap();
    let store = client.store();
    let after = store.live_view(&session).unwrap();
    let compactions = store.compactions(&session).unwrap();
    if changed_before {
        prop_assert!(prepared.compaction.is_none() && compactions.is_empty(), "{:?}", prepared.compaction);
        prop_assert!(prepared.warnings.iter().any(|w| w.contains("discarded")), "{:?}", prepared.warnings);
        prop_assert_eq!(&before.entries, &after.entries);
    } else {
        let report = prepared.compaction.expect("swapped in");
        prop_assert_eq!(report.background.map(|b| b.snapshot_seq), Some(snapshot));
        prop_assert_eq!(compactions.len(), 1);
        prop_assert_eq!(compactions[0].through_seq, after.session.message_count);
        prop_assert!(after.entries[0].seq.is_none(), "the view starts from the summary");
        for entry in before.entries.iter().filter(|e| e.seq.is_some_and(|s| s > snapshot)) {
            prop_assert!(
                after.entries.iter().any(|e| e.seq == entry.seq && e.parts == entry.parts),
                "lost {:?}",
                entry.seq
            );
        }
    }
    for (fork, view) in forks {
        prop_assert_eq!(store.live_view(&fork).unwrap().entries, view, "the fork's view changed");
    }
    Ok(())
}

/// The REPL on a terminal, left idle at its prompt past `idle_after_secs` with a session past the
/// idle mark: the session is compacted in the background and the REPL says so above its prompt.
#[test]
fn an_idle_repl_session_past_the_idle_mark_is_compacted_in_the_background() {
    use crate::chat::{KEY, chat, home_for, json_of};
    use crate::chat_signals::{Pty, wait_exit, wait_prompt};
    use crate::support::wait_for;
    let hold = Hold::default();
    hold.open();
    let server = server(&hold);
    let home = home_for("anthropic", &server, "[compaction]\nidle_after_secs = 1\n");
    // Two one-shot turns (which write no summary in the background: they end with their turn):
    // ~28,000 tokens and the frame, past the idle mark (26,401: the target, 24,000, and the 5% a
    // pass must free) and below the threshold (35,000).
    let w = ["--window", "50000", "--model", "claude-sonnet-4-5", "--json"];
    for (tag, tokens) in [("FIRST", 15_000), ("SECOND", 13_000)] {
        let prompt = text_of(tag, tokens);
        let continuing: &[&str] = if tag == "FIRST" { &[] } else { &["--continue"] };
        let out = chat(&home, &[continuing, &["-p", prompt.as_str()], &w[..]].concat(), &[]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(json_of(&out)["compactions"], json!([]));
    }
    assert!(sent(&server, false).is_empty(), "no summary yet");
    let mut cmd = home.cmd();
    cmd.env("ANTHROPIC_API_KEY", KEY)
        .env("TERM", "xterm")
        .env("SESHAT_CACHE_DIR", crate::support::shared_cache().parent().unwrap().join("chat-cache"))
        .args(["chat", "--continue", "--window", "50000", "--model", "claude-sonnet-4-5"]);
    let (mut pty, mut child) = Pty::spawn(cmd);
    wait_prompt(&pty, "/help for commands");
    wait_for("the idle compaction's report", || pty.text().contains("Written in the background"));
    let text = pty.text();
    assert!(text.contains("summarising in the background #1"), "{text}");
    assert!(text.contains("idle while the prompt cache holds it"), "{text}");
    // The server is on this machine: its prompt cache is filled with the compacted conversation.
    wait_for("the prompt cache's filling", || !fillings(&server).is_empty());
    let filled = fillings(&server);
    assert!(filled[0].to_string().contains("SUMMARY-BG"), "it begins with the summary: {}", filled[0]);
    assert!(!filled[0].to_string().contains("FIRST:"), "without what the summary replaced: {}", filled[0]);
    pty.send("/exit\r");
    assert!(wait_exit(&mut child, "the REPL").success(), "{}", pty.text());
    assert_eq!(sent(&server, false).len(), 1, "one summary");
    assert!(sent(&server, true).len() == 2, "no turn was run by the REPL");
    let out = home.ok(&["sessions", "show", "--compactions", "--json", &latest(&home)]);
    let passes: Value = serde_json::from_str(&out).unwrap();
    assert!(passes.to_string().contains("SUMMARY-BG"), "{passes}");
}

/// The REPL on a terminal: a summary its turn started past the early mark is swapped in at the
/// prompt as soon as it is written (no turn asked) and the local server's prompt cache filled;
/// while the user is typing, what it says is held back (printing would hide their text) and shown
/// when the line is entered, before that turn's answer.
#[test]
fn the_repl_swaps_a_summary_in_at_the_prompt_and_holds_its_report_while_the_user_types() {
    use crate::chat::{KEY, chat, home_for};
    use crate::chat_signals::{Pty, wait_exit, wait_prompt};
    use crate::support::wait_for;
    let hold = Hold::default();
    let server = server(&hold);
    let home = home_for("anthropic", &server, "");
    // Two one-shot turns (which write no summary in the background) to ~30,000 tokens: past the
    // early mark (29,750), below the threshold (35,000).
    let w = ["--window", "50000", "--model", "claude-sonnet-4-5"];
    for (tag, tokens) in [("FIRST", 15_000), ("SECOND", 15_000)] {
        let prompt = text_of(tag, tokens);
        let continuing: &[&str] = if tag == "FIRST" { &[] } else { &["--continue"] };
        let out = chat(&home, &[continuing, &["-p", prompt.as_str()], &w[..]].concat(), &[]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let mut cmd = home.cmd();
    cmd.env("ANTHROPIC_API_KEY", KEY)
        .env("TERM", "xterm")
        .env("SESHAT_CACHE_DIR", crate::support::shared_cache().parent().unwrap().join("chat-cache"))
        .args([&["chat", "--continue"], &w[..]].concat());
    let (mut pty, mut child) = Pty::spawn(cmd);
    wait_prompt(&pty, "/help for commands");
    pty.send("go on\r");
    let prompt_after =
        |pty: &Pty, what: &str| pty.text().split_once(what).is_some_and(|(_, after)| after.contains("› "));
    wait_for("the prompt after the turn", || prompt_after(&pty, "Answer 3."));
    wait_for("the summary asked", || sent(&server, false).len() == 1);
    assert!(pty.text().contains("summarising in the background #1"), "{}", pty.text());
    // The user begins a line; then the summary is written.
    pty.send("partial");
    wait_for("the typed text", || {
        pty.text().split_once("Answer 3.").is_some_and(|(_, after)| after.ends_with("partial"))
    });
    hold.open();
    wait_for("the prompt cache's filling", || !fillings(&server).is_empty());
    assert!(fillings(&server)[0].to_string().contains("SUMMARY-BG"), "{}", fillings(&server)[0]);
    assert_eq!(sent(&server, true).len(), 3, "swapped in with no turn asked");
    assert!(!pty.text().contains("Written in the background"), "held back while typing: {}", pty.text());
    assert!(pty.text().trim_end().ends_with("partial"), "what the user typed is still there: {:?}", pty.text());
    pty.send("\r");
    wait_for("the next turn's answer", || prompt_after(&pty, "Answer 4."));
    let text = pty.text();
    let report = text.find("Written in the background").unwrap_or_else(|| panic!("the report: {text}"));
    assert!(report < text.find("Answer 4.").unwrap(), "shown before the turn's answer: {text}");
    wait_for("the prompt after the turn", || prompt_after(&pty, "Answer 4."));
    pty.send("/exit\r");
    assert!(wait_exit(&mut child, "the REPL").success(), "{}", pty.text());
    assert_eq!(sent(&server, false).len(), 1, "one summary");
    let turn = sent(&server, true).pop().unwrap();
    assert!(turn.to_string().contains("SUMMARY-BG"), "the next turn sent the compacted conversation: {turn}");
}

/// The id of the home's latest session.
fn latest(home: &Home) -> String {
    let list: Value = serde_json::from_str(&home.ok(&["sessions", "list", "--json"])).unwrap();
    list[0]["id"].as_str().unwrap().to_string()
}
