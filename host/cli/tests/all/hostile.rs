//! Hostile stored text: control characters in memory, titles, messages, streamed answers and
//! errors are stored as given but never reach a terminal raw; JSON output stays exact.

use serde_json::json;
use seshat::conversation::{NewMessage, Role};
use seshat::memory::tools;

use crate::chat::{chat, home_for};
use crate::support::Home;
use crate::support::server::{Reply, Server, anthropic};

/// Escape sequences that retitle or clear a terminal, a CSI as one C1 character, a bidi override
/// that reverses what follows, DEL and a carriage return that hides a line's start.
const HOSTILE: &str = "a\u{1b}]0;pwned\u{7}b\u{1b}[2Jc\u{9b}31md\u{202e}evil\u{2066}e\u{7f}f\rg";

/// Every character a terminal must not receive raw.
fn raw_controls(text: &str) -> Vec<char> {
    text.chars()
        .filter(|&c| {
            matches!(c, '\0'..='\x08' | '\x0b'..='\x1f' | '\x7f'..='\u{9f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
        })
        .collect()
}

fn assert_clean(what: &str, text: &str) {
    let raw = raw_controls(text);
    assert!(raw.is_empty(), "{what} printed raw controls {raw:?}: {text:?}");
    assert!(text.contains("\\u{1b}") || text.contains("\\u{9b}"), "{what} does not show the escapes: {text:?}");
}

#[test]
fn stored_control_characters_are_shown_visibly_everywhere_and_json_stays_exact() {
    let home = Home::new();
    let mut store = home.store();
    let id = home.session("/hostile");
    store.append(&id, &[NewMessage::text(Role::User, format!("title {HOSTILE}"))]).unwrap();
    store.append(&id, &[NewMessage::text(Role::Assistant, format!("answer {HOSTILE}\nsecond line"))]).unwrap();
    let mut memory = store.memory(None);
    memory
        .set_note(seshat::memory::Scope::User, "style", &format!("v {HOSTILE}\n- injected: item\n## Heading"))
        .unwrap();
    let created = tools::call(
        &mut memory,
        "create_entities",
        &json!({"scope": "user", "entities": [{"name": format!("Eve{}", '\u{202e}'), "entityType": "person", "observations": [format!("o {HOSTILE}")]}]}),
    );
    assert!(!created.is_error, "{}", created.content());
    drop(store);

    for args in [
        vec!["sessions", "list", "--all"],
        vec!["sessions", "show", &id],
        vec!["sessions", "show", &id, "--full"],
        vec!["sessions", "search", "answer", "--all"],
        vec!["memory"],
        vec!["memory", "--action", "context"],
        vec!["memory", "--action", "search", "--query", "style"],
    ] {
        let out = home.ok(&args);
        assert_clean(&format!("{args:?}"), &out);
    }
    // The context keeps its list: the note's new lines stay inside its item.
    let context = home.ok(&["memory", "--action", "context"]);
    assert!(context.contains("\n  - injected: item\n  ## Heading"), "{context}");
    assert!(!context.contains("\n- injected") && !context.contains("\n## Heading"), "{context}");

    // JSON keeps every character exactly.
    let shown: serde_json::Value = serde_json::from_str(&home.ok(&["sessions", "show", &id, "--json"])).unwrap();
    let text = shown.to_string();
    assert!(text.contains("\\u001b]0;pwned") && text.contains('\u{202e}') && text.contains('\u{9b}'), "{text}");
    let listed: serde_json::Value = serde_json::from_str(&home.ok(&["sessions", "list", "--all", "--json"])).unwrap();
    assert_eq!(listed[0]["title"].as_str().unwrap(), format!("title {HOSTILE}"));
}

#[test]
fn names_and_keys_with_control_characters_are_refused() {
    let home = Home::new();
    let err = home.fails(&["memory", "--action", "set", "--scope", "user", "--key", "st\u{1b}[2Jyle", "--value", "v"]);
    assert!(err.contains("note key") && err.contains("U+001B at character 3") && !err.contains('\u{1b}'), "{err}");
    let mut store = home.store();
    let mut memory = store.memory(None);
    for (args, field) in [
        (json!({"entities": [{"name": "a\u{0}b", "entityType": "t", "observations": []}]}), "entity name"),
        (json!({"entities": [{"name": "ok", "entityType": "t\rx", "observations": []}]}), "entity type"),
    ] {
        let out = tools::call(&mut memory, "create_entities", &json!({"scope": "user", "entities": args["entities"]}));
        assert!(
            out.is_error && out.content().contains(field) && out.content().contains("control character"),
            "{}",
            out.content()
        );
    }
    // Tab and newline are text, not controls.
    let fine = tools::call(
        &mut memory,
        "create_entities",
        &json!({"scope": "user", "entities": [{"name": "two\twords", "entityType": "t", "observations": []}]}),
    );
    assert!(!fine.is_error, "{}", fine.content());
    assert!(memory.read_graph(None, 0, 10).unwrap().0.entities.len() == 1, "only the valid entity was written");
}

#[test]
fn a_streamed_answer_and_a_providers_error_reach_the_terminal_visibly() {
    let server = Server::start(vec![
        Reply::Stream { pieces: anthropic::text_answer(&["safe \u{1b}]0;", "title\u{7} \u{202e}", "end"]) },
        Reply::json(
            400,
            &json!({"type": "error", "error": {"type": "invalid_request_error", "message": "bad \u{1b}[31m input"}})
                .to_string(),
        ),
    ]);
    let home = home_for("anthropic", &server, "");
    let out = chat(&home, &["-p", "hi"], &[]);
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_clean("chat's streamed answer", &stdout);
    assert!(stdout.contains("safe \\u{1b}]0;title\\u{7} \\u{202e}end"), "{stdout:?}");
    let failed = chat(&home, &["--continue", "-p", "again"], &[]);
    let stderr = String::from_utf8(failed.stderr).unwrap();
    assert!(!failed.status.success());
    assert_clean("chat's error", &stderr);
    // The stored answer is exactly what the model sent.
    let store = home.store();
    let session = store.list_sessions(&Default::default()).unwrap().remove(0).id;
    let history = store.full_history(&session).unwrap();
    assert_eq!(crate::support::text_of(&history[1]), "safe \u{1b}]0;title\u{7} \u{202e}end");
}
