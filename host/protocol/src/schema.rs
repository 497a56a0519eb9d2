//! The protocol's JSON Schema, generated from its types: every line a client sends is a
//! `client_message`, every line the server writes a `server_message`.

use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, SchemaGenerator};
use serde_json::{Map, Value, json};

use crate::methods::{self, Method};
use crate::notifications::{self, Notification};
use crate::wire::{ErrorObject, Id};

/// The schema document, as committed in `host/protocol/protocol.schema.json`.
pub fn schema() -> Value {
    let mut generator = SchemaSettings::draft2020_12().into_generator();
    let id = generator.subschema_for::<Id>().to_value();
    let error = generator.subschema_for::<ErrorObject>().to_value();

    let mut requests = Vec::new();
    let mut results = Vec::new();
    let mut add = |name: &str, params: Value, result: Value| {
        requests.push(json!({
            "type": "object",
            "required": ["jsonrpc", "id", "method"],
            "properties": {"jsonrpc": {"const": "2.0"}, "id": id, "method": {"const": name}, "params": params},
            "additionalProperties": false
        }));
        results.push(result);
    };
    methods::for_each_method(&mut generator, &mut add);

    let mut notices = Vec::new();
    macro_rules! notification {
        ($($n:ty),*) => {$(
            notices.push(json!({
                "type": "object",
                "required": ["jsonrpc", "method", "params"],
                "properties": {
                    "jsonrpc": {"const": "2.0"},
                    "method": {"const": <$n as Notification>::NAME},
                    "params": generator.subschema_for::<<$n as Notification>::Params>().to_value()
                },
                "additionalProperties": false
            }));
        )*};
    }
    notification!(
        notifications::TurnEvent,
        notifications::CompactionStarted,
        notifications::CompactionSummarising,
        notifications::Compaction,
        notifications::ToolCalled,
        notifications::ToolResult,
        notifications::Warning,
        notifications::Completed,
        notifications::AccessRevoked
    );
    // The server's own requests, and the client's answers to them (one shape: an error answer
    // fits every request).
    let server_request = |name: &str, params: Value| {
        json!({
            "type": "object",
            "required": ["jsonrpc", "id", "method", "params"],
            "properties": {"jsonrpc": {"const": "2.0"}, "id": {"type": "string"}, "method": {"const": name}, "params": params},
            "additionalProperties": false
        })
    };
    let tool_call = server_request(methods::ToolCall::NAME, subschema::<methods::ToolCallParams>(&mut generator));
    let hook_call = server_request(methods::HookCall::NAME, subschema::<methods::HookCallParams>(&mut generator));
    let request_answer = json!({
        "type": "object",
        "required": ["jsonrpc", "id"],
        "properties": {
            "jsonrpc": {"const": "2.0"},
            "id": {"type": "string"},
            "result": {"anyOf": [
                subschema::<methods::ToolCallResult>(&mut generator),
                subschema::<crate::hooks::HookDecision>(&mut generator)
            ]},
            "error": error
        },
        "oneOf": [{"required": ["result"]}, {"required": ["error"]}],
        "additionalProperties": false
    });
    let answer = json!({
        "type": "object",
        "required": ["jsonrpc", "id"],
        "properties": {
            "jsonrpc": {"const": "2.0"},
            "id": {"anyOf": [id, {"type": "null"}]},
            "result": {"anyOf": results},
            "error": error
        },
        "oneOf": [{"required": ["result"]}, {"required": ["error"]}],
        "additionalProperties": false
    });
    let from_client_notification = json!({
        "type": "object",
        "required": ["jsonrpc", "method"],
        "not": {"required": ["id"]},
        "properties": {"jsonrpc": {"const": "2.0"}, "method": {"type": "string"}, "params": {}},
        "additionalProperties": false
    });

    let mut defs: Map<String, Value> = generator.take_definitions(true);
    defs.insert("request".into(), json!({"oneOf": requests}));
    defs.insert("client_notification".into(), from_client_notification);
    defs.insert("request_answer".into(), request_answer);
    defs.insert(
        "client_message".into(),
        json!({"oneOf": [ref_to("request"), ref_to("client_notification"), ref_to("request_answer")]}),
    );
    defs.insert("answer".into(), answer);
    defs.insert("notification".into(), json!({"oneOf": notices}));
    defs.insert("tool_call".into(), tool_call);
    defs.insert("hook_call".into(), hook_call);
    defs.insert(
        "server_message".into(),
        json!({"oneOf": [ref_to("answer"), ref_to("notification"), ref_to("tool_call"), ref_to("hook_call")]}),
    );
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "seshat serve: JSON-RPC 2.0 messages, one per line",
        "x-protocol-version": crate::PROTOCOL_VERSION,
        "description": format!(
            "Protocol version {}. Every line a client sends is a client_message; every line the server writes \
             is a server_message. Generated from the seshat-protocol crate's types; protocol.md describes each \
             method.",
            crate::PROTOCOL_VERSION
        ),
        "anyOf": [ref_to("client_message"), ref_to("server_message")],
        "$defs": defs
    })
}

fn subschema<T: JsonSchema>(generator: &mut SchemaGenerator) -> Value {
    generator.subschema_for::<T>().to_value()
}

fn ref_to(name: &str) -> Value {
    json!({"$ref": format!("#/$defs/{name}")})
}

#[cfg(test)]
mod tests {
    /// Every method the schema lets a client call has its access rule, and every rule a method
    /// of the schema: a method added without a rule fails here (or does not build).
    #[test]
    fn every_method_of_the_schema_declares_its_access() {
        let schema = super::schema();
        let text = schema.to_string();
        let mut named: Vec<String> = Vec::new();
        let mut rest = text.as_str();
        while let Some(at) = rest.find("\"method\":{\"const\":\"") {
            rest = &rest[at + 19..];
            let end = rest.find('"').unwrap_or(0);
            named.push(rest[..end].to_string());
        }
        let server_sent =
            |m: &str| m.starts_with("turn/") || m == "access/revoked" || m == "tool/call" || m == "hook/call";
        let requests: Vec<&String> = named.iter().filter(|m| !server_sent(m)).collect();
        assert!(requests.len() > 20, "{named:?}");
        for m in &requests {
            assert!(crate::methods::access(m).is_some(), "{m} has no access rule");
        }
        for (m, _) in crate::methods::CLIENT_METHODS {
            assert!(named.iter().any(|n| n == m), "{m} has a rule but is not in the schema");
        }
    }

    /// A request is read by the table: a known method with its params typed (and its rule), an
    /// unknown one as none, params that do not fit as an error naming the method and the field.
    #[test]
    fn requests_are_read_by_the_table() {
        use crate::methods::{Access, Method, Object, Request, SessionGet};
        let params = serde_json::json!({"session": "01J", "full": true});
        let Some(Ok(Request::SessionGet(p))) = Request::parse(SessionGet::NAME, &params) else {
            panic!("session/get is read as itself");
        };
        assert_eq!((p.session.as_str(), p.full), ("01J", true));
        let read = Request::parse("session/get", &params).and_then(Result::ok).map(|r| (r.name(), r.access()));
        assert_eq!(read, Some(("session/get", Access::Read(Object::Session))));
        assert!(Request::parse("session/nothing", &params).is_none());
        let wrong = Request::parse("session/get", &serde_json::json!({"session": 7})).and_then(Result::err);
        let wrong = wrong.map(|e| e.to_string()).unwrap_or_default();
        assert!(wrong.starts_with("session/get's params do not fit") && wrong.contains("integer"), "{wrong}");
        // An absent `params` reads as `{}`.
        let absent = Request::parse("config/get", &serde_json::Value::Null).and_then(Result::ok);
        assert_eq!(absent.map(|r| r.name()), Some("config/get"));
    }

    /// The committed schema is what the types generate. After changing a type, run this test with
    /// `SESHAT_WRITE_SCHEMA=1` to write the file, and commit it with the change.
    #[test]
    fn the_committed_schema_is_the_generated_one() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("protocol.schema.json");
        let generated = serde_json::to_string_pretty(&super::schema()).expect("a schema is JSON") + "\n";
        if std::env::var_os("SESHAT_WRITE_SCHEMA").is_some() {
            std::fs::write(&path, &generated).expect("write protocol.schema.json");
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            committed == generated,
            "{} differs from the schema the protocol's types generate: run `SESHAT_WRITE_SCHEMA=1 cargo test -p \
             seshat-protocol` and commit the file",
            path.display()
        );
    }
}
