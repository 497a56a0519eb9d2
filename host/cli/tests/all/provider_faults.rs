//! A provider plugin survives whatever the model server does: at each place the host talks to it
//! for the plugin — the connection, the status, the stream — a fault (the connection closed at
//! once, a 4xx, a 5xx, a stream cut mid-answer, a stream that is not SSE, a server that never
//! answers) ends the turn with a code of its own, never `plugin_failed`, and the next turn on the
//! same `seshat serve` connection works; with retries and without, streaming and not.

use std::time::Duration;

use serde_json::{Value, json};

use crate::chat::home_for;
use crate::serve::ServeClient;
use crate::support::server::{Recorded, Reply, Server, openai};

/// The faults, by the word a request's message names them with.
const FAULTS: &[&str] = &["hangup", "client_error", "server_error", "cut", "not_sse", "silent"];

/// The answer for a request: the fault its last user message names, else a good answer.
fn answer(r: &Recorded) -> Reply {
    let body = r.json();
    let streaming = body["stream"] == true;
    let said = body["messages"].as_array().and_then(|m| m.last()).map(|m| m["content"].to_string()).unwrap_or_default();
    // A user message left unanswered by a fault goes with the next one: what counts is which
    // comes last.
    let good_at = said.rfind("something good");
    let fault = FAULTS
        .iter()
        .filter_map(|f| said.rfind(&format!("fault {f}")).map(|at| (at, f)))
        .max()
        .filter(|(at, _)| good_at.is_none_or(|g| *at > g))
        .map(|(_, f)| f);
    let good = || {
        if streaming {
            Reply::Stream { pieces: openai::text_answer(&["Good."], true) }
        } else {
            let whole = json!({"id": "c", "choices": [{"index": 0, "message": {"role": "assistant", "content": "Good."},
                "finish_reason": "stop"}], "usage": {"prompt_tokens": 10, "completion_tokens": 2}});
            Reply::json(200, &whole.to_string())
        }
    };
    match fault {
        None => good(),
        Some(&"hangup") => Reply::Hangup,
        Some(&"client_error") => {
            Reply::json(400, r#"{"error":{"message":"bad request for this model","type":"invalid_request_error"}}"#)
        }
        Some(&"server_error") => Reply::json(500, r#"{"error":{"message":"model broken","type":"server_error"}}"#),
        Some(&"cut") => {
            let mut pieces = openai::text_answer(&["Half ", "an answer"], false);
            pieces.truncate(2);
            Reply::Drop { pieces }
        }
        Some(&"not_sse") => {
            Reply::Stream { pieces: vec!["this is not a server-sent event\n\n".into(), "{{{\n\n".into()] }
        }
        Some(_) => Reply::Silent { pause: Duration::from_secs(4) },
    }
}

/// A home whose provider is a loopback server answering as [`answer`] says, with `retries`, and
/// a provider plugin given 500 ms per call (the retries outlast it).
fn service_home(retries: u32) -> (Server, crate::support::Home) {
    let server = Server::route(answer);
    let home = home_for("openai", &server, "[plugins.limits.provider]\ntime_ms = 500\n");
    let config = std::fs::read_to_string(home.path().join("config.toml")).unwrap();
    let config = config
        .replace("max_retries = 2\n", &format!("max_retries = {retries}\n"))
        .replace("first_byte_timeout_secs = 5\n", "first_byte_timeout_secs = 2\n");
    std::fs::write(home.path().join("config.toml"), config).unwrap();
    (server, home)
}

/// Every fault, then a good turn, on one connection of one `seshat serve`; the outcomes.
fn run(retries: u32) -> Vec<(String, Value, Value)> {
    let (_server, home) = service_home(retries);
    let mut c = ServeClient::start(&home);
    c.initialize(json!({"model": "gpt-4o"}));
    let session = c.ok("session/new", json!({}))["session"]["id"].as_str().unwrap().to_string();
    let mut outcomes = Vec::new();
    for fault in FAULTS {
        for text in [format!("fault {fault}"), "now something good".to_string()] {
            let params = json!({"session": session, "text": text});
            let turn = c.ok("turn/start", params)["turn"].as_u64().unwrap();
            let done = c.turn_notifications(turn).pop().unwrap();
            let o = &done["params"]["outcome"];
            outcomes.push((text, o["error_code"].clone(), o["text"].clone()));
        }
    }
    assert!(c.close().success());
    outcomes
}

/// What is wrong with `outcomes`: a fault that crashed the plugin or ended without a code, a
/// good turn after one that did not answer.
fn problems(outcomes: &[(String, Value, Value)]) -> Vec<String> {
    let mut wrong = Vec::new();
    for (text, code, answer) in outcomes {
        if text.starts_with("fault") {
            if code.is_null() || code == "plugin_failed" {
                wrong.push(format!("{text}: {code}"));
            }
        } else if !code.is_null() || answer != "Good." {
            wrong.push(format!("the turn after: {code} {answer}"));
        }
    }
    wrong
}

#[test]
fn every_fault_of_a_streaming_server_leaves_the_plugin_working_with_and_without_retries() {
    for retries in [0, 2] {
        let outcomes = run(retries);
        assert_eq!(problems(&outcomes), Vec::<String>::new(), "retries {retries}: {outcomes:?}");
    }
}

/// Not streaming (`seshat chat --no-stream`): each fault ends with a code of its own, and the
/// session goes on.
#[test]
fn every_fault_of_a_server_answering_whole_ends_with_its_own_code() {
    for retries in [0, 2] {
        let (_server, home) = service_home(retries);
        let mut outcomes = Vec::new();
        for fault in FAULTS {
            let run = |args: &[&str]| -> (String, Value, Value) {
                let out = crate::chat::chat(
                    &home,
                    &[&["--model", "gpt-4o", "--no-stream", "--json"][..], args].concat(),
                    &[],
                );
                let o: Value = serde_json::from_slice(&out.stdout)
                    .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
                (args.last().unwrap().to_string(), o["error_code"].clone(), o["text"].clone())
            };
            let failed = run(&["-p", &format!("fault {fault}")]);
            let session = {
                let listed: Value = serde_json::from_str(&home.ok(&["sessions", "list", "--json"])).unwrap();
                listed[0]["id"].as_str().unwrap().to_string()
            };
            outcomes.push(failed);
            outcomes.push(run(&["--resume", &session, "-p", "now something good"]));
        }
        assert_eq!(problems(&outcomes), Vec::<String>::new(), "retries {retries}: {outcomes:?}");
    }
}
