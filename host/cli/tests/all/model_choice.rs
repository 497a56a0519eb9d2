//! A chat that names no model against a server the user pointed Seshat at: the model is one the
//! server lists — waited for, saying so — or the one last used with that server, saying so; never
//! a provider plugin's table model (a local server taken for `gpt-5` would be sized, counted and
//! compacted as it). A server that answers its list late is waited for; one that never answers,
//! answers 404 or is not there is a clear error naming no model.

use std::time::Duration;

use serde_json::Value;

use crate::chat::{chat, home_for};
use crate::support::server::{Recorded, Reply, Server, openai};

/// A server whose list of models is `models` (each request for it first waits `late`), answering
/// chat requests with "Fine.".
fn server(models: Option<&'static str>, late: Duration) -> Server {
    Server::route(move |r: &Recorded| {
        if r.path.ends_with("/chat/completions") {
            return Reply::Stream { pieces: openai::text_answer(&["Fine."], true) };
        }
        if r.path.ends_with("/models") {
            return match models {
                Some(id) => {
                    // A local server busy with another client: the answer comes, late.
                    std::thread::sleep(late);
                    let list = serde_json::json!({"object": "list", "data": [{"id": id, "object": "model"}]});
                    Reply::json(200, &list.to_string())
                }
                None => Reply::json(404, r#"{"error":{"message":"not found"}}"#),
            };
        }
        Reply::json(404, r#"{"error":{"message":"not found"}}"#)
    })
}

/// The model each chat request asked for.
fn asked(server: &Server) -> Vec<String> {
    server
        .requests()
        .iter()
        .filter(|r| r.path.ends_with("/chat/completions"))
        .map(|r| r.json()["model"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[test]
fn a_list_that_comes_late_is_waited_for_saying_so() {
    let server = server(Some("local-8b"), Duration::from_secs(2));
    let home = home_for("openai", &server, "models_timeout_secs = 30\n");
    let out = chat(&home, &["-p", "hi", "--json"], &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let base = format!("{}/v1", server.url());
    assert!(err.contains(&format!("[asking {base} which models it serves (up to 30 s")), "{err}");
    assert!(err.contains("using the model `local-8b`, the first"), "{err}");
    assert_eq!(asked(&server), ["local-8b"]);
    let listed: Value = serde_json::from_str(&home.ok(&["sessions", "list", "--json"])).unwrap();
    assert_eq!(listed[0]["model"], "local-8b", "{listed}");
}

#[test]
fn a_list_that_never_comes_or_a_server_not_there_is_an_error_naming_no_model() {
    // Never within the limit.
    let silent = Server::route(|r: &Recorded| {
        if r.path.ends_with("/models") {
            Reply::Silent { pause: Duration::from_secs(10) }
        } else {
            Reply::Unexpected(format!("{} {}: only the list was to be asked for", r.method, r.path))
        }
    });
    let home = home_for("openai", &silent, "models_timeout_secs = 1\n");
    let out = chat(&home, &["-p", "hi"], &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("did not list the models it serves (timed out after 1s"), "{err}");
    assert!(err.contains("name the model to use, or set model under [chat]"), "{err}");
    assert!(!err.contains("gpt-"), "no model the user never chose is named: {err}");
    assert!(home.ok(&["sessions", "list", "--json"]).trim() == "[]", "no session is made");
    // Nothing listening there.
    let gone = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let home = crate::support::Home::new();
    std::fs::write(
        home.path().join("config.toml"),
        format!("[plugins]\nprovider = \"openai\"\n[providers.openai]\nbase_url = \"http://127.0.0.1:{gone}/v1\"\n"),
    )
    .unwrap();
    let out = chat(&home, &["-p", "hi"], &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("did not list the models it serves (connection failed"), "{err}");
    assert!(!err.contains("gpt-"), "{err}");
}

#[test]
fn a_server_without_a_list_gets_the_model_last_used_with_it_saying_so() {
    let server = server(None, Duration::ZERO);
    let home = home_for("openai", &server, "");
    // Nothing used with it yet: the 404 is said.
    let out = chat(&home, &["-p", "hi"], &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("did not list the models it serves (it answered HTTP 404)"), "{err}");
    // Named once, it is the one used next time, and the user is told.
    let out = chat(&home, &["--model", "qwen3-8b", "-p", "hi"], &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = chat(&home, &["-p", "again"], &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("using the model `qwen3-8b`, the last one used with"), "{err}");
    assert_eq!(asked(&server), ["qwen3-8b", "qwen3-8b"]);
}
