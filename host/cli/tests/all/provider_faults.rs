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

/// A port on this machine where nothing listens (bound, then closed).
fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A model server that is not there: each turn ends with the transport's own code, never
/// `plugin_failed`, and the plugin is still asked the next time (the same code again).
#[test]
fn a_model_server_that_refuses_connections_gives_its_code_turn_after_turn() {
    let (_server, home) = service_home(0);
    let config = std::fs::read_to_string(home.path().join("config.toml")).unwrap();
    let dead = format!("http://127.0.0.1:{}/v1", closed_port());
    let config: String = config
        .lines()
        .map(|l| if l.starts_with("base_url") { format!("base_url = \"{dead}\"") } else { l.to_string() })
        .collect::<Vec<_>>()
        .join("\n");
    std::fs::write(home.path().join("config.toml"), config + "\n").unwrap();
    let mut c = ServeClient::start(&home);
    c.initialize(json!({"model": "gpt-4o"}));
    let session = c.ok("session/new", json!({}))["session"]["id"].as_str().unwrap().to_string();
    let mut codes = Vec::new();
    for text in ["first", "second"] {
        let turn = c.ok("turn/start", json!({"session": session, "text": text}))["turn"].as_u64().unwrap();
        let done = c.turn_notifications(turn).pop().unwrap();
        codes.push(done["params"]["outcome"]["error_code"].clone());
    }
    assert!(c.close().success());
    assert_eq!(codes, [json!("connection_failed"), json!("connection_failed")]);
}

/// The answer of an embeddings server for a request: the fault its input names, else vectors.
fn embeddings(r: &Recorded) -> Reply {
    let input = r.json()["input"].to_string();
    let fault = FAULTS.iter().find(|f| input.contains(&format!("fault {f}")));
    match fault {
        None => {
            let answer = json!({"object": "list", "model": "text-embedding-3-small",
                "data": [{"object": "embedding", "index": 0, "embedding": [0.6, 0.8, 0.0]}],
                "usage": {"prompt_tokens": 3, "total_tokens": 3}});
            Reply::json(200, &answer.to_string())
        }
        Some(&"hangup") => Reply::Hangup,
        Some(&"client_error") => {
            Reply::json(400, r#"{"error":{"message":"bad input for this model","type":"invalid_request_error"}}"#)
        }
        Some(&"server_error") => Reply::json(500, r#"{"error":{"message":"model broken","type":"server_error"}}"#),
        Some(&"cut") => Reply::Drop { pieces: vec!["{\"object\": \"list\", \"data\": [{\"embedding\": [0.1,".into()] },
        Some(&"not_sse") => Reply::json(200, "this is not JSON at all"),
        Some(_) => Reply::Silent { pause: Duration::from_secs(4) },
    }
}

/// An embedder (the bundled `embedder-openai`) against `base_url`, with `retries` and a two
/// second timeout.
fn embedder_at(base_url: &str, retries: u32) -> (crate::support::Home, seshat::providers::Embedder) {
    let home = crate::support::Home::new();
    std::fs::write(
        home.path().join("config.toml"),
        format!(
            "[plugins]\nembedder = \"embedder-openai\"\n[knowledge]\nmodel = \"text-embedding-3-small\"\n\
             dimensions = 3\nbase_url = \"{base_url}\"\nmax_retries = {retries}\ntimeout_secs = 2\n"
        ),
    )
    .unwrap();
    let config = seshat::config::Config::load(home.path(), None).unwrap();
    let catalog = seshat::plugins::Catalog::discover(home.path(), None);
    let runtime = seshat::plugins::Runtime::new(None);
    let embedder = seshat::retrieval::load_embedder(&config, &catalog, &runtime).unwrap().expect("configured");
    (home, embedder)
}

/// An embedder plugin survives whatever the embeddings server does: each fault (and a server
/// that is not there) ends the call with a code of its own, never `plugin_failed`, and the next
/// call on the same plugin instance embeds; with retries and without.
#[test]
fn every_fault_of_an_embeddings_server_gives_its_code_and_the_embedder_goes_on() {
    let server = Server::route(embeddings);
    let cancel = seshat::providers::Cancel::default();
    let mut wrong = Vec::new();
    for retries in [0, 2] {
        let (_home, mut embedder) = embedder_at(&format!("{}/v1", server.url()), retries);
        for fault in FAULTS {
            let failed = embedder.embed(&[format!("fault {fault}")], seshat::plugins::EmbedPurpose::Query, &cancel);
            // Each fault's own code: the server's words, or what the transport saw.
            let want = match *fault {
                "hangup" | "cut" => "connection_failed",
                "client_error" => "invalid_request",
                "server_error" => "server_error",
                "not_sse" => "invalid_response",
                _ => "timeout",
            };
            match failed {
                Ok(v) => wrong.push(format!("retries {retries}, {fault}: embedded {v:?}")),
                Err(e) if e.code() != want => wrong.push(format!("retries {retries}, {fault}: {} {e}", e.code())),
                Err(e) if want == "timeout" && !e.to_string().contains("timeout_secs under [knowledge]") => {
                    wrong.push(format!("retries {retries}: the timeout names another setting: {e}"))
                }
                Err(_) => {}
            }
            match embedder.embed(&["something good".into()], seshat::plugins::EmbedPurpose::Query, &cancel) {
                Ok(v) if v == [vec![0.6, 0.8, 0.0]] => {}
                other => wrong.push(format!("retries {retries}, after {fault}: {other:?}")),
            }
        }
        // Nothing listening: the transport's code, call after call.
        let (_home, mut embedder) = embedder_at(&format!("http://127.0.0.1:{}/v1", closed_port()), retries);
        for _ in 0..2 {
            let e = embedder.embed(&["x".into()], seshat::plugins::EmbedPurpose::Query, &cancel).unwrap_err();
            if e.code() != "connection_failed" {
                wrong.push(format!("retries {retries}, nothing listening: {} {e}", e.code()));
            }
        }
    }
    assert_eq!(wrong, Vec::<String>::new());
}

/// `seshat mcp` keeps one embedder for its session: after each fault of the embeddings server a
/// knowledge search still answers (by words, saying why), and the next one is hybrid again.
#[test]
fn mcp_searches_on_through_every_fault_of_the_embeddings_server() {
    let server = Server::route(embeddings);
    let (home, _) = embedder_at(&format!("{}/v1", server.url()), 0);
    let docs = home.path().join("docs");
    std::fs::create_dir(&docs).unwrap();
    std::fs::write(docs.join("deploy.md"), "# Deploys\n\nThe kestrel cluster deploys on Tuesdays.\n").unwrap();
    home.ok(&["knowledge", "add", docs.to_str().unwrap()]);
    let mut calls = Vec::new();
    for (i, fault) in FAULTS.iter().enumerate() {
        for (j, query) in [format!("kestrel fault {fault}"), "kestrel something good".to_string()].iter().enumerate() {
            calls.push(json!({"jsonrpc": "2.0", "id": 10 + 2 * i + j, "method": "tools/call",
                "params": {"name": "knowledge_search", "arguments": {"query": query}}}));
        }
    }
    let (status, stderr, answers) = crate::support::mcp_session(home.cmd(), &calls);
    assert!(status.success(), "{stderr}");
    let mut wrong = Vec::new();
    for (i, fault) in FAULTS.iter().enumerate() {
        let answer =
            |id: usize| answers.iter().find(|a| a["id"] == id).map(|a| a["result"].clone()).unwrap_or_default();
        let (failed, after) = (answer(10 + 2 * i), answer(11 + 2 * i));
        let said = failed["structuredContent"].to_string();
        if failed["isError"] == true
            || failed["structuredContent"]["results"][0]["file"].is_null()
            || !said.contains("embed")
        {
            wrong.push(format!("{fault}: {failed}"));
        }
        if after["structuredContent"]["mode"] != "hybrid" {
            wrong.push(format!("after {fault}: {after}"));
        }
    }
    assert_eq!(wrong, Vec::<String>::new());
}
