//! Lifecycle hooks through the real path: real shell commands declared in config.toml, run by
//! `seshat chat` and `seshat compact` against a loopback Anthropic server that keeps every request.

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use crate::chat::{chat, home_for, json_of};
use crate::support::Home;
use crate::support::server::{Recorded, Reply, Server, anthropic};

/// A server whose streamed answers are `answers` in order (then "Done."), and whose summaries
/// (requests not streamed) are `SUMMARY`.
pub(crate) fn server(answers: Vec<Vec<String>>) -> Server {
    let answers = Arc::new(Mutex::new(answers.into_iter()));
    Server::route(move |r: &Recorded| {
        if r.path.ends_with("/count_tokens") {
            return Reply::json(404, r#"{"error":{"message":"not found"}}"#);
        }
        if r.json()["stream"] != true {
            return Reply::json(
                200,
                &json!({"id": "m", "type": "message", "role": "assistant", "model": "m",
                    "content": [{"type": "text", "text": "SUMMARY"}], "stop_reason": "end_turn",
                    "usage": {"input_tokens": 10, "output_tokens": 2}})
                .to_string(),
            );
        }
        let pieces = answers.lock().unwrap().next().unwrap_or_else(|| anthropic::text_answer(&["Done."]));
        Reply::Stream { pieces }
    })
}

/// The chat requests' bodies, in order.
pub(crate) fn chats(server: &Server) -> Vec<Value> {
    server
        .requests()
        .iter()
        .filter(|r| r.path == "/v1/messages")
        .map(Recorded::json)
        .filter(|b| b["stream"] == true)
        .collect()
}

/// The tool results an Anthropic request's messages carry, in order.
pub(crate) fn tool_results(body: &Value) -> Vec<Value> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter(|c| c["type"] == "tool_result")
        .collect()
}

/// The text of every stored message of the home's latest session, in order.
pub(crate) fn stored(home: &Home) -> Vec<String> {
    let list: Value = serde_json::from_str(&home.ok(&["sessions", "list", "--json"])).unwrap();
    let id = list[0]["id"].as_str().unwrap().to_string();
    home.store().full_history(&id).unwrap().iter().map(|m| crate::support::text_of(m).to_string()).collect()
}

/// Three one-shot turns of a few hundred words each in one session: its id.
pub(crate) fn three_questions(home: &Home) -> String {
    for n in 1..=3 {
        let continuing: &[&str] = if n == 1 { &[] } else { &["--continue"] };
        let prompt = format!("question {n}: {}", "lorem ipsum dolor sit amet ".repeat(250));
        let out = chat(home, &[continuing, &["-p", prompt.as_str()], &W[..]].concat(), &[]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let list: Value = serde_json::from_str(&home.ok(&["sessions", "list", "--json"])).unwrap();
    list[0]["id"].as_str().unwrap().to_string()
}

/// `[[hooks.EVENT]]` with `command` (TOML-quoted) and `more` lines.
fn hook(event: &str, command: &str, more: &str) -> String {
    format!("[[hooks.{event}]]\ncommand = {}\n{more}", toml_str(command))
}

fn toml_str(s: &str) -> String {
    format!("'''{s}'''")
}

pub(crate) const W: [&str; 5] = ["--window", "50000", "--model", "claude-sonnet-4-5", "--json"];

#[test]
fn a_user_prompt_hook_blocks_a_prompt_before_anything_is_stored_or_sent() {
    let server = server(vec![]);
    // A guard reading the payload on its standard input.
    let guard = r#"grep -q 'launch codes' && { echo 'that topic is off limits here' >&2; exit 2; }; exit 0"#;
    let home = home_for("anthropic", &server, &hook("user_prompt", guard, ""));
    let out = chat(&home, &[&["-p", "tell me the launch codes"], &W[..]].concat(), &[]);
    assert!(!out.status.success(), "blocked");
    let failed = json_of(&out);
    assert_eq!(failed["error_code"], "blocked_by_hook", "{failed}");
    assert!(failed["error"].as_str().unwrap().contains("that topic is off limits here"), "{failed}");
    assert!(chats(&server).is_empty(), "nothing sent");
    let list: Value = serde_json::from_str(&home.ok(&["sessions", "list", "--json"])).unwrap();
    assert!(list.as_array().unwrap().iter().all(|s| s["message_count"] == 0), "nothing stored: {list}");
    // Another prompt passes the guard.
    let out = chat(&home, &[&["-p", "tell me a joke"], &W[..]].concat(), &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(chats(&server).len(), 1);
}

#[test]
fn a_session_start_hook_injects_a_file_into_the_first_request_and_it_is_kept() {
    let server = server(vec![]);
    let home = home_for("anthropic", &server, &hook("session_start", "cat NOTES.md", ""));
    std::fs::write(home.path().join("NOTES.md"), "The deploy freeze lasts until Friday.").unwrap();
    let out = chat(&home, &[&["-p", "can I deploy?"], &W[..]].concat(), &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let body = chats(&server).pop().unwrap().to_string();
    assert!(body.contains("The deploy freeze lasts until Friday."), "{body}");
    let texts = stored(&home);
    assert_eq!(texts[0], "can I deploy?", "the user's message as typed");
    assert!(texts[1].starts_with("[context from hooks]") && texts[1].contains("deploy freeze"), "{texts:?}");
}

#[test]
fn a_pre_tool_guard_blocks_a_call_and_the_model_reads_why_and_a_post_tool_hook_adds_context() {
    let dangerous = r#"{"entities":[{"name":"cleanup","entityType":"task","observations":["run rm -rf / tonight"]}]}"#;
    let fine = r#"{"entities":[{"name":"lunch","entityType":"plan","observations":["noodles"]}]}"#;
    let server = server(vec![
        anthropic::tool_answer("call_1", "memory_create_entities", dangerous),
        anthropic::tool_answer("call_2", "memory_create_entities", fine),
        anthropic::text_answer(&["Noted."]),
    ]);
    let guard = r#"grep -q 'rm -rf' && { echo "refusing: the call holds rm -rf" >&2; exit 2; }; exit 0"#;
    let formatter = r#"echo '{"context": "formatted by the team hook"}'"#;
    let config = format!(
        "{}{}{}",
        hook("pre_tool", guard, "matcher = \"memory_create_*|memory_add_*\"\n"),
        hook("post_tool", formatter, "matcher = \"memory_create_entities\"\n"),
        hook("memory_write", "cat >> memory-writes.jsonl; echo >> memory-writes.jsonl", "")
    );
    let home = home_for("anthropic", &server, &config);
    let out = chat(&home, &[&["-p", "note my plans"], &W[..]].concat(), &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let asked = chats(&server);
    assert_eq!(asked.len(), 3, "the turn went on after the blocked call");
    let first = &tool_results(&asked[1])[0];
    assert_eq!(first["is_error"], true, "{first}");
    assert!(first.to_string().contains("refusing: the call holds rm -rf"), "{first}");
    let second = &tool_results(&asked[2])[1];
    assert!(second.to_string().contains("formatted by the team hook"), "{second}");
    assert_ne!(second["is_error"], true, "{second}");
    // The blocked call never reached the tool (its result is the hook's reason); the other wrote
    // its entity, and the memory_write hooks were told of that one only.
    assert!(second["content"].as_str().unwrap().contains("\"name\": \"lunch\""), "{second}");
    let writes = std::fs::read_to_string(home.path().join("memory-writes.jsonl")).unwrap();
    let writes: Vec<Value> =
        writes.lines().filter(|l| !l.is_empty()).map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(writes.len(), 1, "{writes:?}");
    assert_eq!(writes[0]["event"], "memory_write");
    assert_eq!(writes[0]["tool"], "memory_create_entities");
    assert_eq!(writes[0]["arguments"]["entities"][0]["name"], "lunch", "{}", writes[0]);
}

#[test]
fn a_pre_compact_hook_adds_instructions_the_summary_request_carries_or_skips_the_compaction() {
    let server = server(vec![]);
    let instructions = r#"echo '{"instructions": "keep every KIWI-42 reference"}'"#;
    let home = home_for("anthropic", &server, &hook("pre_compact", instructions, ""));
    let id = three_questions(&home);
    let out = home.ok(&["compact", &id, "--json", "--window", "50000"]);
    let report: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["summarised"], true, "{report}");
    let summary =
        server.requests().iter().map(Recorded::json).find(|b| b["stream"] != true).expect("a summary request");
    assert!(summary.to_string().contains("keep every KIWI-42 reference"), "{summary}");

    // A hook that skips: no compaction this time, and it says so.
    let skip = home_for("anthropic", &server, &hook("pre_compact", r#"echo '{"skip": true}'"#, ""));
    let out = chat(&skip, &[&["-p", "hello"], &W[..]].concat(), &[]);
    assert!(out.status.success());
    let list: Value = serde_json::from_str(&skip.ok(&["sessions", "list", "--json"])).unwrap();
    let id = list[0]["id"].as_str().unwrap().to_string();
    let out = skip.ok(&["compact", &id, "--json", "--window", "50000"]);
    let report: Value = serde_json::from_str(&out).unwrap();
    assert!(report["not_applied"].as_str().unwrap_or("").contains("pre_compact hook"), "{report}");
    assert_eq!(report["summarised"], false, "{report}");
}

#[test]
fn a_failing_hook_is_reported_and_passed_over_unless_it_is_required() {
    let server = server(vec![]);
    let failing = [
        ("sleep 5", "timeout = \"300ms\"\n", "ran past its timeout"),
        ("echo broken >&2; exit 1", "", "exited with status 1: broken"),
        ("echo '{\"decision\": \"maybe\"}'", "", "answered JSON that is not a decision"),
        ("kill -9 $$", "", "was ended by a signal"),
    ];
    for (command, more, said) in failing {
        let home = home_for("anthropic", &server, &hook("user_prompt", command, more));
        let before = chats(&server).len();
        let out = chat(&home, &[&["-p", "hello"], &W[..]].concat(), &[]);
        assert!(out.status.success(), "{command}: {}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(chats(&server).len(), before + 1, "{command}: the turn went on");
        let warnings = json_of(&out)["warnings"].to_string();
        assert!(warnings.contains(said), "{command}: {warnings}");
        // Required, the same failure blocks.
        let required =
            home_for("anthropic", &server, &hook("user_prompt", command, &format!("{more}required = true\n")));
        let out = chat(&required, &[&["-p", "hello"], &W[..]].concat(), &[]);
        assert!(!out.status.success(), "{command}: required");
        let failed = json_of(&out);
        assert_eq!(failed["error_code"], "blocked_by_hook", "{command}: {failed}");
        assert!(failed["error"].as_str().unwrap().contains("is required and"), "{command}: {failed}");
        assert_eq!(chats(&server).len(), before + 1, "{command}: nothing sent when required");
    }
}

#[test]
fn hooks_of_one_event_run_in_order_and_a_block_stops_the_rest() {
    let server = server(vec![]);
    let config = format!(
        "{}{}{}",
        hook("user_prompt", "echo one >> order.txt", ""),
        hook("user_prompt", "echo two >> order.txt; echo stop >&2; exit 2", ""),
        hook("user_prompt", "echo three >> order.txt", "")
    );
    let home = home_for("anthropic", &server, &config);
    let out = chat(&home, &[&["-p", "hello"], &W[..]].concat(), &[]);
    assert!(!out.status.success());
    assert_eq!(std::fs::read_to_string(home.path().join("order.txt")).unwrap(), "one\ntwo\n");
}

#[test]
fn a_projects_hooks_run_only_once_trusted_and_stop_when_the_file_changes() {
    let server = server(vec![]);
    let home = home_for("anthropic", &server, "");
    let project = home.path().join(".seshat");
    std::fs::create_dir_all(&project).unwrap();
    let file = project.join("config.toml");
    std::fs::write(&file, hook("user_prompt", "echo ran >> project-hook.txt", "")).unwrap();
    let ran = || std::fs::read_to_string(home.path().join("project-hook.txt")).unwrap_or_default().lines().count();
    let out = chat(&home, &[&["-p", "hello"], &W[..]].concat(), &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(ran(), 0, "an untrusted file's hooks do not run");
    assert!(json_of(&out)["warnings"].to_string().contains("not trusted"), "{}", json_of(&out)["warnings"]);
    let listed: Value = serde_json::from_str(&home.ok(&["hooks", "list", "--json"])).unwrap();
    assert_eq!(listed["hooks"], json!([]), "{listed}");
    assert_eq!(listed["untrusted"][0]["hooks"], 1, "{listed}");

    let trusted = home.ok(&["hooks", "trust"]);
    assert!(trusted.contains("echo ran >> project-hook.txt"), "what is trusted is shown: {trusted}");
    let out = chat(&home, &[&["--continue", "-p", "again"], &W[..]].concat(), &[]);
    assert!(out.status.success());
    assert_eq!(ran(), 1, "a trusted file's hooks run");
    let listed: Value = serde_json::from_str(&home.ok(&["hooks", "list", "--json"])).unwrap();
    assert_eq!(listed["hooks"][0]["source"]["kind"], "project", "{listed}");

    std::fs::write(&file, hook("user_prompt", "echo changed >> project-hook.txt", "")).unwrap();
    let out = chat(&home, &[&["--continue", "-p", "once more"], &W[..]].concat(), &[]);
    assert!(out.status.success());
    assert_eq!(ran(), 1, "a changed file's hooks stop");
    assert!(json_of(&out)["warnings"].to_string().contains("changed since you trusted it"));
}

#[test]
fn hooks_test_runs_an_events_hooks_on_a_recorded_session_and_prints_the_decision() {
    let server = server(vec![]);
    let guard = r#"grep -q 'secret plan' && { echo 'not that one' >&2; exit 2; }; exit 0"#;
    let home = home_for("anthropic", &server, "");
    let out = chat(&home, &[&["-p", "my secret plan"], &W[..]].concat(), &[]);
    assert!(out.status.success());
    let list: Value = serde_json::from_str(&home.ok(&["sessions", "list", "--json"])).unwrap();
    let id = list[0]["id"].as_str().unwrap().to_string();
    // Declared after the session was recorded.
    crate::chat::configure(&home, "anthropic", &server, &hook("user_prompt", guard, ""));
    let sent = chats(&server).len();
    let shown: Value =
        serde_json::from_str(&home.ok(&["hooks", "test", "user_prompt", "--session", &id, "--json"])).unwrap();
    assert_eq!(shown["payload"]["prompt"], "my secret plan", "{shown}");
    assert_eq!(shown["ran"], 1, "{shown}");
    assert!(shown["blocked"].as_str().unwrap().contains("not that one"), "{shown}");
    assert_eq!(chats(&server).len(), sent, "nothing sent");
    let text = home.ok(&["hooks", "test", "user_prompt", "--session", &id]);
    assert!(text.contains("Decision: block") && text.contains("not that one"), "{text}");
    let wrong = home.run(&["hooks", "test", "before_lunch", "--session", &id]);
    assert!(!wrong.status.success());
    assert!(String::from_utf8_lossy(&wrong.stderr).contains("the events are session_start, user_prompt"));
}

#[test]
fn hook_context_is_not_taken_for_the_latest_request_by_a_manual_compaction() {
    let server = server(vec![]);
    let home = home_for("anthropic", &server, &hook("session_start", "echo 'Today is release day.'", ""));
    let id = three_questions(&home);
    // Each chat opened the session: each turn's context after its request.
    let texts = stored(&home);
    let marks = texts.iter().filter(|t| t.starts_with("[context from hooks]")).count();
    assert_eq!(marks, 3, "{texts:?}");
    // A manual compaction keeps the latest request, not only the context after it, out of the
    // summary.
    let report: Value = serde_json::from_str(&home.ok(&["compact", &id, "--json", "--window", "50000"])).unwrap();
    let last_request = texts.iter().rposition(|t| t.starts_with("question 3")).unwrap() as u64 + 1;
    let ranges = report["summarised_seqs"].as_array().unwrap_or_else(|| panic!("{report}"));
    assert!(!ranges.is_empty(), "{report}");
    for r in ranges {
        let (from, through) = (r["from"].as_u64().unwrap(), r["through"].as_u64().unwrap());
        assert!(!(from..=through).contains(&last_request), "the latest request was summarised: {report}");
    }
}

#[test]
fn sessions_fork_tells_the_fork_hooks_as_the_repl_does() {
    let server = server(vec![]);
    let home = home_for("anthropic", &server, &hook("fork", "cat >> forks.jsonl; echo >> forks.jsonl", ""));
    let out = chat(&home, &[&["-p", "hello"], &W[..]].concat(), &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let list: Value = serde_json::from_str(&home.ok(&["sessions", "list", "--json"])).unwrap();
    let parent = list[0]["id"].as_str().unwrap().to_string();
    let forked: Value = serde_json::from_str(&home.ok(&["sessions", "fork", &parent, "--at", "1", "--json"])).unwrap();
    let told = std::fs::read_to_string(home.path().join("forks.jsonl")).unwrap();
    let told: Value = serde_json::from_str(told.lines().next().unwrap()).unwrap();
    assert_eq!((told["event"].as_str(), told["parent"].as_str()), (Some("fork"), Some(parent.as_str())), "{told}");
    assert_eq!(told["fork"], forked["session"]["id"], "{told}");
    assert_eq!(told["at_seq"], 1, "{told}");
}
