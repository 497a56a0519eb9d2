//! Hook plugins (0.4.0) through the real path: the test hook guest installed and named by
//! `[[hooks.<event>]] plugin`, run by `seshat chat` and `seshat compact` against a loopback
//! Anthropic server that keeps every request.

use serde_json::Value;

use crate::chat::{chat, home_for, json_of};
use crate::hooks::{W, chats, server, three_questions, tool_results};
use crate::support::Home;
use crate::support::server::{Recorded, anthropic};

/// Installs the test hook guest as `id`.
fn install(home: &Home, id: &str) {
    let dir = home.path().join("plugins").join(id);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(seshat_test_plugins::HOOK, dir.join("plugin.wasm")).unwrap();
    std::fs::write(dir.join("plugin.toml"), format!("id = \"{id}\"\nkind = \"hook\"\napi = \"0.4.0\"\n")).unwrap();
}

/// `[[hooks.EVENT]]` running the plugin `id`, with `more` lines.
fn plugin_hook(event: &str, id: &str, more: &str) -> String {
    format!("[[hooks.{event}]]\nplugin = \"{id}\"\n{more}")
}

#[test]
fn a_hook_plugin_guards_a_tool_adds_context_and_gives_a_compactions_summary_instructions() {
    let dangerous = r#"{"entities":[{"name":"cleanup","entityType":"task","observations":["run rm -rf / tonight"]}]}"#;
    let fine = r#"{"entities":[{"name":"lunch","entityType":"plan","observations":["noodles"]}]}"#;
    let server = server(vec![
        anthropic::tool_answer("call_1", "memory_create_entities", dangerous),
        anthropic::tool_answer("call_2", "memory_create_entities", fine),
        anthropic::text_answer(&["Noted."]),
    ]);
    let config = [
        plugin_hook("session_start", "guard", ""),
        plugin_hook("pre_tool", "guard", "matcher = \"memory_create_*\"\n"),
        plugin_hook("post_tool", "guard", ""),
        plugin_hook("pre_compact", "guard", ""),
    ]
    .concat();
    let home = home_for("anthropic", &server, &config);
    install(&home, "guard");
    let out = chat(&home, &[&["-p", "note my plans"], &W[..]].concat(), &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let asked = chats(&server);
    assert_eq!(asked.len(), 3, "the turn went on after the blocked call");
    assert!(asked[0].to_string().contains("plugin context: project "), "session_start's context: {}", asked[0]);
    let first = &tool_results(&asked[1])[0];
    assert_eq!(first["is_error"], true, "{first}");
    assert!(
        first.to_string().contains("the plugin guard refuses memory_create_entities with rm -rf"),
        "the plugin's reason is the tool's error result: {first}"
    );
    let second = &tool_results(&asked[2])[1];
    assert_ne!(second["is_error"], true, "{second}");
    assert!(second.to_string().contains("plugin saw memory_create_entities at message "), "{second}");
    assert!(second["content"].as_str().unwrap().contains("\"name\": \"lunch\""), "the call ran: {second}");

    // Its pre_compact instructions reach the summary request.
    let id = three_questions(&home);
    let report: Value = serde_json::from_str(&home.ok(&["compact", &id, "--json", "--window", "50000"])).unwrap();
    assert_eq!(report["summarised"], true, "{report}");
    let summary =
        server.requests().iter().map(Recorded::json).find(|b| b["stream"] != true).expect("a summary request");
    assert!(summary.to_string().contains("keep every line that mentions PLUGIN-MARK"), "{summary}");

    // Listed as a plugin hook, under its limits.
    let listed: Value = serde_json::from_str(&home.ok(&["hooks", "list", "--json"])).unwrap();
    let hooks = listed["hooks"].as_array().unwrap();
    assert_eq!(hooks.len(), 4, "{listed}");
    assert!(hooks.iter().all(|h| h["handler"] == "plugin `guard`" && h["command"].is_null()), "{listed}");
    assert!(home.ok(&["hooks", "list"]).contains("plugin `guard` for memory_create_* (its limits)"));
}

#[test]
fn a_hook_plugin_that_fails_is_reported_and_passed_over_unless_required_and_the_sandbox_holds() {
    let server = server(vec![]);
    for (prompt, said) in [
        ("error", "[asked_to_fail]"),
        ("panic", "the test hook panicked on purpose"),
        ("loop", "ran past its time budget"),
        ("membomb", "tried to grow its memory past the"),
    ] {
        let home = home_for("anthropic", &server, &plugin_hook("user_prompt", "guard", ""));
        install(&home, "guard");
        let before = chats(&server).len();
        let out = chat(&home, &[&["-p", prompt], &W[..]].concat(), &[]);
        assert!(out.status.success(), "{prompt}: {}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(chats(&server).len(), before + 1, "{prompt}: the turn went on");
        let warnings = json_of(&out)["warnings"].to_string();
        assert!(
            warnings.contains("the user_prompt hook plugin `guard`") && warnings.contains(said),
            "{prompt}: {warnings}"
        );
        // Required, the same failure blocks and nothing is sent.
        let required = home_for("anthropic", &server, &plugin_hook("user_prompt", "guard", "required = true\n"));
        install(&required, "guard");
        let out = chat(&required, &[&["-p", prompt], &W[..]].concat(), &[]);
        let failed = json_of(&out);
        assert_eq!(failed["error_code"], "blocked_by_hook", "{prompt}: {failed}");
        assert!(failed["error"].as_str().unwrap().contains("is required and"), "{prompt}: {failed}");
        assert_eq!(chats(&server).len(), before + 1, "{prompt}: nothing sent when required");
    }
    // A block it decides stops the turn with its reason.
    let home = home_for("anthropic", &server, &plugin_hook("user_prompt", "guard", ""));
    install(&home, "guard");
    let out = chat(&home, &[&["-p", "block me"], &W[..]].concat(), &[]);
    let failed = json_of(&out);
    assert_eq!(failed["error_code"], "blocked_by_hook", "{failed}");
    assert!(failed["error"].as_str().unwrap().contains("the plugin blocks this prompt"), "{failed}");
}

#[test]
fn a_hook_entry_must_name_one_installed_hook_plugin_and_leave_its_time_to_its_limits() {
    let server = server(vec![]);
    for (config, said) in [
        (
            "[[hooks.pre_tool]]\ncommand = \"true\"\nplugin = \"guard\"\n".to_string(),
            "sets both `command` and `plugin`: a hook runs one of them",
        ),
        ("[[hooks.pre_tool]]\nmatcher = \"bash\"\n".to_string(), "sets neither `command` nor `plugin`"),
        (plugin_hook("pre_tool", "guard", "timeout = \"5s\"\n"), "a plugin's time is its limits"),
        (plugin_hook("pre_tool", "nowhere", ""), "the pre_tool hook plugin `nowhere`"),
        // A plugin of another kind is not a hook.
        (plugin_hook("pre_tool", "trimmer", ""), "no hook plugin named `trimmer` is installed"),
    ] {
        let home = home_for("anthropic", &server, &config);
        install(&home, "guard");
        let out = chat(&home, &[&["-p", "hello"], &W[..]].concat(), &[]);
        assert!(!out.status.success(), "{config}");
        // Said on standard error, or in the JSON answer when the configuration loaded.
        let err = format!("{}{}", String::from_utf8_lossy(&out.stderr), String::from_utf8_lossy(&out.stdout));
        assert!(err.contains(said), "{config}: {err}");
    }
}

#[test]
fn plugins_test_tells_a_hook_every_event_of_a_recorded_session() {
    let dangerous = r#"{"command":"rm -rf build"}"#;
    let server = server(vec![anthropic::tool_answer("call_1", "memory_create_entities", dangerous)]);
    let home = home_for("anthropic", &server, "");
    let out = chat(&home, &[&["-p", "clean up"], &W[..]].concat(), &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let list: Value = serde_json::from_str(&home.ok(&["sessions", "list", "--json"])).unwrap();
    let id = list[0]["id"].as_str().unwrap().to_string();
    let sent = chats(&server).len();
    let shown: Value =
        serde_json::from_str(&home.ok(&["plugins", "test", seshat_test_plugins::HOOK, &id, "--json"])).unwrap();
    let decisions = shown["results"][0]["decisions"].as_array().unwrap_or_else(|| panic!("{shown}"));
    let events: Vec<&str> = decisions.iter().map(|d| d["event"].as_str().unwrap()).collect();
    assert_eq!(
        events,
        ["session_start", "user_prompt", "pre_tool", "post_tool", "pre_compact", "session_end"],
        "{shown}"
    );
    assert_eq!(decisions[2]["decision"]["decision"], "block", "{shown}");
    assert_eq!(decisions[2]["tool"], "memory_create_entities", "{shown}");
    assert_eq!(decisions[4]["decision"]["instructions"], "keep every line that mentions PLUGIN-MARK", "{shown}");
    assert_eq!(chats(&server).len(), sent, "nothing sent");
    let text = home.ok(&["plugins", "test", seshat_test_plugins::HOOK, &id]);
    assert!(text.contains("decisions: 6 decisions: 1 blocks, 2 with context, 1 with summary instructions"), "{text}");
    assert!(text.contains("  pre_tool (message "), "{text}");
}
