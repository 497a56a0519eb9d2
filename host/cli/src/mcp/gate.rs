//! The JSON-RPC 2.0 gate in front of the MCP service: every line from the client is checked
//! here first, so that a line the service cannot take still gets the answer JSON-RPC and MCP
//! prescribe (`-32700` for unparseable JSON, `-32600` for an invalid request, `-32602` for a
//! malformed `tools/call`, a clear refusal before `initialize`) instead of silence or a wrong
//! code. Only well-formed messages reach the service.

use serde_json::{Value, json};

/// JSON-RPC's parse error.
pub const PARSE_ERROR: i64 = -32700;
/// JSON-RPC's invalid request.
pub const INVALID_REQUEST: i64 = -32600;
/// JSON-RPC's invalid params.
pub const INVALID_PARAMS: i64 = -32602;
/// A request before the session is initialised (the code LSP and MCP servers use for it).
pub const NOT_INITIALIZED: i64 = -32002;

/// What to do with one line from the client.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Pass it to the service.
    Forward,
    /// Answer it with this response instead (one JSON line, no newline).
    Answer(String),
    /// Nothing to send (a blank line, a notification that cannot be answered).
    Ignore,
}

/// The gate's memory of the session: whether `initialize` was seen.
#[derive(Debug, Default)]
pub struct Gate {
    initialized: bool,
}

fn error(id: &Value, code: i64, message: &str) -> Verdict {
    Verdict::Answer(json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}).to_string())
}

impl Gate {
    /// Checks one line (without its line break).
    pub fn check(&mut self, line: &str) -> Verdict {
        if line.trim().is_empty() {
            return Verdict::Ignore;
        }
        let message: Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(e) => {
                let what = e.to_string();
                return error(&Value::Null, PARSE_ERROR, &format!("Parse error: the line is not JSON ({what})"));
            }
        };
        let Some(object) = message.as_object() else {
            let what =
                if message.is_array() { "a batch (this server takes one message per line)" } else { "not an object" };
            return error(&Value::Null, INVALID_REQUEST, &format!("Invalid Request: the message is {what}"));
        };
        // The id to answer with: the request's own when it is one JSON-RPC allows, else null.
        let id = match object.get("id") {
            Some(v @ (Value::String(_) | Value::Number(_))) => v.clone(),
            _ => Value::Null,
        };
        let invalid = |why: &str| error(&id, INVALID_REQUEST, &format!("Invalid Request: {why}"));
        if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            return invalid("`jsonrpc` must be \"2.0\"");
        }
        let method = match object.get("method") {
            Some(Value::String(m)) => m.as_str(),
            Some(_) => return invalid("`method` must be a string"),
            // A response to a request of ours (the client answering a ping).
            None if object.contains_key("result") || object.contains_key("error") => {
                return match object.get("id") {
                    Some(Value::String(_) | Value::Number(_)) => Verdict::Forward,
                    _ => Verdict::Ignore,
                };
            }
            None => return invalid("`method` is missing"),
        };
        let request = match object.get("id") {
            None => false,
            Some(Value::String(_)) => true,
            Some(Value::Number(n)) if n.is_i64() || n.is_u64() => true,
            Some(_) => return invalid("`id` must be a string or an integer"),
        };
        match object.get("params") {
            None | Some(Value::Object(_)) => {}
            Some(_) => {
                return if request {
                    error(&id, INVALID_PARAMS, &format!("Invalid params: `params` of `{method}` must be an object"))
                } else {
                    Verdict::Ignore
                };
            }
        }
        if !request {
            // Notifications get no answer, even when wrong; before `initialize` only the
            // client's own initialised notice makes sense, and the service must not see others.
            return if self.initialized || method == "notifications/initialized" {
                Verdict::Forward
            } else {
                Verdict::Ignore
            };
        }
        if method == "initialize" {
            self.initialized = true;
        } else if !self.initialized && method != "ping" {
            return error(
                &id,
                NOT_INITIALIZED,
                &format!(
                    "Server not initialized: `{method}` came before `initialize`. Send an `initialize` request first, \
                     then `notifications/initialized`, then other requests"
                ),
            );
        }
        if method == "tools/call" {
            let params = object.get("params");
            let why = match params.and_then(Value::as_object) {
                None => Some("`tools/call` needs `params` with the tool's `name`".to_string()),
                Some(p) => match (p.get("name"), p.get("arguments")) {
                    (None, _) => Some("`params.name` is missing: name the tool to call".into()),
                    (Some(n), _) if !n.is_string() => Some(format!("`params.name` must be a string, not {n}")),
                    (_, Some(a)) if !a.is_object() && !a.is_null() => {
                        Some(format!("`params.arguments` must be an object of the tool's arguments, not {a}"))
                    }
                    _ => None,
                },
            };
            if let Some(why) = why {
                return error(&id, INVALID_PARAMS, &format!("Invalid params: {why}"));
            }
        }
        Verdict::Forward
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(v: Verdict) -> Value {
        match v {
            Verdict::Answer(s) => serde_json::from_str(&s).unwrap(),
            other => panic!("expected an answer, got {other:?}"),
        }
    }

    #[test]
    fn each_bad_line_gets_its_code_and_the_requests_id() {
        let mut g = Gate::default();
        let e = answer(g.check("{not json"));
        assert_eq!((e["id"].clone(), e["error"]["code"].as_i64()), (Value::Null, Some(PARSE_ERROR)));
        let e = answer(g.check(r#"{"jsonrpc":"2.0","id":7,"method":"tools/list"}"#));
        assert_eq!((e["id"].as_i64(), e["error"]["code"].as_i64()), (Some(7), Some(NOT_INITIALIZED)));
        assert!(e["error"]["message"].as_str().unwrap().contains("Send an `initialize` request first"));
        assert_eq!(g.check(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#), Verdict::Forward);
        let e = answer(g.check(r#"{"jsonrpc":"1.0","id":"x","method":"ping"}"#));
        assert_eq!((e["id"].as_str(), e["error"]["code"].as_i64()), (Some("x"), Some(INVALID_REQUEST)));
        let e = answer(g.check(r#"{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}"#));
        assert_eq!((e["id"].clone(), e["error"]["code"].as_i64()), (Value::Null, Some(INVALID_REQUEST)));
        for params in [
            r#""params":[1]"#,
            r#""params":{"name":5}"#,
            r#""params":{"name":"read_graph","arguments":[]}"#,
            r#""x":0"#,
        ] {
            let e = answer(g.check(&format!(r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call",{params}}}"#)));
            assert_eq!((e["id"].as_i64(), e["error"]["code"].as_i64()), (Some(3), Some(INVALID_PARAMS)), "{params}");
        }
        assert_eq!(g.check(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#), Verdict::Forward);
        assert_eq!(g.check("  "), Verdict::Ignore);
    }
}
