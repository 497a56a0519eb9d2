//! The dispatch as a client sees it: initialisation, the methods' answers and refusals, the
//! memory tools typed end to end, and a turn refused through the pool when no provider is set.

use serde_json::json;

use crate::support::{Client, Place};

#[test]
fn a_method_before_initialize_is_refused_and_config_get_is_not() {
    let mut c = Client::new("");
    let refused = c.call("session/list", json!({}));
    assert_eq!(refused["error"]["data"]["code"], "not_initialized", "{refused}");
    let config = c.ok("config/get", json!({}));
    assert_eq!(config["project"], "github.com/acme/app", "{config}");
}

#[test]
fn initialize_compares_versions_and_sessions_are_made_and_listed_in_the_homes_project() {
    let mut c = Client::new("");
    let old = c.call("initialize", json!({"protocol_version": "2020-01-01"}));
    assert_eq!(old["error"]["data"]["code"], "protocol_mismatch", "{old}");
    let message = old["error"]["message"].as_str().unwrap();
    assert!(message.contains("2020-01-01") && message.contains(seshat_protocol::PROTOCOL_VERSION), "{message}");
    let init = c.ok("initialize", json!({"protocol_version": seshat_protocol::PROTOCOL_VERSION}));
    assert_eq!(init["protocol_version"], seshat_protocol::PROTOCOL_VERSION);
    let made = c.ok("session/new", json!({"title": "planning"}));
    let id = made["session"]["id"].as_str().unwrap().to_string();
    let listed = c.ok("session/list", json!({}));
    let sessions = listed["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 1, "{listed}");
    assert_eq!(
        (sessions[0]["id"].as_str(), sessions[0]["project"].as_str()),
        (Some(id.as_str()), Some("github.com/acme/app"))
    );
}

#[test]
fn the_memory_tools_take_and_give_their_typed_shapes() {
    let mut c = Client::new("");
    c.ok("initialize", json!({}));
    let created = c.ok(
        "memory/create_entities",
        json!({"entities": [{"name": "Kestrel", "entityType": "cluster", "observations": ["deploys on Tuesdays"]}]}),
    );
    assert_eq!(created["entities"][0]["scope"], "project", "{created}");
    let found = c.ok("memory/search_nodes", json!({"query": "tuesdays", "limit": 5}));
    assert_eq!(found["entities"][0]["name"], "Kestrel", "{found}");
    assert!(found.get("note").is_none(), "nothing was cut: {found}");
    let deleted = c.ok("memory/delete_entities", json!({"entityNames": ["Kestrel"]}));
    assert_eq!(deleted["success"], true, "{deleted}");
    assert!(deleted["deletion"].as_i64().is_some_and(|d| d > 0), "{deleted}");
    // A param of the wrong shape is refused naming the method, and nothing is written.
    let bad = c.call("memory/create_entities", json!({"entities": "Kestrel"}));
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    assert!(bad["error"]["message"].as_str().unwrap().contains("memory/create_entities"), "{bad}");
    // So is one that fits the shape but not the tool (an empty name): the client's mistake.
    let empty =
        c.call("memory/create_entities", json!({"entities": [{"name": " ", "entityType": "t", "observations": []}]}));
    assert_eq!(empty["error"]["code"], -32602, "{empty}");
    assert!(empty["error"]["message"].as_str().unwrap().contains("`name` is empty"), "{empty}");
    let graph = c.ok("memory/read_graph", json!({}));
    assert_eq!(graph["entities"].as_array().map(Vec::len), Some(0), "{graph}");
}

#[test]
fn unknown_methods_and_lines_that_are_not_json_get_their_codes() {
    let mut c = Client::new("");
    c.ok("initialize", json!({}));
    let unknown = c.call("session/fly", json!({}));
    assert_eq!(unknown["error"]["code"], -32601, "{unknown}");
    assert!(c.feed("{not json"));
    let parse = c.next();
    assert_eq!(parse["error"]["code"], -32700, "{parse}");
}

#[test]
fn a_turn_with_no_provider_configured_is_refused_with_its_code() {
    let mut c = Client::new("");
    c.ok("initialize", json!({}));
    let id = c.ok("session/new", json!({}))["session"]["id"].as_str().unwrap().to_string();
    let refused = c.call("turn/start", json!({"session": id, "text": "hello"}));
    assert_eq!(refused["error"]["data"]["code"], "provider_not_configured", "{refused}");
}

#[test]
fn connections_of_two_users_share_the_servers_store_connections_and_each_sees_only_its_own() {
    let place = Place::new("");
    place.add_user("alice");
    place.add_user("bob");
    let mut alice = place.client(Some("alice"));
    let mut bob = place.client(Some("bob"));
    for c in [&mut alice, &mut bob] {
        c.ok("initialize", json!({"project": "github.com/acme/app"}));
    }
    // Alice's request gives its store connection back; Bob's borrows it, acting for Bob.
    let made = alice.ok("session/new", json!({"title": "alice's plan"}));
    let id = made["session"]["id"].as_str().unwrap().to_string();
    let bobs = bob.ok("session/list", json!({"all": true}));
    assert_eq!(bobs["sessions"].as_array().map(Vec::len), Some(0), "bob sees none of alice's: {bobs}");
    let denied = bob.call("session/get", json!({"session": id}));
    assert_eq!(denied["error"]["data"]["code"], "session_not_found", "{denied}");
    let alices = alice.ok("session/list", json!({"all": true}));
    assert_eq!(alices["sessions"][0]["id"], id.as_str(), "{alices}");
}
