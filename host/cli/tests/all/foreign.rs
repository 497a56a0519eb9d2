//! `seshat sessions import --from claude-code|codex`: other agents' sessions brought in from the
//! hand-written fixtures under tests/fixtures/ (made from the fields the README lists).

use serde_json::Value;
use seshat::conversation::{MessageStatus, Part, Role};
use seshat::store::Origin;

use crate::support::{Home, Rollout, fixture};

const CLAUDE_SESSION: &str = "11111111-2222-4333-8444-555555555555";
const CODEX_SESSION: &str = "0199aaaa-bbbb-7ccc-8ddd-eeeeffff0000";

fn codex_file() -> std::path::PathBuf {
    fixture(crate::support::CODEX_ROLLOUT)
}

fn import(home: &Home, from: &str, path: &std::path::Path) -> Vec<Value> {
    let out = home.ok(&["sessions", "import", "--from", from, path.to_str().unwrap(), "--json"]);
    serde_json::from_str::<Value>(&out).unwrap().as_array().unwrap().clone()
}

fn millis(iso: &str) -> i64 {
    iso.parse::<jiff::Timestamp>().unwrap().as_millisecond()
}

/// One record of a Claude Code session file of session `(id, cwd)`.
fn claude_line(
    (session, cwd): (&str, &str),
    uuid: &str,
    parent: Option<&str>,
    kind: &str,
    minute: u32,
    message: Value,
) -> String {
    serde_json::json!({"parentUuid": parent, "isSidechain": false, "userType": "external", "cwd": cwd,
        "sessionId": session, "version": "2.0.14", "type": kind, "uuid": uuid,
        "timestamp": format!("2025-11-21T10:{minute:02}:00.000Z"), "message": message})
    .to_string()
}

fn first_text(parts: &[Part]) -> &str {
    parts.iter().find_map(|p| if let Part::Text { text } = p { Some(text.as_str()) } else { None }).unwrap_or("")
}

#[test]
fn a_claude_code_session_with_a_compaction_boundary_starts_its_live_view_with_that_summary() {
    let home = Home::new();
    let reports = import(&home, "claude-code", &fixture("claude-code"));
    assert_eq!(reports.len(), 2, "the main session and its subagent: {reports:?}");
    let main = &reports[0];
    assert_eq!((main["source_id"].as_str(), main["outcome"].as_str()), (Some(CLAUDE_SESSION), Some("imported")));
    assert_eq!((main["messages"].as_u64(), main["compactions"].as_u64()), (Some(9), Some(1)), "{main}");
    assert_eq!((main["orphans"].as_u64(), main["synthetic"].as_u64()), (Some(1), Some(1)), "{main}");
    let skipped = &main["skipped"];
    for (what, n) in [
        ("meta", 1),
        ("command", 2),
        ("another branch", 1),
        ("file-history-snapshot", 1),
        ("queue-operation", 1),
        ("x-future-record", 1),
    ] {
        assert_eq!(skipped[what], n, "{what}: {skipped}");
    }
    assert_eq!(main["versions"], serde_json::json!(["2.0.14"]));

    let id = main["session"].as_str().unwrap();
    let store = home.store();
    let info = store.session(id).unwrap();
    assert_eq!(info.title.as_deref(), Some("Fix the flaky upload test"), "the summary record's title");
    assert_eq!(info.project, "/work/demo", "a working directory that does not exist here is kept as written");
    assert_eq!(
        (info.provider.as_deref(), info.model.as_deref()),
        (Some("anthropic"), Some("claude-sonnet-4-5-20250929"))
    );

    let view = store.live_view(id).unwrap();
    assert_eq!(view.entries[0].origin, Origin::Summary);
    assert!(first_text(&view.entries[0].parts).contains("tests/upload.rs sleeps 10 s"), "{:?}", view.entries[0]);
    assert_eq!(first_text(&view.entries[1].parts), "Now poll with a 5 s timeout.", "the request after the boundary");
    let c = &view.compaction.as_ref().unwrap();
    assert_eq!((c.through_seq, c.first_kept_seq, c.tokens_before), (4, Some(5), 155_000));

    let full = store.full_history(id).unwrap();
    // Meta, command and reminder records are not requests; the request keeps its own text only.
    assert_eq!(
        (full[0].role, first_text(&full[0].parts)),
        (Role::User, "The upload test is flaky; fix it without sleeping.")
    );
    assert_eq!(full[0].created_at, millis("2025-11-20T09:04:00Z"), "timestamps kept");
    let requests: Vec<&str> = full.iter().filter(|m| m.role == Role::User).map(|m| first_text(&m.parts)).collect();
    assert_eq!(requests, ["The upload test is flaky; fix it without sleeping.", "Now poll with a 5 s timeout."]);
    // One assistant message over three lines: thinking with its signature, text, a tool call;
    // its usage once (the last line's).
    let a = &full[1];
    assert_eq!(a.role, Role::Assistant);
    assert!(
        matches!(&a.parts[0], Part::Thinking { text, signature: Some(s) } if text == "Read the test first." && s == "sig-1")
    );
    assert!(
        matches!(&a.parts[2], Part::ToolCall { id, name, arguments } if id == "toolu_1" && name == "Read" && arguments.contains("upload.rs"))
    );
    let u = a.usage.unwrap();
    assert_eq!((u.output_tokens, u.cache_creation_tokens, u.context_tokens), (42, 2000, Some(2010)));
    assert_eq!(info.totals.output_tokens, 42 + 12 + 20 + 25, "each message's usage counted once");
    assert!(!full.iter().any(|m| first_text(&m.parts).contains("rewound")), "the abandoned branch is left out");
    assert!(
        matches!(&full[6].parts[0], Part::ToolResult { is_error: true, content, .. } if content == "test upload ... FAILED")
    );

    // The subagent is a session of its own.
    let side = &reports[1];
    assert_eq!(side["source_id"], format!("{CLAUDE_SESSION}/agent-a1b2"));
    let side = store.full_history(side["session"].as_str().unwrap()).unwrap();
    assert_eq!(side.len(), 2);
    assert_eq!(first_text(&side[1].parts), "Found one in tests/upload.rs.");

    // The same file again: recognised, nothing duplicated.
    let again = import(&home, "claude-code", &fixture("claude-code"));
    assert!(again.iter().all(|r| r["outcome"] == "unchanged") && again.len() == 2, "{again:?}");
    assert_eq!(store.full_history(id).unwrap().len(), full.len());
}

#[test]
fn a_codex_rollout_with_a_compacted_item_starts_its_live_view_with_that_summary() {
    let home = Home::new();
    let reports = import(&home, "codex", &fixture("codex"));
    assert_eq!(reports.len(), 1);
    let r = &reports[0];
    assert_eq!(
        (r["source_id"].as_str(), r["messages"].as_u64(), r["compactions"].as_u64()),
        (Some(CODEX_SESSION), Some(11), Some(1))
    );
    for (what, n) in [
        ("environment_context", 1),
        ("user_instructions", 1),
        ("event_msg user_message", 1),
        ("response_item ghost_snapshot", 1),
        ("x_future", 1),
    ] {
        assert_eq!(r["skipped"][what], n, "{what}: {}", r["skipped"]);
    }
    assert_eq!(r["versions"], serde_json::json!(["0.63.0"]));
    let id = r["session"].as_str().unwrap();
    let store = home.store();
    let info = store.session(id).unwrap();
    assert_eq!((info.model.as_deref(), info.provider.as_deref()), (Some("gpt-5-codex"), Some("openai")));
    assert_eq!((info.context_window, info.project.as_str()), (Some(272_000), "/work/codex-demo"));
    assert_eq!(info.title.as_deref(), Some("Add a --json flag to the list command."));

    let view = store.live_view(id).unwrap();
    assert_eq!(view.entries[0].origin, Origin::Summary);
    assert!(first_text(&view.entries[0].parts).contains("`cargo test` has one failure (list_json)"));
    assert_eq!(first_text(&view.entries[1].parts), "Fix the failing test.");

    let full = store.full_history(id).unwrap();
    assert_eq!(
        first_text(&full[0].parts),
        "Add a --json flag to the list command.",
        "injected context is not a request"
    );
    let a = &full[1];
    assert!(matches!(&a.parts[0], Part::Thinking { text, signature: None } if text == "**Planning the flag**"));
    assert!(matches!(&a.parts[1], Part::RedactedThinking { data } if data == "gAAAAB-opaque-reasoning"), "kept opaque");
    assert!(matches!(&a.parts[2], Part::ToolCall { id, name, .. } if id == "call_1" && name == "shell"));
    let u = a.usage.unwrap();
    assert_eq!((u.input_tokens, u.cache_read_tokens, u.output_tokens, u.context_tokens), (1000, 4000, 120, Some(5000)));
    assert!(
        matches!(&full[3].parts[0], Part::ToolCall { name, arguments, .. } if name == "apply_patch" && arguments.starts_with("*** Begin Patch"))
    );
    assert!(
        matches!(&full[5].parts[0], Part::ToolCall { name, arguments, .. } if name == "local_shell" && arguments.contains("\"cargo\""))
    );
    assert!(
        matches!(&full[6].parts[0], Part::ToolResult { is_error: true, content, .. } if content.contains("1 failed"))
    );
    assert_eq!(full[0].created_at, millis("2025-11-20T10:01:00Z"));

    // What a policy would do with it.
    let dry = home.ok(&["compact", id, "--dry-run", "--window", "4096"]);
    assert!(dry.starts_with(&format!("Nothing to compact in session {id}")), "the live view is already small: {dry}");
    let tested: Value = serde_json::from_str(&home.ok(&["plugins", "test", "trimmer", id, "--json"])).unwrap();
    assert!(tested["results"][0]["error"].is_null(), "{tested}");
}

#[test]
fn a_grown_file_re_imported_appends_only_its_new_records() {
    let home = Home::new();
    let rollout = Rollout::new(&home);
    let (file, dir) = (&rollout.file, rollout.file.parent().unwrap());
    rollout.first(16);
    let r = &import(&home, "codex", file)[0];
    assert_eq!(
        (r["outcome"].as_str(), r["messages"].as_u64(), r["compactions"].as_u64()),
        (Some("imported"), Some(8), Some(0))
    );
    let id = r["session"].as_str().unwrap().to_string();
    let skipped_first = r["skipped"].clone();

    rollout.whole();
    // The whole file, imported fresh elsewhere: what it leaves out in all.
    let elsewhere = Home::new();
    let whole = import(&elsewhere, "codex", file)[0]["skipped"].clone();
    let r = &import(&home, "codex", dir)[0];
    // The append says only what the new part left out.
    let count = |v: &Value, k: &str| v[k].as_u64().unwrap_or(0);
    assert!(whole.as_object().is_some_and(|w| !w.is_empty()), "the file leaves something out: {whole}");
    assert!(skipped_first.as_object().is_some_and(|w| !w.is_empty()), "so does its first part: {skipped_first}");
    for (k, n) in whole.as_object().unwrap() {
        assert_eq!(count(&r["skipped"], k), n.as_u64().unwrap() - count(&skipped_first, k), "{k}: {r}");
    }
    assert_eq!((r["outcome"].as_str(), r["session"].as_str()), (Some("appended"), Some(id.as_str())), "{r}");
    assert_eq!(
        (r["messages"].as_u64(), r["compactions"].as_u64(), r["orphans"].as_u64()),
        (Some(2), Some(1), Some(1)),
        "{r}"
    );
    let r = &import(&home, "codex", file)[0];
    assert_eq!((r["outcome"].as_str(), r["messages"].as_u64()), (Some("unchanged"), Some(0)), "{r}");

    let store = home.store();
    let full = store.full_history(&id).unwrap();
    assert_eq!(full.len(), 10, "8 then 2 more, nothing twice");
    assert_eq!(full.iter().filter(|m| first_text(&m.parts) == "Add a --json flag to the list command.").count(), 1);
    assert_eq!(full[8].created_at, millis("2025-11-20T10:10:00Z"), "appended messages keep their timestamps");
    let view = store.live_view(&id).unwrap();
    assert_eq!(view.entries[0].origin, Origin::Summary, "the compaction the file gained is in force");
    let listed: Value = serde_json::from_str(&home.ok(&["sessions", "list", "--all", "--json"])).unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 1);
}

#[test]
fn bad_sources_say_what_was_expected() {
    let home = Home::new();
    let empty = home.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let err = home.fails(&["sessions", "import", "--from", "codex", empty.to_str().unwrap()]);
    assert!(err.contains("holds no codex session") && err.contains("~/.codex/sessions/"), "{err}");
    let err = home.fails(&["sessions", "import", "--from", "cursor", empty.to_str().unwrap()]);
    assert!(err.contains("unknown source `cursor`: expected claude-code or codex"), "{err}");
    let err = home.fails(&["sessions", "import", "--from", "codex", "/no/such/dir"]);
    assert!(err.contains("cannot open /no/such/dir"), "{err}");
    // A Codex file read as Claude Code's: no session in it, said so.
    let err = home.fails(&["sessions", "import", "--from", "claude-code", codex_file().to_str().unwrap()]);
    assert!(err.contains("holds no claude-code session"), "{err}");
}

/// A Claude Code tool-result message answering a call of the session and, beside it, one whose
/// call is nowhere: the import splits them, each result stored once — the answered one in the
/// live view, the stray one only in the full history.
#[test]
fn a_stray_result_beside_an_answered_one_is_split_off_and_each_is_stored_once() {
    let home = Home::new();
    let dir = home.path().join("claude").join("-work-mix");
    std::fs::create_dir_all(&dir).unwrap();
    let line = |uuid: &str, parent: Option<&str>, kind: &str, minute: u32, message: Value| {
        claude_line(("22222222-3333-4444-8555-666666666666", "/work/mix"), uuid, parent, kind, minute, message)
    };
    let lines = [
        line("u1", None, "user", 1, serde_json::json!({"role": "user", "content": "Run the tests."})),
        line(
            "a1",
            Some("u1"),
            "assistant",
            2,
            serde_json::json!({"id": "msg_1", "type": "message", "role": "assistant",
            "model": "claude-sonnet-4-5", "content": [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "cargo test"}}]}),
        ),
        line(
            "u2",
            Some("a1"),
            "user",
            3,
            serde_json::json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "test result: ok. 12 passed"},
            {"type": "tool_result", "tool_use_id": "toolu_stray", "content": "a result whose call is not in the file"}]}),
        ),
        line(
            "a2",
            Some("u2"),
            "assistant",
            4,
            serde_json::json!({"id": "msg_2", "type": "message", "role": "assistant",
            "model": "claude-sonnet-4-5", "content": [{"type": "text", "text": "All 12 pass."}]}),
        ),
    ];
    std::fs::write(dir.join("22222222-3333-4444-8555-666666666666.jsonl"), lines.join("\n") + "\n").unwrap();
    let reports = import(&home, "claude-code", &home.path().join("claude"));
    let id = reports[0]["session"].as_str().unwrap().to_string();
    let store = home.store();
    let results = |parts: &[Part]| -> Vec<String> {
        parts
            .iter()
            .filter_map(|p| if let Part::ToolResult { call_id, .. } = p { Some(call_id.clone()) } else { None })
            .collect()
    };
    let stored: Vec<Vec<String>> = store.full_history(&id).unwrap().iter().map(|m| results(&m.parts)).collect();
    let all: Vec<&String> = stored.iter().flatten().collect();
    assert_eq!(all, ["toolu_1", "toolu_stray"], "each result stored once: {stored:?}");
    assert!(stored.contains(&vec!["toolu_1".to_string()]), "the answered result in a message of its own: {stored:?}");
    let view: Vec<String> = store.live_view(&id).unwrap().entries.iter().flat_map(|e| results(&e.parts)).collect();
    assert_eq!(view, ["toolu_1"], "the stray result is kept out of the live view");
}

/// A file that grew by a compaction alone appends that compaction (and says so); a session whose
/// record of its source was damaged is refused whole instead of appended from the start again.
#[test]
fn a_file_grown_by_a_compaction_alone_appends_it_and_a_damaged_source_record_appends_nothing() {
    let home = Home::new();
    let rollout = Rollout::new(&home);
    let file = &rollout.file;
    rollout.first(16);
    let id = import(&home, "codex", file)[0]["session"].as_str().unwrap().to_string();
    rollout.first(17);
    let r = &import(&home, "codex", file)[0];
    assert_eq!(
        (r["outcome"].as_str(), r["messages"].as_u64(), r["compactions"].as_u64()),
        (Some("appended"), Some(0), Some(1)),
        "{r}"
    );
    assert_eq!(home.store().compactions(&id).unwrap().len(), 1);

    // The session's record of how much of the file it holds, damaged: refused, nothing written.
    home.store()
        .sqlite_connection()
        .unwrap()
        .execute("UPDATE sessions SET metadata = json_set(metadata, '$.source.messages', 'many') WHERE id = ?1", [&id])
        .unwrap();
    rollout.whole();
    let err = home.fails(&["sessions", "import", "--from", "codex", file.to_str().unwrap()]);
    assert!(err.contains(&format!("session {id} was imported from")) && err.contains("nothing was appended"), "{err}");
    assert_eq!(home.store().full_history(&id).unwrap().len(), 8, "messages were appended");
}

/// The file grows by the result of a call imported before, a stray result right beside it (the
/// two join into one tool message) and an answer: the re-import appends the answered result and
/// the answer, and leaves the stray one out.
#[test]
fn a_grown_file_appends_results_answering_earlier_calls_and_leaves_stray_ones_out() {
    let home = Home::new();
    let rollout = Rollout::new(&home);
    let (file, whole) = (&rollout.file, &rollout.lines);
    // Up to call_3 (line 13), its output not yet written.
    rollout.first(13);
    let id = import(&home, "codex", file)[0]["session"].as_str().unwrap().to_string();
    let before = home.store().full_history(&id).unwrap().len();
    // Then call_3's output (line 14), the stray call_ghost output (line 20), the answer (line 15).
    let ghost = whole.iter().find(|l| l.contains("call_ghost")).unwrap();
    rollout.write(whole[..13].iter().chain([&whole[13], ghost, &whole[14]]));
    let r = &import(&home, "codex", file)[0];
    assert_eq!((r["outcome"].as_str(), r["orphans"].as_u64()), (Some("appended"), Some(1)), "{r}");
    let full = home.store().full_history(&id).unwrap();
    let results: Vec<&str> = full[before..]
        .iter()
        .flat_map(|m| &m.parts)
        .filter_map(|p| if let Part::ToolResult { call_id, .. } = p { Some(call_id.as_str()) } else { None })
        .collect();
    assert_eq!(results, ["call_3"], "the answered result appended, the stray one left out");
    assert_eq!(first_text(&full.last().unwrap().parts), "The flag is added; one test fails.");

    // Messages then a compaction in one re-import: the compaction is recorded after them.
    let home = Home::new();
    rollout.first(13);
    let id = import(&home, "codex", file)[0]["session"].as_str().unwrap().to_string();
    rollout.first(17);
    let r = &import(&home, "codex", file)[0];
    assert_eq!((r["messages"].as_u64(), r["compactions"].as_u64()), (Some(2), Some(1)), "{r}");
    let store = home.store();
    let through = store.compactions(&id).unwrap()[0].through_seq;
    assert_eq!(through, store.session(&id).unwrap().message_count, "the compaction covers every message before it");
}

#[test]
fn an_interruption_marker_marks_the_answer_interrupted_and_an_image_keeps_a_placeholder() {
    let home = Home::new();
    let dir = home.path().join("claude").join("-work-stop");
    std::fs::create_dir_all(&dir).unwrap();
    let line = |uuid: &str, parent: Option<&str>, kind: &str, minute: u32, message: Value| {
        claude_line(("33333333-3333-4444-8555-666666666666", "/work/stop"), uuid, parent, kind, minute, message)
    };
    let png = "iVBORw0KGgo".repeat(400);
    let lines = [
        line(
            "u1",
            None,
            "user",
            1,
            serde_json::json!({"role": "user", "content": [
            {"type": "text", "text": "What is in this screenshot?"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}}]}),
        ),
        line(
            "a1",
            Some("u1"),
            "assistant",
            2,
            serde_json::json!({"id": "msg_1", "type": "message", "role": "assistant",
            "model": "claude-sonnet-4-5", "content": [{"type": "text", "text": "It shows a long"}]}),
        ),
        line(
            "u2",
            Some("a1"),
            "user",
            3,
            serde_json::json!({"role": "user", "content": [
            {"type": "text", "text": "[Request interrupted by user]"}]}),
        ),
        line("u3", Some("u2"), "user", 4, serde_json::json!({"role": "user", "content": "Just the title, please."})),
    ];
    std::fs::write(dir.join("33333333-3333-4444-8555-666666666666.jsonl"), lines.join("\n") + "\n").unwrap();
    let reports = import(&home, "claude-code", &home.path().join("claude"));
    let id = reports[0]["session"].as_str().unwrap().to_string();
    let history = home.store().full_history(&id).unwrap();
    let texts: Vec<(Role, MessageStatus, &str)> =
        history.iter().map(|m| (m.role, m.status, first_text(&m.parts))).collect();
    assert_eq!(
        texts,
        [
            (Role::User, MessageStatus::Complete, "What is in this screenshot?\n[image: image/png, 4 KiB]"),
            (Role::Assistant, MessageStatus::Interrupted, "It shows a long"),
            (Role::User, MessageStatus::Complete, "Just the title, please."),
        ],
        "the marker is no request; the answer before it was interrupted"
    );
}

#[test]
fn an_imported_session_resumed_on_a_local_server_uses_a_model_it_serves_and_says_so() {
    use crate::local::{Kind, Local, MODEL, home_at, ok_json, run, stderr};
    let local = Local::start(Kind::Vllm, 16_384, None);
    let home = home_at("openai", &local.base(), "");
    let reports = import(&home, "codex", &codex_file());
    let id = reports[0]["session"].as_str().unwrap().to_string();
    let out = run(&home, &["--resume", &id, "--json", "-p", "go on"]);
    ok_json(&out);
    assert_eq!(local.chats().last().unwrap().json()["model"], MODEL, "not gpt-5-codex: the server does not serve it");
    assert!(
        stderr(&out).contains("the session's model `gpt-5-codex` is not one") && stderr(&out).contains("serves"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_session_continued_in_seshat_is_not_interleaved_with_what_its_file_gained() {
    let home = Home::new();
    let rollout = Rollout::new(&home);
    rollout.first(16);
    let id = import(&home, "codex", &rollout.file)[0]["session"].as_str().unwrap().to_string();
    // The user went on in Seshat…
    let mut store = home.store();
    store.append(&id, &[seshat::conversation::NewMessage::text(Role::User, "Continued in Seshat.")]).unwrap();
    drop(store);
    // …and in Codex: the file grew by a branch of its own. It goes into a fork at the point
    // where the two diverge; the session continued in Seshat is left as it is.
    rollout.whole();
    let out = home.ok(&["sessions", "import", "--from", "codex", rollout.file.to_str().unwrap(), "--json"]);
    let report: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report[0]["outcome"], "forked", "{report}");
    assert_eq!(report[0]["forked_from"], serde_json::json!([id, 8]), "{report}");
    let fork = report[0]["session"].as_str().unwrap().to_string();
    let full = home.store().full_history(&id).unwrap();
    assert_eq!(full.len(), 9, "nothing was appended to the session continued in Seshat");
    assert_eq!(first_text(&full[8].parts), "Continued in Seshat.");
    let branch = home.store().full_history(&fork).unwrap();
    assert_eq!(report[0]["messages"].as_u64(), Some(2), "as an append of the same growth writes: {report}");
    assert_eq!(branch.len(), 10, "the shared 8, then the file's 2 new messages");
    assert_eq!(branch[..8], full[..8], "the same history up to the fork point");
    assert!(branch.iter().all(|m| first_text(&m.parts) != "Continued in Seshat."));
    // The fork follows the file from now on: importing again changes nothing.
    let again = home.ok(&["sessions", "import", "--from", "codex", rollout.file.to_str().unwrap(), "--json"]);
    let again: Value = serde_json::from_str(&again).unwrap();
    assert_eq!((again[0]["outcome"].as_str(), again[0]["session"].as_str()), (Some("unchanged"), Some(fork.as_str())));
}

/// What Claude Code reported of its own requests (its system prompt and tools: tens of thousands
/// of tokens) is not taken for the window use of the session in Seshat, which counts its own.
#[test]
fn an_imported_sessions_window_use_is_seshats_own_not_the_other_agents_report() {
    let home = Home::new();
    let dir = tempfile::tempdir().unwrap();
    let original =
        std::fs::read_dir(fixture("claude-code").join("-work-demo")).unwrap().next().unwrap().unwrap().path();
    let text = std::fs::read_to_string(&original).unwrap();
    // An answer's report: 70,000 tokens of context Claude wrote to its cache.
    assert!(text.contains("\"cache_creation_input_tokens\": 2000"));
    let grown = text.replace("\"cache_creation_input_tokens\": 2000", "\"cache_creation_input_tokens\": 70000");
    let file = dir.path().join(original.file_name().unwrap());
    std::fs::write(&file, grown).unwrap();
    let reports = import(&home, "claude-code", &file);
    let id = reports[0]["session"].as_str().unwrap().to_string();
    let view = home.store().live_view(&id).unwrap();
    let reported = view.entries.iter().filter_map(|e| e.usage.and_then(|u| u.context_tokens)).max().unwrap();
    assert!(reported >= 70_000, "the report is kept with its message: {reported}");
    let used = seshat::compaction::current_use(&seshat::compaction::Frame::default(), &view);
    assert!(used < 10_000, "Seshat's own count of what it would send, not Claude's: {used}");
}
