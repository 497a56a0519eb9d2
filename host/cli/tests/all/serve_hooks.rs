//! Hooks a `seshat serve` client registers (`initialize`'s `hooks`), asked with `hook/call`: over
//! stdio with a real server, and on a network service, where a failing hook is audited and a
//! client is asked only about its own sessions.

use serde_json::{Value, json};

use crate::chat::home_for;
use crate::network::{Service, token};
use crate::serve::{ServeClient, session};
use crate::support::server::{Reply, Server, openai};

/// Starts a turn of `session` with `text` without waiting for its answer (the client's hooks may
/// be asked first); the request's id.
fn start_turn(c: &mut ServeClient, id: u64, session: &str, text: &str) -> u64 {
    c.send(json!({"jsonrpc": "2.0", "id": id, "method": "turn/start", "params": {"session": session, "text": text}}));
    id
}

/// The turn number `turn/start` request `id` was answered with.
fn turn_of(c: &mut ServeClient, id: u64) -> u64 {
    let answer = c.wait("turn/start's answer", |v| v["id"] == id && v.get("method").is_none());
    answer["result"]["turn"].as_u64().unwrap_or_else(|| panic!("{answer}"))
}

/// The model's streamed answer `text`, recording nothing else.
fn answers(texts: &[&str]) -> Server {
    Server::start(texts.iter().map(|t| Reply::Stream { pieces: openai::text_answer(&[t], true) }).collect())
}

#[test]
fn a_clients_hooks_are_asked_at_its_sessions_events_and_their_decisions_apply() {
    let server = answers(&["Hello.", "Never sent."]);
    let home = home_for("openai", &server, "");
    let mut c = ServeClient::start(&home);
    c.initialize(json!({"model": "gpt-4o", "hooks": [
        {"event": "session_start", "name": "notes"},
        {"event": "user_prompt", "name": "guard", "required": true},
        {"event": "pre_tool", "name": "tools", "matcher": "lookup"}
    ]}));
    let id = session(&mut c);
    let request = start_turn(&mut c, 9001, &id, "hello there");
    // Opening the session's agent: session_start, then the prompt.
    let start = c.wait("session_start's hook/call", |v| v["method"] == "hook/call");
    assert_eq!(start["params"]["name"], "notes", "{start}");
    assert_eq!(start["params"]["payload"]["event"], "session_start", "{start}");
    assert_eq!(start["params"]["payload"]["session"], id.as_str(), "{start}");
    c.send(json!({"jsonrpc": "2.0", "id": start["id"], "result": {"context": "The client says: deploys freeze on Friday."}}));
    let prompt = c.wait("user_prompt's hook/call", |v| v["method"] == "hook/call");
    assert_eq!(prompt["params"]["name"], "guard", "{prompt}");
    assert_eq!(prompt["params"]["payload"]["prompt"], "hello there", "{prompt}");
    c.send(json!({"jsonrpc": "2.0", "id": prompt["id"], "result": {}}));
    let turn = turn_of(&mut c, request);
    let notes = c.turn_notifications(turn);
    assert_eq!(notes.last().unwrap()["params"]["outcome"]["text"], "Hello.", "{notes:?}");
    let sent = server.requests()[0].json().to_string();
    assert!(sent.contains("deploys freeze on Friday"), "the client's context reached the model: {sent}");

    // A block stops the turn before anything is sent.
    let request = start_turn(&mut c, 9002, &id, "the launch codes");
    let prompt = c.wait("user_prompt's hook/call", |v| v["method"] == "hook/call");
    c.send(
        json!({"jsonrpc": "2.0", "id": prompt["id"], "result": {"decision": "block", "reason": "not on this line"}}),
    );
    let turn = turn_of(&mut c, request);
    let notes = c.turn_notifications(turn);
    let outcome = &notes.last().unwrap()["params"]["outcome"];
    assert_eq!(outcome["error_code"], "blocked_by_hook", "{outcome}");
    assert!(outcome["error"].as_str().unwrap().contains("not on this line"), "{outcome}");
    assert_eq!(server.requests().len(), 1, "nothing sent");

    // The required guard answering no decision blocks too; the report names it.
    let request = start_turn(&mut c, 9003, &id, "again");
    let prompt = c.wait("user_prompt's hook/call", |v| v["method"] == "hook/call");
    // (Not a decision, so not a line of the schema.)
    c.send_invalid(json!({"jsonrpc": "2.0", "id": prompt["id"], "result": {"decision": "maybe"}}));
    let turn = turn_of(&mut c, request);
    let notes = c.turn_notifications(turn);
    let outcome = &notes.last().unwrap()["params"]["outcome"];
    assert_eq!(outcome["error_code"], "blocked_by_hook", "{outcome}");
    let error = outcome["error"].as_str().unwrap();
    assert!(error.contains("`guard`") && error.contains("is required and answered what is not a decision"), "{error}");
    assert!(c.close().success());
}

#[test]
fn a_client_hook_that_does_not_answer_in_time_is_passed_over_and_bad_registrations_are_refused() {
    let server = answers(&["Hello."]);
    let home = home_for("openai", &server, "");
    let mut c = ServeClient::start(&home);
    c.initialize(json!({"model": "gpt-4o", "hooks": [{"event": "user_prompt", "name": "slow", "timeout_ms": 200}]}));
    let id = session(&mut c);
    let turn = c.ok("turn/start", json!({"session": id, "text": "hello"}))["turn"].as_u64().unwrap();
    // Asked, never answered.
    c.wait("the hook/call", |v| v["method"] == "hook/call");
    let notes = c.turn_notifications(turn);
    let outcome = &notes.last().unwrap()["params"]["outcome"];
    assert_eq!(outcome["text"], "Hello.", "{outcome}");
    assert!(outcome["warnings"].to_string().contains("got no answer from the client in time"), "{outcome}");
    assert!(c.close().success());

    let hook = |name: &str| json!({"event": "pre_tool", "name": name});
    for (hooks, said) in [
        (json!([hook("a"), hook("a")]), "two hooks are named `a`"),
        (json!([hook("a b")]), "is not letters, digits"),
        (json!([{"event": "pre_tool", "name": "t", "timeout_ms": 0}]), "timeout_ms is 0: give 1 to 600000"),
        (Value::Array((0..65).map(|i| hook(&format!("h{i}"))).collect()), "at most 64"),
        (json!([{"event": "lunch", "name": "x"}]), "unknown variant `lunch`"),
    ] {
        let mut c = ServeClient::start(&home);
        c.ok("config/get", json!({}));
        // (Refused registrations, some of them not lines of the schema.)
        let answer = c.call_invalid("initialize", json!({"hooks": hooks}));
        let message = answer["error"]["message"].as_str().unwrap_or_else(|| panic!("{answer}"));
        assert!(message.contains(said), "{said}: {message}");
        // Nothing was set up: the connection is not initialised.
        assert_eq!(c.call("session/list", json!({}))["error"]["code"], -32002);
        c.kill();
    }
}

#[test]
fn on_a_service_a_client_is_asked_only_about_its_own_sessions_and_a_failing_hook_is_audited() {
    let server = answers(&["For bob.", "For alice."]);
    let home = home_for("openai", &server, "");
    let (alice, bob) = (token(&home, "alice", &[]), token(&home, "bob", &[]));
    let service = Service::start(&home, "ws", &[]);
    let mut a = service.client(&alice);
    a.ok("initialize", json!({"model": "gpt-4o", "hooks": [{"event": "user_prompt", "name": "audit-me"}]}));
    let mut b = service.client(&bob);
    b.ok("initialize", json!({"model": "gpt-4o"}));
    let bobs = b.new_session();
    let turn = b.ok("turn/start", json!({"session": bobs, "text": "bob's private words"}))["turn"].clone();
    b.wait(|v| v["method"] == "turn/completed" && v["params"]["turn"] == turn);
    // Alice's own turn: the first hook/call she is asked names her session, not bob's.
    let alices = a.new_session();
    let turn = a.ok("turn/start", json!({"session": alices, "text": "alice's words"}))["turn"].clone();
    let call = a.wait(|v| v["method"] == "hook/call");
    assert_eq!(call["params"]["payload"]["session"], alices.as_str(), "{call}");
    assert_eq!(call["params"]["payload"]["prompt"], "alice's words", "{call}");
    a.send(json!({"jsonrpc": "2.0", "id": call["id"], "error": {"code": -32000, "message": "the hook's own bug"}}));
    let done = a.wait(|v| v["method"] == "turn/completed" && v["params"]["turn"] == turn);
    let outcome = &done["params"]["outcome"];
    assert_eq!(outcome["text"], "For alice.", "{outcome}");
    assert!(outcome["warnings"].to_string().contains("answered an error: the hook's own bug"), "{outcome}");
    // The service's audit trail has it, under alice.
    let out = home.ok(&["audit", "--json"]);
    let events: Vec<Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let failed = events.iter().find(|e| e["event"] == "hook_failed").unwrap_or_else(|| panic!("{events:?}"));
    assert_eq!(
        (failed["user"].as_str(), failed["code"].as_str(), failed["target"].as_str()),
        (Some("alice"), Some("user_prompt"), Some(alices.as_str())),
        "{failed}"
    );
    assert!(failed["detail"].as_str().unwrap().contains("audit-me: answered an error"), "{failed}");
}

#[test]
fn a_clients_fork_and_rewind_hooks_are_told_of_the_forks_and_rewinds_it_asks_for() {
    let server = answers(&["First answer.", "Second answer."]);
    let home = home_for("openai", &server, "");
    let mut c = ServeClient::start(&home);
    c.initialize(json!({"model": "gpt-4o", "hooks": [
        {"event": "fork", "name": "on-fork"},
        {"event": "rewind", "name": "on-rewind"}
    ]}));
    let id = session(&mut c);
    for text in ["one", "two"] {
        let turn = c.ok("turn/start", json!({"session": id, "text": text}))["turn"].as_u64().unwrap();
        c.turn_notifications(turn);
    }
    let forked = c.ok("session/fork", json!({"session": id, "at": 2}));
    let call = c.wait("the fork's hook/call", |v| v["method"] == "hook/call");
    assert_eq!(call["params"]["name"], "on-fork", "{call}");
    let payload = &call["params"]["payload"];
    assert_eq!((payload["event"].as_str(), payload["parent"].as_str()), (Some("fork"), Some(id.as_str())), "{call}");
    assert_eq!(payload["fork"], forked["session"]["id"], "{call}");
    assert_eq!(payload["at_seq"], 2, "{call}");
    c.send(json!({"jsonrpc": "2.0", "id": call["id"], "result": {}}));
    let rewound = c.ok("session/rewind", json!({"session": id, "to": 3}));
    let call = c.wait("the rewind's hook/call", |v| v["method"] == "hook/call");
    let payload = &call["params"]["payload"];
    assert_eq!((payload["event"].as_str(), payload["session"].as_str()), (Some("rewind"), Some(id.as_str())), "{call}");
    assert_eq!((&payload["from_seq"], &payload["through_seq"]), (&rewound["from_seq"], &rewound["through_seq"]));
    c.send(json!({"jsonrpc": "2.0", "id": call["id"], "result": {}}));
    assert!(c.close().success());
}

#[test]
fn a_session_end_hook_is_told_when_the_connection_closes_an_agent_and_nothing_waits_on_it() {
    let server = answers(&["Hello."]);
    let home = home_for("openai", &server, "");
    let mut c = ServeClient::start(&home);
    c.initialize(json!({"model": "gpt-4o", "hooks": [{"event": "session_end", "name": "bye"}]}));
    let id = session(&mut c);
    let turn = c.ok("turn/start", json!({"session": id, "text": "hello"}))["turn"].as_u64().unwrap();
    c.turn_notifications(turn);
    // Deleting the session closes its agent on the connection's own thread: answered at once,
    // the hook asked meanwhile.
    c.ok("session/delete", json!({"session": id}));
    let call = c.wait("session_end's hook/call", |v| v["method"] == "hook/call");
    let payload = &call["params"]["payload"];
    assert_eq!((payload["event"].as_str(), payload["session"].as_str()), (Some("session_end"), Some(id.as_str())));
    // Unanswered, it holds nothing up.
    let listed = c.ok("session/list", json!({}));
    assert_eq!(listed["sessions"], json!([]), "{listed}");
    c.send(json!({"jsonrpc": "2.0", "id": call["id"], "result": {}}));
    assert!(c.close().success());
}

#[test]
fn a_request_sent_again_with_its_key_is_not_told_to_the_user_prompt_hooks_twice() {
    let server = answers(&["Hello.", "Third."]);
    let home = home_for("openai", &server, "");
    let mut c = ServeClient::start(&home);
    c.initialize(json!({"model": "gpt-4o", "hooks": [{"event": "user_prompt", "name": "guard"}]}));
    let id = session(&mut c);
    let keyed = json!({"session": id, "text": "hello", "idempotency_key": "k-1"});
    c.send(json!({"jsonrpc": "2.0", "id": 9101, "method": "turn/start", "params": keyed}));
    let call = c.wait("the prompt's hook/call", |v| v["method"] == "hook/call");
    assert_eq!(call["params"]["payload"]["prompt"], "hello", "{call}");
    c.send(json!({"jsonrpc": "2.0", "id": call["id"], "result": {}}));
    let turn = turn_of(&mut c, 9101);
    c.turn_notifications(turn);
    // Sent again (its answer lost, say): the stored outcome, no hook asked.
    let turn = c.ok("turn/start", keyed)["turn"].as_u64().unwrap();
    let notes = c.turn_notifications(turn);
    assert_eq!(notes.last().unwrap()["params"]["outcome"]["replayed"], true, "{notes:?}");
    // The next hook/call is the next request's.
    c.send(json!({"jsonrpc": "2.0", "id": 9102, "method": "turn/start", "params": {"session": id, "text": "third"}}));
    let call = c.wait("the next prompt's hook/call", |v| v["method"] == "hook/call");
    assert_eq!(call["params"]["payload"]["prompt"], "third", "{call}");
    c.send(json!({"jsonrpc": "2.0", "id": call["id"], "result": {}}));
    let turn = turn_of(&mut c, 9102);
    c.turn_notifications(turn);
    assert!(c.close().success());
}
