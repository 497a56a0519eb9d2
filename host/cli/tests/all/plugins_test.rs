//! `seshat plugins test` and the check run of `plugins check`: a plugin run on real histories
//! (a session, an export, a directory of exports) as compaction would, changing nothing.

use serde_json::Value;
use seshat::conversation::{NewMessage, Part, Role};

use crate::support::Home;

/// A session of three requests whose first exchange holds two long tool results (a failing test
/// log and a file), so a trimmer has work and a summariser has messages to drop.
fn session_with_long_results(home: &Home) -> String {
    let id = home.session("/plugins-test");
    let call = |id: &str| Part::ToolCall {
        id: id.into(),
        name: "bash".into(),
        arguments: r#"{"command":"cargo test"}"#.into(),
    };
    let result = |id: &str, content: String| Part::ToolResult { call_id: id.into(), content, is_error: false };
    let msg = |role: Role, parts: Vec<Part>| NewMessage { parts, ..NewMessage::text(role, "") };
    let log: String = (0..600).map(|i| format!("test case_{i:03} ... ok\n")).collect::<String>()
        + "test parse_escape ... FAILED\nerror: test failed, to rerun pass `--lib`\n";
    let file: String = (0..500).map(|i| format!("    let line_{i} = {i};\n")).collect();
    home.store()
        .append(
            &id,
            &[
                NewMessage::text(Role::User, "Fix parse_escape; never touch the public API."),
                msg(Role::Assistant, vec![call("c1")]),
                msg(Role::Tool, vec![result("c1", log)]),
                msg(Role::Assistant, vec![call("c2")]),
                msg(Role::Tool, vec![result("c2", file)]),
                NewMessage::text(Role::Assistant, "Fixed parse_escape."),
                NewMessage::text(Role::User, "Add a test for it."),
                NewMessage::text(Role::Assistant, "Added parse_escape_roundtrip."),
                NewMessage::text(Role::User, "Update the changelog."),
            ],
        )
        .unwrap();
    id
}

fn json(home: &Home, args: &[&str]) -> Value {
    serde_json::from_str(&home.ok(args)).unwrap()
}

#[test]
fn a_trimmers_edits_are_shown_with_sizes_and_nothing_is_recorded() {
    let home = Home::new();
    let id = session_with_long_results(&home);
    let before = std::fs::read(home.db()).unwrap();
    let v = json(&home, &["plugins", "test", "trimmer", &id, "--window", "8000", "--json"]);
    assert_eq!(v["plugin"]["id"], "trimmer");
    assert_eq!(v["plugin"]["kind"], "trimmer");
    assert_eq!(v["plugin"]["sha256"].as_str().unwrap().len(), 64);
    let r = &v["results"][0];
    assert_eq!(r["session"], id.as_str(), "a session of the database keeps its id in the scratch copy");
    assert_eq!((r["window"].as_u64(), r["window_source"].as_str()), (Some(8000), Some("the window asked for")));
    let trims = r["trims"].as_array().unwrap();
    // Messages 3 and 5 hold the long results, outside the two protected latest turns.
    let targets: Vec<u64> = trims.iter().map(|t| t["seq"].as_u64().unwrap()).collect();
    assert_eq!(targets, [3, 5], "{r}");
    for t in trims {
        assert!(t["bytes_after"].as_u64().unwrap() < t["bytes_before"].as_u64().unwrap() / 2, "{t}");
    }
    let log = trims[0]["text"].as_str().unwrap();
    assert!(log.contains("test parse_escape ... FAILED") && log.contains("trimmed by Seshat"), "{log}");
    assert!(r["report"]["trims_freed"].as_u64().unwrap() > 3000, "{r}");
    assert!(r["usage"]["calls"].as_u64().unwrap() >= 1);
    assert!(r["usage"]["guest_micros"].as_u64().unwrap() > 0);
    assert!(r["usage"]["peak_memory_bytes"].as_u64().unwrap() >= 64 * 1024, "{}", r["usage"]);
    assert!(r["error"].is_null());
    assert!(home.store().trims(&id).unwrap().is_empty(), "no trim was recorded");
    assert_eq!(std::fs::read(home.db()).unwrap(), before, "the database is byte-for-byte what it was");

    // The human form says the same in lines.
    let out = home.ok(&["plugins", "test", "trimmer", &id, "--window", "8000"]);
    assert!(out.starts_with("plugin `trimmer`: a trimmer for seshat:plugin@0.4.0 (sha256 "), "{out}");
    assert!(out.contains("edits: 2\n  message 3 part 0: ") && out.contains("message 5 part 0: "), "{out}");
    assert!(
        out.contains("guest: 1 call, ") && out.ends_with("nothing was changed: each history ran in a scratch copy\n")
    );
}

#[test]
fn a_summariser_runs_against_the_echo_stub_and_says_so() {
    let home = Home::new();
    let id = session_with_long_results(&home);
    let before = std::fs::read(home.db()).unwrap();
    let v = json(&home, &["plugins", "test", "summariser", &id, "--window", "4096", "--json"]);
    let r = &v["results"][0];
    assert_eq!(r["answered_by"]["kind"], "echo");
    assert_eq!(r["answered_by"]["model"], "echo-stub");
    assert_eq!(r["report"]["model_calls"], 1, "{r}");
    assert!(r["report"]["dropped"].as_u64().unwrap() >= 3, "{r}");
    let summary = r["summary"].as_str().unwrap();
    // The echo stub answered with the transcript it was sent: the summariser's request is visible.
    assert!(summary.starts_with("[echo stub: 1 messages, "), "{summary}");
    assert!(summary.contains("Fix parse_escape; never touch the public API."), "{summary}");
    assert_eq!(std::fs::read(home.db()).unwrap(), before);
    let out = home.ok(&["plugins", "test", "summariser", &id, "--window", "4096"]);
    assert!(out.contains("answered by the echo stub (pass --provider and --model to call a real model)"), "{out}");
    assert!(out.contains("summary (") && out.contains("  [echo stub: 1 messages, "), "{out}");
}

#[test]
fn a_provider_shows_the_request_it_would_build_sent_nowhere() {
    let home = Home::new();
    let id = session_with_long_results(&home);
    let out = home
        .cmd()
        .env("OPENAI_API_KEY", "sk-test-secret-key")
        .args(["plugins", "test", "openai", &id, "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(!text.contains("sk-test-secret-key"), "no credential in what is shown");
    let v: Value = serde_json::from_str(&text).unwrap();
    let req = &v["results"][0]["request"];
    assert_eq!(
        (req["method"].as_str(), req["url"].as_str()),
        (Some("POST"), Some("https://api.openai.com/v1/chat/completions"))
    );
    assert!(req["headers"].as_array().unwrap().iter().all(|h| h[0] != "authorization"), "{req}");
    let body: Value = serde_json::from_str(req["body"].as_str().unwrap()).unwrap();
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages[1]["content"], "Fix parse_escape; never touch the public API.", "{body}");
    assert_eq!(req["messages"], 9);
}

#[test]
fn an_embedder_shows_the_batch_it_would_send_for_a_historys_texts() {
    let home = Home::new();
    let id = session_with_long_results(&home);
    let out = home
        .cmd()
        .env("OPENAI_API_KEY", "sk-test-secret-key")
        .args(["plugins", "test", "embedder-openai", &id, "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(!text.contains("sk-test-secret-key"), "no credential in what is shown");
    let v: Value = serde_json::from_str(&text).unwrap();
    let req = &v["results"][0]["request"];
    assert_eq!(
        (req["method"].as_str(), req["url"].as_str()),
        (Some("POST"), Some("https://api.openai.com/v1/embeddings"))
    );
    let body: Value = serde_json::from_str(req["body"].as_str().unwrap()).unwrap();
    assert_eq!(body["model"], "text-embedding-3-small");
    let inputs = body["input"].as_array().unwrap();
    assert_eq!(req["messages"].as_u64(), Some(inputs.len() as u64));
    assert!(inputs.iter().any(|t| t == "Fix parse_escape; never touch the public API."), "{body}");
    assert!(v["results"][0]["usage"]["calls"].as_u64().unwrap() >= 2, "info and build-request ran in the plugin");
}

#[test]
fn a_directory_of_exports_gives_one_row_each() {
    let home = Home::new();
    let a = session_with_long_results(&home);
    let b = session_with_long_results(&home);
    let dir = home.path().join("exports");
    std::fs::create_dir_all(&dir).unwrap();
    for (name, id) in [("a.jsonl", &a), ("b.jsonl", &b)] {
        std::fs::write(dir.join(name), home.ok(&["sessions", "export", id])).unwrap();
    }
    std::fs::write(dir.join("notes.txt"), "not an export").unwrap();
    let v = json(&home, &["plugins", "test", "trimmer", dir.to_str().unwrap(), "--window", "8000", "--json"]);
    let results = v["results"].as_array().unwrap();
    assert_eq!(results.len(), 2, "the .jsonl files only: {v}");
    for r in results {
        assert_eq!(r["trims"].as_array().unwrap().len(), 2, "{r}");
        assert_ne!(r["session"], a.as_str(), "an export runs under a fresh id in its scratch copy");
    }
    let out = home.ok(&["plugins", "test", "trimmer", dir.to_str().unwrap(), "--window", "8000"]);
    let rows: Vec<&str> = out.lines().filter(|l| l.contains(".jsonl")).collect();
    assert_eq!(rows.len(), 2, "{out}");
    assert!(out.lines().nth(1).unwrap().starts_with("history") && out.contains("2 edits, "), "{out}");
    let listed = json(&home, &["sessions", "list", "--all", "--json"]);
    assert_eq!(listed.as_array().unwrap().len(), 2, "nothing was imported into the database");
}

#[test]
fn a_hostile_plugin_fails_clearly_and_changes_nothing() {
    let home = Home::new();
    let id = session_with_long_results(&home);
    let dir = home.path().join("plugins").join("hostile");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(seshat_test_plugins::HOSTILE, dir.join("plugin.wasm")).unwrap();
    std::fs::write(dir.join("plugin.toml"), "id = \"hostile\"\nkind = \"trimmer\"\napi = \"0.2.0\"\n").unwrap();
    let before = std::fs::read(home.db()).unwrap();
    for (probe, code, says) in [
        ("panic", "plugin_trap", "it panicked: hostile plugin panicked on purpose"),
        ("loop", "plugin_timeout", "ran past its time budget"),
        ("edit-protected", "plugin_invalid_output", "which is protected"),
    ] {
        std::fs::write(
            home.path().join("config.toml"),
            format!("[plugins.options.trimmer]\nprobe = \"{probe}\"\n[plugins.limits.trimmer]\ntime_ms = 300\n"),
        )
        .unwrap();
        let out = home.cmd().args(["plugins", "test", "hostile", &id, "--json"]).output().unwrap();
        assert!(!out.status.success(), "{probe}: a failure is a failing exit");
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        let e = &v["results"][0]["error"];
        assert_eq!(e["code"], code, "{probe}: {e}");
        assert!(e["message"].as_str().unwrap().contains(says), "{probe}: {e}");
        let out = home.cmd().args(["plugins", "test", "hostile", &id]).output().unwrap();
        let (stdout, stderr) = (String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap());
        assert!(!out.status.success() && stderr.contains("the plugin failed on 1 of 1 histories"), "{stderr}");
        assert!(stdout.contains(&format!("failed [{code}]: ")), "{stdout}");
    }
    assert_eq!(std::fs::read(home.db()).unwrap(), before, "a hostile plugin changed the database");
    assert!(home.store().trims(&id).unwrap().is_empty());
}

#[test]
fn bad_arguments_say_what_was_expected() {
    let home = Home::new();
    let err = home.fails(&["plugins", "test", "no-such-plugin", "x"]);
    assert!(err.contains("`no-such-plugin` is neither a file, a directory nor an installed plugin"), "{err}");
    let err = home.fails(&["plugins", "test", "trimmer", "01NOSUCHSESSION"]);
    assert!(err.contains("so it was taken as a session id, and no session has it"), "{err}");
    let empty = home.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let err = home.fails(&["plugins", "test", "trimmer", empty.to_str().unwrap()]);
    assert!(err.contains("holds no .jsonl exports"), "{err}");
}

#[test]
fn check_runs_the_built_in_fixture_through_every_kind() {
    let home = Home::new();
    for (plugin, says) in [
        (seshat_test_plugins::TRIMMER_0_1_0, "gave "),
        (seshat_test_plugins::SUMMARISER, "gave a summary of "),
        (seshat_test_plugins::PROVIDER, "gave a POST request to "),
        (seshat_test_plugins::EMBEDDER, "gave a POST request to http://127.0.0.1:9/v1/echo of "),
    ] {
        let out = home.ok(&["plugins", "check", plugin]);
        let line = out
            .lines()
            .find(|l| l.starts_with("check run: the built-in fixture (15 messages, "))
            .unwrap_or_else(|| panic!("{out}"));
        assert!(line.contains(says) && line.contains(" MiB"), "{line}");
    }
    // A plugin that panics on a real history is caught.
    let wasm = home.path().join("t.wasm");
    std::fs::copy(seshat_test_plugins::HOSTILE, &wasm).unwrap();
    std::fs::write(home.path().join("config.toml"), "[plugins.options.trimmer]\nprobe = \"panic\"\n").unwrap();
    let out = home.cmd().args(["plugins", "check", wasm.to_str().unwrap()]).output().unwrap();
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(!out.status.success());
    assert!(
        err.contains("the check run on the built-in fixture failed [plugin_trap]: ") && err.contains("it panicked"),
        "check catches a plugin that panics on a real history: {err}"
    );
}

#[test]
fn a_summariser_can_call_a_real_model_through_a_provider() {
    let home = Home::new();
    let id = session_with_long_results(&home);
    let server = crate::support::server::Server::route(|req| {
        if req.path == "/tokenize" || req.path == "/extras/tokenize/count" {
            // No token counter here: the summary requests are sized by the estimate.
            return crate::support::server::Reply::json(404, r#"{"error":"not found"}"#);
        }
        if let Err(why) = crate::support::server::expect_route(req, "POST", "/v1/chat/completions") {
            return crate::support::server::Reply::Unexpected(why);
        }
        crate::support::server::Reply::json(
            200,
            r#"{"id":"c1","object":"chat.completion","model":"summ-1","choices":[{"index":0,"message":{"role":"assistant","content":"A REAL SUMMARY: parse_escape fixed."},"finish_reason":"stop"}],"usage":{"prompt_tokens":900,"completion_tokens":9}}"#,
        )
    });
    let out = home
        .cmd()
        .env("OPENAI_BASE_URL", format!("{}/v1", server.url()))
        .args([
            "plugins",
            "test",
            "summariser",
            &id,
            "--window",
            "4096",
            "--provider",
            "openai",
            "--model",
            "summ-1",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let r = &v["results"][0];
    assert_eq!(r["answered_by"], serde_json::json!({"kind": "provider", "provider": "openai", "model": "summ-1"}));
    assert_eq!(r["summary"], "A REAL SUMMARY: parse_escape fixed.", "{r}");
    // The summary request, after the counters this server does not have (404s).
    let sent: Vec<_> = server.requests().into_iter().filter(|r| r.path == "/v1/chat/completions").collect();
    assert_eq!(sent.len(), 1);
    let body = sent[0].json();
    assert_eq!(body["model"], "summ-1");
    let asked = body["messages"].to_string();
    assert!(asked.contains("Fix parse_escape; never touch the public API."), "the transcript was sent: {asked}");
    assert_eq!(sent[0].header("authorization"), None, "a keyless local server gets no credential");
    // --model alone: the configured provider (here the one the environment points at).
    let out = home
        .cmd()
        .env("OPENAI_BASE_URL", format!("{}/v1", server.url()))
        .args(["plugins", "test", "summariser", &id, "--window", "4096", "--model", "summ-1", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["results"][0]["answered_by"]["provider"], "openai");
    assert_eq!(server.requests().iter().filter(|r| r.path == "/v1/chat/completions").count(), 2);
}

#[test]
fn a_providers_invalid_request_is_reported_with_the_rule_it_broke() {
    let home = Home::new();
    let id = session_with_long_results(&home);
    for (model, rule) in [
        ("bad-url", "`file:///etc/passwd` is not an http(s) URL: it must start with https:// or http://"),
        ("bad-splice", "the messages' place (1000) is past the end of the 0-byte body"),
    ] {
        let out = home
            .cmd()
            .args(["plugins", "test", seshat_test_plugins::PROVIDER, &id, "--model", model, "--json"])
            .output()
            .unwrap();
        assert!(!out.status.success());
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        let e = &v["results"][0]["error"];
        assert_eq!(e["code"], "plugin_invalid_output", "{e}");
        assert!(e["message"].as_str().unwrap().contains(rule), "{model}: {e}");
    }
}
